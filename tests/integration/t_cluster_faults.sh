# The cluster under faults (docs/cluster.md, "Under faults"): three nodes
# on one counted cold directory. Each phase reads a part of the dataset no
# node has read yet, so that its chunks have to come from their homes:
#   - a home SIGSTOPped under readers: every read completes with the right
#     bytes (the deadlines send them to the cold store), the fallbacks are
#     counted by reason and the stopped node is suspect;
#   - a home killed with -9 under readers: the same;
#   - Redis SIGSTOPped, then killed, under readers: no read fails, the
#     cold store is still read about once (peers are asked with the last
#     member list), status says Redis is down; Redis restarted empty: the
#     member list is whole again within a few heartbeats.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
MIB=1048576
SRC=$T/src
for part in stop kill redis_stop redis_kill; do
	mkdir -p "$SRC/$part"
	for i in $(seq 1 12); do
		head -c $((MIB + (i * 104729) % (2 * MIB))) /dev/urandom >"$SRC/$part/f$i.bin"
	done
done
part_bytes() { find "$SRC/$1" -type f -printf '%s\n' | awk '{s += $1} END {print s}'; }

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
for i in $(seq 1 $N); do
	# a lease longer than the peer deadlines: a hung home is found out by
	# the deadlines, not by its lease running out
	tc_node_config "$i" hot=128M warm=none chunk=1M cluster.heartbeat=500ms cluster.lease=8s \
		cluster.peer_connect_timeout=1s cluster.peer_first_byte_timeout=2s cluster.peer_suspect=60s
	tc_node_start "$i" || exit 1
done
nmembers() { tc_node_json "$1" "len(s['cluster_members'])" 2>/dev/null; }
for i in $(seq 1 $N); do
	check "node $i lists $N members" wait_for 30 "[ \"\$(nmembers $i)\" = $N ]"
done
for i in $(seq 1 $N); do
	check "node $i has its manifest" tc_node_serving "$i"
done

# read_on PART NODE...: those nodes read every file of PART at once
read_on() {
	local part=$1
	shift
	tcc_read_on ds "$(cd "$SRC" && ls "$part"/*)" "$@"
}
fallbacks() { tc_node_json "$1" "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))"; }
suspect() { tc_node_json "$1" "[m['suspect'] for m in s['cluster_members'] if m['id'] == 'n$2'][0]"; }

# ---- a home hangs ----
tc_node_pause 2
check "node 2 stopped: nodes 1 and 3 read every file, bytes equal the source" read_on stop 1 3
check "node 1 counted fallbacks (node 2 did not answer)" [ "$(fallbacks 1)" -gt 0 ]
check "node 1 holds node 2 suspect" [ "$(suspect 1 2)" = True ]
grep -h 'op=peer node=n2' "$T"/n1/daemon.log | head -2
check "node 1 logged the fallback, naming node 2" grep -q 'op=peer node=n2 .*action="reading from the cold store' "$T/n1/daemon.log"
tc_node_resume 2

# ---- a home dies ----
tc_node_kill 2
check "node 2 killed: nodes 1 and 3 read every file, bytes equal the source" read_on kill 1 3
check "node 3 counted fallbacks" [ "$(fallbacks 3)" -gt 0 ]
check "node 2 leaves the member list when its lease runs out" wait_for 30 "[ \"\$(nmembers 1)\" = 2 ]"
tc_node_start 2 || exit 1
# a restarted node is "joining" (no home) until it has read two member
# lists: wait until every node lists it up, so that they agree on homes
nup() { tc_node_json "$1" "sum(1 for m in s['cluster_members'] if m['state'] == 'up')" 2>/dev/null; }
check "node 2 is back in the member list, up" \
	wait_for 30 "[ \"\$(nup 1)\" = $N ] && [ \"\$(nup 2)\" = $N ] && [ \"\$(nup 3)\" = $N ]"

# ---- Redis hangs, then dies, then comes back empty ----
# node 2 came back with a fresh incarnation; give everyone's suspicion of it
# time to matter no more by reading with nodes 1 and 3 against 2 as home
# all nodes' fallbacks: each reads at most one chunk (1 MiB) from the cold
# store again. Redis being down must add none of its own; a peer that misses
# a deadline on a loaded machine may, and is counted.
all_fallbacks() { local i s=0; for i in $(seq 1 $N); do s=$((s + $(fallbacks "$i"))); done; echo $s; }
fb0=$(all_fallbacks)
cold0=$(tc_cold_bytes)
tc_redis_pause
check "Redis stopped: every node reads every file, bytes equal the source" read_on redis_stop 1 2 3
check "node 1 says Redis is down" wait_for 30 "[ \"\$(tc_node_json 1 \"s['cluster']['redis']\")\" = down ]"
check "node 1 still lists the last members" [ "$(nmembers 1)" = $N ]
err=$(TIERCACHE_SOCKET=$T/n1/sock timeout 10 "$TC_BIN/tierctl" cluster status 2>&1)
check "tierctl cluster status answers while Redis hangs" [ $? = 0 ]
cold1=$(tc_cold_bytes)
pb=$(part_bytes redis_stop)
echo "Redis stopped: cold bytes for the part $((cold1 - cold0)) of $pb"
fb1=$(all_fallbacks)
check "with Redis stopped the cold store is still read about once ($((cold1 - cold0)) for $pb, $((fb1 - fb0)) fallbacks)" \
	[ $((cold1 - cold0)) -le $((pb * 105 / 100 + (fb1 - fb0) * MIB)) ]
tc_redis_resume
check "node 1 says Redis is up again" wait_for 30 "[ \"\$(tc_node_json 1 \"s['cluster']['redis']\")\" = up ]"

tc_redis_kill
check "Redis killed: every node reads every file, bytes equal the source" read_on redis_kill 1 2 3
cold2=$(tc_cold_bytes)
pb=$(part_bytes redis_kill)
fb2=$(all_fallbacks)
check "with Redis killed the cold store is still read about once ($((cold2 - cold1)) for $pb, $((fb2 - fb1)) fallbacks)" \
	[ $((cold2 - cold1)) -le $((pb * 105 / 100 + (fb2 - fb1) * MIB)) ]
tc_redis_restart_empty || exit 1
check "Redis restarted empty: the registry is whole again" \
	wait_for 30 "[ \"\$(tc_redis_cli ZCARD 'tc:{tctest}:members')\" = $N ]"
for i in $(seq 1 $N); do
	check "node $i lists $N members and Redis up again" \
		wait_for 30 "[ \"\$(nmembers $i)\" = $N ] && [ \"\$(tc_node_json $i \"s['cluster']['redis']\")\" = up ]"
done
tcc_finish
