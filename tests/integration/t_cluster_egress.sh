# One fetch per cluster: three daemons with [cluster] on one counted cold
# directory all read every file of a dataset at once; every byte equals the
# source and the cold store is read about once (<= 1.05x the dataset), the
# rest comes from the chunks' homes over the peer port. The control: the
# same three daemons without [cluster] read it 3x.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/part1" "$SRC/part2"
for i in $(seq 1 24); do
	# 1.5 to 3.8 MiB, most not a multiple of the 1 MiB chunk
	head -c $((3 * MIB / 2 + (i * 104729) % (5 * MIB / 2))) /dev/urandom >"$SRC/part$((i % 2 + 1))/f$i.bin"
done
FILES=$(cd "$SRC" && find . -type f | sed 's|^\./||' | sort)
total=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1

# every node reads the whole dataset, all nodes at once
read_everywhere() { tcc_read_on ds "$FILES" $(seq 1 $N); }

# members I: "ID@ADDR:STATE" of each member node I lists, sorted
members() {
	tc_node_json "$1" "' '.join(sorted('%s@%s:%s' % (m['id'], m['addr'], m['state']) for m in s['cluster_members']))" 2>/dev/null
}

# ---- with [cluster] ----
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=128M warm=none chunk=1M
	tc_node_start "$i" || exit 1
done
want=$(for i in $(seq 1 $N); do echo "n$i@127.0.0.$((i + 1)):$TCC_PORT:up"; done | sort | tr '\n' ' ' | sed 's/ $//')
for i in $(seq 1 $N); do
	check "node $i lists all $N members, up, at their peer addresses" wait_for 30 "[ \"\$(members $i)\" = '$want' ]"
done
check "nothing read from cold before the reads" [ "$(tc_cold_bytes)" = 0 ]

check "$N nodes read every file at once: bytes equal the source" read_everywhere
cold=$(tc_cold_bytes)
echo "cluster: cold bytes $cold for a dataset of $total ($(awk -v c="$cold" -v t="$total" 'BEGIN {printf "%.3f", c / t}')x)"
check "cold bytes >= the dataset (every byte came from somewhere)" [ "$cold" -ge "$total" ]
check "cold bytes <= 1.05x the dataset" [ "$cold" -le $((total * 105 / 100)) ]
sum=0
for i in $(seq 1 $N); do sum=$((sum + $(tc_node_json "$i" "s['counters']['bytes_from_cold']"))); done
check "the nodes' bytes_from_cold add up to what the cold dir saw" [ "$sum" = "$cold" ]
from=0
to=0
for i in $(seq 1 $N); do
	f=$(tc_node_json "$i" "s['counters']['bytes_from_peers']")
	from=$((from + f))
	to=$((to + $(tc_node_json "$i" "s['counters']['bytes_to_peers']")))
	check "node $i filled chunks from their homes (bytes_from_peers $f)" [ "$f" -gt 0 ]
done
check "bytes sent to peers ($to) = bytes filled from peers ($from)" [ "$to" = "$from" ]
check "every byte read came from the cold store once or from a peer" [ $((from + cold)) -ge $((N * total)) ]
check "no fallback to the cold store" [ "$(tc_node_json 1 "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))")" = 0 ]
out=$(TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/tierctl" cluster status --json)
check "tierctl cluster status lists every node's egress for the dataset" \
	python3 -c "import json,sys; s=json.loads(sys.argv[1]); e=s['cluster_egress']; assert sorted(r['node'] for r in e if r['dataset']=='ds') == ['n1','n2','n3'], e" "$out"
# the sums come from each node's last heartbeat: wait for them to settle
tot() { tc_node_json 1 "[(r['nodes'], r['bytes_from_cold'], r['bytes_from_peers']) for r in s['cluster_egress_total'] if r['dataset'] == 'ds'][0]" 2>/dev/null; }
check "cluster-wide sums on node 1: 3 nodes, cold $cold, from peers $from" \
	wait_for 30 "[ \"\$(tot)\" = \"(3, $cold, $from)\" ]"
tot
used_all() { tc_node_json 1 "all(m['used_bytes'] > 0 for m in s['cluster_members']) and len(s['cluster_members']) == 3" 2>/dev/null; }
check "every member's tier use is listed (used_bytes > 0)" wait_for 30 "[ \"\$(used_all)\" = True ]"

check "a second round: bytes equal the source" read_everywhere
check "a second round reads nothing more from cold" [ "$(tc_cold_bytes)" = "$cold" ]
for i in $(seq 1 $N); do
	check "node $i stops cleanly" tc_node_stop "$i"
done

# ---- the control: the same nodes without [cluster], fresh caches ----
tc_countfs_stop
tc_countfs_start "$SRC" || exit 1 # counts from 0 again
for i in $(seq 1 $N); do
	rm -rf "$T/n$i"
	tc_node_config "$i" hot=128M warm=none chunk=1M cluster=off
	tc_node_start "$i" || exit 1
done
check "control: $N nodes read every file at once: bytes equal the source" read_everywhere
cold=$(tc_cold_bytes)
echo "control: cold bytes $cold for a dataset of $total ($(awk -v c="$cold" -v t="$total" 'BEGIN {printf "%.3f", c / t}')x)"
check "control: each node read the dataset from cold (~${N}x)" \
	bash -c "[ $cold -ge $((N * total * 95 / 100)) ] && [ $cold -le $((N * total)) ]"
tcc_finish
