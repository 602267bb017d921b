# Small chunks from RADOS packed in segments ([daemon] segment_threshold):
# the checksum and the segment write of such a chunk run on librados'
# completion thread, which hands the chunk straight to the loop (no worker
# in between; cached/cache/fill.c, fill_io_done). Checks that this path
# keeps every guarantee: 4 readers at once fetch each chunk from the pool
# once (single flight) and read the bytes of the source; the chunks live in
# segments, not files; after a restart the recorded items are served from
# the segments with no new cold read; an object overwritten in the pool is
# served at its new version; with tiers smaller than the data, two epochs
# evict and reclaim segments and every byte still equals the source; no
# checksum error anywhere.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
PP="${RD_PREFIX}small/"
mkdir -p "$T/cold" "$T/src"
rd_small_tree "$T/src" 22
nfiles=$(find "$T/src" -type f | wc -l)
total=$(find "$T/src" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
cold() { tc_ds rs "d['bytes_from_cold']"; }
chunk_files() { find "$T/hot/chunks" "$T/warm/chunks" -type f 2>/dev/null | wc -l; }

# ---- fit: one tier larger than the data ----
TC_DAEMON_CONF=$'segment_threshold = 256K\nsegment_size = 4M\nsync_delay = 100ms'
tc_config 64M none 1M
rd_dataset rs "$PP" plain 1M
tc_start || exit 1
check "import uploads every file" [ "$(rd_import "$T/src" rs)" = "$nfiles 0 0" ]
# the import's listing may have read nothing: start from what is counted now
c0=$(cold)
pids=
for i in 1 2 3 4; do
	"$TC_TESTS/tcverify" tree rs "$T/src" "$i" >"$T/v$i.out" 2>&1 &
	pids="$pids $!"
done
bad=0
for p in $pids; do wait "$p" || bad=1; done
check "4 concurrent readers: every byte equals the source" [ $bad = 0 ]
[ $bad = 0 ] || cat "$T"/v?.out
check "single flight: each byte read from the pool once" [ $(($(cold) - c0)) = "$total" ]
check "the chunks live in segments, no chunk file" [ "$(chunk_files)" = 0 ]
check "segment items are counted" [ "$(tc_json "s['tiers'][0]['segment_bytes_live']")" -ge "$total" ]
check "no checksum errors" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]

# ---- restart: the items recorded in the index are served from the segments ----
check "the daemon stops cleanly (syncs what waits)" tc_stop
tc_start || exit 1
c1=$(cold)
check "after a restart every byte equals the source" "$TC_TESTS/tcverify" tree rs "$T/src" 5
check "...with no new cold read" [ "$(cold)" = "$c1" ]
check "...and no checksum errors" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]

# ---- an object overwritten in the pool: served at its new version ----
f=c1/f001.jpg
head -c "$(stat -c %s "$T/src/$f")" /dev/urandom >"$T/new.jpg"
sleep 1.1 # RADOS mtimes have 1 s resolution: the new version differs in its mtime too
rd_rados put "$PP$f" "$T/new.jpg"
check "a file overwritten in the pool is served new (same size)" \
	"$TC_TESTS/tcverify" file "rs/$f" "$T/new.jpg"
cp "$T/new.jpg" "$T/src/$f"
check "the rest still equals the source" "$TC_TESTS/tcverify" tree rs "$T/src" 6

# ---- evict: tiers smaller than the data, two epochs ----
tc_stop
rm -rf "$T/state" "$T/hot" "$T/warm"
TC_DAEMON_CONF=$'segment_threshold = 256K\nsegment_size = 1M\nsync_delay = 100ms'
tc_config 4M 6M 1M
rd_dataset rs "$PP" plain 1M
tc_start || exit 1
check "evict, epoch 1: every byte equals the source" "$TC_TESTS/tcverify" tree rs "$T/src" 7
check "evict, epoch 2: every byte equals the source" "$TC_TESTS/tcverify" tree rs "$T/src" 8
check "segments were reclaimed" \
	[ "$(tc_json "sum(t['segments_reclaimed'] for t in s['tiers'])")" -gt 0 ]
check "no chunk file: small chunks only in segments" [ "$(chunk_files)" = 0 ]
check "no checksum errors" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]
check "no cold read errors" [ "$(tc_json "s['counters']['cold_errors']")" = 0 ]
finish
