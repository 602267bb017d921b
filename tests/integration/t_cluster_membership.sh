# Join, drain and leave (docs/cluster.md, "Join, drain and leave"): three
# daemons share one counted cold directory and node 1 reads a dataset
# (cold ~1x). A fourth node joins: it is "joining" (no home) until it has
# read two member lists, then up, and the homes that moved to it are
# fetched from their previous homes, not the cold store, when nodes 1, 3
# and 4 read the dataset again. Node 3 then drains (--wait): its chunks go
# to their new homes; stopped, it leaves the member list at once (the
# lease is 20 s), and node 2, which held only its own homes, reads the
# whole dataset without a byte from the cold store and without asking any
# chunk's previous home: every chunk it is now home for was handed to it.
# Every byte read is compared with the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a" "$SRC/b"
for i in $(seq 1 16); do
	head -c $((MIB + (i * 104729) % (2 * MIB))) /dev/urandom >"$SRC/$([ $((i % 2)) = 0 ] && echo a || echo b)/f$i.bin"
done
FILES=$(cd "$SRC" && find . -type f | sed 's|^\./||' | sort)
total=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1

# read_on NODE...: those nodes read every file at once
read_on() { tcc_read_on ds "$FILES" "$@"; }
# states I: "ID:STATE" of every member node I lists, sorted
states() {
	tc_node_json "$1" "' '.join(sorted('%s:%s' % (m['id'], m['state']) for m in s['cluster_members']))" 2>/dev/null
}
field() { tc_node_json "$1" "s['cluster']['$2']"; }
quiet() { "$@" >/dev/null 2>&1; }
node_conf() { tc_node_config "$1" hot=128M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms; }
# node 1's socket is open to others: a client that is not an admin may not drain
as_other=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	as_other="setpriv --reuid=nobody --regid=nogroup --clear-groups"
	chmod 0711 "$T"
fi

for i in 1 2 3; do
	node_conf $i
	if [ $i = 1 ] && [ -n "$as_other" ]; then
		sed -i 's/^\[daemon\]$/[daemon]\nsocket_mode = 0666/' "$T/n1/tiercache.conf"
		chmod 0711 "$T/n1"
	fi
	tc_node_start $i || exit 1
done
for i in 1 2 3; do
	check "node $i lists 3 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:up' ]"
done
check "node 1 reads the dataset: bytes equal the source" read_on 1
cold=$(tc_cold_bytes)
echo "3 nodes: cold bytes $cold for a dataset of $total"
check "cold bytes ~1x the dataset" bash -c "[ $cold -ge $total ] && [ $cold -le $((total * 105 / 100)) ]"

# ---- a fourth node joins ----
node_conf 4
tc_node_start 4 || exit 1
check "node 4 went from joining to up" wait_for 30 "grep -q 'op=member_state node=n4 state=up (joined)' '$T/n4/daemon.log'"
for i in 1 2 3 4; do
	check "node $i lists 4 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:up n4:up' ]"
done
check "nodes 1, 3 and 4 read the dataset at once: bytes equal the source" read_on 1 3 4
cold2=$(tc_cold_bytes)
echo "4 nodes: cold bytes $cold2 (was $cold)"
check "the join read nothing more from the cold store" [ "$cold2" = "$cold" ]
got=$(field 4 prev_home_got)
check "node 4 fetched the chunks whose home it became from their previous homes ($got)" [ "$got" -gt 0 ]
check "node 4 status: state up" [ "$(field 4 state)" = up ]

# ---- node 3 drains, then leaves ----
recv3=$(field 3 peer_bytes_received)
check "tierctl cluster drain --wait on node 3 ends, with success" \
	timeout 60 env TIERCACHE_SOCKET=$T/n3/sock "$TC_BIN/tierctl" cluster drain --wait
check "node 3 status: state draining, drain done" \
	[ "$(field 3 state) $(field 3 drain)" = "draining done" ]
handed=$(field 3 drain_chunks_handed)
check "node 3 handed chunks over ($handed), none failed" \
	bash -c "[ $handed -gt 0 ] && [ $(field 3 drain_chunks_failed) = 0 ] && [ $(field 3 drain_chunks_left) = 0 ]"
taken=0
for i in 1 2 4; do taken=$((taken + $(field $i drain_chunks_taken))); done
check "the new homes kept every chunk handed over ($taken of $handed)" [ "$taken" = "$handed" ]
check "no chunk bytes came back to node 3 (peer bytes received: $recv3 -> $(field 3 peer_bytes_received))" \
	[ "$(field 3 peer_bytes_received)" = "$recv3" ]
check "node 1 lists node 3 as draining" wait_for 10 "[ \"\$(states 1)\" = 'n1:up n2:up n3:draining n4:up' ]"
check "the drain read nothing from the cold store" [ "$(tc_cold_bytes)" = "$cold" ]
asked2=$(field 2 prev_home_asked)
check "node 3 stops cleanly" tc_node_stop 3
check "node 3 removed its membership from Redis as it stopped" \
	[ -z "$(tc_redis_cli ZSCORE 'tc:{tctest}:members' n3)" ]
for i in 1 2 4; do
	check "node $i drops node 3 at once, not when its 20 s lease ends" \
		wait_for 5 "[ \"\$(states $i)\" = 'n1:up n2:up n4:up' ]"
done
check "node 2 reads the dataset: bytes equal the source" read_on 2
check "nothing more from the cold store" [ "$(tc_cold_bytes)" = "$cold" ]
check "node 2 held every chunk it is home for (none asked of a previous home)" \
	[ "$(field 2 prev_home_asked)" = "$asked2" ]
check "node 2 saw no fallback" [ "$(tc_node_json 2 "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))")" = 0 ]

# ---- who may drain, undrain, and without Redis ----
if [ -n "$as_other" ]; then
	$as_other env TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/tierctl" cluster drain >"$T/out" 2>"$T/err"
	check "drain by a client that is not an admin: refused" [ $? != 0 ]
	check "drain by a non-admin: says who may" grep -q "run it as root" "$T/err"
	check "node 1 is still up" [ "$(field 1 state)" = up ]
else
	echo "skipped: the non-admin drain (needs root and setpriv)"
fi
check "node 4 drains" quiet env TIERCACHE_SOCKET=$T/n4/sock "$TC_BIN/tierctl" cluster drain
check "node 1 lists node 4 draining" wait_for 10 "[ \"\$(states 1)\" = 'n1:up n2:up n4:draining' ]"
check "node 4 undrains" quiet env TIERCACHE_SOCKET=$T/n4/sock "$TC_BIN/tierctl" cluster undrain
check "node 1 lists node 4 up again" wait_for 10 "[ \"\$(states 1)\" = 'n1:up n2:up n4:up' ]"
check "node 4 status: drain none" [ "$(field 4 drain)" = none ]
tc_redis_kill
check "node 1 says Redis is down" wait_for 30 "[ \"\$(field 1 redis)\" = down ]"
TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/tierctl" cluster drain >"$T/out" 2>"$T/err"
check "drain without Redis: refused at once" [ $? != 0 ]
check "drain without Redis: says coordination unavailable" grep -q "coordination unavailable" "$T/err"
check "node 1 is still up" [ "$(field 1 state)" = up ]
check "node 2 still reads the dataset: bytes equal the source" read_on 2
tcc_finish
