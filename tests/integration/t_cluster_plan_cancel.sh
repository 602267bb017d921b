# A cancel of a whole-job plan made while Redis is away is kept and sent
# when Redis is back (docs/cluster.md, "DDP plans"). Three daemons with
# [cluster]; rank 0 registers a whole-job plan on node 1 and stays connected
# (so node 1 keeps refreshing it: without the kept cancel the plan would
# live on everywhere but on the cancelling node). Nodes 2 and 3 load it.
#  1. Redis SIGSTOPped: a cancel on node 2 answers at once, node 2 keeps it
#     (its command got no answer within the deadline); Redis resumed: the
#     plan ends on every node and Redis holds a tombstone.
#  2. Redis killed: a cancel on node 3 of the next registration is kept;
#     Redis restarted empty: node 1 would publish the plan again, but the
#     kept cancel ends it on every node (whichever reaches Redis first).
# Every byte the ranks read is compared with the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
MIB=1048576
NFILES=12
JOB=24501
SRC=$T/src
mkdir -p "$SRC/train"
for i in $(seq -w 1 $NFILES); do head -c $MIB /dev/urandom >"$SRC/train/f$i.bin"; done
TCPLAN=$TC_TESTS/tcplan

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=64M warm=none chunk=1M cluster.redis_timeout=1s
	tc_node_start "$i" || exit 1
done
for i in $(seq 1 $N); do
	check "node $i lists all $N members" wait_for 30 "[ \"\$(tc_node_json $i 'len(s[\"cluster_members\"])')\" = $N ]"
done

# plan_epoch I: node I holds the job's plan at epoch (prints -1 if none)
plan_epoch() { tc_node_json "$1" "max([p['epoch'] for p in s['job_plans'] if p['job'] == $JOB] or [-1])"; }
cp_field() { tc_node_json "$1" "s['cluster_plans']['$2']"; }
# tombstone: Redis' field of the job is a cancel (its second number 0)
tombstone() { [ "$(tc_redis_cli HGET 'tc:{tctest}:jplans' "ds $JOB" | awk '{print $2}')" = 0 ]; }

# register E: rank 0 of world_size 3 registers epoch E's order on node 1 and
# waits for $T/goE (then reads its slice); PID in REG_PID
register() {
	local e=$1
	(cd "$SRC" && find train -type f | sort) | python3 -c "
import random, sys
v = sys.stdin.read().split()
random.Random($e * 31).shuffle(v)
print('\n'.join(v))" >"$T/order$e"
	TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" ddp ds "$SRC" $JOB 0 3 "$e" "$T/order$e" "$T/go$e" 0 register \
		>"$T/reg$e.out" 2>&1 &
	REG_PID=$!
	wait_for 30 "grep -q ready $T/reg$e.out"
}

# ---- 1. Redis stopped (SIGSTOP): the cancel is kept, sent on resume ----
check "rank 0 registers epoch 1 on node 1" register 1
PID1=$REG_PID
for i in 2 3; do
	check "node $i loads the plan" wait_for 30 "[ \$(plan_epoch $i) = 1 ]"
done
tc_redis_pause
out=$(TIERCACHE_SOCKET=$T/n2/sock timeout 5 "$TCPLAN" cancel ds $JOB 1)
check "with Redis stopped, node 2's cancel answers at once: $out" [ "$out" = cancelled ]
check "node 2 dropped the plan" [ "$(plan_epoch 2)" = -1 ]
check "node 2 keeps the cancel (its command got no answer)" wait_for 30 "[ \$(cp_field 2 cancels_pending) = 1 ]"
for i in 1 3; do
	check "node $i still has the plan while Redis is stopped" [ "$(plan_epoch $i)" = 1 ]
done
tc_redis_resume
for i in 1 2 3; do
	check "Redis resumed: node $i has no plan" wait_for 30 "[ \$(plan_epoch $i) = -1 ]"
done
check "node 2 sent the kept cancel" [ "$(cp_field 2 cancels_resent)" -ge 1 ]
check "node 2 has no cancel waiting" [ "$(cp_field 2 cancels_pending)" = 0 ]
check "Redis holds a tombstone for the plan" tombstone
check "node 1 counts its plan superseded" [ "$(cp_field 1 superseded)" -ge 1 ]
touch "$T/go1"
wait "$PID1"
check "rank 0 read its slice, bytes equal the source" grep -q "^ok read 4$" "$T/reg1.out"

# ---- 2. Redis killed, restarted empty: the kept cancel wins over the republish ----
check "rank 0 registers epoch 2 on node 1" register 2
PID2=$REG_PID
for i in 2 3; do
	check "node $i loads epoch 2's plan" wait_for 30 "[ \$(plan_epoch $i) = 2 ]"
done
resent0=$(cp_field 3 cancels_resent)
tc_redis_kill
out=$(TIERCACHE_SOCKET=$T/n3/sock timeout 5 "$TCPLAN" cancel ds $JOB 2)
check "with Redis killed, node 3's cancel answers at once: $out" [ "$out" = cancelled ]
check "node 3 keeps the cancel" wait_for 30 "[ \$(cp_field 3 cancels_pending) = 1 ]"
check "node 1 still has epoch 2's plan while Redis is down" [ "$(plan_epoch 1)" = 2 ]
check "Redis restarted empty" tc_redis_start
for i in 1 2 3; do
	check "Redis back: node $i has no plan" wait_for 30 "[ \$(plan_epoch $i) = -1 ]"
done
check "node 3 sent the kept cancel" [ "$(cp_field 3 cancels_resent)" -gt "$resent0" ]
check "Redis holds a tombstone for the plan" tombstone
check "nothing was lost" [ "$(cp_field 2 cancels_lost)" = 0 ] && [ "$(cp_field 3 cancels_lost)" = 0 ]
touch "$T/go2"
wait "$PID2"
check "rank 0 read its slice, bytes equal the source" grep -q "^ok read 4$" "$T/reg2.out"
# the plan stays cancelled: nobody loads or republishes it later
sleep 3
for i in 1 2 3; do
	check "node $i still has no plan a few heartbeats later" [ "$(plan_epoch $i)" = -1 ]
done
for i in $(seq 1 $N); do
	check "node $i stops cleanly" tc_node_stop "$i"
done
tcc_finish
