# Helpers for the integration tests that read a RADOS dataset (sourced after
# lib.sh by tests/integration/t_rados_*.sh). They run inside
# tests/ceph/run-test.sh, which exports CEPH_CONF, CEPH_POOL and CEPH_DIR.
#
# Every test writes only objects under its own prefix (RD_PREFIX, unique per
# test and run), removes them at exit, and leaves the OSD running: a test
# that stopped it restarts it in the exit trap, so the tests after it find a
# healthy cluster.
: "${CEPH_CONF:?run under tests/ceph/run-test.sh (CEPH_CONF is not set)}"
: "${CEPH_POOL:?run under tests/ceph/run-test.sh (CEPH_POOL is not set)}"
: "${CEPH_DIR:=$(dirname "$CEPH_CONF")}"
# the daemons' own keyrings must win (see tests/ceph/README.md)
unset CEPH_KEYRING CEPH_ARGS

RD_PREFIX="it-$(basename "$0" .sh)-$$/"
RD_OSD_DOWN=0

# rados CLI on the test pool, never waiting forever
rd_rados() {
	timeout 60 rados -c "$CEPH_CONF" -p "$CEPH_POOL" --rados-osd-op-timeout 30 \
		--rados-mon-op-timeout 30 --client-mount-timeout 30 "$@"
}

# rd_dataset NAME PREFIX LAYOUT CHUNK [extra lines...]: append a rados
# dataset section to $T/tc.conf (write the [daemon] part first, e.g. with
# tc_config). op_timeout is short so that the fault tests are quick;
# revalidate_after = 0s makes every open check the source.
rd_dataset() {
	local name=$1 prefix=$2 layout=$3 chunk=$4
	shift 4
	{
		echo "[dataset $name]"
		echo "backend = rados"
		echo "ceph_conf = ${RD_CEPH_CONF:-$CEPH_CONF}"
		echo "pool = $CEPH_POOL"
		echo "prefix = $prefix"
		echo "layout = $layout"
		echo "chunk_size = $chunk"
		echo "op_timeout = 5s"
		echo "revalidate_after = 0s"
		for l in "$@"; do echo "$l"; done
	} >>"$T/tc.conf"
}

# Every object of the pool whose name starts with PREFIX, one per line.
rd_objects() {
	rd_rados ls | awk -v p="$1" 'index($0, p) == 1'
}

# rd_get_tree PREFIX DIR: `rados get` every file under PREFIX into DIR, the
# striped ones (PATH.0000000000000000 ...) with `rados --striper get`, so DIR
# holds what is in the pool independently of tiercache. Note: a striper
# read takes a lock on the first object, which changes its version.
rd_get_tree() {
	local prefix=$1 dir=$2 obj rel
	mkdir -p "$dir"
	rd_objects "$prefix" | sort >"$T/objects.list"
	while IFS= read -r obj; do
		rel=${obj#"$prefix"}
		case "$rel" in
		*.0000000000000000)
			rel=${rel%.0000000000000000}
			mkdir -p "$(dirname "$dir/$rel")"
			# (the Pacific CLI sometimes crashes in a librados thread
			# after a striper get has written the whole file; the bytes
			# are compared by the caller)
			rd_rados --striper get "$prefix$rel" "$dir/$rel" 2>>"$T/rados-cli.err" ||
				{ echo "rados --striper get $prefix$rel failed"; return 1; }
			;;
		*.[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])
			;; # a later piece of a striped file
		*)
			mkdir -p "$(dirname "$dir/$rel")"
			rd_rados get "$obj" "$dir/$rel" || { echo "rados get $obj failed"; return 1; }
			;;
		esac
	done <"$T/objects.list"
}

rd_rm_prefix() {
	local obj
	rd_objects "$1" | while IFS= read -r obj; do
		rd_rados rm "$obj" || echo "lib_rados: cannot remove object $obj" >&2
	done
}

# tc_ds NAME EXPR: a Python expression on dataset NAME's record (as d) of
# `tierctl status --json`
tc_ds() {
	"$TC_BIN/tierctl" status --json |
		python3 -c "import json,sys; s=json.load(sys.stdin); d=[x for x in s['datasets'] if x['name']=='$1'][0]; print($2)"
}

# rd_small_tree DIR SEED: 160 files of 20-140 KB in 4 class folders
# (c0..c3/fNNN.jpg), sizes from SEED, bytes random
rd_small_tree() {
	python3 - "$1" "$2" <<'PY'
import os, random, sys
d = sys.argv[1]
r = random.Random(int(sys.argv[2]))
for i in range(160):
    sub = os.path.join(d, "c%d" % (i % 4))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%03d.jpg" % i), "wb") as f:
        f.write(os.urandom(r.randint(20, 140) * 1024))
PY
}

# rd_import SRC DATASET: `tierctl import`, its summary line kept in
# $T/import.out; prints "UPLOADED UNCHANGED FAILED"
rd_import() {
	timeout 300 "$TC_BIN/tierctl" import "$1" "$2" >"$T/import.stdout" 2>"$T/import.out"
	local rc=$?
	grep -oE '\([0-9]+ uploaded, [0-9]+ unchanged, [0-9]+ failed\)' "$T/import.out" |
		tail -n 1 | tr -dc '0-9 \n' | awk '{print $1, $2, $3}'
	return $rc
}

# wait_until SECONDS COMMAND...: poll COMMAND every 0.5 s (the bound is only
# there so that a broken daemon fails the test instead of hanging it)
wait_until() {
	local tries=$(($1 * 2))
	shift
	while [ "$tries" -gt 0 ]; do
		tries=$((tries - 1))
		"$@" && return 0
		sleep 0.5
	done
	return 1
}

# tc_pread DATASET/PATH OFF LEN OUT: one open + preads of [OFF, OFF+LEN)
# through libtiercache into OUT. Exit 0 on success; on failure prints
# "ERRNO_NAME: detail" to stderr and exits 3.
tc_pread() {
	local lib=$O/lib/libtiercache.so pre=
	# an ASan-built library must have its runtime loaded first
	pre=$(ldd "$lib" 2>/dev/null | awk '/libasan/ {print $3}')
	LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0 python3 - "$lib" "$@" <<'EOF'
import ctypes, errno, sys
lib = ctypes.CDLL(sys.argv[1], use_errno=True)
path, off, n, out = sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
lib.tiercache_connect.restype = ctypes.c_void_p
lib.tiercache_connect.argtypes = [ctypes.c_char_p]
lib.tiercache_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
lib.tiercache_pread.restype = ctypes.c_ssize_t
lib.tiercache_pread.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_uint64]
lib.tiercache_close.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.tiercache_last_error.restype = ctypes.c_char_p
def die(what):
    e = ctypes.get_errno()
    sys.stderr.write("%s: %s: %s\n" % (what, errno.errorcode.get(e, str(e)),
                                       lib.tiercache_last_error().decode(errors="replace")))
    sys.exit(3)
tc = lib.tiercache_connect(None)
if not tc:
    die("connect")
h = lib.tiercache_open(tc, path, 0)
if h < 0:
    die("open")
buf = ctypes.create_string_buffer(max(n, 1))
got = 0
while got < n:
    r = lib.tiercache_pread(tc, h, ctypes.byref(buf, got), n - got, off + got)
    if r < 0:
        die("pread")
    if r == 0:
        break
    got += r
with open(out, "wb") as f:
    f.write(buf.raw[:got])
lib.tiercache_close(tc, h)
EOF
}

# ---- the OSD (fault tests) ----

rd_osd_pid() {
	local pid
	pid=$(cat "$CEPH_DIR/run/osd.0.pid" 2>/dev/null) || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	# only a ceph-osd of this cluster (a recycled pid is someone else's)
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "ceph-osd .*-c $CEPH_CONF" || return 1
	echo "$pid"
}

# A clean stop (SIGTERM): memstore saves its objects for the restart.
rd_osd_stop() {
	local pid
	pid=$(rd_osd_pid) || { echo "lib_rados: no running OSD found"; return 1; }
	RD_OSD_DOWN=1
	kill -TERM "$pid" || return 1
	wait_until 120 eval "! kill -0 $pid 2>/dev/null"
}

rd_pool_writable() {
	echo probe >"$T/probe"
	timeout 15 rados -c "$CEPH_CONF" -p "$CEPH_POOL" --rados-osd-op-timeout 10 \
		--rados-mon-op-timeout 10 --client-mount-timeout 10 \
		put "${RD_PREFIX}__probe__" "$T/probe" 2>/dev/null
}

# Start the OSD again and wait until the pool takes writes.
rd_osd_start() {
	env -u CEPH_KEYRING -u CEPH_ARGS ceph-osd -c "$CEPH_CONF" -i 0 2>>"$T/osd-restart.log" ||
		return 1
	wait_until 120 rd_pool_writable || return 1
	rd_rados rm "${RD_PREFIX}__probe__" 2>/dev/null
	RD_OSD_DOWN=0
}

rd_cleanup() {
	if [ "$RD_OSD_DOWN" = 1 ]; then
		rd_osd_start || echo "lib_rados: could not restart the OSD"
	fi
	rd_rm_prefix "$RD_PREFIX"
	if [ -n "$(rd_objects "$RD_PREFIX")" ]; then
		echo "lib_rados: objects left under $RD_PREFIX"
	fi
}
trap 'rd_cleanup; tc_cleanup' EXIT
