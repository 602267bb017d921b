# tiercache.torch (Dataset, PlanSampler) with Debian's python3-torch
# (/usr/bin/python3) against the real daemon: DataLoader with 2 fork
# workers over 2 shuffled epochs, DistributedSampler world size 2, a
# sub-directory dataset; every sample compared with the source bytes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"

if ! "$PY" -c "import torch" 2>/dev/null; then
	fail "$PY cannot import torch (install python3-torch: scripts/install-deps)"
	finish
fi

# samples of varied sizes, some across the 256 KiB chunk boundary
tc_config 64M 128M 256K
for c in cat dog fish; do
	mkdir -p "$T/cold/train/$c"
	for i in $(seq 1 20); do
		head -c $(((RANDOM * 13 + i * 1009) % 400000 + 1)) /dev/urandom >"$T/cold/train/$c/img_$i.jpg"
	done
done
mkdir -p "$T/cold/train/bird/nested"
for i in $(seq 1 6); do head -c $((i * 30011)) /dev/urandom >"$T/cold/train/bird/nested/b$i.jpg"; done
: >"$T/cold/empty"
tc_start || exit 1
py_checks torch "$(dirname "$0")/py_torch.py" "$T/cold" ds
finish
