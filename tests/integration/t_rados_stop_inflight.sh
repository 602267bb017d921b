# tiercached stops (SIGTERM) while cold reads to a stopped OSD are in flight
# and more wait in the backend's queue (max_inflight = 2), and opens wait
# for their revalidation stats: the daemon waits
# for the reads on the wire, fails the queued ones, finishes every fill
# (each one logged) and exits 0 with nothing leaked (the ASan build reports
# leaks in the daemon log); the clients see an error, never data. A daemon
# started again on the same state, with the OSD back, serves every file
# byte for byte.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
MiB=1048576
N=4 # uncached files per dataset, one pending read each
tc_config 256M none 1M
rd_dataset rp "${RD_PREFIX}plain/" plain 1M "max_inflight = 2"
rd_dataset rs "${RD_PREFIX}striped/" striper 1M "max_inflight = 2"
mkdir -p "$T/src/hot" "$T/src/miss"
head -c $((3 * MiB / 2)) /dev/urandom >"$T/src/hot/a.bin"
for i in $(seq 1 $N); do head -c $((i * MiB + 11)) /dev/urandom >"$T/src/miss/m$i.bin"; done
tc_start || exit 1

for ds in rp rs; do
	check "$ds: import" [ "$(rd_import "$T/src" $ds)" = "$((N + 1)) 0 0" ]
	check "$ds: hot/ read through the cache" "$TC_TESTS/tcverify" tree $ds/hot "$T/src/hot" 1
done

# One client process per uncached file: it opens the file while the OSD is
# up (the open checks the source), says so in $T/ready.TAG, waits for
# $T/go, then reads 100 bytes at 0 (a miss: a cold read) and writes "ok" or
# the errno name to $T/res.TAG.
client() {
	local lib=$O/lib/libtiercache.so pre=
	pre=$(ldd "$lib" 2>/dev/null | awk '/libasan/ {print $3}')
	LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0 python3 - "$lib" "$1" "$T" "$2" <<'PY'
import ctypes, errno, os, sys, time
lib = ctypes.CDLL(sys.argv[1], use_errno=True)
path, t, tag = sys.argv[2].encode(), sys.argv[3], sys.argv[4]
lib.tiercache_connect.restype = ctypes.c_void_p
lib.tiercache_connect.argtypes = [ctypes.c_char_p]
lib.tiercache_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
lib.tiercache_pread.restype = ctypes.c_ssize_t
lib.tiercache_pread.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_uint64]
def result(s):
    with open("%s/res.%s" % (t, tag), "w") as f:
        f.write(s + "\n")
    sys.exit(0)
tc = lib.tiercache_connect(None)
h = lib.tiercache_open(tc, path, 0) if tc else -1
if h < 0:
    result("open:" + errno.errorcode.get(ctypes.get_errno(), "?"))
open("%s/ready.%s" % (t, tag), "w").close()
while not os.path.exists(t + "/go"):
    time.sleep(0.05)
buf = ctypes.create_string_buffer(100)
r = lib.tiercache_pread(tc, h, buf, 100, 0)
result("ok" if r == 100 else "short" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
PY
}
PIDS=()
for ds in rp rs; do
	for i in $(seq 1 $N); do
		timeout 120 bash -c "$(declare -f client); O='$O'; T='$T'; client $ds/miss/m$i.bin $ds$i" &
		PIDS+=($!)
	done
done
all_ready() { [ "$(ls "$T"/ready.* 2>/dev/null | wc -l)" -eq $((2 * N)) ]; }
check "every client opened its file" wait_until 60 all_ready

check "the OSD stops" rd_osd_stop
touch "$T/go"
# every read is a fill now: 2 on the wire per dataset, the rest queued
inflight() { [ "$(tc_json "s['daemon']['fills_inflight']")" -ge $((2 * N)) ]; }
check "$((2 * N)) cold reads in flight or queued" wait_until 30 inflight
echo "fills in flight: $(tc_json "s['daemon']['fills_inflight']")"
# and opens waiting for their revalidation (revalidate_after = 0s), whose
# stats wait on the stopped OSD without holding a worker (stat_async)
SPIDS=()
for ds in rp rs; do
	"$TC_BIN/tierctl" stat $ds/hot/a.bin >"$T/stat.$ds" 2>&1 &
	SPIDS+=($!)
done
revals() { [ "$(tc_json "s['daemon']['revalidations_inflight']")" -ge 2 ]; }
check "2 revalidation stats in flight" wait_until 30 revals

tc_stop
rc=$?
check "the daemon stops with reads and stats in flight: exit 0 (got $rc)" [ $rc -eq 0 ]
for p in "${SPIDS[@]}"; do wait "$p"; done
for ds in rp rs; do
	# the stat ended (timed out: the file's known version is served) and
	# was answered, or the stop closed the connection first: an error
	check "$ds: the waiting tierctl stat ended with an answer or an error" \
		grep -qE "^size|tierctl" "$T/stat.$ds"
done
for p in "${PIDS[@]}"; do wait "$p"; done
for ds in rp rs; do
	for i in $(seq 1 $N); do
		res=$(cat "$T/res.$ds$i" 2>/dev/null)
		check "$ds/miss/m$i.bin: the client got an error, not data or silence (got '$res')" \
			bash -c "[ -n '$res' ] && [ '$res' != ok ] && [ '$res' != short ]"
	done
done
# every pending fill ended and was reported, none was dropped with the pool
for ds in rp rs; do
	for i in $(seq 1 $N); do
		check "$ds/miss/m$i.bin: its fill ended with an error in the log" \
			grep -qE "dataset=$ds path=miss/m$i.bin chunk=0 op=fill err=" "$T/daemon.log"
	done
done
grep -E 'op=fill err=' "$T/daemon.log" | sed 's/^/log: /' | head -20

# ---- the same state, the OSD back: everything reads right ----
check "the OSD starts again" rd_osd_start
tc_start || { fail "tiercached restarts"; finish; }
available() { [ "$(tc_ds "$1" "d['available']")" = True ]; }
check "restarted: rp available" wait_until 60 available rp
check "restarted: rs available" wait_until 60 available rs
for ds in rp rs; do
	check "$ds, restarted: hot/ still matches" "$TC_TESTS/tcverify" tree $ds/hot "$T/src/hot" 1
	check "$ds, restarted: every file matches" "$TC_TESTS/tcverify" tree $ds "$T/src" 4
done
finish
