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
finish
