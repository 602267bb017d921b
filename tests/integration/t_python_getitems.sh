# Batched opens from Python (docs/python.md): Client.open_many/read_many
# and tiercache.torch.Dataset.__getitems__ through Debian's python3-torch
# DataLoader (2 fork workers, batch_size 64) against the real daemon;
# every sample compared with its source file, OPEN_MANY frames counted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"

tc_need_torch
tc_config 64M 128M 256K
tc_imagefolder "$T/cold" 30 7
tc_start || exit 1
py_checks getitems "$(dirname "$0")/py_getitems.py" "$T/cold" ds "$TC_BIN/tierctl"
finish
