# Segments under tier faults ([daemon] segment_threshold on; issue #17):
# the hot tier lives on an 8 MiB tmpfs while its capacity says 64M, and
#  (a) the test fills the tmpfs behind the daemon's back, so segment
#      appends fail with ENOSPC; then frees it again;
#  (b) the tmpfs is remounted read-only, then read-write;
#  (e) the tier directory is removed, then recreated;
#  (c) the hot tier is full of live items (capacity 4M, nothing dead to
#      reclaim) while 3x that is read through it;
#  (d) kill -9 after all that, restart.
# Every read returns the source's bytes; the daemon stays up; the fault is
# in status, the log and the counters; the tier takes items into segments
# again once the fault is gone; after the restart nothing half-written is
# served (every byte compared, tierctl verify finds nothing bad). Needs
# root (tmpfs mounts).
. "$(dirname "$0")/lib.sh"

tc_tmpfs_mount 8m

KiB=1024
MiB=1048576
mkdir -p "$T/cold"
# sets of small files (40-200 KB, one chunk each, all below the threshold)
python3 - "$T/cold" <<'PY'
import os, random, sys
r = random.Random(17)
for s, n in (("a", 40), ("e", 20), ("f", 20), ("b", 20), ("r", 20), ("c", 80), ("g", 10)):
    for i in range(n):
        with open(os.path.join(sys.argv[1], "%s%03d.bin" % (s, i)), "wb") as f:
            f.write(os.urandom(r.randint(40, 200) * 1024))
PY
read_set() { # read_set SET: every file of the set, compared with the source; prints failures
	local f bad=0
	for f in "$T/cold/$1"*.bin; do
		"$TC_TESTS/tcverify" file "ds/$(basename "$f")" "$f" >/dev/null 2>>"$T/verify.err" || bad=$((bad + 1))
	done
	echo "$bad"
}
tier() { tc_json "[t for t in s['tiers'] if t['name'] == 'hot'][0]['$1']"; }
ctr() { tc_json "s['counters']['$1']"; }
synced() { wait_for 20 '[ "$(tc_json "s[\"daemon\"][\"sync_pending_chunks\"]" 2>/dev/null || echo 1)" = 0 ]'; }
segs_newer() { find "$MNT/hot/segments" -name 'seg-*' -newer "$1" 2>/dev/null | wc -l; }

# demote=1 named: (c) needs every fill on hot (lru's default, demote=flat,
# sends fills to warm once hot is full, and hot never reclaims)
TC_DAEMON_CONF=$'segment_threshold = 256K\nsegment_size = 1M\nsync_delay = 100ms\nreadahead_chunks = 0' \
	tc_config 64M 256M 1M "policy = lru demote=1"
sed -i "s|^path = $T/hot$|path = $MNT/hot|" "$T/tc.conf"
tc_start || exit 1

check "warm-up: 40 small files through an 8 MiB hot disk, all bytes correct (failures: $(read_set a))" \
	[ ! -s "$T/verify.err" ]
check "hot holds items in segments, no chunk files" \
	[ "$(tier segment_bytes_live)" -gt 0 ] && [ "$(find "$MNT/hot/chunks" -type f | wc -l)" = 0 ]
check "hot used within the disk" [ "$(tier used_bytes)" -le $((8 * MiB)) ]
synced

# (a) ENOSPC: the test takes every free byte of the tmpfs
fe0=$(ctr fill_errors)
dd if=/dev/zero of="$MNT/filler" bs=64k status=none 2>/dev/null
check "(a) the tmpfs is full" [ "$(df --output=avail -B1 "$MNT" | tail -1 | tr -d ' ')" -lt $((64 * KiB)) ]
: >"$T/verify.err"
check "(a) disk full: 20 new reads, all bytes correct (failures: $(read_set e))" [ ! -s "$T/verify.err" ]
check "(a) resident files still read correctly (failures: $(read_set a))" [ ! -s "$T/verify.err" ]
check "(a) the failed appends are counted in fill_errors ($fe0 -> $(ctr fill_errors))" \
	[ "$(ctr fill_errors)" -gt "$fe0" ]
check "(a) ... and logged with the reason" grep -q "tier=hot op=fill_write err=\"No space left on device\"" "$T/daemon.log"
check "(a) status: hot's effective capacity shrank to the disk (within 10 s)" \
	wait_for 10 '[ "$(tier effective_capacity_bytes)" -le $((8 * MiB)) ]'
check "(a) hot is not failed for being full" [ "$(tier state)" = ok ]
check "(a) no cold error counted" [ "$(ctr cold_errors)" = 0 ]
check "(a) the daemon still runs" kill -0 "$TC_PID"
rm -f "$MNT/filler"
touch "$T/before_f"
sleep 1.1
check "(a) disk freed: effective capacity grows again (within 10 s)" \
	wait_for 10 '[ "$(tier effective_capacity_bytes)" -gt $((4 * MiB)) ]'
: >"$T/verify.err"
live0=$(tier segment_bytes_live)
check "(a) after: 20 new reads, all bytes correct (failures: $(read_set f))" [ ! -s "$T/verify.err" ]
check "(a) after: hot takes items into segments again" wait_for 10 '[ "$(segs_newer "$T/before_f")" -gt 0 ]'
synced

# (b) read-only: a remount fails (EBUSY) while a file on the tmpfs is open
# for writing; the daemon must not keep one open while idle
if ! wait_for 20 'mount -o remount,ro "$MNT" 2>/dev/null'; then
	fail "(b) cannot remount the hot tmpfs read-only; open on it:"
	ls -l /proc/"$TC_PID"/fd 2>/dev/null | grep -F "$MNT"
fi
check "(b) the hot tmpfs is read-only now" bash -c "grep -F ' $MNT ' /proc/mounts | grep -q ' ro[ ,]'"
: >"$T/verify.err"
check "(b) hot read-only: 20 new reads, all bytes correct (failures: $(read_set b))" [ ! -s "$T/verify.err" ]
check "(b) status: hot failed" wait_for 10 '[ "$(tier state)" = failed ]'
check "(b) status: the reason says read-only" wait_for 5 '[[ "$(tier reason)" == *ead-only* ]]'
check "(b) the failure is logged" grep -q "tier=hot .*op=health state=failed" "$T/daemon.log"
check "(b) resident files still read correctly (failures: $(read_set a))" [ ! -s "$T/verify.err" ]
check "(b) the daemon still runs" kill -0 "$TC_PID"
mount -o remount,rw "$MNT" || fail "(b) remount rw"
check "(b) remounted rw: hot comes back (within 15 s)" wait_for 15 '[ "$(tier state)" = ok ]'
touch "$T/before_r"
sleep 1.1
: >"$T/verify.err"
check "(b) after: 20 new reads, all bytes correct (failures: $(read_set r))" [ ! -s "$T/verify.err" ]
check "(b) after: hot takes items into segments again" wait_for 10 '[ "$(segs_newer "$T/before_r")" -gt 0 ]'
synced

# (e) the tier directory removed while running, then recreated
rm -rf "$MNT/hot"
: >"$T/verify.err"
check "(e) hot removed: resident and 20 new reads, all bytes correct (failures: $(read_set r)+$(read_set e))" [ ! -s "$T/verify.err" ]
check "(e) status: hot failed" wait_for 10 '[ "$(tier state)" = failed ]'
check "(e) status: no bytes counted on it" wait_for 10 '[ "$(tier segment_bytes_live)" = 0 ]'
mkdir "$MNT/hot"
check "(e) recreated: hot comes back (within 15 s)" wait_for 15 '[ "$(tier state)" = ok ]'
touch "$T/before_e"
sleep 1.1
: >"$T/verify.err"
check "(e) after: 20 reads, all bytes correct (failures: $(read_set b))" [ ! -s "$T/verify.err" ]
check "(e) after: hot takes items into segments again" wait_for 10 '[ "$(segs_newer "$T/before_e")" -gt 0 ]'
synced
tc_stop || fail "daemon stop"

# (c) a hot tier full of live items: 4M of capacity, 3x that read through it
sed -i "/^\[tier hot\]/,/^\[/ s|^capacity = .*|capacity = 4M|" "$T/tc.conf"
tc_start || exit 1
: >"$T/verify.err"
check "(c) 80 files (~9 MB) through a 4M hot tier: all bytes correct (failures: $(read_set c))" [ ! -s "$T/verify.err" ]
check "(c) ... and again (failures: $(read_set c))" [ ! -s "$T/verify.err" ]
check "(c) hot used stays within its capacity ($(tier used_bytes))" wait_for 10 '[ "$(tier used_bytes)" -le $((4 * MiB)) ]'
check "(c) hot still holds live items" [ "$(tier segment_bytes_live)" -gt 0 ]
check "(c) segments were reclaimed or items moved out to make room" \
	[ "$(( $(tier segments_reclaimed) + $(ctr segment_items_dropped) + $(ctr segment_items_kept) + $(ctr evictions 2>/dev/null || echo 0) ))" -gt 0 ]
check "(c) hot is not failed" [ "$(tier state)" = ok ]
check "(c) no cold error counted" [ "$(ctr cold_errors)" = 0 ]

# (d) kill -9 with fills in flight, then restart: nothing half-written served
( read_set g >/dev/null ) &
rp=$!
sleep 0.2
kill -9 "$TC_PID"
wait "$TC_PID" 2>/dev/null
wait "$rp" 2>/dev/null
TC_PID=
tc_start || exit 1
: >"$T/verify.err"
check "(d) after kill -9 and restart: every file reads the source's bytes (failures: $(read_set ''))" [ ! -s "$T/verify.err" ]
"$TC_BIN/tierctl" verify ds >"$T/verify.out" 2>&1
check "(d) tierctl verify: nothing bad" grep -Eq "bad \(dropped\) +0 chunks" "$T/verify.out" || cat "$T/verify.out"
check "(d) no checksum error counted" [ "$(ctr checksum_errors)" = 0 ]
tc_stop || fail "daemon stop"
finish
