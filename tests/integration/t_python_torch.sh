# tiercache.torch (Dataset, PlanSampler) with Debian's python3-torch
# (/usr/bin/python3) against the real daemon: DataLoader with 2 fork
# workers over 2 shuffled epochs, DistributedSampler world size 2, a
# sub-directory dataset; every sample compared with the source bytes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"

tc_need_torch

# samples of varied sizes, some across the 256 KiB chunk boundary
tc_config 64M 128M 256K
tc_imagefolder "$T/cold" 20 6
: >"$T/cold/empty"
tc_start || exit 1
py_checks torch "$(dirname "$0")/py_torch.py" "$T/cold" ds

# a planned DataLoader's batches from what was handed ahead: each worker is
# handed its own batches' files (tiercache_set_ahead_stride), so they send
# no OPEN_MANY and every file handed is used. Tiers large enough that
# open-ahead's share of them (docs/plans.md) is not what bounds it here.
tc_stop
tc_config 1G none 256K
tc_start || exit 1
ctr() { tc_json "s['counters']['$1']"; }
# shuffled epochs of the train/ sub-directory, then epochs drawn with
# replacement over the whole dataset: the stride counts the plan's samples,
# repeats and the empty file (in no plan) included, so each worker is still
# handed only its own batches' files (py_torch_ahead.py says which samples
# are sure to be handed and which batches may still send an OPEN_MANY)
ahead_epochs() { # KIND ROOT DATASET
	local m0 o0 u0 n0 m o u n sure loose
	m0=$(ctr frames_open_many) o0=$(ctr frames_open) u0=$(ctr ahead_used) n0=$(ctr ahead_unused)
	py_checks "torch_ahead_$1" "$(dirname "$0")/py_torch_ahead.py" "$2" "$3" "$1"
	wait_for 10 'test "$(tc_json "s[\"daemon\"][\"ahead_out\"]")" = 0'
	m=$(($(ctr frames_open_many) - m0)) o=$(($(ctr frames_open) - o0))
	u=$(($(ctr ahead_used) - u0)) n=$(($(ctr ahead_unused) - n0))
	sure=$(sed -n 's/^samples sure to be handed: //p' "$T/torch_ahead_$1.out" | awk '{s += $1} END {print s + 0}')
	loose=$(sed -n 's/^batches that may open by OPEN_MANY: //p' "$T/torch_ahead_$1.out" | awk '{s += $1} END {print s + 0}')
	echo "  $1: OPEN_MANY frames $m (batches that may: $loose), OPEN $o, handed ahead used $u"\
		"(sure: $sure), unused $n"
	check "$1: no OPEN, and OPEN_MANY only for batches with an empty or repeated file" \
		test "$o" = 0 -a "$m" -le "$loose"
	check "$1: every file handed ahead was used by the worker it was handed to" \
		test "$n" = 0 -a "$u" -ge "$sure" -a "$sure" -gt 0
}
ahead_epochs shuffle "$T/cold/train" ds/train
ahead_epochs replace "$T/cold" ds
finish
