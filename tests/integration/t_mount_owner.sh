# Owner and mode through the mount (issue 16 item 14): for a dataset with
# access = source, `stat` and `ls -l` through tiercache-mount show the
# source's owner, group and mode (what the daemon enforces), by lookup and
# by listing; the library's tiercache_stat / readdir carry them; a dataset
# with access = socket still shows r--r--r-- / r-xr-xr-x owned by the
# mounter. The rights themselves stay enforced: nobody reads what the
# source lets nobody read and is refused the rest. Runs as root; clients
# run as user nobody (runuser).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"
. "$(dirname "$0")/lib_python.sh"
tc_source_access_setup sock
mkdir -p "$T/cold/sub" "$T/cold/mine" "$T/cold2"
head -c 300000 /dev/urandom >"$T/cold/nob640"   # nobody:nogroup 0640
head -c 300000 /dev/urandom >"$T/cold/root600"  # root:root 0600
head -c 1000 /dev/urandom >"$T/cold/pub644"     # root:root 0644
head -c 1000 /dev/urandom >"$T/cold/sub/inner"  # nobody:root 0604 in root:nogroup 0750
head -c 1000 /dev/urandom >"$T/cold/mine/f"     # root:nogroup 2710 dir, 0400 file
head -c 2000 /dev/urandom >"$T/cold2/plain"     # root 0600, access = socket
chown nobody:"$nogroup" "$T/cold/nob640"
chmod 0640 "$T/cold/nob640"
chmod 0600 "$T/cold/root600" "$T/cold2/plain"
chmod 0644 "$T/cold/pub644"
chown nobody:root "$T/cold/sub/inner"
chmod 0604 "$T/cold/sub/inner"
chown root:"$nogroup" "$T/cold/sub"
chmod 0750 "$T/cold/sub"
chown root:"$nogroup" "$T/cold/mine"
chmod 2710 "$T/cold/mine"
chmod 0400 "$T/cold/mine/f"
chmod 0755 "$T/cold" "$T/cold2"
tc_start || exit 1

M=$T/mnt
tcm_mount "$M" -o allow_other ds || { fail "mount"; finish; }
# the same through the mount as at the source: by lookup (stat) ...
for f in nob640 root600 pub644 sub sub/inner mine mine/f; do
	want=$(stat -c '%U %G %a %F' "$T/cold/$f")
	got=$(stat -c '%U %G %a %F' "$M/$f" 2>&1)
	check "stat $f through the mount: '$got' = source '$want'" [ "$got" = "$want" ]
done
# ... and by listing (ls -l: READDIRPLUS), after the kernel forgot the names
fusermount3 -u "$M"
tcm_mount "$M" -o allow_other ds || { fail "mount again"; finish; }
lsl() { ls -l "$1" | awk 'NR > 1 {print $1, $3, $4, $NF}'; }
check "ls -l of the root: modes and owners equal the source's ($(lsl "$M" | tr '\n' ';'))" \
	[ "$(lsl "$M")" = "$(lsl "$T/cold")" ]
check "ls -l of sub/ equals the source's" [ "$(lsl "$M/sub")" = "$(lsl "$T/cold/sub")" ]
check "the mount's root shows the source root's mode" \
	[ "$(stat -c '%U %G %a' "$M")" = "$(stat -c '%U %G %a' "$T/cold")" ]

# enforcement is unchanged: what the source lets nobody read, and not more
nob() { runuser -u nobody -- "$@"; }
check "nobody reads the 0640 file it owns, bytes equal" bash -c \
	"runuser -u nobody -- cat '$M/nob640' | cmp -s - '$T/cold/nob640'"
nob cat "$M/root600" >"$T/got" 2>"$T/err"
check "nobody cannot read root's 0600 file: Permission denied, no bytes" \
	bash -c "grep -q 'Permission denied' '$T/err' && [ ! -s '$T/got' ]"
check "nobody reads the 0644 file" bash -c "runuser -u nobody -- cat '$M/pub644' | cmp -s - '$T/cold/pub644'"
# every file: nobody reads through the mount exactly what nobody may read
# at the source (the kernel's own verdict on the source is the reference)
for f in nob640 root600 pub644 sub/inner mine/f; do
	nob cat "$T/cold/$f" >"$T/want" 2>/dev/null
	wrc=$?
	nob cat "$M/$f" >"$T/got" 2>"$T/err"
	grc=$?
	check "nobody's cat of $f: through the mount as at the source (rc $grc vs $wrc), same bytes" \
		bash -c "[ $grc = $wrc ] && cmp -s '$T/got' '$T/want'"
done
nob ls "$M/mine" >"$T/got" 2>"$T/err"
check "nobody (group nogroup, --x) cannot list a 2710 directory" grep -q "Permission denied" "$T/err"
fusermount3 -u "$M"

# the library carries the fields too (tierctl's `stat` is not needed:
# Python over libtiercache)
libstat() {
	"${PY_ENV[@]}" python3 - "$O/lib/libtiercache.so" "$@" <<'EOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], use_errno=True)
class St(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("size", ctypes.c_uint64), ("mtime_ns", ctypes.c_int64),
                ("chunk_size", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32)]
lib.tiercache_connect.restype = ctypes.c_void_p
lib.tiercache_stat.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
tc = lib.tiercache_connect(None)
st = St()
if not tc or lib.tiercache_stat(tc, sys.argv[2].encode(), ctypes.byref(st)) < 0:
    print("error", ctypes.get_errno())
    sys.exit(1)
print("%o %d %d" % (st.mode, st.uid, st.gid))
EOF
}
export TIERCACHE_SOCKET=$T/sock
check "tiercache_stat of ds/nob640: mode 640, nobody's uid and gid" \
	[ "$(libstat ds/nob640)" = "640 $(id -u nobody) $(getent group "$nogroup" | cut -d: -f3)" ]
check "tiercache_stat of sock/plain (access = socket): 444, no owner" \
	[ "$(libstat sock/plain)" = "444 4294967295 4294967295" ]
# ... and the Python binding's StatResult: st_mode, st_uid, st_gid as
# os.stat gives them at the source, by stat and by scandir; for access =
# socket the defaults (0444, this process as owner)
pyown() {
	"${PY_ENV[@]}" python3 - "$@" <<'EOF'
import os, sys, tiercache
c = tiercache.Client()
for p in sys.argv[1:]:
    st = c.stat(p)
    e = [x for x in c.scandir(os.path.dirname(p)) if x.name == os.path.basename(p)][0].stat()
    same = (e.st_mode, e.st_uid, e.st_gid) == (st.st_mode, st.st_uid, st.st_gid)
    print("%o %d %d %s" % (st.st_mode, st.st_uid, st.st_gid, same))
EOF
}
for f in nob640 root600 sub/inner mine; do
	check "Python stat and scandir of ds/$f: mode, uid and gid as at the source" \
		[ "$(pyown "ds/$f")" = "$(python3 -c 'import os, sys; st = os.stat(sys.argv[1]); print("%o %d %d True" % (st.st_mode, st.st_uid, st.st_gid))' "$T/cold/$f")" ]
done
check "Python stat of sock/plain (access = socket): 0444 regular file, owned by the caller" \
	[ "$(pyown sock/plain)" = "100444 $(id -u) $(id -g) True" ]

# access = socket: as before, the mounter's and read-only for all
tcm_mount "$M" -o allow_other sock || { fail "mount sock"; finish; }
check "access = socket: a 0600 source file shows r--r--r-- owned by the mounter" \
	[ "$(stat -c '%U %G %a' "$M/plain")" = "root root 444" ]
check "access = socket: ls -l shows the same" \
	[ "$(lsl "$M")" = "-r--r--r-- root root plain" ]
fusermount3 -u "$M"
finish
