# A drain outlives a restart (docs/cluster.md, "Join, drain and leave"):
# three daemons share a counted cold directory; node 1 reads a dataset,
# node 3 drains (--wait) and is restarted. It comes back draining (status
# drain_restored), never joining or up, so it is no home: nodes 1 and 2
# list it draining, its walk runs again, and nodes 1 and 2 read the dataset
# without a byte from the cold store. Undrained and restarted again, it
# comes back joining, then up (the record is gone). Every byte read is
# compared with the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a"
for i in $(seq 1 12); do
	head -c $((MIB + (i * 104729) % (2 * MIB))) /dev/urandom >"$SRC/a/f$i.bin"
done
FILES=$(cd "$SRC" && find . -type f | sed 's|^\./||' | sort)
total=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1

read_on() { tcc_read_on ds "$FILES" "$@"; }
states() {
	tc_node_json "$1" "' '.join(sorted('%s:%s' % (m['id'], m['state']) for m in s['cluster_members']))" 2>/dev/null
}
field() { tc_node_json "$1" "s['cluster']['$2']"; }
node_conf() { tc_node_config "$1" hot=128M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms; }

for i in 1 2 3; do
	node_conf $i
	tc_node_start $i || exit 1
done
for i in 1 2 3; do
	check "node $i lists 3 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:up' ]"
done
check "node 1 reads the dataset: bytes equal the source" read_on 1
cold=$(tc_cold_bytes)
check "cold bytes 1x the dataset ($cold of $total)" [ "$cold" = "$total" ]
check "tierctl cluster drain --wait on node 3 ends, with success" \
	env TIERCACHE_SOCKET="$T/n3/sock" timeout 120 "$TC_BIN/tierctl" cluster drain --wait
check "node 3 handed chunks over ($(field 3 drain_chunks_handed))" [ "$(field 3 drain_chunks_handed)" -gt 0 ]
check "node 3 is not a restored drain before the restart" [ "$(field 3 drain_restored)" = False ]

# ---- restarted: still draining ----
check "node 3 stops cleanly" tc_node_stop 3
tc_node_start 3 || exit 1
check "node 3 says its drain was kept from before the restart" \
	grep -q "op=drain_restore node=n3" "$T/n3/daemon.log"
st=$(tc_node_json 3 "s['cluster']['state'], s['cluster']['drain_restored']")
check "node 3 status: state draining, drain_restored ($st)" [ "$st" = "draining True" ]
for i in 1 2 3; do
	check "node $i lists node 3 draining" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:draining' ]"
done
check "node 3's walk ran again" wait_for 60 "[ \"\$(field 3 drain)\" = done ]"
check "node 3 is still draining after its walk" [ "$(field 3 state)" = draining ]
check "node 3 never went up after the restart" \
	bash -c "! sed -n '/op=drain_restore/,\$p' '$T/n3/daemon.log' | grep -q 'op=member_state node=n3 state=up'"
check "nodes 1 and 2 read the dataset: bytes equal the source" read_on 1 2
check "nothing more from the cold store" [ "$(tc_cold_bytes)" = "$cold" ]

# ---- undrained: the record is gone, a restart makes it a home again ----
check "node 3 undrains" env TIERCACHE_SOCKET="$T/n3/sock" "$TC_BIN/tierctl" cluster undrain
check "node 3 stops cleanly again" tc_node_stop 3
tc_node_start 3 || exit 1
check "node 3 joins, then goes up" wait_for 30 "[ \"\$(field 3 state)\" = up ]"
st=$(tc_node_json 3 "s['cluster']['drain'], s['cluster']['drain_restored']")
check "node 3 status: drain none, not restored ($st)" [ "$st" = "none False" ]
check "node 1 lists node 3 up" wait_for 30 "[ \"\$(states 1)\" = 'n1:up n2:up n3:up' ]"
check "nodes 1, 2 and 3 read the dataset: bytes equal the source" read_on 1 2 3
tcc_finish
