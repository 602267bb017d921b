# Batched opens (issue 17): warm 100 KB files, open+read+close one at a
# time vs tiercache_open_many in batches of 64 vs one at a time with the
# pass registered as the job's plan first (open-ahead) vs local page-cache
# reads (bench/open_many.c), then a PyTorch DataLoader (4 workers, batch 64) over
# tiercache.torch.Dataset vs local files (bench/torch_loader.py), each in
# the same run. BENCH_QUICK=1: fewer files and runs. BENCH_TORCH_RUNS:
# DataLoader epochs of each kind (default 15: an epoch is a fraction of a
# second, and a loaded machine moves single ones by 20%).
# BENCH_PYTHONPATH: the tiercache package to load (default client/python;
# another tree's for an A/B run). BENCH_SIZE: bytes a file (default 102400;
# 4096 shows what a round trip costs when the copy is small).
set -uo pipefail
O=${1:-build/default}
cd "$(dirname "$0")/.."
B=$(mktemp -d "${TMPDIR:-/tmp}/tcbench_om.XXXXXX")
. bench/lib_daemon.sh
trap 'stop_daemon; rm -rf "$B"' EXIT
n=${BENCH_FILES:-2000}
runs=7
truns=${BENCH_TORCH_RUNS:-15}
if [ "${BENCH_QUICK:-${QUICK:-0}}" = 1 ]; then n=500; runs=3; truns=3; fi
mkdir -p "$B/cold/small"
sz=${BENCH_SIZE:-102400}
for i in $(seq 1 "$n"); do head -c "$sz" /dev/urandom >"$B/cold/small/f$i.bin"; done
hot_conf 2G
export TIERCACHE_SOCKET=$B/sock
start_daemon open_many
"$O/bin/open_many" bench/small "$B/cold/small" "$pid" "$runs"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
	echo
	PYTHONPATH=${BENCH_PYTHONPATH:-$PWD/client/python} TIERCACHE_LIBRARY=$PWD/$O/lib/libtiercache.so.0 \
		/usr/bin/python3 -W ignore::UserWarning bench/torch_loader.py bench/small "$B/cold/small" "$truns" "$pid"
else
	echo "torch_loader: skipped (/usr/bin/python3 cannot import torch)"
fi
