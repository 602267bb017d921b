# The admin broadcast's edges (docs/cluster.md, "Admin broadcast"): a
# client that is not an admin cannot send a command to the cluster
# (nothing is published); evict and demote reach every node; an entry that
# no tiercached wrote (XADDed by redis-cli) is skipped, counted, and the
# position moves past it; a node that was away while the stream was
# trimmed past its position says it missed entries (log and status).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=2
SRC=$T/cold
mkdir -p "$SRC"
head -c 2500000 /dev/urandom >"$SRC/a.bin"
head -c 1500000 /dev/urandom >"$SRC/b.bin"
STREAM='tc:{tctest}:admin'
tc_redis_start || exit 1
tc_cluster_key
as_other=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	as_other="setpriv --reuid=nobody --regid=nogroup --clear-groups"
	chmod 0711 "$T"
fi
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=64M warm=128M chunk=1M
	if [ $i = 1 ] && [ -n "$as_other" ]; then
		sed -i 's/^\[daemon\]$/[daemon]\nsocket_mode = 0666/' "$T/n1/tiercache.conf"
		chmod 0711 "$T/n1"
	fi
	tc_node_start "$i" || exit 1
done
ctl() { local i=$1; shift; TIERCACHE_SOCKET=$T/n$i/sock "$TC_BIN/tierctl" "$@"; }
admin() { tc_node_json "$1" "s['cluster_admin']['$2']" 2>/dev/null; }
members_up() { tc_node_json "$1" "sum(1 for m in s['cluster_members'] if m['state'] == 'up')" 2>/dev/null; }
# resident I PATH: "hot warm" bytes of one file on node I
resident() {
	ctl "$1" warm --check --json "ds/$2" 2>/dev/null |
		python3 -c "import json,sys; w=json.load(sys.stdin); print(w['hot_bytes'], w['warm_bytes'])"
}
quiet_ok() { "$@" >/dev/null 2>&1; }
xlen() { tc_redis_cli XLEN "$STREAM"; }
for i in $(seq 1 $N); do
	check "node $i sees $N members" wait_for 30 "[ \"\$(members_up $i)\" = $N ]"
	check "node $i has a stream position" wait_for 30 "[ -n \"\$(admin $i position)\" ]"
done
for i in $(seq 1 $N); do
	for f in a b; do
		check "node $i reads ds/$f.bin: bytes equal the source" \
			bash -c "TIERCACHE_SOCKET=$T/n$i/sock '$TC_BIN/tierctl' cat ds/$f.bin | cmp -s - '$SRC/$f.bin'"
	done
	check "node $i holds ds/a.bin on hot" [ "$(resident $i a.bin)" = "2500000 0" ]
done

# ---- not an admin ----
if [ -n "$as_other" ]; then
	len0=$(xlen)
	$as_other env TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/tierctl" --cluster evict ds/a.bin >"$T/out" 2>"$T/err"
	check "--cluster evict by a client that is not an admin: refused" [ $? = 1 ]
	check "... saying who may" grep -q "run it as root" "$T/err"
	check "... and nothing was published (XLEN $len0)" [ "$(xlen)" = "$len0" ]
	check "node 1 still holds ds/a.bin" [ "$(resident 1 a.bin)" = "2500000 0" ]
else
	echo "skipped: the non-admin refusal (needs root and setpriv)"
fi

# ---- demote and evict reach every node ----
check "tierctl --cluster demote ds/a.bin --to warm" quiet_ok ctl 2 --cluster demote ds/a.bin --to warm
for i in $(seq 1 $N); do
	check "node $i moved ds/a.bin to warm" wait_for 30 "[ \"\$(resident $i a.bin)\" = '0 2500000' ]"
done
check "tierctl --cluster evict ds/b.bin" ctl 1 --cluster evict ds/b.bin
for i in $(seq 1 $N); do
	check "node $i evicted ds/b.bin" wait_for 30 "[ \"\$(resident $i b.bin)\" = '0 0' ]"
	check "node $i applied 2 entries" wait_for 30 "[ \"\$(admin $i applied)\" = 2 ]"
done

# ---- an entry no tiercached wrote ----
bad=$(tc_redis_cli XADD "$STREAM" '*' op 99 payload x from intruder)
check "redis-cli XADDed a malformed entry ($bad)" grep -qE '^[0-9]+-[0-9]+$' <<<"$bad"
for i in $(seq 1 $N); do
	check "node $i skipped it and counted it" wait_for 30 "[ \"\$(admin $i skipped)\" = 1 ]"
	check "node $i moved its position past it" wait_for 30 "[ \"\$(admin $i position)\" = '$bad' ]"
	check "node $i applied nothing more" [ "$(admin $i applied)" = 2 ]
	check "node $i logged the skip" grep -q "op=cluster_admin_skip .*id=$bad" "$T/n$i/daemon.log"
done

# ---- away while the stream was trimmed past its position ----
check "node 2 has missed nothing yet" [ "$(admin 2 missed_entries)" = False ]
pos2=$(admin 2 position)
check "node 2 stops" tc_node_stop 2
check "tierctl --cluster reload (1) with node 2 down" quiet_ok ctl 1 --cluster reload
check "tierctl --cluster reload (2) with node 2 down" quiet_ok ctl 1 --cluster reload
check "node 1 applied both" wait_for 30 "[ \"\$(admin 1 applied)\" = 4 ]"
check "the stream is trimmed to its last entry" [ "$(tc_redis_cli XTRIM "$STREAM" MAXLEN 1)" -ge 1 ]
check "node 2 comes back" tc_node_start 2
check "node 2 says it missed entries" wait_for 30 "[ \"\$(admin 2 missed_entries)\" = True ]"
check "... after its old position" [ "$(admin 2 missed_after)" = "$pos2" ]
check "... and logged what to do" grep -q 'op=cluster_admin_missed .*action="compare this node' "$T/n2/daemon.log"
check "node 2 applied the entry that is left" wait_for 30 "[ \"\$(admin 2 applied)\" = 1 ]"
check "node 1 missed nothing" [ "$(admin 1 missed_entries)" = False ]
tcc_finish
