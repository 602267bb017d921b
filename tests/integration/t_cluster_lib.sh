# The cluster tests' harness (lib_cluster.sh) on what works without
# [cluster]: a real redis-server that answers, stalls when paused and comes
# back empty after a restart; the counted cold directory under two daemons
# that do not share (the control of the cluster tests: each reads the whole
# dataset, so cold bytes are 2x the dataset, and every byte equals the
# source); node configs, keys, pause/kill; and a cleanup that stops
# everything by pid even when a test dies half-way.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"

# ---- Redis ----
tc_redis_start || exit 1
check "redis answers PING on its socket" [ "$(tc_redis_cli ping)" = PONG ]
check "the socket is in the test's dir, mode 700" [ "$(stat -c %a "$REDIS_SOCK")" = 700 ]
check "redis listens on no TCP port" bash -c "! ss -Hltnp | grep -q 'pid=$REDIS_PID,'"
check "SET works" [ "$(tc_redis_cli set tc:probe 42)" = OK ]
tc_redis_pause
check "paused: PING with a 2 s deadline fails" bash -c "! timeout 2 redis-cli -s '$REDIS_SOCK' ping >/dev/null 2>&1"
tc_redis_resume
check "resumed: PING answers" wait_for 10 '[ "$(tc_redis_cli ping)" = PONG ]'
check "resumed: the key is still there" [ "$(tc_redis_cli get tc:probe)" = 42 ]
old=$REDIS_PID
tc_redis_restart_empty || exit 1
check "restart-empty: a new server" [ "$REDIS_PID" != "$old" ]
check "restart-empty: the old one is gone" bash -c "! kill -0 $old 2>/dev/null"
check "restart-empty: PING answers on the same socket" [ "$(tc_redis_cli ping)" = PONG ]
check "restart-empty: the key set before is gone" [ -z "$(tc_redis_cli get tc:probe)" ]
check "restart-empty: no keys at all" [ "$(tc_redis_cli dbsize)" = 0 ]

# ---- keys and configs ----
tc_cluster_key second
check "cluster key: mode 600" [ "$(stat -c %a "$CLUSTER_KEY")" = 600 ]
check "cluster key: one line of 64 hex digits" grep -qxE '[0-9a-f]{64}' "$CLUSTER_KEY"
check "cluster key: one line only" [ "$(wc -l <"$CLUSTER_KEY")" = 1 ]
check "second key differs" bash -c "! cmp -s '$CLUSTER_KEY' '$CLUSTER_KEY2'"
check "rotation file: new key first, old key second" \
	[ "$(cat "$CLUSTER_KEY2" "$CLUSTER_KEY")" = "$(cat "$T/cluster-rotate.key")" ]

SRC=$T/src
mkdir -p "$SRC/sub"
head -c $((2 * 1048576 + 4321)) /dev/urandom >"$SRC/a.bin"
head -c 1048576 /dev/urandom >"$SRC/b.bin"
head -c 777 /dev/urandom >"$SRC/sub/c.bin"
head -c $((3 * 1048576 - 1)) /dev/urandom >"$SRC/sub/d.bin"
FILES="a.bin b.bin sub/c.bin sub/d.bin"
total=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
tc_countfs_start "$SRC" || exit 1

tc_node_config 3 hot=32M warm=none chunk=1M cluster.peer_suspect=7s
c=$T/n3/tiercache.conf
check "node config with [cluster]: the section" grep -qx '\[cluster\]' "$c"
check "node config: node_id, redis, key_file" bash -c "grep -qx 'node_id = n3' '$c' &&
	grep -qx 'redis = unix:$REDIS_SOCK' '$c' && grep -qx 'key_file = $CLUSTER_KEY' '$c'"
check "node config: peer port on 127.0.0.4" grep -qxE 'peer_listen = 127\.0\.0\.4:[0-9]+' "$c"
check "node config: short heartbeat and lease, extra keys" bash -c "grep -qx 'heartbeat = 200ms' '$c' &&
	grep -qx 'lease = 1s' '$c' && grep -qx 'peer_suspect = 7s' '$c'"
check "node config: its own socket, state and tier, the counted cold dir" bash -c "
	grep -qx 'socket = $T/n3/sock' '$c' && grep -qx 'state_dir = $T/n3/state' '$c' &&
	grep -qx 'path = $T/n3/hot' '$c' && grep -qx 'path = $COLD' '$c' && ! grep -q warm '$c'"
check "an unknown argument is refused" bash -c "! (. '$(dirname "$0")/lib.sh' '$O' >/dev/null;
	. '$(dirname "$0")/lib_cluster.sh'; tc_node_config 4 bogus=1 >/dev/null)"

# ---- the control: two daemons without [cluster] on the counted cold dir ----
for i in 1 2; do
	tc_node_config $i hot=32M warm=64M chunk=1M cluster=off
	check "node $i: no [cluster] in the control's config" bash -c "! grep -q cluster '$T/n$i/tiercache.conf'"
	tc_node_start $i || exit 1
done
check "the nodes are two processes" [ "$(tc_node_pid 1)" != "$(tc_node_pid 2)" ]
check "node 2's status answers on its own socket" \
	[ "$(tc_node_json 2 "s['datasets'][0]['name'] if isinstance(s.get('datasets'), list) else 'ds'")" = ds ]
check "nothing read from cold yet" [ "$(tc_cold_bytes)" = 0 ]

read_all() { tcc_read_one "$1" ds 0 $FILES; } # node I reads every file; bytes equal the source
check "node 1 reads the dataset: bytes equal the source" read_all 1
check "after node 1: cold bytes = 1x the dataset ($total)" [ "$(tc_cold_bytes)" = "$total" ]
check "node 2 reads the dataset: bytes equal the source" read_all 2
check "after node 2: cold bytes = 2x the dataset" [ "$(tc_cold_bytes)" = $((2 * total)) ]
check "per file: a.bin read twice" [ "$(tc_cold_file_bytes /a.bin)" = $((2 * (2 * 1048576 + 4321))) ]
check "node 1 again: bytes equal the source" read_all 1
check "node 1 again: all hits, no new cold bytes" [ "$(tc_cold_bytes)" = $((2 * total)) ]
check "both at once (tcverify, 2 readers each): bytes equal the source" bash -c "
	TIERCACHE_SOCKET=$T/n1/sock '$TC_TESTS/tcverify' concurrent ds/sub/d.bin '$SRC/sub/d.bin' 2 >/dev/null &
	p=\$!
	TIERCACHE_SOCKET=$T/n2/sock '$TC_TESTS/tcverify' concurrent ds/sub/d.bin '$SRC/sub/d.bin' 2 >/dev/null || exit 1
	wait \$p"
check "node 1's status counts the dataset once from cold" \
	[ "$(tc_node_json 1 "s['counters']['bytes_from_cold']")" = "$total" ]

# pause, resume, kill
tc_node_pause 2
check "paused node: status with a 2 s deadline fails" bash -c \
	"! TIERCACHE_SOCKET=$T/n2/sock timeout 2 '$TC_BIN/tierctl' status >/dev/null 2>&1"
tc_node_resume 2
check "resumed node answers" wait_for 10 "TIERCACHE_SOCKET=$T/n2/sock '$TC_BIN/tierctl' status >/dev/null 2>&1"
p2=$(tc_node_pid 2)
tc_node_kill 2
check "killed node: the process is gone" bash -c "! kill -0 $p2 2>/dev/null"
check "node 1 still reads" read_all 1
tc_node_start 2 || exit 1
# (chunks not yet in its index when killed are filled again: at most once more)
check "node 2 restarted after kill -9: bytes equal the source" read_all 2
check "node 2 restarted: at most the dataset once more from cold" \
	[ "$(tc_cold_bytes)" -le $((3 * total)) ]
tc_node_env 1
check "tc_node_env: tierctl talks to node 1" bash -c "'$TC_BIN/tierctl' status >/dev/null"

# ---- cleanup when a test dies half-way, with a paused node and Redis ----
mkdir -p "$T/inner"
cat >"$T/inner.sh" <<EOF
. '$(dirname "$0")/lib.sh' '$O'
. '$(dirname "$0")/lib_cluster.sh'
echo "\$T" >'$T/inner/t'
tc_redis_start || exit 1
tc_countfs_start '$SRC' || exit 1
tc_node_config 1 cluster=off
tc_node_start 1 || exit 1
TIERCACHE_SOCKET=\$T/n1/sock '$TC_BIN/tierctl' cat ds/a.bin >/dev/null
echo "\$REDIS_PID \$COUNTFS_PID \$(tc_node_pid 1) \$COLD" >'$T/inner/pids'
tc_node_pause 1
tc_redis_pause
exit 3
EOF
TMPDIR=$T/inner bash "$T/inner.sh" >"$T/inner.log" 2>&1
rc=$?
check "inner test ended with its own status" [ $rc = 3 ]
read -r ip_redis ip_countfs ip_node ip_cold <"$T/inner/pids" || true
check "inner test started redis, countfs and a node" [ -n "${ip_node:-}" ]
check "after it: its redis-server is gone" bash -c "! kill -0 ${ip_redis:-0} 2>/dev/null"
check "after it: its paused node is gone" bash -c "! kill -0 ${ip_node:-0} 2>/dev/null"
check "after it: its tccountfs is gone" bash -c "! kill -0 ${ip_countfs:-0} 2>/dev/null"
check "after it: its mount is gone" bash -c "! grep -qF ' ${ip_cold:-/nonexistent} ' /proc/self/mounts"
check "after it: its temp dir is removed" bash -c "[ ! -e '$(cat "$T/inner/t")' ]"

tcc_finish
