#!/usr/bin/env bash
# bench/plan_epochs.sh BUILD_DIR: epochs of a training-like job through
# tiercache with the dataset twice the hot tier, under lru, epoch, and
# clairvoyant + a registered plan (the prefetcher), each epoch beside the
# same epoch (same order, same readers, same compute) read from a local
# copy of the dataset in the same run. The cold store is a Ceph RADOS pool
# when Ceph is installed (its own throwaway single-node cluster), else a
# plain directory (posix).
#
# Each of T reader threads reads a file whole, then "computes" for C ms per
# MB it read (the training step): that sets the job's consumption rate, as
# a GPU does. The goal (docs/plans.md): with a plan, epochs after the first
# take at most 1.1x the local-copy time whenever the cold store keeps up
# with the consumption rate.
#
# env: BENCH_PLAN_MB       dataset MiB (default 256; hot tier = half of it)
#      BENCH_PLAN_FILE_KB  file size (default 1024)
#      BENCH_THREADS       readers (default 4)
#      BENCH_COMPUTE       ms of compute per MB per reader (default 20)
#      BENCH_EPOCHS        epochs per mode (default 4)
#      BENCH_PLAN_BACKEND  auto | posix | rados (default auto)
#      BENCH_PLAN_MODES    (default "lru epoch plan")
set -uo pipefail
O=${1:-build/default}
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
MB=${BENCH_PLAN_MB:-256}
FKB=${BENCH_PLAN_FILE_KB:-1024}
N=${BENCH_THREADS:-4}
C=${BENCH_COMPUTE:-20}
EP=${BENCH_EPOCHS:-4}
BACKEND=${BENCH_PLAN_BACKEND:-auto}
MODES=${BENCH_PLAN_MODES:-lru epoch plan}
HOT=$((MB / 2))

for b in tiercached tierctl epoch_reader; do
	[ -x "$O/bin/$b" ] || { echo "bench/plan_epochs.sh: $O/bin/$b not built (make all)"; exit 0; }
done
if [ "$BACKEND" = auto ]; then
	BACKEND=posix
	command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null && BACKEND=rados
fi

B=$(mktemp -d "${TMPDIR:-/tmp}/tcbench-plan.XXXXXX")
. "$ROOT/bench/lib_daemon.sh"
cleanup() {
	stop_daemon
	[ "$BACKEND" = rados ] && "$ROOT/tests/ceph/stop-ceph.sh" "$B/ceph"
	rm -rf "$B"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the local copy (the baseline) and the source of the cold store
mkdir -p "$B/local/d"
for i in $(seq 1 $((MB * 1024 / FKB))); do
	head -c $((FKB * 1024)) /dev/urandom >"$B/local/d/f$(printf %05d "$i").bin"
done

if [ "$BACKEND" = rados ]; then
	export CEPH_STORE_BYTES=${CEPH_STORE_BYTES:-$(((2 * MB + 1024) * 1048576))}
	if ! tests/ceph/start-ceph.sh "$B/ceph" >/dev/null 2>"$B/start-ceph.log"; then
		echo "bench/plan_epochs.sh: the Ceph cluster did not start; using posix"
		BACKEND=posix
	else
		# shellcheck disable=SC1091
		. "$B/ceph/ceph-env.sh"
	fi
fi
if [ "$BACKEND" = rados ]; then
	DSCONF="backend = rados
ceph_conf = $CEPH_CONF
pool = $CEPH_POOL
prefix = bench/plan/"
else
	mkdir -p "$B/cold"
	cp -r "$B/local/d" "$B/cold/"
	DSCONF="backend = posix
path = $B/cold"
fi

export TIERCACHE_SOCKET=$B/sock
cat >"$B/tc.conf" <<CONF
[daemon]
socket = $B/sock
state_dir = $B/state
log_level = warn
[tier hot]
path = $B/hot
capacity = ${HOT}M
high_water = 90
low_water = 80
[dataset demo]
$DSCONF
chunk_size = 1M
CONF

fresh_daemon() { # an empty cache each time
	rm -rf "$B/state" "$B/hot"
	start_daemon bench/plan_epochs.sh
}

if [ "$BACKEND" = rados ]; then
	fresh_daemon
	if ! "$O/bin/tierctl" import "$B/local" demo >/dev/null 2>"$B/import.log"; then
		echo "bench/plan_epochs.sh: import failed:"
		cat "$B/import.log"
		exit 0
	fi
	stop_daemon
fi

echo "cold store: $BACKEND; dataset $MB MiB in $((MB * 1024 / FKB)) files of $FKB KiB; hot tier" \
	"${HOT}M (policies keep 80%); chunk 1M; $N readers, compute $C ms/MB each" \
	"(consumption at most $((N * 1000 / C)) MB/s)"
printf '%-6s %5s %8s %8s %7s %6s %9s %8s\n' mode epoch wall_s local_s ratio hit% cold_MB plan_s
: >"$B/rows"
for m in $MODES; do
	fresh_daemon
	args=()
	case $m in
	lru | epoch) "$O/bin/tierctl" policy set demo "$m" >/dev/null ;;
	plan)
		"$O/bin/tierctl" policy set demo clairvoyant >/dev/null
		args=(--plan 42)
		;;
	esac
	for e in $(seq 1 "$EP"); do
		seed=$((500 + e))
		if [ "$m" = plan ]; then
			# the sampler publishes the next epoch's order as this one starts
			args=(--plan 42)
			[ "$e" -gt 1 ] && args+=(--plan-continue)
			[ "$e" -lt "$EP" ] && args+=(--plan-next-seed $((seed + 1)))
		fi
		"$O/bin/epoch_reader" --epochs 1 --threads "$N" --seed $seed --compute-ms-per-mb "$C" \
			--local "$B/local" --json demo/d >"$B/l.json" 2>>"$B/er.err"
		"$O/bin/epoch_reader" --epochs 1 --threads "$N" --seed $seed --compute-ms-per-mb "$C" \
			"${args[@]}" --json demo/d >"$B/c.json" 2>>"$B/er.err"
		python3 - "$B/l.json" "$B/c.json" "$m" "$e" <<'PY' | tee -a "$B/rows"
import json, sys
l = json.load(open(sys.argv[1]))[0]
c = json.load(open(sys.argv[2]))[0]
h = c["hits_hot"] + c["hits_warm"]
t = h + c["misses"]
print("%-6s %5s %8.2f %8.2f %7.2f %6.1f %9.1f %8.3f%s" % (
    sys.argv[3], sys.argv[4], c["wall_s"], l["wall_s"], c["wall_s"] / l["wall_s"],
    100.0 * h / t if t else 0, c["cold_bytes"] / 1e6, c["plan_s"],
    "  errors=%d" % (c["errors"] + l["errors"]) if c["errors"] + l["errors"] else ""))
PY
	done
	"$O/bin/tierctl" status --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
p, c = s["prefetch"], s["counters"]
if sys.argv[1] == "plan":
    print("       prefetch: %.1f MB prefetched, %d hits, %d late (read while in flight), %.1f MB evicted unused, %d stalls" % (
        p["prefetched_bytes"] / 1e6, p["hits"], p["late"], p["evicted_unused_bytes"] / 1e6, p["stalls"]))
print("       fills: %d synced, %d evicted before their sync (never synced), %d waiting" % (
    c.get("chunks_synced", 0), c.get("syncs_skipped", 0), s["daemon"].get("sync_pending_chunks", 0)))' "$m"
	stop_daemon
done
echo
echo "medians over epochs 2..$EP (epoch 1 starts from an empty cache):"
printf '%-6s %8s %8s %7s %6s %9s\n' mode wall_s local_s ratio hit% cold_MB
python3 - "$B/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 8 and int(f[1]) >= 2:
        rows.setdefault(f[0], []).append([float(x) for x in f[2:7]])
for m, v in rows.items():
    med = [statistics.median(r[i] for r in v) for i in range(5)]
    print("%-6s %8.2f %8.2f %7.2f %6.1f %9.1f" % (m, *med))
PY
echo "goal: plan ratio <= 1.10 (when the cold store keeps up with the consumption rate)"
