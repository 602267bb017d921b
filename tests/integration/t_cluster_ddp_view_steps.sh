# Home views built in steps (docs/cluster.md, "DDP plans"): a build that a
# new registration or a cancel overtakes is dropped, and what is left is
# what an uninterrupted build gives. Three daemons with [cluster] and a
# real Redis, a dataset of 20,000 one-chunk files, whole-job plans of
# 100,000 entries (world_size 3, registered by rank 0 on node 1): each
# node's view takes many loop turns to build.
#   1. plan A (epoch 1), then at once plan B (epoch 2): every node ends with
#      B's view only, no build left running;
#   2. B's order registered again (as epoch 4, so that every node loads and
#      builds it afresh), untouched: every node's view has the same number
#      of chunks as after 1 (the overtaken builds left nothing behind);
#   3. plan C (epoch 3) and at once a cancel on node 2: no plan, view or
#      build is left anywhere; the daemons stop cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
WORLD=3
FILES=20000
REPEAT=5
JOB=24601
SRC=$T/src
TCPLAN=$TC_TESTS/tcplan
mkdir -p "$SRC/v"
python3 - "$SRC/v" "$FILES" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, "f%06d" % i), "w") as f:
        f.write("%016d\n" % i)
EOF
for e in 1 2 3; do
	(cd "$SRC" && find v -type f) | python3 -c "
import random, sys
v = sys.stdin.read().split() * $REPEAT
random.Random($e).shuffle(v)
print('\n'.join(v))" >"$T/order$e"
done
ENTRIES=$((FILES * REPEAT))
HOLD=()

tc_redis_start || exit 1
tc_cluster_key
COLD=$SRC
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=64M warm=none chunk=1M
	tc_node_start "$i" || exit 1
done
for i in $(seq 1 $N); do
	check "node $i lists all $N members up" \
		tc_node_members_up $i $N 60
	check "node $i lists the $FILES files" \
		wait_for 120 "[ \"\$(tc_node_json $i \"all(d['serving'] and d['files'] == $FILES for d in s['datasets'])\")\" = True ]"
done

register() { # register E: node 1 registers order E, holding its connection
	TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" set ds $JOB 0 $WORLD "$1" job hold="$T/stop" <"$T/order$1" \
		>"$T/reg$1.$2.out" 2>&1 &
	HOLD+=($!)
	wait_for 60 "grep -qs '^registered $ENTRIES' $T/reg$1.$2.out"
}
# views I: node I's home views of the job as "epoch:chunks ..."
views() { tc_node_json "$1" "' '.join('%d:%d' % (p['epoch'], p['chunks']) for p in s['plans'] if p['job'] == $JOB and p['home_view'])"; }
building() { tc_node_json "$1" "s['job_slices']['home_views_building']"; }
installed() { tc_node_json "$1" "s['job_slices']['home_views']"; }
# settled I E: node I has the plan of epoch E, one view of it and no build
# running (one status): prints the view's chunks
settled() {
	local v
	v=$(tc_node_json "$1" "'%d' % [p['chunks'] for p in s['plans'] if p['job'] == $JOB and p['home_view']][0] if [j['epoch'] for j in s['job_plans'] if j['job'] == $JOB] == [$2] and s['job_slices']['home_views_building'] == 0 and [p['epoch'] for p in s['plans'] if p['job'] == $JOB and p['home_view']] == [$2] else 'no'" 2>/dev/null)
	[ -n "$v" ] && [ "$v" != no ] && echo "$v"
}

# 1. A, then B at once
check "plan A (epoch 1) registered" register 1 a
check "plan B (epoch 2) registered right after it" register 2 a
declare -A C1
for i in $(seq 1 $N); do
	check "node $i: B's plan and view only, no build running" wait_for 120 "settled $i 2 >/dev/null"
	C1[$i]=$(settled "$i" 2)
	echo "node $i: view ${C1[$i]}, $(installed "$i") views built, longest step $(tc_node_json "$i" "s['job_slices']['home_view_step_max_us']") us"
done

# 2. B again, left alone: the same views
declare -A N0
for i in $(seq 1 $N); do N0[$i]=$(installed "$i"); done
cp "$T/order2" "$T/order4"
check "B's order registered again as epoch 4" register 4 a
for i in $(seq 1 $N); do
	check "node $i built its view again" wait_for 120 "[ \"\$(installed $i)\" -gt ${N0[$i]} ] && settled $i 4 >/dev/null"
	c=$(settled "$i" 4)
	check "node $i: the same view as after the overtaken builds (${C1[$i]} = $c chunks)" [ "$c" = "${C1[$i]}" ]
done
total=0
for i in $(seq 1 $N); do total=$((total + C1[$i])); done
check "the views hold chunks ($total)" [ "$total" -gt 0 ]

# 3. C, and at once a cancel on node 2
check "plan C (epoch 3) registered" register 3 a
out=$(TIERCACHE_SOCKET=$T/n2/sock "$TCPLAN" cancel ds $JOB 1)
# node 2 may not have loaded C yet: then it cancels B's registration, and
# C (a newer one) stands; cancel again on node 1, which has C
[ "$out" = cancelled ] && TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" cancel ds $JOB 0 >/dev/null 2>&1
check "node 2 cancels the job's plan: $out" [ "$out" = cancelled ]
for i in $(seq 1 $N); do
	check "node $i: no plan, view or build of the job left" \
		wait_for 60 "[ \"\$(tc_node_json $i 'len(s[\"job_plans\"]) + s[\"job_slices\"][\"home_views_building\"] + sum(1 for p in s[\"plans\"] if p[\"job\"] == $JOB)')\" = 0 ]"
done
touch "$T/stop"
for p in "${HOLD[@]}"; do wait "$p"; done
tcc_finish
