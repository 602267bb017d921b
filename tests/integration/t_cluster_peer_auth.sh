# The peer port is served to cluster members only (docs/cluster.md, "The
# peer protocol"): a node with the cluster key gets a chunk whose bytes,
# version and checksum are right; a wrong key, no key, a replayed
# handshake, a request before the handshake, garbage and a client-protocol
# frame are refused before any request is read, counted and logged; a
# request for another version of the file gets ESTALE, never bytes. A
# rotated key (new first, old second) is accepted both ways. The peer port
# binds the configured address only. The first request comes right after
# the node starts, before its dataset is listed: it waits for the listing
# (up to half the asker's first-byte deadline) instead of sending the asker
# to the cold store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC"
head -c $((3 * MIB + 12345)) /dev/urandom >"$SRC/a.bin"
tc_redis_start || exit 1
tc_cluster_key second
COLD=$SRC
tc_node_config 1 hot=64M warm=none chunk=1M cluster.peer_first_byte_timeout=30s
tc_node_start 1 || exit 1
ADDR=127.0.0.2:$TCC_PORT
PEER=$TC_BIN/../tests/tcpeer
[ -x "$PEER" ] || PEER=$(dirname "$TC_BIN")/tests/tcpeer

size=$(stat -c %s "$SRC/a.bin")
mtime=$(python3 -c "import os,sys; print(os.stat(sys.argv[1]).st_mtime_ns)" "$SRC/a.bin")
# get KEYFILE IDX [VERSION-SIZE] -> the tool's exit status; output in $T/get.out
get() {
	local key=$1 idx=$2 sz=${3:-$size} len
	len=$((sz - idx * MIB < MIB ? sz - idx * MIB : MIB))
	"$PEER" --key "$key" --cluster tctest --node tester "$ADDR" get ds a.bin "$sz" "$mtime" 0 $MIB "$idx" "$len" "$T/chunk.out" >"$T/get.out" 2>&1
}
refused() { # refused MODE [KEY]: the tool says the handshake was refused (exit 3)
	"$PEER" --key "${2:-$CLUSTER_KEY}" --cluster tctest --node tester --mode "$1" "$ADDR" \
		get ds a.bin "$size" "$mtime" 0 $MIB 0 $MIB "$T/chunk.out" >"$T/ref.out" 2>&1
	[ $? = 3 ]
}

get "$CLUSTER_KEY" 1
check "a node with the key gets chunk 1 (exit 0), asking before the dataset was listed" [ $? = 0 ]
cat "$T/get.out"
check "... its bytes equal the source's" cmp -s "$T/chunk.out" <(tail -c +$((MIB + 1)) "$SRC/a.bin" | head -c $MIB)
check "... read from the cold store by the home (where=filled)" grep -q 'where=filled' "$T/get.out"
get "$CLUSTER_KEY" 1
check "asked again, it is a hit on the home (where=hit)" grep -q 'where=hit' "$T/get.out"
get "$CLUSTER_KEY" 3
check "the last, short chunk: $((size - 3 * MIB)) bytes equal to the source's" \
	cmp -s "$T/chunk.out" <(tail -c +$((3 * MIB + 1)) "$SRC/a.bin")

before=$(tc_node_json 1 "s['cluster']['peer_refused_auth']")
check "a wrong key is refused" refused normal "$CLUSTER_KEY2"
cat "$T/ref.out"
check "no key (an AUTH of zeros) is refused" refused nokey
check "a replayed handshake is refused" refused replay
check "a request before the handshake is refused" refused noauth
check "garbage is refused" refused garbage
check "a client-protocol frame is refused" refused clientframe
check "a wrong cluster name is refused" \
	bash -c "'$PEER' --key '$CLUSTER_KEY' --cluster other --node tester '$ADDR' >/dev/null 2>&1; [ \$? = 3 ]"
after=$(tc_node_json 1 "s['cluster']['peer_refused_auth']")
check "the refusals are counted (peer_refused_auth $before -> $after)" [ "$after" -ge $((before + 7)) ]
check "the refusals are logged with the peer's address" grep -q 'op=peer_accept peer=127.0.0.1 .*refused' "$T/n1/daemon.log"
check "the daemon still serves after all that" get "$CLUSTER_KEY" 0

get "$CLUSTER_KEY" 0 $((size + 1))
check "a request for another version gets ESTALE (exit 4), not bytes" [ $? = 4 ]
check "... and says so" grep -q 'ESTALE' "$T/get.out"

# rotation, step 1 on the node: it proves with the old key and accepts the
# new one too. A node at step 2 (new first, old second) and one still on
# the old key alone both get in; one with the new key alone cannot check
# the node's proof (made with the old key) and gives up.
tc_node_stop 1
cp "$CLUSTER_KEY" "$T/old.key"
(umask 077 && cat "$T/old.key" "$CLUSTER_KEY2" >"$T/step1.key")
cp "$T/step1.key" "$CLUSTER_KEY"
tc_node_start 1 && tc_node_serving 1 || exit 1
check "rotation: a node at step 2 (new key first, old second) is served" get "$T/cluster-rotate.key" 0
check "rotation: a node still on the old key alone is served" get "$T/old.key" 0
get "$CLUSTER_KEY2" 0
check "rotation: a node on the new key alone cannot check the node's proof" \
	grep -q "server's proof does not verify" "$T/get.out"

# a reload replaces the config the cluster was started from: the node
# keeps its cluster settings (restart-only) and goes on serving peers
TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/tierctl" reload >"$T/reload.out" 2>&1
check "a reload of a node in a cluster succeeds" [ $? = 0 ]
check "after the reload, cluster status still names the node and cluster" \
	bash -c "TIERCACHE_SOCKET=$T/n1/sock '$TC_BIN/tierctl' cluster status --json | python3 -c 'import json,sys; c=json.load(sys.stdin)[\"cluster\"]; assert c[\"node\"]==\"n1\" and c[\"name\"]==\"tctest\", c'"
check "after the reload, a member is still served" get "$T/old.key" 1

# the peer port is bound to its address only
check "the peer port listens on 127.0.0.2 only" \
	bash -c "ss -Hltn 'sport = :$TCC_PORT' | awk '{print \$4}' | grep -qx '127.0.0.2:$TCC_PORT'"
check "... and nowhere else" [ "$(ss -Hltn "sport = :$TCC_PORT" | wc -l)" = 1 ]
tcc_finish
