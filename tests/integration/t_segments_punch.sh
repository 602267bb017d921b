#!/bin/bash
# Dead segment items give their blocks back at once (a hole punched), so a
# tier of small chunks does not fill with dead bytes between reclaims:
# - half of a dataset's small files, interleaved in the same segments with
#   the other half, is evicted: the tier's used_bytes and the bytes its
#   files hold on disk fall by about that half, the segments stay (the
#   other half lives in them), and every byte of both halves still equals
#   the source (the evicted half read again from the cold store);
# - an item a client holds a descriptor of when it is evicted is not
#   punched: the held descriptor reads its bytes, and once let go the
#   item's blocks go too;
# - a restart (graceful and kill -9) counts the holes of the segments it
#   finds as free: used_bytes equals the bytes on disk again;
# - an item whose blocks are gone but whose record survived (a machine
#   crash before the index's delete reached the disk: here a hole punched
#   into a live item while the daemon is down) is never served as zeros:
#   the check before its first serve finds it bad and reads the source;
# - `segment_punch = no` turns it off (the status says why): dead bytes
#   wait for the reclaim, bytes still right.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"

python3 - "$T/cold" <<'PY'
import os, random, sys
r = random.Random(25)
for half in ("a", "b"):
    os.makedirs(os.path.join(sys.argv[1], half))
for i in range(120):
    for half in ("a", "b"):
        with open(os.path.join(sys.argv[1], half, "f%03d.bin" % i), "wb") as f:
            f.write(os.urandom(r.randint(24, 90) * 1024))
PY
ctr() { tc_json "s['counters']['$1']"; }
hot() { tc_json "s['tiers'][0]['$1']"; }
idle() { wait_for 30 '[ "$(tc_json "s[\"daemon\"][\"moves_inflight\"] + s[\"daemon\"][\"fills_inflight\"]")" = 0 ]'; }
# on-disk data of hot's segment files (holes not counted)
seg_data() {
	python3 - "$T/hot/segments" <<'PY'
import os, sys
t = 0
for n in os.listdir(sys.argv[1]):
    if not n.startswith("seg-"):
        continue
    fd = os.open(os.path.join(sys.argv[1], n), os.O_RDONLY)
    end, off = os.fstat(fd).st_size, 0
    while off < end:
        try:
            s = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            break
        e = os.lseek(fd, s, os.SEEK_HOLE)
        t += e - s
        off = e
    os.close(fd)
print(t)
PY
}
# read a then b, file by file interleaved: their items share segments
interleaved() { # interleaved SEED
	local i
	for i in $(seq -f %03g 0 119); do
		"$TC_TESTS/tcverify" file "ds/a/f$i.bin" "$T/cold/a/f$i.bin" >/dev/null || return 1
		"$TC_TESTS/tcverify" file "ds/b/f$i.bin" "$T/cold/b/f$i.bin" >/dev/null || return 1
	done
}

TC_DAEMON_CONF=$'segment_threshold = 512K\nsegment_size = 4M'
tc_config 64M none 1M
tc_start || exit 1
check "the tier punches holes (ext4 here)" [ "$(hot segment_punch)" = True ]
check "both halves, interleaved: every byte equals the source" interleaved 1
idle
segs0=$(hot segments)
used0=$(hot used_bytes)
data0=$(seg_data)
check "segments were written" [ "$segs0" -ge 2 ]
check "before: files on disk equal used_bytes" tier_disk_ok hot 0
# a client holds ds/a/f007.bin's descriptor through the eviction
"$TC_TESTS/tcverify" holdcheck ds/a/f007.bin "$T/cold/a/f007.bin" 4 >"$T/hold.out" 2>&1 &
hold=$!
wait_for 10 'grep -q holding "$T/hold.out"'
p0=$(hot segment_punches)
check "evict half (a)" "$TC_BIN/tierctl" evict ds/a
wait_for 10 '[ "$(hot segment_punches)" -ge $((p0 + 119)) ]'
punched=$(hot segment_bytes_punched)
used1=$(hot used_bytes)
data1=$(seg_data)
echo "segments $segs0 -> $(hot segments), used $used0 -> $used1, data on disk $data0 -> $data1, punched $punched, punches $(hot segment_punches)"
check "the segments stay (b lives in them)" [ "$(hot segments)" -ge "$segs0" ]
check "119 items punched at once (the held one not yet)" [ "$(hot segment_punches)" = $((p0 + 119)) ]
check "used_bytes fell by at least a third" [ $((used1 * 3)) -le $((used0 * 2)) ]
check "the segments' data on disk fell by at least a third" [ $((data1 * 3)) -le $((data0 * 2)) ]
check "no dead bytes but the held item's" [ "$(hot segment_bytes_dead)" -le $((90 * 1024)) ]
check "after the eviction: files on disk equal used_bytes" tier_disk_ok hot 0
check "the held descriptor still read the evicted item's bytes" wait $hold
cat "$T/hold.out"
check "let go: the held item is punched too" wait_for 10 '[ "$(hot segment_punches)" = $((p0 + 120)) ]'
check "nothing dead left on disk" [ "$(hot segment_bytes_dead)" = 0 ]
check "b: every byte equals the source (hits)" "$TC_TESTS/tcverify" tree ds/b "$T/cold/b" 2
check "a: every byte equals the source (read again)" "$TC_TESTS/tcverify" tree ds/a "$T/cold/a" 3
idle
check "after a is back: files on disk equal used_bytes" tier_disk_ok hot 0
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]

# restarts count the holes they find as free
"$TC_BIN/tierctl" evict ds/b >/dev/null
idle
check "graceful stop" tc_stop
tc_start || exit 1
check "after a restart: files on disk equal used_bytes" tier_disk_ok hot 0
check "after a restart: holes counted as punched" [ "$(hot segment_bytes_punched)" -gt 0 ]
check "after a restart: a equals the source" "$TC_TESTS/tcverify" tree ds/a "$T/cold/a" 4
check "after a restart: b equals the source" "$TC_TESTS/tcverify" tree ds/b "$T/cold/b" 5
("$TC_BIN/tierctl" evict ds/a >/dev/null; "$TC_TESTS/tcverify" tree ds/a "$T/cold/a" 6 >/dev/null) &
sleep 0.3
tc_kill9
wait $! 2>/dev/null
tc_start || exit 1
idle
check "after kill -9 mid-eviction: files on disk equal used_bytes" tier_disk_ok hot 0
check "after kill -9: a equals the source" "$TC_TESTS/tcverify" tree ds/a "$T/cold/a" 7
check "after kill -9: b equals the source" "$TC_TESTS/tcverify" tree ds/b "$T/cold/b" 8
idle

# a record that outlived its item's blocks: punch into a live item while
# the daemon is down (what a machine crash that lost the index's delete
# would leave), then read it
check "graceful stop" tc_stop
victim=$T/cold/b/f011.bin
seg=$(python3 - "$T/hot/segments" "$victim" <<'PY'
import os, sys
want = open(sys.argv[2], "rb").read()
for n in sorted(os.listdir(sys.argv[1])):
    p = os.path.join(sys.argv[1], n)
    data = open(p, "rb").read()
    at = data.find(want)
    if at >= 0 and at % 4096 == 0:
        print(p, at, len(want))
        break
PY
)
check "the item was found in a segment, aligned" [ -n "$seg" ]
read -r segfile at len <<<"$seg"
check "a hole punched into the live item" fallocate -p -o "$at" -l $(( (len + 4095) / 4096 * 4096 )) "$segfile"
tc_start || exit 1
bad0=$(ctr checksum_errors)
check "the punched item is never served as zeros: it equals the source" \
	"$TC_TESTS/tcverify" file ds/b/f011.bin "$victim"
check "... found bad by the check before its first serve" [ "$(ctr checksum_errors)" -gt "$bad0" ]
check "the rest of b equals the source" "$TC_TESTS/tcverify" tree ds/b "$T/cold/b" 9
check "graceful stop" tc_stop

# segment_punch = no: dead bytes stay until the reclaim
rm -rf "$T/state" "$T/hot"
TC_DAEMON_CONF=$'segment_threshold = 512K\nsegment_size = 4M\nsegment_punch = no'
tc_config 64M none 1M
tc_start || exit 1
check "segment_punch = no: off, and the status says why" \
	[ "$(tc_json "(s['tiers'][0]['segment_punch'], s['tiers'][0]['segment_punch_reason'])")" = "(False, 'segment_punch = no')" ]
check "segment_punch = no: both halves equal the source" interleaved 2
idle
"$TC_BIN/tierctl" evict ds/a >/dev/null
check "segment_punch = no: no hole punched" [ "$(hot segment_punches)" = 0 ]
check "segment_punch = no: the evicted items are dead bytes" [ "$(hot segment_bytes_dead)" -gt 0 ]
check "segment_punch = no: files on disk equal used_bytes" tier_disk_ok hot 0
check "segment_punch = no: a equals the source" "$TC_TESTS/tcverify" tree ds/a "$T/cold/a" 10
check "graceful stop" tc_stop
finish
