# No start-up race: a mount, an open, a stat and a listing of a RADOS
# dataset made while tiercached is still listing it (its first listing,
# 50,000 objects, about 2 s here) wait for the listing instead of failing ("unavailable:
# loading"), and then read bytes equal to the source; tiercache-mount says
# on stderr that it waits; `tierctl status` shows the listing's progress.
# A dataset whose first listing fails (the OSD stopped) answers the
# requests that wait with the error, not a hang; one that is still loading
# when a short wait ends answers ETIMEDOUT.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
. "$(dirname "$0")/lib_mount.sh"
NOBJ=${TC_STARTUP_OBJECTS:-50000}
BULK_PREFIX="${RD_PREFIX}bulk/"

# A small librados program (compiled here: the Makefile links the tests'
# C helpers without librados) that writes or removes NOBJ tiny objects
# with up to 256 asynchronous ops in flight: `rados put` per object takes
# minutes for 20,000. Object i is "big/fNNNNN" holding
# "object NNNNN of the start-up test\n" times (i % 7 + 1).
cat >"$T/bulk.c" <<'EOF'
#include <rados/librados.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define WINDOW 256
int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: bulk CONF POOL put|rm PREFIX N\n");
		return 2;
	}
	rados_t cl;
	rados_ioctx_t io;
	int n = atoi(argv[5]), put = strcmp(argv[3], "put") == 0, rc;
	if ((rc = rados_create(&cl, NULL)) < 0 || (rc = rados_conf_read_file(cl, argv[1])) < 0 ||
	    (rc = rados_conf_set(cl, "rados_osd_op_timeout", "30")) < 0 ||
	    (rc = rados_conf_set(cl, "rados_mon_op_timeout", "30")) < 0 ||
	    (rc = rados_conf_set(cl, "client_mount_timeout", "30")) < 0 ||
	    (rc = rados_connect(cl)) < 0 || (rc = rados_ioctx_create(cl, argv[2], &io)) < 0) {
		fprintf(stderr, "bulk: cannot reach the cluster: %s\n", strerror(-rc));
		return 1;
	}
	rados_completion_t c[WINDOW] = {0};
	static char buf[WINDOW][512];
	int failed = 0;
	for (int i = 0; i < n + WINDOW; i++) {
		int s = i % WINDOW;
		if (c[s]) {
			rados_aio_wait_for_complete(c[s]);
			int r = rados_aio_get_return_value(c[s]);
			if (r < 0 && !(r == -2 && !put))
				failed++;
			rados_aio_release(c[s]);
			c[s] = NULL;
		}
		if (i >= n)
			continue;
		char name[512];
		snprintf(name, sizeof(name), "%sbig/f%05d", argv[4], i);
		rados_aio_create_completion(NULL, NULL, NULL, &c[s]);
		if (put) {
			size_t len = 0;
			for (int k = 0; k < i % 7 + 1; k++)
				len += (size_t)sprintf(buf[s] + len, "object %05d of the start-up test\n", i);
			rc = rados_aio_write_full(io, name, c[s], buf[s], len);
		} else {
			rc = rados_aio_remove(io, name, c[s]);
		}
		if (rc < 0) {
			failed++;
			rados_aio_release(c[s]);
			c[s] = NULL;
		}
	}
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	if (failed)
		fprintf(stderr, "bulk: %d of %d ops failed\n", failed, n);
	return failed ? 1 : 0;
}
EOF
cc -O2 -o "$T/bulk" "$T/bulk.c" -lrados || { fail "cannot build the bulk writer"; finish; }
bulk() { timeout 300 "$T/bulk" "$CEPH_CONF" "$CEPH_POOL" "$1" "$BULK_PREFIX" "$NOBJ"; }
# expected bytes of object I (see bulk.c)
expect() { local i=$1 k; for ((k = 0; k < i % 7 + 1; k++)); do printf 'object %05d of the start-up test\n' "$i"; done; }
# (before lib.sh's cleanup removes $T; the OSD back first if a check
# stopped it; rd_cleanup then finds only the few objects it removes itself)
bulk_cleanup() {
	if [ "$RD_OSD_DOWN" = 1 ]; then
		rd_osd_start || echo "t_rados_startup: could not restart the OSD"
	fi
	[ -x "$T/bulk" ] && bulk rm 2>/dev/null
}
trap 'bulk_cleanup; rd_cleanup; tcm_cleanup' EXIT

check "$NOBJ objects written with librados" bulk put
mkdir -p "$T/want"
for i in 0 1 6 12345 $((NOBJ - 1)); do expect "$i" >"$T/want/$i"; done

tc_config 256M none 1M
rd_dataset rb "$BULK_PREFIX" plain 1M

# ---- start the daemon; at once: a mount, library calls, status ----
# (python through libtiercache with its default wait; every call checked)
libcheck() {
	local lib=$O/lib/libtiercache.so pre=
	pre=$(ldd "$lib" 2>/dev/null | awk '/libasan/ {print $3}')
	LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0 python3 - "$lib" "$T/want" "$NOBJ" "$@" <<'EOF'
import ctypes, errno, os, sys
lib = ctypes.CDLL(sys.argv[1], use_errno=True)
want, nobj, args = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
class St(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("size", ctypes.c_uint64), ("mtime_ns", ctypes.c_int64),
                ("chunk_size", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32)]
lib.tiercache_connect.restype = ctypes.c_void_p
lib.tiercache_connect.argtypes = [ctypes.c_char_p]
lib.tiercache_set_wait.argtypes = [ctypes.c_void_p, ctypes.c_uint]
lib.tiercache_stat.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
lib.tiercache_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
lib.tiercache_pread.restype = ctypes.c_ssize_t
lib.tiercache_pread.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_uint64]
lib.tiercache_opendir.restype = ctypes.c_void_p
lib.tiercache_opendir.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.tiercache_readdir.restype = ctypes.c_void_p
lib.tiercache_readdir.argtypes = [ctypes.c_void_p]
lib.tiercache_closedir.argtypes = [ctypes.c_void_p]
lib.tiercache_last_error.restype = ctypes.c_char_p
def die(what):
    e = ctypes.get_errno()
    print("%s: %s: %s" % (what, errno.errorcode.get(e, str(e)),
                          lib.tiercache_last_error().decode(errors="replace")))
    sys.exit(3)
tc = lib.tiercache_connect(None)
if not tc:
    die("connect")
mode = args[0]
if mode == "wait":  # the library's wait: set it if asked
    if len(args) > 2 and lib.tiercache_set_wait(tc, int(args[2])) < 0:
        die("set_wait")
    st = St()
    if lib.tiercache_stat(tc, args[1].encode(), ctypes.byref(st)) < 0:
        die("stat")
    print("ok")
    sys.exit(0)
# "all": a stat, a listing and open+read of five files, as soon as the daemon answers
names = sorted(os.listdir(want), key=int)
st = St()
if lib.tiercache_stat(tc, b"rb/big/f00006", ctypes.byref(st)) < 0:
    die("stat")
if st.size != os.path.getsize(os.path.join(want, "6")):
    print("stat: size %d, want %d" % (st.size, os.path.getsize(os.path.join(want, "6"))))
    sys.exit(1)
d = lib.tiercache_opendir(tc, b"rb/big")
if not d:
    die("opendir")
n = 0
while lib.tiercache_readdir(d):
    n += 1
lib.tiercache_closedir(d)
if n != nobj:
    print("listing: %d entries, want %d" % (n, nobj))
    sys.exit(1)
for i in names:
    path = b"rb/big/f%05d" % int(i)
    h = lib.tiercache_open(tc, path, 0)
    if h < 0:
        die("open " + path.decode())
    buf = ctypes.create_string_buffer(4096)
    r = lib.tiercache_pread(tc, h, buf, 4096, 0)
    if r < 0:
        die("pread")
    if buf.raw[:r] != open(os.path.join(want, i), "rb").read():
        print("bytes of %s differ from the source" % path.decode())
        sys.exit(1)
print("ok")
EOF
}

tc_start || exit 1
mkdir -p "$T/mnt"
MNT_DIRS+=("$T/mnt")
env --default-signal=INT "$MOUNT_BIN" -f rb "$T/mnt" >"$T/mount.log" 2>&1 &
MPID=$!
MNT_PIDS+=("$MPID")
libcheck all >"$T/lib.out" 2>&1 &
LPID=$!
# status while the listing runs: loading, with files listed so far
seen=""
for _ in $(seq 1 200); do
	l=$(tc_ds rb "'%s %d %d' % (d['loading'], d['load_listed'], d['serving'])" 2>/dev/null)
	case "$l" in
	"True "[1-9]*" 0") seen=$l; break ;;
	"False "*" 1") break ;;
	esac
	sleep 0.05
done
check "tierctl status during the first listing: loading, files listed so far (got: '$seen')" \
	[ -n "$seen" ]
wait_mount() { mountpoint -q "$T/mnt"; }
check "tiercache-mount started during the listing comes up (within 120 s)" wait_until 120 wait_mount
check "tiercache-mount said on stderr that it waits for dataset rb" \
	grep -q "waiting for dataset rb to load (" "$T/mount.log"
check "a file read through the mount equals the source" cmp "$T/mnt/big/f12345" "$T/want/12345"
check "the last file read through the mount equals the source" \
	cmp "$T/mnt/big/f$(printf %05d $((NOBJ - 1)))" "$T/want/$((NOBJ - 1))"
check "ls of the mount lists every object" [ "$(ls "$T/mnt/big" | wc -l)" = "$NOBJ" ]
wait "$LPID"
lrc=$?
check "library stat, listing, open+read made during the listing succeed, bytes equal (rc $lrc: $(tr '\n' ' ' <"$T/lib.out"))" \
	[ "$lrc" = 0 ]
check "status after the listing: serving $NOBJ files, not loading" \
	[ "$(tc_ds rb "'%s %d' % (d['loading'], d['files'])")" = "False $NOBJ" ]
check "the daemon logged no 'unavailable' answer" bash -c "! grep -q 'unavailable' '$T/daemon.log'"
fusermount3 -u "$T/mnt"
wait "$MPID"
tc_stop

# ---- a first listing that fails: the OSD is down ----
# a new dataset (no manifest persisted by the run above) over the same
# objects; while the OSD is down its listing fails after op_timeout
sed -i 's/^\[dataset rb\]/[dataset rf]/' "$T/tc.conf"
check "the OSD stops" rd_osd_stop
tc_start || exit 1
s0=$(date +%s)
out=$(timeout 120 bash -c "$(declare -f libcheck); O='$O' T='$T' NOBJ=$NOBJ libcheck wait rf/big/f00001" 2>&1)
rc=$?
took=$(($(date +%s) - s0))
check "a stat waiting for a failing first listing gets the error, not a hang (rc $rc, ${took}s: $out)" \
	[ "$rc" = 3 ]
check "...EIO that says why: the OSDs did not answer" \
	bash -c "echo '$out' | grep -q 'EIO: dataset rf is unavailable: .*OSDs did not answer'"
# a mount of it fails with the same words instead of hanging
mkdir -p "$T/mnt2"
timeout 120 "$MOUNT_BIN" -f rf "$T/mnt2" >"$T/mount2.log" 2>&1
mrc=$?
check "tiercache-mount of a dataset that cannot be listed exits with an error (rc $mrc)" \
	[ "$mrc" != 0 ] && [ "$mrc" != 124 ]
check "...saying why" grep -q "rf is unavailable: .*OSDs did not answer" "$T/mount2.log"
tc_stop
check "the OSD comes back" rd_osd_start

# the Python binding's wait: Client(load_timeout=...) and set_wait
pywait() {
	local pre
	pre=$(ldd "$O/lib/libtiercache.so" 2>/dev/null | awk '/libasan/ {print $3}')
	LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0 PYTHONPATH="$TC_SRC/client/python" \
		TIERCACHE_LIBRARY="$O/lib/libtiercache.so" python3 - "$@" <<'EOF2'
import sys, tiercache
path, secs = sys.argv[1], int(sys.argv[2])
try:
    with tiercache.Client(load_timeout=secs) as c:
        st = c.stat(path)
        try:
            c.set_wait(70000)
            print("set_wait(70000) accepted")
            sys.exit(1)
        except ValueError:
            pass
        print("ok %d" % st.size)
except TimeoutError as e:
    print("TimeoutError: %s" % e)
    sys.exit(4)
EOF2
}
TC_SRC=$(cd "$(dirname "$0")/../.." && pwd)

# ---- a short wait that ends before the listing: ETIMEDOUT (C and Python) ----
sed -i 's/^\[dataset rf\]/[dataset rt]/' "$T/tc.conf"
tc_start || exit 1
pywait rt/big/f00001 1 >"$T/pywait.out" 2>&1 &
PWPID=$!
out=$(libcheck wait rt/big/f00001 1 2>&1)
rc=$?
wait "$PWPID"
pyrc=$?
if [ "$(tc_ds rt "d['serving']")" = True ] && [ "$rc" = 0 ]; then
	echo "note: the listing ended within 1 s; ETIMEDOUT not exercised"
else
	check "a 1 s wait on a longer listing: ETIMEDOUT with the progress ($out)" \
		bash -c "echo '$out' | grep -q 'ETIMEDOUT: dataset rt is still loading after waiting 1 s ('"
fi
out=$(cat "$T/pywait.out")
if [ "$pyrc" = 0 ]; then
	echo "note: the listing ended within 1 s; the binding's TimeoutError not exercised"
else
	check "Python Client(load_timeout=1) on a longer listing: TimeoutError with the progress ($out)" \
		bash -c "[ $pyrc = 4 ] && grep -q 'still loading after waiting 1 s' '$T/pywait.out'"
fi
check "Python: after the listing, Client(load_timeout=120).stat succeeds, set_wait(70000) is refused" \
	bash -c "$(declare -f pywait); O='$O' TC_SRC='$TC_SRC' pywait rt/big/f00001 120 | grep -q '^ok [1-9]'"
out=$(libcheck wait rt/big/f00001 0 2>&1)
check "after the listing, a stat with no wait succeeds ($out)" wait_until 120 bash -c \
	"$(declare -f libcheck); O='$O' T='$T' NOBJ=$NOBJ libcheck wait rt/big/f00001 0 >/dev/null"
finish
