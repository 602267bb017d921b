# A whole-job plan registered in pieces (docs/cluster.md, "DDP plans";
# TIERCACHE_PLAN_JOB | TIERCACHE_PLAN_APPEND): three daemons with [cluster]
# and a real Redis, a job of world_size 3 with one rank per node (tcplan ddp,
# tagged JOB:r). Each epoch rank 0's process on node 1 registers the
# epoch's shuffle in three pieces: the first as the job's plan, the next two
# appended. Checks: every node ends with the whole order (the registering
# node by its appends, the others by loading each extended version from
# Redis and extending the plan they had: op=job_plan_append), each node's
# slice holds its rank's entries of all three pieces (extended, not
# replaced: op=job_plan_slice_append) and every node has a home view of the
# epoch; every byte the ranks read equals the source, the ranks hit from
# epoch 2 (>= 0.9) and the cold store is read about once (<= 1.05x). Bad
# appends are refused with a reason: another world_size, and an append on a
# node that did not register the plan. A cancel on node 2 ends it everywhere.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
WORLD=3
MIB=1048576
NFILES=36
EPOCHS=2
JOB=24501
SRC=$T/src
mkdir -p "$SRC/train"
for i in $(seq -w 1 $NFILES); do head -c $MIB /dev/urandom >"$SRC/train/f$i.bin"; done
total=$((NFILES * MIB))
TCPLAN=$TC_TESTS/tcplan
HOLD=() # the registering processes, holding their connections until $T/stop

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=64M warm=none chunk=1M
	tc_node_start "$i" || exit 1
done
for i in $(seq 1 $N); do
	check "node $i lists all $N members up" \
		tc_node_members_up $i $N
done

hits() { tc_node_json "$1" "s['datasets'][0]['hits']"; }
misses() { tc_node_json "$1" "s['datasets'][0]['misses']"; }
# entries I E: entries of node I's whole-job plan of the job if of epoch E
entries() { tc_node_json "$1" "sum(p['entries'] for p in s['job_plans'] if p['job'] == $JOB and p['epoch'] == $2)"; }
# slice_files I R E: files in node I's slice of rank R, epoch E
slice_files() { tc_node_json "$1" "sum(p['files'] for p in s['plans'] if p['job'] == $JOB and p['job_slice'] and p['rank'] == $2 and p['epoch'] == $3)"; }
has_view() { [ "$(tc_node_json "$1" "any(p['job'] == $JOB and p['epoch'] == $2 and p['home_view'] for p in s['plans'])")" = True ]; }

# register ORDER (epoch E) from node 1 in three pieces, each kept registered
# until $T/stop (a job's process holds its connection); after each piece
# every node has the order so far (so each append reaches each node)
register_pieces() {
	local e=$1 k=0 a i sofar=0
	split -n l/3 -d "$T/order$e" "$T/piece$e."
	for a in "" append append; do
		TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" set ds $JOB 0 $WORLD "$e" $a job hold="$T/stop" \
			<"$T/piece$e.0$k" >"$T/reg$e.$k.out" 2>&1 &
		HOLD+=($!)
		wait_for 30 "grep -qs registered $T/reg$e.$k.out" ||
			{ echo "piece $k: $(cat "$T/reg$e.$k.out")"; return 1; }
		sofar=$((sofar + $(wc -l <"$T/piece$e.0$k")))
		for i in $(seq 1 $N); do
			wait_for 30 "[ \"\$(entries $i $e)\" = $sofar ]" ||
				{ echo "node $i: the job's plan has $(entries "$i" "$e") entries after piece $k, not $sofar"; return 1; }
		done
		k=$((k + 1))
	done
}

epoch() {
	local e=$1 i r bad=0
	local -a pids=()
	(cd "$SRC" && find train -type f | sort) | python3 -c "
import random, sys
v = sys.stdin.read().split()
random.Random($e * 7919).shuffle(v)
print('\n'.join(v))" >"$T/order$e"
	rm -f "$T/go$e"
	for i in $(seq 1 $N); do
		r=$((i - 1))
		H0[$i]=$(hits "$i")
		M0[$i]=$(misses "$i")
		TIERCACHE_SOCKET=$T/n$i/sock "$TCPLAN" ddp ds "$SRC" $JOB $r $WORLD "$e" "$T/order$e" "$T/go$e" 20 \
			>"$T/rank$r.out" 2>&1 &
		pids+=($!)
		wait_for 30 "grep -qs ready $T/rank$r.out" || { echo "rank $r not ready"; bad=1; }
	done
	register_pieces "$e" || bad=1
	for i in $(seq 1 $N); do
		r=$((i - 1))
		wait_for 30 "[ \"\$(entries $i $e)\" = $NFILES ]" ||
			{ echo "node $i: the job's plan has $(entries "$i" "$e") entries, not $NFILES"; bad=1; }
		wait_for 30 "[ \"\$(slice_files $i $r $e)\" = $((NFILES / WORLD)) ]" ||
			{ echo "node $i: rank $r's slice has $(slice_files "$i" $r "$e") files, not $((NFILES / WORLD))"; bad=1; }
		wait_for 30 "has_view $i $e" || { echo "node $i: no home view of epoch $e"; bad=1; }
	done
	for i in $(seq 1 $N); do TIERCACHE_SOCKET=$T/n$i/sock "$TCPLAN" settle >/dev/null; done
	touch "$T/go$e"
	for i in $(seq 1 $N); do
		r=$((i - 1))
		wait "${pids[$r]}" || bad=1
		grep -q "^ok read $((NFILES / WORLD))$" "$T/rank$r.out" || { echo "rank $r:"; cat "$T/rank$r.out"; bad=1; }
		H[$i]=$(($(hits "$i") - H0[$i]))
		M[$i]=$(($(misses "$i") - M0[$i]))
	done
	return $bad
}

th=0
tm=0
for e in $(seq 1 $EPOCHS); do
	check "epoch $e: registered in 3 pieces, every node has the whole order, its rank's slice and a home view; every rank read its share, bytes equal the source" epoch "$e"
	line="epoch $e:"
	for i in $(seq 1 $N); do
		line+=" node$i ${H[$i]}/$((H[$i] + M[$i]))"
		[ "$e" -ge 2 ] && th=$((th + H[$i])) && tm=$((tm + M[$i]))
	done
	echo "$line (hits/reads); cold bytes so far $(tc_cold_bytes)"
done
for i in 2 3; do
	check "node $i extended the plan it had with each appended version from Redis" \
		[ "$(grep -c "job=$JOB .*op=job_plan_append .*source=cluster" "$T/n$i/daemon.log")" -ge $((2 * EPOCHS)) ]
done
for i in $(seq 1 $N); do
	check "node $i extended its slice (not replaced) on each append" \
		[ "$(grep -c "job=$JOB rank=$((i - 1)) .*op=job_plan_slice_append" "$T/n$i/daemon.log")" -ge $((2 * EPOCHS)) ]
done
RATIO=$(awk -v h=$th -v m=$tm 'BEGIN {printf "%.3f", h / (h + m)}')
cold=$(tc_cold_bytes)
echo "hit ratio from epoch 2: $RATIO; cold bytes $cold for $total"
check "the ranks' aggregate hit ratio from epoch 2 ($RATIO) >= 0.9" awk -v r="$RATIO" 'BEGIN {exit !(r >= 0.9)}'
check "the dataset read from the cold store about once ($cold <= 1.05x $total)" [ "$cold" -le $((total * 105 / 100)) ]

# bad appends: refused, with the reason, and the plan unchanged
out=$(head -3 "$T/order$EPOCHS" | TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" set ds $JOB 0 2 "$EPOCHS" append job)
check "an append with another world_size is refused: $out" eval '[[ "$out" == "error EINVAL:"*"world_size"* ]]'
out=$(head -3 "$T/order$EPOCHS" | TIERCACHE_SOCKET=$T/n2/sock "$TCPLAN" set ds $JOB 1 $WORLD "$EPOCHS" append job)
check "an append on a node that did not register the plan is refused: $out" eval '[[ "$out" == "error EINVAL:"*"another node"* ]]'
for i in $(seq 1 $N); do
	check "node $i: the job's plan still has $NFILES entries" [ "$(entries "$i" "$EPOCHS")" = $NFILES ]
done

out=$(TIERCACHE_SOCKET=$T/n2/sock "$TCPLAN" cancel ds $JOB 1)
check "node 2 cancels the job's plan: $out" [ "$out" = cancelled ]
for i in $(seq 1 $N); do
	check "node $i: no plan of the job left after the cancel" \
		wait_for 30 "[ \"\$(tc_node_json $i 'len(s[\"job_plans\"]) + sum(1 for p in s[\"plans\"] if p[\"job\"] == $JOB)')\" = 0 ]"
done
touch "$T/stop"
for p in "${HOLD[@]}"; do wait "$p"; done
tcc_finish
