# Peer reads keep several chunks in flight (docs/cluster.md, "The peer
# protocol"): two daemons share a counted cold directory; node 1 reads 16
# files of 4 chunks front to back, one file at a time. Without a cluster a
# file is read ahead from its second chunk (chunks 2 and 3: two prefetches
# per file); with it, a file whose chunk 1 is homed on node 2 is read ahead
# from its first chunk (chunks 1, 2 and 3 asked of their homes at once).
# So node 1 issues more than two prefetches per file, never more than
# three, every byte equals the source and the cold store is read once
# (single flight: a read that reaches a chunk being read ahead waits for
# it). Then the same with readahead_chunks = 0 on node 1 (after a reload):
# nothing is read ahead, the bytes are still right.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a" "$SRC/b"
for i in $(seq 1 16); do
	head -c $((4 * MIB)) /dev/urandom >"$SRC/a/f$i.bin"
	head -c $((4 * MIB - 4096)) /dev/urandom >"$SRC/b/f$i.bin"
done
files() { (cd "$SRC" && find "$1" -type f | sort); }
bytes() { find "$SRC/$1" -type f -printf '%s\n' | awk '{s += $1} END {print s}'; }

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
states() {
	tc_node_json "$1" "' '.join(sorted('%s:%s' % (m['id'], m['state']) for m in s['cluster_members']))" 2>/dev/null
}
pf() { tc_node_json 1 "s['prefetch']['$1']"; }
for i in 1 2; do
	tc_node_config $i hot=256M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms
	tc_node_start $i || exit 1
done
for i in 1 2; do
	check "node $i lists 2 members, up" wait_for 30 "[ \"\$(states $i)\" = 'n1:up n2:up' ]"
done

issued0=$(pf issued)
check "node 1 reads part a file by file: bytes equal the source" tcc_read_on ds "$(files a)" 1
issued=$(($(pf issued) - issued0))
echo "node 1: $issued prefetches for 16 files of 4 chunks; peer gets $(tc_node_json 1 "s['cluster']['peer_gets_sent']")"
check "more than two prefetches per file: read ahead from the first chunk ($issued > 32)" [ "$issued" -gt 32 ]
check "at most three per file ($issued <= 48)" [ "$issued" -le 48 ]
check "cold bytes 1x part a" [ "$(tc_cold_bytes)" = "$(bytes a)" ]
check "node 2 served chunks to node 1" [ "$(tc_node_json 2 "s['cluster']['peer_gets_served']")" -gt 0 ]
check "no fallback on node 1" [ "$(tc_node_json 1 "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))")" = 0 ]

# ---- readahead off: nothing read ahead, bytes still right ----
sed -i 's/^\[daemon\]$/[daemon]\nreadahead_chunks = 0/' "$T/n1/tiercache.conf"
check "node 1 reloads with readahead_chunks = 0" env TIERCACHE_SOCKET="$T/n1/sock" "$TC_BIN/tierctl" reload
cold=$(tc_cold_bytes)
issued0=$(pf issued)
check "node 1 reads part b: bytes equal the source" tcc_read_on ds "$(files b)" 1
check "nothing read ahead with readahead_chunks = 0" [ "$(pf issued)" = "$issued0" ]
check "cold bytes 1x part b" [ "$(($(tc_cold_bytes) - cold))" = "$(bytes b)" ]
tcc_finish
