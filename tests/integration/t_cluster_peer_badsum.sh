# A peer's wrong bytes never land (docs/cluster.md, "The peer protocol"):
# the receiver's fill worker compares the XXH3 of a peer reply's bytes
# (the head's first bytes taken through libevent's buffer, the rest
# recv()ed straight into the fill's buffer) with the checksum the home sent
# before anything is written. Real components: two daemons share a counted cold
# directory; node 2 reads every file (it keeps every chunk), then one byte
# of each of its chunk files is flipped in place (dd, through the page
# cache, as rot would be read), alternately near the chunk's start (the
# part read with the reply's head) and near its end (the part recv()ed
# straight into the buffer). The home still sends its stored checksum with
# the flipped bytes. Node 1 then reads every file whole: every byte equals
# the source, every chunk it asked node 2 for was refused (peer_bad) and
# read from the cold store instead (cold bytes = refused chunks x 1 MiB), no
# peer byte was accepted, and a second read (hits) still equals the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a"
for i in $(seq -w 1 12); do head -c $((4 * MIB)) /dev/urandom >"$SRC/a/f$i.bin"; done

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
for i in 1 2; do
	tc_node_config $i hot=256M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms
	# no scrubber: the flipped files must stay on node 2 as they are
	sed -i 's/^\[daemon\]$/[daemon]\nscrub_rate = 0/' "$T/n$i/tiercache.conf"
	tc_node_start $i || exit 1
done
for i in 1 2; do
	check "node $i lists 2 members up" \
		tc_node_members_up $i 2
	check "node $i has its manifest" tc_node_serving "$i"
done
ctr() { tc_node_json "$1" "s['counters']['$2']"; }
read_all() { # read_all NODE: every file whole through NODE, compared with the source
	local f bad=0
	for f in $(cd "$SRC" && ls a/*); do
		timeout 120 env TIERCACHE_SOCKET="$T/n$1/sock" "$TC_BIN/tierctl" cat "ds/$f" | cmp -s - "$SRC/$f" || bad=1
	done
	[ $bad = 0 ]
}
quiet() { wait_for 30 "[ \"\$(tc_node_json $1 's[\"daemon\"][\"fills_inflight\"]')\" = 0 ]"; }

check "node 2 reads every file: bytes equal the source" read_all 2
quiet 1
quiet 2
# flip FILE OFFSET: invert one byte in place
flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
n=0
for f in "$T"/n2/hot/chunks/*/*.chunk; do
	[ -f "$f" ] || continue
	if [ $((n % 2)) = 0 ]; then flip "$f" 7; else flip "$f" $(($(stat -c %s "$f") - 7)); fi
	n=$((n + 1))
done
echo "flipped one byte in each of node 2's $n chunk files"
check "node 2 holds every chunk (48 files of 1 MiB)" [ "$n" = 48 ]

bad0=$(ctr 1 peer_bad)
peer0=$(ctr 1 bytes_from_peers)
cold0=$(tc_cold_bytes)
check "node 1 reads every file: bytes equal the source" read_all 1
quiet 1
bad=$(($(ctr 1 peer_bad) - bad0))
cold=$(($(tc_cold_bytes) - cold0))
echo "node 1: $bad peer replies refused, $cold cold bytes"
check "node 1 refused node 2's bytes (some chunks are homed there)" [ "$bad" -ge 2 ]
check "node 1 accepted no peer byte" [ "$(ctr 1 bytes_from_peers)" = "$peer0" ]
check "each refused chunk was read from the cold store instead (cold = refused x 1 MiB)" [ "$cold" = $((bad * MIB)) ]
check "node 1 logs the refusals" grep -q 'op=peer_fill err=' "$T/n1/daemon.log"
check "a second read on node 1 (its copies) still equals the source" read_all 1
tcc_finish
