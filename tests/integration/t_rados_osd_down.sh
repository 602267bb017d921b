# The OSD stops while tiercached serves RADOS datasets: what is cached is
# still served (byte for byte, no cold read), reads that need the cold store
# fail with EIO or ETIMEDOUT and a clear message instead of hanging (several
# at once too), `tierctl status` says the dataset is not available and why.
# When the OSD is back, the same daemon (no restart) reads from cold again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
MiB=1048576
tc_config 256M none 1M
mkdir -p "$T/cold"
echo "posix" >"$T/cold/p.txt"
rd_dataset rp "${RD_PREFIX}plain/" plain 1M "serve_stale_on_error = yes"
rd_dataset rs "${RD_PREFIX}striped/" striper 1M "serve_stale_on_error = yes"
mkdir -p "$T/src/hot" "$T/src/miss"
head -c $((5 * MiB / 2)) /dev/urandom >"$T/src/hot/a.bin"
head -c 100000 /dev/urandom >"$T/src/hot/b.bin"
for i in 1 2 3 4; do head -c $((i * MiB + 7)) /dev/urandom >"$T/src/miss/m$i.bin"; done
tc_start || exit 1
pid0=$TC_PID

for ds in rp rs; do
	check "$ds: import" [ "$(rd_import "$T/src" $ds)" = "6 0 0" ]
	check "$ds: hot/ read through the cache" "$TC_TESTS/tcverify" tree $ds/hot "$T/src/hot" 1
done
# one file of miss/ half cached: its first chunk only
check "rp: first chunk of miss/m4.bin cached" tc_pread rp/miss/m4.bin 0 100 "$T/head"

check "the OSD stops" rd_osd_stop

# ---- misses fail, promptly and clearly, all at once ----
# cat_fails DATASET/PATH TAG: exits with an error (not timeout's 124) and says
# what failed
cat_fails() {
	timeout 60 "$TC_BIN/tierctl" cat "$1" >/dev/null 2>"$T/cat.err.$2"
	local rc=$?
	echo "tierctl cat $1: exit $rc: $(cat "$T/cat.err.$2")"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] &&
		grep -qiE 'timed out|unavailable|cold (read|store)|input/output' "$T/cat.err.$2" &&
		grep -qF "$1" "$T/cat.err.$2"
}
# pread_fails DATASET/PATH OFF: the read fails with EIO or ETIMEDOUT (OFF also tags its files)
pread_fails() {
	timeout 60 bash -c "$(declare -f tc_pread); O='$O'; tc_pread '$1' $2 100 '$T/x.$2'" 2>"$T/pread.err.$2"
	local rc=$?
	echo "pread $1 at $2: exit $rc: $(cat "$T/pread.err.$2")"
	[ $rc = 3 ] && grep -qE '^(pread|open): (EIO|ETIMEDOUT):' "$T/pread.err.$2"
}
# Each probe runs in the background (a miss takes up to 2 x op_timeout):
# bg NAME COMMAND... then bg_check NAME DESCRIPTION after bg_wait (not a
# bare `wait`: that would wait for the daemon too).
BG_PIDS=()
bg() {
	local n=$1
	shift
	("$@" >"$T/bg.$n.out" 2>&1; echo $? >"$T/bg.$n.rc") &
	BG_PIDS+=($!)
}
bg_wait() {
	local p
	for p in "${BG_PIDS[@]}"; do wait "$p"; done
	BG_PIDS=()
}
bg_check() {
	cat "$T/bg.$1.out"
	check "$2" [ "$(cat "$T/bg.$1.rc" 2>/dev/null)" = 0 ]
}
bg c1 cat_fails rp/miss/m1.bin 1
bg c2 cat_fails rs/miss/m1.bin 2
bg p1 pread_fails rp/miss/m4.bin $((2 * MiB))
bg p2 pread_fails rs/miss/m2.bin 0
for i in 2 3; do
	bg "rp$i" cat_fails rp/miss/m$i.bin "rp$i"
	bg "rs$i" cat_fails rs/miss/m$i.bin "rs$i"
done
bg_wait
bg_check c1 "rp, OSD down: tierctl cat of an uncached file fails with a message"
bg_check c2 "rs, OSD down: tierctl cat of an uncached file fails with a message"
bg_check p1 "rp, OSD down: an uncached chunk of a half-cached file: EIO or ETIMEDOUT"
bg_check p2 "rs, OSD down: pread of an uncached file: EIO or ETIMEDOUT"
for i in 2 3; do
	bg_check "rp$i" "rp, OSD down: concurrent miss $i fails"
	bg_check "rs$i" "rs, OSD down: concurrent miss $i fails"
done
check "OSD down: cold errors counted" [ "$(tc_json "s['counters']['cold_errors']")" -gt 0 ]
check "OSD down: status shows rp not available" [ "$(tc_ds rp "d['available']")" = False ]
check "OSD down: ...with a reason" [ -n "$(tc_ds rp "d['reason']")" ]
echo "status reason: $(tc_ds rp "d['reason']")"

# ---- cached data is still served ----
misses0=$(tc_json "s['counters']['misses']")
for ds in rp rs; do
	check "$ds, OSD down: cached files match" "$TC_TESTS/tcverify" tree $ds/hot "$T/src/hot" 2
	check "$ds, OSD down: tierctl cat of a cached file" \
		bash -c "timeout 60 '$TC_BIN/tierctl' cat $ds/hot/a.bin | cmp - '$T/src/hot/a.bin'"
done
check "OSD down: the cached chunk of a half-cached file" tc_pread rp/miss/m4.bin 10 90 "$T/head"
check "OSD down: hits need no cold read" [ "$(tc_json "s['counters']['misses']")" = "$misses0" ]
check "OSD down: the posix dataset is served" "$TC_TESTS/tcverify" tree ds "$T/cold"

# ---- the OSD comes back: same daemon, misses succeed ----
check "the OSD starts again" rd_osd_start
cat_same() { timeout 60 "$TC_BIN/tierctl" cat "$1" 2>/dev/null | cmp -s - "$2"; }
check "rp, OSD back: an uncached file is read from cold" wait_until 60 cat_same rp/miss/m1.bin "$T/src/miss/m1.bin"
check "rs, OSD back: an uncached file is read from cold" wait_until 60 cat_same rs/miss/m1.bin "$T/src/miss/m1.bin"
for ds in rp rs; do
	check "$ds, OSD back: every file matches" "$TC_TESTS/tcverify" tree $ds "$T/src" 4
done
available() { [ "$(tc_ds "$1" "d['available']")" = True ]; }
check "OSD back: rp available again" wait_until 60 available rp
check "OSD back: rs available again" wait_until 60 available rs
check "the daemon was not restarted" [ "$(tc_json "s['daemon']['pid']")" = "$pid0" ]
finish
