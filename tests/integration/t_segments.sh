#!/bin/bash
# Small chunks packed in segment files ([daemon] segment_threshold): many
# small files through tiers smaller than the data, read in two epochs, every
# byte compared with the source; the tiers hold a small fraction of a file
# per chunk; a reader holding a descriptor into a segment that gets
# reclaimed still reads its bytes; status shows segment fill and reclaim;
# a restart keeps the recorded items and serves them correctly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"

N=${TC_SEG_FILES:-600}
mkdir -p "$T/cold"
python3 - "$T/cold" "$N" <<'PY'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(17)
for i in range(n):
    with open(os.path.join(d, "f%04d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(20, 140) * 1024))
PY
files_in() { find "$T/$1" -type f \( -path '*/chunks/*' -o -path '*/segments/*' \) | wc -l; }

TC_DAEMON_CONF=$'segment_threshold = 256K\nsegment_size = 2M\nsync_delay = 200ms'
# about 47 MB of data through 12M hot + 16M warm
tc_config 12M 16M 1M
tc_start || exit 1
check "epoch 1: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
# hold a descriptor into a segment while the second epoch evicts and reclaims
"$TC_TESTS/tcverify" holdcheck ds/f0000.bin "$T/cold/f0000.bin" 6 >"$T/hold.out" 2>&1 &
hold_pid=$!
sleep 0.5
check "epoch 2: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 2
check "epoch 3: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 3
check "the held descriptor was into a segment (base > 0 or a segment item)" grep -q "holding ds/f0000.bin" "$T/hold.out"
check "the held descriptor still read the right bytes after reclaim" wait $hold_pid
cat "$T/hold.out"
chunks=$(tc_json "sum(t['chunks'] for t in s['tiers'])")
files=$(( $(files_in hot) + $(files_in warm) ))
echo "chunks held: $chunks, files in the tier directories: $files"
check "chunks are held" [ "$chunks" -gt 50 ]
check "hot holds its small chunks in segments, not files" [ "$(find "$T/hot/chunks" -type f | wc -l)" = 0 ]
check "files in the tiers are a small fraction of the chunks held (< 1/5)" [ $((files * 5)) -lt "$chunks" ]
check "segments were sealed" [ "$(tc_json "s['tiers'][0]['segments_sealed']")" -gt 0 ]
check "segments were reclaimed" [ "$(tc_json "s['tiers'][0]['segments_reclaimed']")" -gt 0 ]
# a new segment takes the spare file a worker created ahead (segment.h
# "spare"): the loop itself creates hardly any
check "new segments take spares made ahead, not files created by the loop" \
	[ "$(tc_json "s['tiers'][0]['segment_spares_used']")" -gt "$(tc_json "s['tiers'][0]['segments_created_on_loop']")" ]
tc_json "[(t['name'], t['segments_created_on_loop'], t['segment_spares_used'], t['segment_spare_errors']) for t in s['tiers']]"
check "no checksum errors" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]
tc_json "[(t['name'], t['chunks'], t['segments'], t['segment_bytes_live'], t['segment_bytes_dead'], t['segments_sealed'], t['segments_reclaimed'], t['used_bytes'], t['held_unlinked_bytes']) for t in s['tiers']]"
sleep 0.5
check "nothing held now" [ "$(tc_json "sum(t['held_unlinked_bytes'] for t in s['tiers'])")" = 0 ]
for t in hot warm; do
	i=$([ $t = hot ] && echo 0 || echo 1)
	check "$t: segment + chunk files on disk equal used_bytes" tier_disk_ok $t $i
done
check "never over capacity" [ "$(tc_json "all(t['used_bytes'] + t['reserved_bytes'] <= t['capacity_bytes'] for t in s['tiers'])")" = True ]
check "tierctl verify checks every segment item and finds them good" "$TC_BIN/tierctl" verify ds
check "... and dropped none" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]
before=$(tc_json "sum(t['chunks'] for t in s['tiers'])")
check "graceful stop" tc_stop
check "...leaves no empty segment file (the spares are deleted)" \
	[ -z "$(find "$T/hot/segments" "$T/warm/segments" -name 'seg-*' -empty)" ]
tc_start || exit 1
after=$(tc_json "sum(t['chunks'] for t in s['tiers'])")
echo "chunks before restart: $before, after: $after"
check "a restart keeps every chunk" [ "$after" = "$before" ]
check "after restart: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 4
check "after restart: no checksum errors" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]
tc_stop
finish
