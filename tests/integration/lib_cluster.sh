# Cluster test helpers (sourced after lib.sh, and after lib_mount.sh if a test
# uses both): a real redis-server on a Unix socket in $T, a counted cold
# directory (tccountfs) shared by every node, and up to four tiercached, node
# I in $T/nI with its peer port on 127.0.0.$((I+1)). Everything started here
# is stopped by pid on exit, even when a check failed half-way.
#
#   tc_redis_start / tc_redis_stop / tc_redis_kill / tc_redis_pause /
#   tc_redis_resume / tc_redis_restart_empty          REDIS_SOCK, REDIS_PID
#   tc_countfs_start SRC / tc_countfs_stop / tc_cold_bytes / tc_cold_file_bytes PATH
#   tc_cold_readdirs / tc_cold_readdirs_root
#                                                     COLD, COUNT_FILE
#   tc_cluster_key [second]                           CLUSTER_KEY (, CLUSTER_KEY2)
#   tc_node_config I [hot=64M] [warm=128M|none] [chunk=1M] [dataset=ds] [ds.KEY=VALUE]
#                  [cluster=off] [cluster.KEY=VALUE]...
#   tc_node_start I / tc_node_stop I / tc_node_kill I / tc_node_pause I /
#   tc_node_resume I / tc_node_env I / tc_node_status_json I / tc_node_json I EXPR
#   tcc_finish                                        stops the nodes, then finish
REDIS_SOCK=
REDIS_PID=
COLD=
COUNT_FILE=
COUNTFS_PID=
NODE_PID=() # by node number
TCC_PORT=   # every node's peer port (each node has its own address)

tcc_cleanup() {
	local i
	for i in "${!NODE_PID[@]}"; do
		[ -n "${NODE_PID[$i]}" ] || continue
		kill -CONT "${NODE_PID[$i]}" 2>/dev/null # a paused node cannot stop
		kill -TERM "${NODE_PID[$i]}" 2>/dev/null
		wait "${NODE_PID[$i]}" 2>/dev/null
	done
	if [ -n "$REDIS_PID" ]; then
		kill -CONT "$REDIS_PID" 2>/dev/null
		kill -KILL "$REDIS_PID" 2>/dev/null
		wait "$REDIS_PID" 2>/dev/null
	fi
	tc_countfs_stop
	if declare -F tcm_cleanup >/dev/null; then tcm_cleanup; else tc_cleanup; fi
}
trap tcc_cleanup EXIT

# ---- Redis ----

tc_redis_start() {
	REDIS_SOCK=$T/redis.sock
	mkdir -p "$T/redis"
	rm -f "$REDIS_SOCK"
	redis-server --port 0 --unixsocket "$REDIS_SOCK" --unixsocketperm 700 \
		--save "" --appendonly no --dir "$T/redis" >>"$T/redis.log" 2>&1 &
	REDIS_PID=$!
	local end=$((SECONDS + 20))
	while [ $SECONDS -lt $end ]; do
		[ "$(timeout 2 redis-cli -s "$REDIS_SOCK" ping 2>/dev/null)" = PONG ] && return 0
		kill -0 "$REDIS_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "redis-server did not answer PING on $REDIS_SOCK; log:"
	cat "$T/redis.log"
	return 1
}

tc_redis_stop() {
	[ -n "$REDIS_PID" ] || return 0
	kill -CONT "$REDIS_PID" 2>/dev/null
	kill -TERM "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	REDIS_PID=
}

tc_redis_kill() {
	[ -n "$REDIS_PID" ] || return 0
	kill -KILL "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	REDIS_PID=
}

# SIGSTOP: the socket still accepts (the kernel's backlog) and nothing answers
tc_redis_pause() { kill -STOP "$REDIS_PID"; }
tc_redis_resume() { kill -CONT "$REDIS_PID"; }

# kill -9, then a fresh server with no data on the same socket
tc_redis_restart_empty() {
	tc_redis_kill
	rm -rf "$T/redis"
	tc_redis_start
}

# tc_redis_cli ARGS...: redis-cli on the test's server (2 s at most)
tc_redis_cli() { timeout 2 redis-cli -s "$REDIS_SOCK" "$@"; }

# ---- the counted cold directory ----

# tc_countfs_start SRC: SRC read-only at $T/cold-count through tccountfs
tc_countfs_start() {
	COLD=$T/cold-count
	COUNT_FILE=$T/cold-count.txt
	mkdir -p "$COLD"
	rm -f "$COUNT_FILE"
	"$TC_TESTS/tccountfs" --count-file "$COUNT_FILE" "$1" "$COLD" -f >>"$T/countfs.log" 2>&1 &
	COUNTFS_PID=$!
	local end=$((SECONDS + 20))
	while [ $SECONDS -lt $end ]; do
		mountpoint -q "$COLD" && [ -f "$COUNT_FILE" ] && return 0
		kill -0 "$COUNTFS_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "tccountfs did not mount $1 at $COLD; log:"
	cat "$T/countfs.log"
	return 1
}

# Unmount (lazily if busy) and wait for tccountfs; 1 if it was not clean.
tc_countfs_stop() {
	local rc=0
	[ -n "$COUNTFS_PID" ] || return 0
	if mountpoint -q "$COLD" 2>/dev/null; then
		fusermount3 -u "$COLD" 2>/dev/null || { rc=1; fusermount3 -u -z "$COLD" 2>/dev/null; }
	fi
	local end=$((SECONDS + 10))
	while kill -0 "$COUNTFS_PID" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.05; done
	if kill -0 "$COUNTFS_PID" 2>/dev/null; then
		rc=1
		kill -TERM "$COUNTFS_PID" 2>/dev/null
	fi
	wait "$COUNTFS_PID" 2>/dev/null || rc=1
	COUNTFS_PID=
	return $rc
}

# total bytes read from the counted cold directory so far
tc_cold_bytes() { awk '$1 == "bytes" {print $2}' "$COUNT_FILE"; }
tc_cold_reads() { awk '$1 == "reads" {print $2}' "$COUNT_FILE"; }
# directory listings of the counted cold directory: all, and of its root
tc_cold_readdirs() { awk '$1 == "readdirs" {print $2}' "$COUNT_FILE"; }
tc_cold_readdirs_root() { awk '$1 == "readdirs_root" {print $2}' "$COUNT_FILE"; }
# tc_cold_file_bytes /PATH: bytes read from one file (0 if none)
tc_cold_file_bytes() {
	awk -v p="$1" '$1 == "file" && $2 == p {b = $3} END {print b + 0}' "$COUNT_FILE"
}

# ---- keys and nodes ----

# tc_cluster_key [second]: $T/cluster.key, one key of 64 hex digits, mode
# 600. With "second", also a new key for rotation tests: $T/cluster2.key
# (the new key only) and $T/cluster-rotate.key (proves with the new key,
# still accepts the old one).
tcc_new_key() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; echo; }
tc_cluster_key() {
	CLUSTER_KEY=$T/cluster.key
	(umask 077 && tcc_new_key >"$CLUSTER_KEY")
	if [ "${1:-}" = second ]; then
		CLUSTER_KEY2=$T/cluster2.key
		(umask 077 && tcc_new_key >"$CLUSTER_KEY2" &&
			cat "$CLUSTER_KEY2" "$CLUSTER_KEY" >"$T/cluster-rotate.key")
	fi
}

# one peer port for the run, free on every node's address
tcc_pick_port() {
	local p i
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		[ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && { TCC_PORT=$p; return 0; }
	done
	echo "no free TCP port found for the peer ports"
	return 1
}

tc_node_dir() { echo "$T/n$1"; }

# tc_node_config I [key=value...]: $T/nI/tiercache.conf through tc_config
tc_node_config() {
	local i=$1 hot=64M warm=128M chunk=1M ds=ds cluster=on a k
	shift
	local -a extra=()
	local -A ckeys=(
		[name]=tctest [node_id]=n$i [redis]="unix:$REDIS_SOCK"
		[key_file]="$T/cluster.key" [heartbeat]=200ms [lease]=1s
		[peer_connect_timeout]=2s [peer_first_byte_timeout]=5s [peer_transfer_timeout]=20s)
	local -a corder=(name node_id redis peer_listen key_file heartbeat lease
		peer_connect_timeout peer_first_byte_timeout peer_transfer_timeout)
	for a in "$@"; do
		case $a in
		hot=*) hot=${a#*=} ;;
		warm=*) warm=${a#*=} ;;
		chunk=*) chunk=${a#*=} ;;
		dataset=*) ds=${a#*=} ;;
		cluster=off) cluster=off ;;
		ds.*=*) extra+=("${a#ds.}") ;; # a line of the [dataset] section: ds.policy=clairvoyant
		cluster.*=*)
			k=${a#cluster.}
			k=${k%%=*}
			[ -n "${ckeys[$k]+x}" ] || corder+=("$k")
			ckeys[$k]=${a#*=}
			;;
		*)
			echo "tc_node_config: unknown argument $a"
			return 1
			;;
		esac
	done
	if [ "$cluster" = on ]; then
		[ -n "$TCC_PORT" ] || tcc_pick_port || return 1
		[ -n "${ckeys[peer_listen]+x}" ] || ckeys[peer_listen]="127.0.0.$((i + 1)):$TCC_PORT"
		extra+=("[cluster]")
		for k in "${corder[@]}"; do extra+=("$k = ${ckeys[$k]}"); done
	fi
	mkdir -p "$T/n$i"
	TC_DIR=$T/n$i TC_COLD=${COLD:-$T/cold} TC_DATASET=$ds tc_config "$hot" "$warm" "$chunk" "${extra[@]}"
	mv "$T/n$i/tc.conf" "$T/n$i/tiercache.conf"
}

tc_node_env() { export TIERCACHE_SOCKET=$T/n$1/sock; }

tc_node_start() {
	local i=$1 d=$T/n$1
	rm -f "$d/sock"
	${TC_WRAP:-} "$TC_BIN/tiercached" -c "$d/tiercache.conf" >>"$d/daemon.log" 2>&1 &
	NODE_PID[$i]=$!
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		[ -S "$d/sock" ] && TIERCACHE_SOCKET=$d/sock "$TC_BIN/tierctl" status >/dev/null 2>&1 && return 0
		kill -0 "${NODE_PID[$i]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "tiercached of node $i did not start; log:"
	cat "$d/daemon.log"
	return 1
}

# tcc_read_one NODE DATASET FIRST FILE...: node NODE reads DATASET/FILE for
# each FILE (paths under $SRC) through tierctl cat, each read bounded by
# 120 s, starting at the FIRST-th; every byte compared with $SRC/FILE; a
# line per difference or failed read. 0 if all were equal.
tcc_read_one() {
	local i=$1 ds=$2 r=$3 f k bad=0
	shift 3
	local -a l=("$@")
	local n=${#l[@]}
	for ((k = 0; k < n; k++)); do
		f=${l[$(((k + r) % n))]}
		timeout 120 env TIERCACHE_SOCKET="$T/n$i/sock" "$TC_BIN/tierctl" cat "$ds/$f" | cmp -s - "$SRC/$f" || {
			echo "node $i: $ds/$f differs from the source or the read failed"
			bad=1
		}
	done
	return $bad
}

# tcc_read_on DATASET FILES NODE...: those nodes read every file of FILES (a
# newline-separated list of paths under $SRC) at once, the k-th of them
# starting k/count of the way into the list, so that they ask for different
# chunks first (tcc_read_one). 0 if every byte was equal.
tcc_read_on() {
	local ds=$1 files=$2 i k=0 bad=0
	shift 2
	local -a list pids=()
	mapfile -t list <<<"$files"
	for i in "$@"; do
		tcc_read_one "$i" "$ds" $((k * ${#list[@]} / $#)) "${list[@]}" >"$T/read-$i.out" 2>&1 &
		pids+=($!)
		k=$((k + 1))
	done
	for i in "${pids[@]}"; do wait "$i" || bad=1; done
	for i in "$@"; do cat "$T/read-$i.out"; done
	return $bad
}

# tc_node_members_up I N [SECS]: wait until node I lists N members up
# (default 30 s)
tc_node_members_up() {
	wait_for "${3:-30}" "[ \"\$(tc_node_json $1 'sum(m[\"state\"] == \"up\" for m in s[\"cluster_members\"])' 2>/dev/null)\" = $2 ]"
}

# tc_node_serving I: wait until every dataset of node I has its manifest
# (with [cluster] the first listing may wait for the manifest's home, or
# be loaded from Redis: a peer asking meanwhile gets EAGAIN)
tc_node_serving() {
	wait_for 30 "[ \"\$(tc_node_json $1 \"all(d['serving'] for d in s['datasets'])\" 2>/dev/null)\" = True ]" ||
		{ echo "node $1: a dataset is not serving after 30 s"; return 1; }
}

# clean stop; returns the daemon's exit status
tc_node_stop() {
	local i=$1 rc
	[ -n "${NODE_PID[$i]:-}" ] || return 0
	kill -CONT "${NODE_PID[$i]}" 2>/dev/null
	kill -TERM "${NODE_PID[$i]}" 2>/dev/null
	wait "${NODE_PID[$i]}"
	rc=$?
	NODE_PID[$i]=
	return $rc
}

tc_node_kill() {
	local i=$1
	[ -n "${NODE_PID[$i]:-}" ] || return 0
	kill -KILL "${NODE_PID[$i]}" 2>/dev/null
	wait "${NODE_PID[$i]}" 2>/dev/null
	NODE_PID[$i]=
}

tc_node_pause() { kill -STOP "${NODE_PID[$1]}"; }
tc_node_resume() { kill -CONT "${NODE_PID[$1]}"; }
tc_node_pid() { echo "${NODE_PID[$1]:-}"; }

tc_node_status_json() { TIERCACHE_SOCKET=$T/n$1/sock "$TC_BIN/tierctl" status --json; }

# tc_node_json I EXPR: a Python expression on node I's status (as s)
tc_node_json() {
	tc_node_status_json "$1" | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)"
}

# Stop every node (a failed stop fails the test), look for sanitizer reports
# in their logs, stop tccountfs (it must unmount cleanly), then finish.
tcc_finish() {
	local i d
	for i in "${!NODE_PID[@]}"; do
		[ -n "${NODE_PID[$i]}" ] || continue
		tc_node_stop "$i" || fail "node $i exited with an error at the end of the test"
	done
	for d in "$T"/n*/; do
		[ -f "$d/daemon.log" ] || continue
		if grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$d/daemon.log"; then
			fail "sanitizer report in $(basename "$d")'s daemon log"
			grep -A 30 -E 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$d/daemon.log" | head -60
		fi
		if [ "$TC_FAILS" -ne 0 ]; then
			echo "--- $(basename "$d") daemon log (last 30 lines)"
			tail -n 30 "$d/daemon.log"
		fi
	done
	if [ -n "$COUNTFS_PID" ]; then
		tc_countfs_stop || fail "tccountfs did not unmount cleanly"
	fi
	finish
}
