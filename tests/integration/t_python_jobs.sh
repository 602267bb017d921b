# Job tags from Python (tiercache.Client(job=...), set_job, ping; the
# PlanSampler tagging its Dataset's connections in DataLoader fork
# workers) with Debian's python3-torch against the real daemon; every
# sample compared with the source (py_jobs.py).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"

tc_need_torch
tc_config 64M 128M 256K "policy = clairvoyant"
sed -i 's/^workers = 4$/workers = 4\nplan_grace = 1h/' "$T/tc.conf"
tc_imagefolder "$T/cold" 8 4
tc_start || exit 1
py_checks jobs "$(dirname "$0")/py_jobs.py" "$T/cold" ds "$TC_BIN/tierctl"
finish
