# Directory read-ahead from peers (cached/plan/dir_ahead.c; docs/cluster.md
# "Measured", session 27): in a cluster, a miss of a file's first chunk
# reads the first chunks of the next files of its directory ahead, when
# their homes are peers, whatever the cold store (here a posix directory,
# with a cheap stat: without a cluster nothing is read ahead there) and
# whatever the files' size (here 3 chunks each).
# Three daemons share a counted cold directory; nodes 2 and 3 read every
# file first, so each chunk is held by its home.
#   a. node 1 (readahead_files = 4, readahead_chunks = 0: the only
#      prefetches are the directory's) reads d/ in listing order until a
#      miss reads ahead; once those reads are in, it stops reading ahead
#      (readahead_files = 0, reload) and reads the rest of d/: every chunk
#      read ahead is then read as a prefetch hit, none was wasted.
#   b. node 1 with the defaults reads e/ in listing order: first chunks are
#      read ahead (beside each file's own read-ahead of its other chunks),
#      none wasted.
# Every byte equals the source; the cold store is read once (1x) in all.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/d" "$SRC/e"
for i in $(seq -w 1 12); do
	head -c $((3 * MIB - 4096)) /dev/urandom >"$SRC/d/f$i.bin"
	head -c $((3 * MIB)) /dev/urandom >"$SRC/e/f$i.bin"
done
files() { (cd "$SRC" && find "$1" -type f | sort); }
bytes() { find "$SRC/$1" -type f -printf '%s\n' | awk '{s += $1} END {print s}'; }

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
pf() { tc_node_json 1 "s['prefetch']['$1']"; }
ra_conf() { # ra_conf FILES CHUNKS: node 1's readahead_files / readahead_chunks, reloaded
	sed -i '/^readahead_files = /d; /^readahead_chunks = /d' "$T/n1/tiercache.conf"
	sed -i "s/^\[daemon\]$/[daemon]\nreadahead_files = $1\nreadahead_chunks = $2/" "$T/n1/tiercache.conf"
	env TIERCACHE_SOCKET="$T/n1/sock" "$TC_BIN/tierctl" reload >/dev/null
}
for i in 1 2 3; do
	tc_node_config $i hot=256M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms
	tc_node_start $i || exit 1
done
for i in 1 2 3; do check "node $i lists 3 members up" tc_node_members_up $i 3; done
check "nodes 2 and 3 read d/ and e/: bytes equal the source" tcc_read_on ds "$(files d; files e)" 2 3
check "cold bytes 1x so far" [ "$(tc_cold_bytes)" = "$(($(bytes d) + $(bytes e)))" ]

# ---- a. the first chunks of the next files, exactly ----
check "node 1: readahead_files = 4, readahead_chunks = 0" ra_conf 4 0
mapfile -t D < <(files d)
k=0
while [ "$k" -lt ${#D[@]} ] && [ "$(pf dir_ahead)" = 0 ]; do
	tcc_read_one 1 ds 0 "${D[$k]}" || fail "node 1 read ${D[$k]}"
	k=$((k + 1))
done
da=$(pf dir_ahead)
echo "node 1: a miss of ${D[$((k - 1))]} (file $k of ${#D[@]}) read $da first chunks ahead"
check "a miss of a peer-homed first chunk reads the next files' first chunks ahead (1 <= $da <= 4)" \
	[ "$da" -ge 1 -a "$da" -le 4 ]
check "node 1's read-ahead is in" wait_for 30 "[ \"\$(pf inflight)\" = 0 ]"
check "only the directory's read-ahead ran (issued = dir_ahead = $da)" [ "$(pf issued)" = "$da" ]
check "node 1: readahead_files = 0" ra_conf 0 0
hits0=$(pf hits)
peer0=$(tc_node_json 1 "s['counters']['peer_fills']")
check "node 1 reads the rest of d/: bytes equal the source" tcc_read_one 1 ds 0 "${D[@]:$k}"
hits=$(($(pf hits) - hits0))
echo "node 1: $hits prefetch hits, $(($(tc_node_json 1 "s['counters']['peer_fills']") - peer0)) peer fills for the rest of d/"
check "every first chunk read ahead was read as a hit ($hits = $da)" [ "$hits" = "$da" ]
check "nothing read ahead more (dir_ahead still $da)" [ "$(pf dir_ahead)" = "$da" ]
check "none evicted unread, no errors" [ "$(pf evicted_unused):$(pf errors)" = 0:0 ]

# ---- b. the defaults: a walk of e/ ----
check "node 1: readahead_files = 8, readahead_chunks = 4" ra_conf 8 4
hits0=$(pf hits)
check "node 1 reads e/ file by file: bytes equal the source" tcc_read_one 1 ds 0 $(files e)
da_e=$(($(pf dir_ahead) - da))
hits=$(($(pf hits) - hits0))
echo "node 1: e/: $da_e first chunks read ahead, $hits prefetch hits in all, late $(pf late)"
check "e/: first chunks read ahead ($da_e > 0)" [ "$da_e" -gt 0 ]
check "e/: none evicted unread, no errors" [ "$(pf evicted_unused):$(pf errors)" = 0:0 ]
check "no fallback on node 1" [ "$(tc_node_json 1 "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))")" = 0 ]
check "cold bytes 1x in all (read ahead from the peers, not the store)" \
	[ "$(tc_cold_bytes)" = "$(($(bytes d) + $(bytes e)))" ]
tcc_finish
