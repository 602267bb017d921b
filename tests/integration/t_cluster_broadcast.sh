# The admin broadcast: `tierctl --cluster` applies on every live node, and
# exactly once on a node that was down when it was sent and comes back
# (a Redis Stream with each node's position in its index); with Redis
# paused, a cluster command fails at once with "coordination unavailable"
# and nothing is applied anywhere afterwards.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
SRC=$T/cold
mkdir -p "$SRC/sub"
head -c 3000000 /dev/urandom >"$SRC/sub/a.bin"
head -c 1000000 /dev/urandom >"$SRC/b.bin"

tc_redis_start || exit 1
tc_cluster_key
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=64M warm=none chunk=1M
	tc_node_start "$i" || exit 1
done

ctl() { local i=$1; shift; TIERCACHE_SOCKET=$T/n$i/sock "$TC_BIN/tierctl" "$@"; }
pinned() { tc_node_json "$1" "[d['pinned_bytes'] for d in s['datasets'] if d['name'] == 'ds'][0]" 2>/dev/null; }
applied() { tc_node_json "$1" "s['cluster_admin']['applied']" 2>/dev/null; }
policy() {
	ctl "$1" policy show --json ds 2>/dev/null |
		python3 -c "import json,sys; print(json.load(sys.stdin)['policies'][0]['policy'])" 2>/dev/null
}
members_up() { tc_node_json "$1" "sum(1 for m in s['cluster_members'] if m['state'] == 'up')" 2>/dev/null; }

for i in $(seq 1 $N); do
	check "node $i sees $N members" wait_for 30 "[ \"\$(members_up $i)\" = $N ]"
	check "node $i has a stream position" wait_for 30 \
		"[ -n \"\$(tc_node_json $i \"s['cluster_admin']['position']\" 2>/dev/null)\" ]"
done
orig_policy=$(policy 3)
check "the dataset's policy is not lru yet (got '$orig_policy')" [ -n "$orig_policy" ] && [ "$orig_policy" != lru ]

# ---- refusals ----
out=$(ctl 1 --cluster status 2>&1)
check "--cluster status is a usage error (exit 2)" [ $? = 2 ]
check "... saying which commands take --cluster" grep -q "applies to pin, unpin" <<<"$out"

# ---- a pin reaches every node ----
out=$(ctl 1 --cluster pin ds/sub/a.bin 2>&1)
check "tierctl --cluster pin succeeds" [ $? = 0 ]
check "... and names the stream entry" grep -qE "^sent to the cluster as [0-9]+-[0-9]+$" <<<"$out"
for i in $(seq 1 $N); do
	check "node $i pinned ds/sub/a.bin (3000000 bytes)" wait_for 30 "[ \"\$(pinned $i)\" = 3000000 ]"
	check "node $i applied one entry" wait_for 30 "[ \"\$(applied $i)\" = 1 ]"
done
check "node 1 did not pin it before the stream said so: one result, ok" \
	[ "$(tc_node_json 1 "[r['op'] + ':' + str(r['errno']) for r in s['cluster_admin_results']]")" = "['pin:0']" ]

# ---- node 3 is down while two commands are sent ----
check "node 3 stops cleanly" tc_node_stop 3
check "tierctl --cluster unpin with node 3 down" ctl 1 --cluster unpin ds/sub/a.bin
check "tierctl --cluster policy set ds lru with node 3 down" ctl 2 --cluster policy set ds lru
for i in 1 2; do
	check "node $i unpinned" wait_for 30 "[ \"\$(pinned $i)\" = 0 ]"
	check "node $i uses lru" wait_for 30 "[ \"\$(policy $i)\" = lru ]"
	check "node $i applied 3 entries" wait_for 30 "[ \"\$(applied $i)\" = 3 ]"
done
check "node 3 comes back" tc_node_start 3
check "node 3 applies the two it missed" wait_for 30 "[ \"\$(applied 3)\" = 2 ]"
check "node 3 unpinned" wait_for 30 "[ \"\$(pinned 3)\" = 0 ]"
check "node 3 uses lru" wait_for 30 "[ \"\$(policy 3)\" = lru ]"
check "node 3 applied unpin then policy_set, each once" \
	[ "$(tc_node_json 3 "[r['op'] for r in s['cluster_admin_results']]")" = "['unpin', 'policy_set']" ]
# a heartbeat more: nothing else comes
sleep 1
check "node 3 applied nothing more" [ "$(applied 3)" = 2 ]

# a restart of node 3 does not apply them again
check "node 3 stops again" tc_node_stop 3
check "node 3 starts again" tc_node_start 3
check "node 3 is back at its stored position" wait_for 30 \
	"[ \"\$(tc_node_json 3 \"s['cluster_admin']['position']\" 2>/dev/null)\" = \"\$(tc_node_json 1 \"s['cluster_admin']['position']\")\" ]"
check "node 3 sees $N members again" wait_for 30 "[ \"\$(members_up 3)\" = $N ]"
sleep 1
check "node 3 applied nothing after the restart" [ "$(applied 3)" = 0 ]
check "node 3 still uses lru (kept in its index)" [ "$(policy 3)" = lru ]

# ---- Redis paused: fails fast, sends nothing ----
tc_redis_pause
start=$SECONDS
out=$(timeout 20 "$TC_BIN/tierctl" --socket "$T/n1/sock" --cluster pin ds/b.bin 2>&1)
rc=$?
took=$((SECONDS - start))
check "with Redis paused, tierctl --cluster pin exits 1 (got $rc: $out)" [ $rc = 1 ]
check "... saying coordination is unavailable" grep -q "coordination unavailable" <<<"$out"
check "... well under 10 s (took ${took}s)" [ $took -lt 10 ]
tc_redis_resume
for i in $(seq 1 $N); do
	check "node $i sees Redis again" wait_for 30 "[ \"\$(tc_node_json $i \"s['cluster']['redis']\" 2>/dev/null)\" = up ]"
done
sleep 1
for i in $(seq 1 $N); do
	check "node $i pinned nothing after Redis resumed" [ "$(pinned $i)" = 0 ]
done
check "the stream holds only the three commands" [ "$(tc_redis_cli XLEN 'tc:{tctest}:admin')" = 3 ]

# ---- without [cluster] ----
check "node 2 stops" tc_node_stop 2
rm -rf "$T/n2"
tc_node_config 2 hot=64M warm=none chunk=1M cluster=off
check "node 2 starts without [cluster]" tc_node_start 2
out=$(ctl 2 --cluster pin ds/b.bin 2>&1)
check "--cluster on a daemon without [cluster] exits 1" [ $? = 1 ]
check "... saying it is not part of a cluster" grep -q "not part of a cluster" <<<"$out"
tcc_finish
