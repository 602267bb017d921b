#!/usr/bin/env bash
# bench/rados.sh BUILD_DIR: reading a Ceph RADOS dataset through tiercache.
#
# Starts its own throwaway cluster (tests/ceph/start-ceph.sh, one memstore
# OSD on loopback, always stopped at exit) and its own tiercached, imports
# two datasets with `tierctl import` (plain: 8 MiB files; striper: 32 MiB
# files, 4 MiB RADOS objects), then, each repetition, alternating:
#   direct  bench/rados_direct: the same objects read straight with
#           librados, N streams with one chunk-sized read in flight each
#   cold    epoch 1 of bench/epoch_reader with N threads on a fresh cache
#           (state and tiers wiped, daemon restarted): every chunk a miss
#   warm    epoch 2 of the same run: every chunk a hit
#   floor   bench/rados_direct --through: direct, but each chunk also
#           written to a file in the tier directory and read back from
#           it: the least any cache that keeps a copy must do on a miss
# and prints medians and the ratios cold/direct (goal >= 0.9), floor/direct
# (the ceiling of that ratio on this machine), cold/floor and warm/cold.
# Benchmarks report; they do not fail the build.
#
# env: BENCH_RADOS_MB   data per layout in MiB (default 512: 1 GiB in all)
#      BENCH_THREADS    readers = direct streams (default 8)
#      BENCH_REPS       repetitions (default 5)
#      BENCH_TIER_DIR   where the hot tier lives (default: a temp dir on
#                       the disk of TMPDIR; /dev/shm stands in for NVMe)
#      BENCH_LAYOUTS    which layouts (default "plain striper")
#      BENCH_WORKERS    daemon.workers (default: the daemon's default)
#      BENCH_INFLIGHT   max_inflight of both datasets (default: the default)
#      BENCH_REVALIDATE revalidate_after of both datasets (default: the default)
#      BENCH_PLAIN_FILE_KB  size of the plain layout's files in KiB (default
#                       8192: two chunks each; 1024: one chunk each, as
#                       small files)
#      BENCH_PERF       a directory: record a system-wide `perf record -g`
#                       of the first repetition's cold epoch per layout
#                       there (cold-LAYOUT.data; see docs/ceph.md)
#      BENCH_PIN=1      keep the cold store's CPU apart from the node's:
#                       every daemon of the bench's own cluster (mon, osd:
#                       the pids in its run/*.pid files) pinned to CPU 0
#                       with `taskset -a -p` (all threads), and this script,
#                       so everything it starts after the cluster
#                       (tiercached, tierctl, rados_direct, epoch_reader),
#                       to CPU 1. Needs taskset (util-linux) and 2 CPUs;
#                       without them it says so and runs unpinned.
#      BENCH_COLD_DELAY_MS  a slow cold store: after the import, the OSD
#                       holds every message from a client a random 0..X ms
#                       (mean X/2) before it handles it (Ceph's own
#                       ms_inject_delay_*, set with `ceph tell osd.0`), so
#                       each read answers later, as from a remote or busy
#                       cluster, for direct and cold alike (default: none)
set -uo pipefail
O=${1:-build/default}
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
MB=${BENCH_RADOS_MB:-512}
N=${BENCH_THREADS:-8}
REPS=${BENCH_REPS:-5}
LAYOUTS=${BENCH_LAYOUTS:-plain striper}
PERF=${BENCH_PERF:-}
CHUNK=$((4 * 1048576))

for b in tiercached tierctl epoch_reader rados_direct; do
	[ -x "$O/bin/$b" ] || { echo "bench/rados.sh: $O/bin/$b not built (make all)"; exit 0; }
done
for b in ceph-mon ceph-osd rados; do
	command -v $b >/dev/null || { echo "bench/rados.sh: skipped: $b is not installed (scripts/install-deps)"; exit 0; }
done

B=$(mktemp -d "${TMPDIR:-/tmp}/tcbench-rados.XXXXXX")
TIER=${BENCH_TIER_DIR:-$B}
TIER=$(mktemp -d "$TIER/tiers.XXXXXX")
. "$ROOT/bench/lib_daemon.sh"
cleanup() {
	stop_daemon
	"$ROOT/tests/ceph/stop-ceph.sh" "$B/ceph"
	rm -rf "$B" "$TIER"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$ROOT/bench/lib_ceph.sh"
bench_ceph_start bench/rados.sh "$MB"
# BENCH_PIN=1: the cluster on CPU 0, the node side on CPU 1 (see the top)
bench_ceph_pin bench/rados.sh

export TIERCACHE_SOCKET=$B/sock
cat >"$B/tc.conf" <<CONF
[daemon]
socket = $B/sock
state_dir = $TIER/state
log_level = warn
${BENCH_WORKERS:+workers = $BENCH_WORKERS}
[tier hot]
path = $TIER/hot
capacity = $((4 * MB))M
[dataset plain]
backend = rados
ceph_conf = $CEPH_CONF
pool = $CEPH_POOL
prefix = bench/plain/
layout = plain
chunk_size = 4M
${BENCH_INFLIGHT:+max_inflight = $BENCH_INFLIGHT}
${BENCH_REVALIDATE:+revalidate_after = $BENCH_REVALIDATE}
[dataset striper]
backend = rados
ceph_conf = $CEPH_CONF
pool = $CEPH_POOL
prefix = bench/striper/
layout = striper
chunk_size = 4M
${BENCH_INFLIGHT:+max_inflight = $BENCH_INFLIGHT}
${BENCH_REVALIDATE:+revalidate_after = $BENCH_REVALIDATE}
CONF


# ---- data ----
t0=$EPOCHREALTIME
mkdir -p "$B/src/plain" "$B/src/striper"
PKB=${BENCH_PLAIN_FILE_KB:-8192}
for i in $(seq 1 $((MB * 1024 / PKB))); do head -c $((PKB * 1024)) /dev/urandom >"$B/src/plain/p$i.bin"; done
for i in $(seq 1 $((MB / 32))); do head -c $((32 * 1048576)) /dev/urandom >"$B/src/striper/s$i.bin"; done
start_daemon bench/rados.sh
for l in $LAYOUTS; do
	if ! "$O/bin/tierctl" import "$B/src/$l" $l >/dev/null 2>"$B/import-$l.log"; then
		echo "bench/rados.sh: import into $l failed:"
		cat "$B/import-$l.log"
		exit 0
	fi
	echo "import $l: $(grep -o '[0-9.]* MB/s' "$B/import-$l.log" | tail -n 1)"
done
rm -rf "$B/src"
DELAY=${BENCH_COLD_DELAY_MS:-}
if [ -n "$DELAY" ]; then
	for kv in "ms_inject_delay_type client" \
		"ms_inject_delay_max $(awk -v d="$DELAY" 'BEGIN{printf "%.4f", d / 1000}')" \
		"ms_inject_delay_probability 1"; do
		# shellcheck disable=SC2086
		timeout 20 ceph -c "$CEPH_CONF" tell osd.0 config set $kv >/dev/null 2>>"$B/delay.log" || {
			echo "bench/rados.sh: cannot set $kv on osd.0 (BENCH_COLD_DELAY_MS):"
			cat "$B/delay.log"
			exit 0
		}
	done
fi
echo "setup (cluster, data, import): $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s"
echo "$N readers, 4 MiB chunks, $MB MiB per layout, hot tier in $(df --output=fstype "$TIER" | tail -n 1) ($TIER), $REPS repetitions"
if [ -n "$PINNED" ]; then
	echo "pinned (BENCH_PIN=1): cluster on CPU 0 ($(for f in "$CEPH_DIR"/run/*.pid; do
		printf '%s ' "$(basename "$f" .pid)"; done)), node side on CPU 1 (tiercached: CPUs $(taskset -cp "$pid" | awk '{print $NF}'))"
else
	echo "unpinned: cluster, daemon and readers share all CPUs"
fi
[ -n "$DELAY" ] && echo "slow cold store (BENCH_COLD_DELAY_MS=$DELAY): the OSD holds each client message 0..$DELAY ms"

TCK=$(getconf CLK_TCK)
OSD_PID=$(cat "$CEPH_DIR/run/osd.0.pid")
# CPU seconds (user + system) a process has used so far
cpu_of() { awk -v t="$TCK" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat" 2>/dev/null || echo 0; }
TIMEFORMAT='%U %S'

# direct LAYOUT [THROUGH_DIR] -> "MB/s cpu_s client_s osd_s" (cpu: rados_direct
# + OSD); with THROUGH_DIR, the floor (rados_direct --through)
direct() {
	local o0 o1 t
	o0=$(cpu_of "$OSD_PID")
	t=$({ time "$O/bin/rados_direct" --conf "$CEPH_CONF" --pool "$CEPH_POOL" --prefix "bench/$1/" \
		--chunk $CHUNK --streams "$N" --reps 1 ${2:+--through "$2"} >"$B/direct.out" 2>&1; } 2>&1) ||
		{ cat "$B/direct.out" >&2; echo "0 0 0 0"; return; }
	o1=$(cpu_of "$OSD_PID")
	echo "$(tail -n 1 "$B/direct.out" | awk '{print $4}') $(echo "$t" | awk -v a="$o0" -v b="$o1" '{printf "%.3f %.3f %.3f", $1 + $2 + b - a, $1 + $2, b - a}')"
}
# epoch LAYOUT SEED [PERF_FILE] -> "MB/s cpu_s cold_bytes misses errors
# readers_s daemon_s osd_s" for one epoch of N readers (cpu: readers +
# daemon + OSD)
epoch() {
	local o0 o1 d0 d1 t ppid=
	if [ -n "${3:-}" ]; then
		perf record -q -a -g -o "$3" >/dev/null 2>&1 &
		ppid=$!
		sleep 0.5 # let perf attach before the epoch starts
	fi
	o0=$(cpu_of "$OSD_PID")
	d0=$(cpu_of "$pid")
	t=$({ time "$O/bin/epoch_reader" --epochs 1 --threads "$N" --seed "$2" --json "$1" \
		>"$B/er.json" 2>"$B/er.err"; } 2>&1)
	o1=$(cpu_of "$OSD_PID")
	d1=$(cpu_of "$pid")
	if [ -n "$ppid" ]; then
		kill -INT "$ppid" 2>/dev/null
		wait "$ppid" 2>/dev/null
	fi
	python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))[0]
rd = sum(map(float, sys.argv[2].split()))
dm, osd = float(sys.argv[3]), float(sys.argv[4])
print(e["mb_per_s"], "%.3f" % (rd + dm + osd), e["cold_bytes"], e["misses"], e["errors"],
      "%.3f %.3f %.3f" % (rd, dm, osd))
' "$B/er.json" "$t" "$(awk -v c="$d0" -v d="$d1" 'BEGIN{print d - c}')" \
		"$(awk -v a="$o0" -v b="$o1" 'BEGIN{print b - a}')" \
		2>/dev/null || { cat "$B/er.err" >&2; echo "0 0 0 0 1 0 0 0"; }
}

# client ops the OSD has handled so far (its perf counter osd.op)
osd_ops() {
	timeout 20 ceph -c "$CEPH_CONF" tell osd.0 perf dump 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["osd"]["op"])' 2>/dev/null || echo 0
}

for l in $LAYOUTS; do : >"$B/res.$l"; done
for r in $(seq 1 "$REPS"); do
	# a fresh cache: every chunk of the first epoch is a miss
	stop_daemon
	rm -rf "$TIER/state" "$TIER/hot"
	start_daemon bench/rados.sh
	for l in $LAYOUTS; do
		pf=
		[ -n "$PERF" ] && [ "$r" = 1 ] && pf=$PERF/cold-$l.data
		n0=$(osd_ops)
		read -r d dcpu dcl dosd <<<"$(direct $l)"
		n1=$(osd_ops)
		read -r cold ccpu cb _ e1 crd cdm cosd <<<"$(epoch $l 1 "$pf")"
		n2=$(osd_ops)
		read -r warm wcpu _ m2 e2 _ <<<"$(epoch $l 2)"
		mkdir -p "$TIER/floor"
		read -r fl fcpu _ <<<"$(direct $l "$TIER/floor")"
		echo "$d $cold $warm $dcpu $ccpu $wcpu $cb $m2 $((e1 + e2)) $dcl $dosd $crd $cdm $cosd $fl $fcpu" >>"$B/res.$l"
		printf 'rep %d %-8s direct %7.1f MB/s   cold %7.1f MB/s   warm %8.1f MB/s   floor %7.1f MB/s   (cold bytes %d, epoch-2 misses %s, errors %s)\n' \
			"$r" $l "$d" "$cold" "$warm" "$fl" "$cb" "$m2" "$((e1 + e2))"
		printf '      cpu s: direct %s client + %s osd; cold %s readers + %s tiercached + %s osd\n' \
			"$dcl" "$dosd" "$crd" "$cdm" "$cosd"
		printf '      osd ops: direct %d, cold %d (%d chunks of 4 MiB)\n' \
			$((n1 - n0)) $((n2 - n1)) $((MB / 4))
	done
done
stop_daemon

echo
echo "medians of $REPS; cpu/GB = CPU seconds per GB read, all processes (direct: rados_direct"
echo "+ OSD; cold, warm: readers + tiercached + OSD)"
echo "cold/dir: ratio of the medians; per-rep: median of each repetition's ratio (direct and"
echo "cold run back to back, so this one is less sensitive to load from other processes)"
printf '%-8s %11s %7s %10s %7s %8s %7s %11s %7s %9s\n' layout direct_MB/s cpu/GB cold_MB/s cpu/GB \
	cold/dir per-rep warm_MB/s cpu/GB warm/cold
for l in $LAYOUTS; do
	python3 - "$B/res.$l" $l "$MB" <<'EOF'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1]) if line.strip()]
gb = float(sys.argv[3]) * 1048576 / 1e9
m = lambda i: statistics.median(r[i] for r in rows)
d, c, w = m(0), m(1), m(2)
bad = sum(1 for r in rows if r[7] != 0 or r[8] != 0)
pr = statistics.median(r[1] / r[0] if r[0] else 0 for r in rows)
print("%-8s %11.1f %7.2f %10.1f %7.2f %8.2f %7.2f %11.1f %7.2f %9.2f%s" % (
    sys.argv[2], d, m(3) / gb, c, m(4) / gb, c / d if d else 0, pr, w, m(5) / gb, w / c if c else 0,
    "   (%d runs with errors or epoch-2 misses)" % bad if bad else ""))
EOF
done
echo "cpu/GB split (medians): node side = rados_direct, or readers + tiercached; cold store = OSD"
for l in $LAYOUTS; do
	python3 - "$B/res.$l" $l "$MB" <<'EOF'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1]) if line.strip()]
gb = float(sys.argv[3]) * 1048576 / 1e9
m = lambda f: statistics.median(f(r) for r in rows) / gb
dn, cn = m(lambda r: r[9]), m(lambda r: r[11] + r[12])
print("%-8s node side: direct %.2f, cold %.2f (%.2fx)   cold store: direct %.2f, cold %.2f" % (
    sys.argv[2], dn, cn, cn / dn if dn else 0, m(lambda r: r[10]), m(lambda r: r[13])))
EOF
done
echo "floor = direct with each chunk written to a file in the tier directory and read back"
echo "(rados_direct --through): the least a cache that keeps a copy does per miss; per-rep medians"
for l in $LAYOUTS; do
	python3 - "$B/res.$l" $l "$MB" <<'EOF'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1]) if line.strip()]
gb = float(sys.argv[3]) * 1048576 / 1e9
m = lambda f: statistics.median(f(r) for r in rows)
print("%-8s floor %.1f MB/s, cpu/GB %.2f   floor/direct %.2f   cold/floor %.2f" % (
    sys.argv[2], m(lambda r: r[14]), m(lambda r: r[15]) / gb,
    m(lambda r: r[14] / r[0] if r[0] else 0), m(lambda r: r[1] / r[14] if r[14] else 0)))
EOF
done
echo "goal: cold/direct >= 0.9"
