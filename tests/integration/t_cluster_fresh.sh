# A fresh cluster asks no previous home (docs/cluster.md, "Join, drain and
# leave"): three daemons started one after the other, with the default
# cluster.prev_home_window (1 minute), all empty. While they join, nobody
# holds a chunk (status prev_home_others_hold false), so the member list's
# changes open no window and nothing is asked: once all are up,
# prev_home_asking is false at once. Node 1 reads part a: every chunk misses
# once at its home, which reads the cold store without asking
# (prev_home_asked 0, prev_home_skipped one per chunk, cold bytes 1x). Then
# a fourth node joins the running cluster, whose members now hold chunks:
# the change opens the window, and the homes that moved to node 4 come from
# their previous homes (no cold bytes). Every byte read is compared with
# the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a"
for i in $(seq 1 12); do head -c $((MIB + (i * 104729) % (2 * MIB))) /dev/urandom >"$SRC/a/f$i.bin"; done
files() { (cd "$SRC" && find "$1" -type f | sort); }
bytes() { find "$SRC/$1" -type f -printf '%s\n' | awk '{s += $1} END {print s}'; }
chunks() { find "$SRC/$1" -type f -printf '%s\n' | awk -v c=$MIB '{n += int(($1 + c - 1) / c)} END {print n}'; }
states() {
	tc_node_json "$1" "' '.join(sorted('%s:%s' % (m['id'], m['state']) for m in s['cluster_members']))" 2>/dev/null
}
field() { tc_node_json "$1" "s['cluster']['$2']"; }
sum() {
	local f=$1 i s=0
	shift
	for i in "$@"; do s=$((s + $(field "$i" "$f"))); done
	echo $s
}
node_conf() { tc_node_config "$1" hot=128M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms; }

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
for i in 1 2 3; do node_conf $i; done
for i in 1 2 3; do tc_node_start $i || exit 1; done
for i in 1 2 3; do
	check "node $i lists 3 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:up' ]"
done
for i in 1 2 3; do
	check "node $i: no other member holds a chunk" [ "$(field $i prev_home_others_hold)" = False ]
	check "node $i asks no previous home (the default 1 min window was not opened)" \
		[ "$(field $i prev_home_asking)" = False ]
done
check "node 1 reads part a: bytes equal the source" tcc_read_on ds "$(files a)" 1
cold=$(tc_cold_bytes)
echo "part a: $(chunks a) chunks, $(bytes a) bytes; cold bytes $cold"
check "cold bytes 1x part a" [ "$cold" = "$(bytes a)" ]
check "no previous home asked in a fresh cluster" [ "$(sum prev_home_asked 1 2 3)" = 0 ]
check "one ask skipped per chunk, at its home ($(sum prev_home_skipped 1 2 3) of $(chunks a))" \
	[ "$(sum prev_home_skipped 1 2 3)" = "$(chunks a)" ]

# ---- a fourth node joins the running cluster: it asks previous homes ----
node_conf 4
tc_node_start 4 || exit 1
for i in 1 2 3 4; do
	check "node $i lists 4 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up n3:up n4:up' ]"
done
check "node 4 joined a running cluster whose members hold chunks" \
	wait_for 30 "[ \"\$(field 4 prev_home_others_hold)\" = True ]"
check "node 4 asks previous homes after its join" [ "$(field 4 prev_home_asking)" = True ]
check "nodes 1 and 4 read part a again: bytes equal the source" tcc_read_on ds "$(files a)" 1 4
check "the join read nothing more from the cold store" [ "$(tc_cold_bytes)" = "$cold" ]
check "node 4 got the chunks whose home it became from their previous homes ($(field 4 prev_home_got))" \
	[ "$(field 4 prev_home_got)" -gt 0 ]
for i in 1 2 3 4; do
	check "node $i stops cleanly" tc_node_stop "$i"
done
tcc_finish
