#!/usr/bin/env bash
# How long a whole-job plan's home view holds each node's loop
# (docs/cluster.md, "DDP plans"). N daemons with [cluster] and a real Redis;
# a dataset of FILES small files (one chunk each); node 1 registers a
# whole-job plan of FILES x REPEAT entries (every file REPEAT times, in a
# shuffled order: ENTRIES = 1M by default) as rank 0 of world_size N and
# serves that rank; every node loads the plan from Redis and builds its
# home view. Meanwhile one client per node pings its daemon back to back
# (tcplan probe): the longest round trip is how long that loop was held.
# Prints per node: the view's build time (wall, from the daemon's log line
# op=job_plan_home_view ... build_us=), its longest step (wall, and CPU of
# the loop thread: a loaded machine's wall time also counts waits for a
# CPU; 0 for a tree that built views in one go), the CPU time of the
# plan's encode (node 1) or decode on a worker (worker_ms; 0 for a tree that
# ran them on the loop), node 1's slice build (wall, and its longest step's
# CPU), and the probe's max / p99 round trip. Compare trees by alternating runs (BUILD of each).
# Usage: bench/plan_view.sh [BUILD]   (FILES=100000 REPEAT=10 N=4 to change)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. tests/integration/lib.sh
. tests/integration/lib_cluster.sh
N=${N:-4}
FILES=${FILES:-100000}
REPEAT=${REPEAT:-10}
JOB=31337
SRC=$T/src
TCPLAN=$TC_TESTS/tcplan
mkdir -p "$SRC/v"
python3 - "$SRC/v" "$FILES" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, "f%07d" % i), "w") as f:
        f.write("%016d\n" % i)
EOF
(cd "$SRC" && find v -type f) | python3 -c "
import random, sys
v = sys.stdin.read().split() * $REPEAT
random.Random(1).shuffle(v)
print('\n'.join(v))" >"$T/order"
ENTRIES=$(wc -l <"$T/order")

tc_redis_start || exit 1
tc_cluster_key
COLD=$SRC
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=256M warm=none chunk=1M cluster.lease=10s || exit 1
	tc_node_start "$i" >/dev/null || exit 1
done
for i in $(seq 1 $N); do
	wait_for 120 "[ \"\$(tc_node_json $i 'sum(m[\"state\"] == \"up\" for m in s[\"cluster_members\"])' 2>/dev/null)\" = $N ]" ||
		{ echo "node $i: not all members up"; exit 1; }
	wait_for 300 "[ \"\$(tc_node_json $i \"all(d['serving'] and d['files'] >= $FILES for d in s['datasets'])\" 2>/dev/null)\" = True ]" ||
		{ echo "node $i: dataset not listed"; tc_node_json $i "s['datasets']"; exit 1; }
done
rm -f "$T/stop"
pids=()
for i in $(seq 1 $N); do
	TIERCACHE_SOCKET=$T/n$i/sock "$TCPLAN" probe "$T/stop" >"$T/probe$i.out" 2>&1 &
	pids+=($!)
done
sleep 1 # the probes' idle round trips before the registration, for the p99
t0=$(date +%s.%N)
TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" set ds $JOB 0 "$N" 1 job hold="$T/stop" <"$T/order" >"$T/set.out" 2>&1 &
pids+=($!)
for i in $(seq 1 $N); do
	wait_for 600 "grep -q 'job=$JOB .*op=job_plan_home_view' $T/n$i/daemon.log" ||
		{ echo "node $i: no home view within 600 s"; touch "$T/stop"; exit 1; }
done
t1=$(date +%s.%N)
sleep 1
touch "$T/stop"
for p in "${pids[@]}"; do wait "$p"; done
grep -q "^registered $ENTRIES" "$T/set.out" || { echo "registration: $(cat "$T/set.out")"; exit 1; }
echo "plan_view: $N nodes, $FILES files, $ENTRIES entries, registered on node 1; every view built after $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
for i in $(seq 1 $N); do
	v=$(grep "job=$JOB .*op=job_plan_home_view" "$T/n$i/daemon.log" | tail -1)
	b=$(sed -n 's/.* build_us=\([0-9]*\).*/\1/p' <<<"$v")
	s=$(sed -n 's/.* view_slice_max_us=\([0-9]*\).*/\1/p' <<<"$v")
	u=$(sed -n 's/.* view_step_cpu_max_us=\([0-9]*\).*/\1/p' <<<"$v")
	c=$(sed -n 's/.* chunks=\([0-9]*\).*/\1/p' <<<"$v")
	va=$(sed -n 's/.* view_step_cpu_max_at=\([0-9]*\).*/\1/p' <<<"$v") # since session 17
	# off the loop since session 16 (0 or empty on older trees): the
	# encode (node 1) or decode on a worker, and the slice's build in steps
	enc=$(sed -n 's/.*op=job_plan_published .* encode_cpu_us=\([0-9]*\).*/\1/p' "$T/n$i/daemon.log" | tail -1)
	dec=$(sed -n 's/.*op=job_plan_loaded .* decode_cpu_us=\([0-9]*\).*/\1/p' "$T/n$i/daemon.log" | tail -1)
	sl=$(grep "job=$JOB .*op=job_plan_slice " "$T/n$i/daemon.log" | tail -1)
	slb=$(sed -n 's/.* build_us=\([0-9]*\).*/\1/p' <<<"$sl")
	slc=$(sed -n 's/.* step_cpu_max_us=\([0-9]*\).*/\1/p' <<<"$sl")
	# which step was the longest (0: the first) and the first's CPU
	# (since session 17; empty on older trees)
	sla=$(sed -n 's/.* step_cpu_max_at=\([0-9]*\).*/\1/p' <<<"$sl")
	slf=$(sed -n 's/.* step_cpu_first_us=\([0-9]*\).*/\1/p' <<<"$sl")
	extra="worker_ms $(awk -v b="${enc:-${dec:-0}}" 'BEGIN {printf "%.1f", b / 1000}')"
	[ -n "$sl" ] && extra="$extra slice_build_ms $(awk -v b="${slb:-0}" 'BEGIN {printf "%.1f", b / 1000}') slice_step_cpu_ms $(awk -v b="${slc:-0}" 'BEGIN {printf "%.1f", b / 1000}')"
	[ -n "$sla" ] && extra="$extra (step ${sla}, first $(awk -v b="${slf:-0}" 'BEGIN {printf "%.1f", b / 1000}'))"
	echo "node $i: view chunks ${c:-?} build_ms $(awk -v b="${b:-0}" 'BEGIN {printf "%.1f", b / 1000}') step_max_ms $(awk -v b="${s:-0}" 'BEGIN {printf "%.1f", b / 1000}') (cpu $(awk -v b="${u:-0}" 'BEGIN {printf "%.1f", b / 1000}')${va:+ at step $va}) $extra probe: $(cat "$T/probe$i.out")"
done
tcc_finish
