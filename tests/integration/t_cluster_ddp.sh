# DDP plans shared through Redis (docs/cluster.md, "DDP plans"): three
# daemons with [cluster], one reader per node acting as rank r of a job of
# world_size 3 (tcplan ddp: tagged JOB:r), rank 0 registers the whole job's
# order once per epoch (TIERCACHE_PLAN_JOB, a fresh shuffle) on node 1.
# Each node learns its rank from the tag, loads the plan from Redis, and
# prefetches its rank's slice from the chunks' homes, giving up its copies
# of other nodes' chunks once read. Dataset: 60 files of 1 MiB (60 MiB,
# chunk 1 MiB); each node: hot capacity 56 MiB (watermarks 90/70: the mover
# keeps it under 39.2 MiB), no warm tier, policy clairvoyant. What a node
# holds is its home share (about 1/3 of the data; 16 to 28 MiB in our runs:
# rendezvous over 60 chunks is uneven) plus its prefetch window; the
# headroom absorbs the uneven shares (printed per epoch: "resident"; at
# 48 MiB a node homing 27 MiB re-read a little from cold: 1.08x).
# Every byte read is compared with the source. Epoch 1 is cold; from epoch 2
# on the aggregate hit ratio (reads whose chunk was resident, from the
# datasets' hits / misses) must be >= 0.9 and the cold store is read about
# once over all epochs. Then Redis is killed mid-epoch (every read still
# correct), restarted empty (the plan is published again), and a cancel on
# another node ends the plan everywhere. Control: the same without
# [cluster] (the plan reaches node 1 only).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
MIB=1048576
NFILES=60
EPOCHS=4
COMPUTE_MS=${DDP_COMPUTE_MS:-30}
HOT=${DDP_HOT:-56M}
JOB=24301
SRC=$T/src
mkdir -p "$SRC/train"
for i in $(seq -w 1 $NFILES); do head -c $MIB /dev/urandom >"$SRC/train/f$i.bin"; done
total=$((NFILES * MIB))
TCPLAN=$TC_TESTS/tcplan

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1

# order E: a fresh shuffle of the files for epoch E
order() {
	(cd "$SRC" && find train -type f | sort) | python3 -c "
import random, sys
v = sys.stdin.read().split()
random.Random($1 * 7919).shuffle(v)
print('\n'.join(v))" >"$T/order$1"
}

# hits I / misses I: the dataset's counters on node I
hits() { tc_node_json "$1" "s['datasets'][0]['hits']"; }
misses() { tc_node_json "$1" "s['datasets'][0]['misses']"; }

# has_slice I RANK E: node I runs rank RANK's slice of epoch E
has_slice() {
	[ "$(tc_node_json "$1" "any(p['job'] == $JOB and p['rank'] == $2 and p['epoch'] == $3 and p['job_slice'] for p in s['plans'])")" = True ]
}

# epoch E MODE [kill]: one epoch, every rank on its node; MODE cluster or
# control (the plan is on node 1 only). kill: Redis is killed mid-epoch.
# Sets H[i] / M[i]: node i's hits / misses in this epoch.
epoch() {
	local e=$1 mode=$2 what=${3:-} i r bad=0
	local -a pids=()
	order "$e"
	rm -f "$T/go$e"
	for i in $(seq 1 $N); do
		r=$((i - 1))
		H0[$i]=$(hits "$i")
		M0[$i]=$(misses "$i")
		TIERCACHE_SOCKET=$T/n$i/sock "$TCPLAN" ddp ds "$SRC" $JOB $r $N "$e" "$T/order$e" "$T/go$e" \
			"$COMPUTE_MS" $([ $r = 0 ] && echo register) >"$T/rank$r.out" 2>&1 &
		pids+=($!)
	done
	for i in $(seq 1 $N); do
		r=$((i - 1))
		wait_for 30 "grep -q ready $T/rank$r.out" || { echo "rank $r not ready:"; cat "$T/rank$r.out"; bad=1; }
		if [ "$mode" = cluster ] || [ "$i" = 1 ]; then
			wait_for 30 "has_slice $i $r $e" || { echo "node $i: no slice of rank $r epoch $e"; bad=1; }
		fi
	done
	for i in $(seq 1 $N); do TIERCACHE_SOCKET=$T/n$i/sock "$TCPLAN" settle >/dev/null; done
	touch "$T/go$e"
	if [ "$what" = kill ]; then
		wait_for 30 "[ \$(hits 2) -gt \$((${H0[2]} + 3)) ]" || echo "node 2 did not get going"
		tc_redis_kill
	fi
	for i in $(seq 1 $N); do
		r=$((i - 1))
		wait "${pids[$r]}" || bad=1
		grep -q "^ok read $((NFILES / N))$" "$T/rank$r.out" || { echo "rank $r:"; cat "$T/rank$r.out"; bad=1; }
		H[$i]=$(($(hits "$i") - H0[$i]))
		M[$i]=$(($(misses "$i") - M0[$i]))
	done
	return $bad
}

# run MODE: EPOCHS epochs; prints per epoch; sets RATIO (epochs 2..) and
# RATIO_I[i] per node
run() {
	local mode=$1 e i th=0 tm=0
	local -a nh=() nm=()
	for e in $(seq 1 $EPOCHS); do
		check "$mode epoch $e: every rank read its slice, bytes equal the source" epoch "$e" "$mode"
		local line="$mode epoch $e:"
		for i in $(seq 1 $N); do
			line+=" node$i ${H[$i]}/$((H[$i] + M[$i]))"
			if [ "$e" -ge 2 ]; then
				th=$((th + H[$i]))
				tm=$((tm + M[$i]))
				nh[$i]=$((${nh[$i]:-0} + H[$i]))
				nm[$i]=$((${nm[$i]:-0} + M[$i]))
			fi
		done
		echo "$line (hits/reads) cold bytes so far $(tc_cold_bytes)"
		for i in $(seq 1 $N); do
			echo "  node $i: $(tc_node_json "$i" "'from_cold %d from_peers %d to_peers %d resident %d evictions %d dropped_copies %d stalls %d fallbacks %s' % (s['counters']['bytes_from_cold'] >> 20, s['counters']['bytes_from_peers'] >> 20, s['counters']['bytes_to_peers'] >> 20, s['datasets'][0]['resident_hot_bytes'] >> 20, s['counters'].get('evictions', -1), s.get('job_slices', {}).get('dropped_copies', -1), s['prefetch']['stalls'], sum(v for k, v in s.get('cluster', {}).items() if k.startswith('fallback_')))")"
		done
	done
	RATIO=$(awk -v h=$th -v m=$tm 'BEGIN {printf "%.3f", h / (h + m)}')
	for i in $(seq 1 $N); do
		RATIO_I[$i]=$(awk -v h=${nh[$i]} -v m=${nm[$i]} 'BEGIN {printf "%.3f", h / (h + m)}')
	done
}

# ---- with [cluster] ----
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=$HOT warm=none chunk=1M ds.policy=clairvoyant
	tc_node_start "$i" || exit 1
done
for i in $(seq 1 $N); do
	check "node $i lists all $N members" wait_for 30 "[ \"\$(tc_node_json $i 'len(s[\"cluster_members\"])')\" = $N ]"
done
run cluster
cold=$(tc_cold_bytes)
echo "cluster: hit ratio from epoch 2: $RATIO (nodes ${RATIO_I[1]} ${RATIO_I[2]} ${RATIO_I[3]}); cold bytes $cold for a dataset of $total ($(awk -v c="$cold" -v t="$total" 'BEGIN {printf "%.3f", c / t}')x over $EPOCHS epochs)"
check "cluster: aggregate hit ratio from epoch 2 ($RATIO) >= 0.9" awk -v r="$RATIO" 'BEGIN {exit !(r >= 0.9)}'
check "cluster: cold bytes >= the dataset" [ "$cold" -ge "$total" ]
check "cluster: cold bytes <= 1.1x the dataset over $EPOCHS epochs" [ "$cold" -le $((total * 110 / 100)) ]
check "nodes gave up their copies of other nodes' chunks" \
	[ "$(tc_node_json 1 "s['job_slices']['dropped_copies']")" -gt 0 ]
check "node 1 published the plan every epoch" [ "$(tc_node_json 1 "s['cluster_plans']['published']")" -ge $EPOCHS ]
for i in 2 3; do
	check "node $i loaded the plan from Redis every epoch" \
		[ "$(tc_node_json "$i" "s['cluster_plans']['loaded']")" -ge $EPOCHS ]
	check "node $i filled chunks from their homes" [ "$(tc_node_json "$i" "s['counters']['bytes_from_peers']")" -gt 0 ]
done
check "Redis holds one plan (one field, pieces of the current version only)" \
	[ "$(tc_redis_cli HLEN 'tc:{tctest}:jplans')" = 1 ]

# ---- Redis killed mid-epoch: every read still correct ----
e=$((EPOCHS + 1))
check "Redis killed mid-epoch: every rank read its slice, bytes equal the source" epoch "$e" cluster kill
check "Redis restarted empty" tc_redis_start
check "the plan is published again into the empty Redis" \
	wait_for 30 "[ \"\$(tc_redis_cli HLEN 'tc:{tctest}:jplans')\" = 1 ]"
check "node 1 counts the republish" [ "$(tc_node_json 1 "s['cluster_plans']['republished']")" -ge 1 ]
for i in 2 3; do
	check "node $i still runs its slice of epoch $e" has_slice "$i" $((i - 1)) "$e"
done

# ---- a cancel on node 2 ends the plan everywhere ----
out=$(TIERCACHE_SOCKET=$T/n2/sock "$TCPLAN" cancel ds $JOB 1)
check "node 2 cancels the whole-job plan (any rank): $out" [ "$out" = cancelled ]
for i in $(seq 1 $N); do
	check "node $i: no job plan and no slice left after the cancel" \
		wait_for 30 "[ \"\$(tc_node_json $i 'len(s[\"job_plans\"]) + sum(1 for p in s[\"plans\"] if p[\"job_slice\"])')\" = 0 ]"
done
for i in $(seq 1 $N); do
	check "node $i stops cleanly" tc_node_stop "$i"
done

# ---- control: no [cluster], fresh caches ----
tc_countfs_stop
tc_countfs_start "$SRC" || exit 1
for i in $(seq 1 $N); do
	rm -rf "$T/n$i"
	tc_node_config "$i" hot=$HOT warm=none chunk=1M ds.policy=clairvoyant cluster=off
	tc_node_start "$i" || exit 1
done
CRATIO_CL=$RATIO
run control
cold=$(tc_cold_bytes)
echo "control: hit ratio from epoch 2: $RATIO (nodes ${RATIO_I[1]} ${RATIO_I[2]} ${RATIO_I[3]}); cold bytes $cold ($(awk -v c="$cold" -v t="$total" 'BEGIN {printf "%.3f", c / t}')x)"
check "control: nodes without the plan hit far less (${RATIO_I[2]}, ${RATIO_I[3]} <= 0.6)" \
	awk -v a="${RATIO_I[2]}" -v b="${RATIO_I[3]}" 'BEGIN {exit !(a <= 0.6 && b <= 0.6)}'
check "control: the aggregate ($RATIO) is below the cluster's ($CRATIO_CL)" \
	awk -v a="$RATIO" -v b="$CRATIO_CL" 'BEGIN {exit !(a < b)}'
tcc_finish
