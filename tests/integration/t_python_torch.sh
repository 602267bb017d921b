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
# (the train/ sub-directory: an empty file is in no plan, and the items
# after it would count one off from the plan's files)
nf=$(find "$T/cold/train" -type f | wc -l)
m0=$(ctr frames_open_many)
o0=$(ctr frames_open)
u0=$(ctr ahead_used)
n0=$(ctr ahead_unused)
py_checks torch_ahead "$(dirname "$0")/py_torch_ahead.py" "$T/cold/train" ds/train
wait_for 10 'test "$(tc_json "s[\"daemon\"][\"ahead_out\"]")" = 0'
echo "  OPEN_MANY frames $(($(ctr frames_open_many) - m0)), OPEN $(($(ctr frames_open) - o0)),"\
	"handed ahead used $(($(ctr ahead_used) - u0)), unused $(($(ctr ahead_unused) - n0)) for 2 x $nf files"
check "the planned batches sent no OPEN_MANY and no OPEN" \
	test "$(($(ctr frames_open_many) - m0)) $(($(ctr frames_open) - o0))" = "0 0"
check "every file of both epochs came from a handed handle, none released unused" \
	test "$(($(ctr ahead_used) - u0)) $(($(ctr ahead_unused) - n0))" = "$((2 * nf)) 0"
finish
