# Read-ahead of a file whose first chunk is already here (docs/cluster.md,
# "The peer protocol" and "Measured"): when chunk 0 is resident, the open
# hands its descriptor and the client never asks for chunk 0, so the
# read-ahead, which starts at a read of chunk 0, never started and the
# file's other chunks were asked of their homes one at a time. Now the open
# that hands chunk 0 counts as that read.
# Two daemons share a counted cold directory; node 2 (read-ahead off) takes
# only chunk 0 of each of 24 files of 6 chunks, so node 1 holds chunk 0 of
# the files whose chunk 0 is homed there (it read them for node 2) and no
# other chunk. Node 1 then reads those files whole, one at a time: every
# byte equals the source, at least 4 and at most 5 prefetches per file
# (chunks 1-4 at the open when one of them is homed on node 2, else 2-5 at
# chunk 1; then chunk 5), the cold store is read once per chunk, and no
# read falls back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a"
for i in $(seq -w 1 24); do head -c $((6 * MIB)) /dev/urandom >"$SRC/a/f$i.bin"; done
# a fixed mtime: a chunk's key (and so its home) depends on the file's
# version, so the same files are homed on node 1 in every run
touch -d @1700000000 "$SRC"/a/*.bin

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
for i in 1 2; do
	tc_node_config $i hot=512M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms
	# node 2 must not read ahead: node 1 would fill chunks 1-4 as their home
	[ $i = 2 ] && sed -i 's/^\[daemon\]$/[daemon]\nreadahead_chunks = 0/' "$T/n$i/tiercache.conf"
	tc_node_start $i || exit 1
done
for i in 1 2; do
	check "node $i lists 2 members up" \
		tc_node_members_up $i 2
	check "node $i has its manifest" tc_node_serving "$i"
done
ctr() { tc_node_json "$1" "s['counters']['$2']"; }
pf() { tc_node_json 1 "s['prefetch']['$1']"; }

# node 2 takes chunk 0 of every file (its descriptor, checked against the
# source); chunk 0 came from node 1 when node 2's peer bytes grew
H1=()
bad=0
for f in $(cd "$SRC" && ls a/*); do
	p0=$(ctr 2 bytes_from_peers)
	TIERCACHE_SOCKET=$T/n2/sock "$TC_TESTS/tcverify" holdcheck "ds/$f" "$SRC/$f" 0 >/dev/null || bad=1
	[ "$(ctr 2 bytes_from_peers)" != "$p0" ] && H1+=("$f")
done
check "node 2 reads chunk 0 of every file, bytes equal the source" [ $bad = 0 ]
echo "chunk 0 homed on node 1: ${#H1[@]} files"
check "at least two files have chunk 0 homed on node 1" [ "${#H1[@]}" -ge 2 ]
[ "${#H1[@]}" -ge 2 ] || tcc_finish
check "nothing read ahead by node 1 so far" [ "$(pf issued)" = 0 ]
check "node 1 holds only those chunks 0 (${#H1[@]} MiB)" \
	[ "$(tc_node_json 1 "s['counters']['bytes_from_cold']")" = $((${#H1[@]} * MIB)) ]

cold0=$(tc_cold_bytes)
bad=0
for f in "${H1[@]}"; do
	timeout 120 env TIERCACHE_SOCKET="$T/n1/sock" "$TC_BIN/tierctl" cat "ds/$f" | cmp -s - "$SRC/$f" || bad=1
done
check "node 1 reads those files whole: bytes equal the source" [ $bad = 0 ]
issued=$(pf issued)
n=${#H1[@]}
echo "node 1: $issued prefetches for $n files of 6 chunks whose chunk 0 it held"
check "read ahead from the open that handed chunk 0 ($issued >= $((4 * n)))" [ "$issued" -ge $((4 * n)) ]
check "at most 5 per file ($issued <= $((5 * n)))" [ "$issued" -le $((5 * n)) ]
check "the cold store read once per chunk: 5 MiB per file" [ "$(($(tc_cold_bytes) - cold0))" = $((5 * MIB * n)) ]
check "no fallback on node 1" [ "$(tc_node_json 1 "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))")" = 0 ]
tcc_finish
