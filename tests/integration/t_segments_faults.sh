#!/bin/bash
# Faults over segments ([daemon] segment_threshold on): a byte flipped
# inside a segment item is detected (tierctl verify, and at first use after
# a restart), the item dropped and counted, read again from the cold store,
# and the right bytes served; the tier's segments directory removed under
# the running daemon: reads still serve the right bytes. Every byte
# compared with the source.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/cold"
python3 - "$T/cold" <<'PY'
import os, random, sys
r = random.Random(41)
for i in range(60):
    with open(os.path.join(sys.argv[1], "f%03d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(20, 120) * 1024))
PY
ctr() { tc_json "s['counters']['$1']"; }
# flip one byte of SRC's copy inside a segment file under TIERDIR; prints the segment
flip_in_segment() {
	python3 - "$1" "$2" <<'PY'
import glob, os, sys
src = open(sys.argv[2], "rb").read()
probe = src[:4096]
for seg in sorted(glob.glob(os.path.join(sys.argv[1], "segments", "seg-*"))):
    data = open(seg, "rb").read()
    at = data.find(probe)
    if at >= 0:
        with open(seg, "r+b") as f:
            f.seek(at + len(probe) // 2)
            b = f.read(1)
            f.seek(at + len(probe) // 2)
            f.write(bytes([b[0] ^ 0xFF]))
        print(seg)
        sys.exit(0)
sys.exit(1)
PY
}

# no background scrubber (scrub_rate = 0): at 8M/s it re-checks these 4 MB
# twice a second and could find the flipped byte before `tierctl verify`
TC_DAEMON_CONF=$'segment_threshold = 256K\nsegment_size = 2M\nsync_delay = 100ms\nscrub_rate = 0'
tc_config 64M none 1M
tc_start || exit 1
check "fill: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
wait_for 20 '[ "$(tc_json "s[\"daemon\"][\"sync_pending_chunks\"]" 2>/dev/null || echo 0)" = 0 ]' || true
check "every chunk is in a segment (no chunk files)" [ "$(find "$T/hot/chunks" -type f | wc -l)" = 0 ]
seg=$(flip_in_segment "$T/hot" "$T/cold/f007.bin")
check "a byte of f007.bin flipped inside a segment ($seg)" [ -n "$seg" ]
"$TC_BIN/tierctl" verify ds >"$T/verify.out" 2>&1
cat "$T/verify.out"
check "tierctl verify finds the bad item" grep -Eq "bad \(dropped\) +1 chunks" "$T/verify.out"
check "checksum_errors counts it" [ "$(ctr checksum_errors)" = 1 ]
m0=$(ctr misses)
check "f007.bin is read again from the cold store: right bytes" "$TC_TESTS/tcverify" file ds/f007.bin "$T/cold/f007.bin"
check "... as a miss" [ "$(ctr misses)" -gt "$m0" ]
check "every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 2

# a flip found at first use after a restart (loaded items are unverified)
wait_for 20 '[ "$(tc_json "s[\"daemon\"][\"sync_pending_chunks\"]" 2>/dev/null || echo 0)" = 0 ]' || true
check "graceful stop" tc_stop
seg=$(flip_in_segment "$T/hot" "$T/cold/f021.bin")
check "a byte of f021.bin flipped while the daemon is down ($seg)" [ -n "$seg" ]
tc_start || exit 1
check "after restart: f021.bin reads the right bytes" "$TC_TESTS/tcverify" file ds/f021.bin "$T/cold/f021.bin"
check "after restart: the bad item was counted" [ "$(ctr checksum_errors)" = 1 ]
check "after restart: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 3

# the segments directory removed under the running daemon
rm -rf "$T/hot/segments"
check "segments removed: every byte still equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 4
check "segments removed: tierctl verify drops what is gone, serves the rest" "$TC_BIN/tierctl" verify ds
check "segments removed: every byte equals the source afterwards" "$TC_TESTS/tcverify" tree ds "$T/cold" 5
check "the daemon still runs" kill -0 "$TC_PID"
tc_stop
finish
