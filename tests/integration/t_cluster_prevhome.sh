# The previous-home ask only while the cluster is in motion (docs/cluster.md,
# "Join, drain and leave"; cluster.prev_home_window). Three daemons share a
# counted cold directory, with a window of 0 (ask only while a member joins
# or drains). Once all are up (status prev_home_asking false), node 1 reads
# part a: every chunk is missed once,
# at its home, which goes to the cold store without asking anyone
# (prev_home_asked unchanged, prev_home_skipped one per chunk, cold bytes
# 1x). A fourth node joins (window 20 s): nodes 1, 3 and 4 read part a
# again, and the chunks whose home moved to node 4 come from their
# previous homes, not the cold store. After node 4's window, node 1 reads
# part b: no previous home is asked anywhere, cold bytes 1x part b. Then
# node 3 drains: nodes 1 and 2 have no window, but a draining member keeps
# the asks on, so its chunks go to their new homes and nothing is read
# from the cold store. Every byte read is compared with the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a" "$SRC/b"
for i in $(seq 1 12); do
	head -c $((MIB + (i * 104729) % (2 * MIB))) /dev/urandom >"$SRC/a/f$i.bin"
	head -c $((MIB + (i * 7919) % (2 * MIB))) /dev/urandom >"$SRC/b/f$i.bin"
done
files() { (cd "$SRC" && find "$1" -type f | sort); }
bytes() { find "$SRC/$1" -type f -printf '%s\n' | awk '{s += $1} END {print s}'; }
chunks() { find "$SRC/$1" -type f -printf '%s\n' | awk -v c=$MIB '{n += int(($1 + c - 1) / c)} END {print n}'; }

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1

states() {
	tc_node_json "$1" "' '.join(sorted('%s:%s' % (m['id'], m['state']) for m in s['cluster_members']))" 2>/dev/null
}
field() { tc_node_json "$1" "s['cluster']['$2']"; }
# sum FIELD NODE...: the field summed over those nodes
sum() {
	local f=$1 i s=0
	shift
	for i in "$@"; do s=$((s + $(field "$i" "$f"))); done
	echo $s
}
settled() { wait_for "$2" "[ \"\$(field $1 prev_home_asking)\" = False ]"; }
node_conf() { tc_node_config "$1" hot=128M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms "cluster.prev_home_window=$2"; }

for i in 1 2 3; do
	node_conf $i 0
	tc_node_start $i || exit 1
done
for i in 1 2 3; do
	check "node $i lists 3 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:up' ]"
done
for i in 1 2 3; do
	check "node $i: the cluster settled, previous homes no longer asked" settled $i 30
done

# ---- a settled cluster: home misses go to the cold store at once ----
asked0=$(sum prev_home_asked 1 2 3)
skipped0=$(sum prev_home_skipped 1 2 3)
check "node 1 reads part a: bytes equal the source" tcc_read_on ds "$(files a)" 1
cold=$(tc_cold_bytes)
echo "part a: $(chunks a) chunks, $(bytes a) bytes; cold bytes $cold"
check "cold bytes 1x part a" [ "$cold" = "$(bytes a)" ]
check "no previous home asked in a settled cluster" [ "$(sum prev_home_asked 1 2 3)" = "$asked0" ]
skipped=$(($(sum prev_home_skipped 1 2 3) - skipped0))
check "one ask skipped per chunk, at its home ($skipped of $(chunks a))" [ "$skipped" = "$(chunks a)" ]
check "no previous home was asked for a chunk (prev_home_served + not_held 0)" \
	[ "$(($(sum prev_home_served 1 2 3) + $(sum prev_home_not_held 1 2 3)))" = 0 ]

# ---- a fourth node joins: the new home asks the previous homes ----
node_conf 4 20s
tc_node_start 4 || exit 1
for i in 1 2 3 4; do
	check "node $i lists 4 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:up n4:up' ]"
done
check "node 4 asks previous homes after the join" [ "$(field 4 prev_home_asking)" = True ]
check "nodes 1, 3 and 4 read part a: bytes equal the source" tcc_read_on ds "$(files a)" 1 3 4
check "the join read nothing more from the cold store" [ "$(tc_cold_bytes)" = "$cold" ]
got=$(field 4 prev_home_got)
check "node 4 fetched the chunks whose home it became from their previous homes ($got)" [ "$got" -gt 0 ]
check "... and the previous homes served them ($(sum prev_home_served 1 2 3))" \
	[ "$(sum prev_home_served 1 2 3)" = "$got" ]

# ---- settled again: nobody asks ----
for i in 1 2 3 4; do
	check "node $i settled after the join" settled $i 60
done
asked1=$(sum prev_home_asked 1 2 3 4)
skipped1=$(sum prev_home_skipped 1 2 3 4)
check "node 1 reads part b: bytes equal the source" tcc_read_on ds "$(files b)" 1
cold2=$(tc_cold_bytes)
check "cold bytes 1x part b ($((cold2 - cold)) of $(bytes b))" [ "$((cold2 - cold))" = "$(bytes b)" ]
check "no previous home asked once settled" [ "$(sum prev_home_asked 1 2 3 4)" = "$asked1" ]
skipped=$(($(sum prev_home_skipped 1 2 3 4) - skipped1))
check "one ask skipped per chunk of part b ($skipped of $(chunks b))" [ "$skipped" = "$(chunks b)" ]

# ---- a drain hands over through asks, windows or not ----
check "tierctl cluster drain --wait on node 3 ends, with success" \
	env TIERCACHE_SOCKET="$T/n3/sock" timeout 120 "$TC_BIN/tierctl" cluster drain --wait
handed=$(field 3 drain_chunks_handed)
check "node 3 handed chunks over ($handed), none failed" \
	bash -c "[ $handed -gt 0 ] && [ $(field 3 drain_chunks_failed) = 0 ]"
check "the new homes kept every chunk handed over" [ "$(sum drain_chunks_taken 1 2 4)" = "$handed" ]
check "nodes 1 and 2 (no window) took chunks too ($(sum drain_chunks_taken 1 2))" [ "$(sum drain_chunks_taken 1 2)" -gt 0 ]
check "the drain read nothing from the cold store" [ "$(tc_cold_bytes)" = "$cold2" ]
check "nodes 1, 2 and 4 read parts a and b: bytes equal the source" tcc_read_on ds "$(files a; files b)" 1 2 4
check "still nothing from the cold store" [ "$(tc_cold_bytes)" = "$cold2" ]
tcc_finish
