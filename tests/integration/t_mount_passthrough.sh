# tiercache-mount with FUSE passthrough (root, kernel >= 6.9): a file that
# is one cached chunk file is read by the kernel from the chunk file itself,
# so reading it sends no READ request to the mount (its counters, logged at
# unmount with -d, say so), and the bytes equal the source; a small file
# packed in a segment (up to segment_threshold) cannot be passed through
# (the kernel would read the segment at the file's offsets): it reads the
# source's bytes through the mount and is not counted as passed through; a
# file of several chunks still reads through the mount; -o passthrough=off reads
# every file through the mount with identical bytes; a changed source is
# read new at the next open; two descriptors of one file share a backing
# file, and a descriptor of an old version keeps reading it; mmap works;
# fusermount3 -u and SIGTERM unmount our own mount; allow_other, clone_fd
# and fsname reach the kernel.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ]; then
	echo "t_mount_passthrough: needs root and /dev/fuse; skipped"
	exit 0
fi
# kernel >= 6.9 (passthrough); older kernels are the fallback path
read -r KMAJ KMIN < <(uname -r | awk -F. '{print $1, $2}')
NEWK=0
if [ "$KMAJ" -gt 6 ] || { [ "$KMAJ" -eq 6 ] && [ "$KMIN" -ge 9 ]; }; then NEWK=1; fi

# Chunks of 1M, segment_threshold 512K (set here, whatever the default):
# files of 512K-1M are one chunk file each (passed through; larger files
# use direct I/O, docs/mount.md), smaller ones are segment items.
TC_DAEMON_CONF="segment_threshold = 512K" tc_config 64M 64M 1M "revalidate_after = 0s"
mkdir -p "$T/cold/d" "$T/cold/p"
for i in $(seq 1 40); do head -c $((1000 + i * 2500)) /dev/urandom >"$T/cold/d/s$i.bin"; done
for i in $(seq 1 12); do head -c $((540000 + i * 30000)) /dev/urandom >"$T/cold/p/p$i.bin"; done
head -c 1048576 /dev/urandom >"$T/cold/exact.bin" # exactly one chunk
head -c 2600000 /dev/urandom >"$T/cold/big.bin"  # three chunks
: >"$T/cold/empty.bin"
head -c 700000 /dev/urandom >"$T/cold/chg.bin"
tc_start || exit 1

# a mount's counters: the line it logs at unmount (-d shows INFO lines)
counters() { # counters LOG -> "opens P reads"
	sed -n 's/.* opens=\([0-9]*\) passthrough_opens=\([0-9]*\) read_requests=\([0-9]*\) .*unmounting.*/\1 \2 \3/p' "$1" | tail -n 1
}
stop_mount() { # stop_mount PID
	kill -TERM "$1" 2>/dev/null
	wait "$1"
}

# ---- passthrough=auto (default): the files of one chunk file, read twice:
# all passed through, no READ request
C=$T/mnt_chunks
: >"$T/mount.log"
tcm_mount "$C" -d ds || exit 1
ok=1
for f in exact.bin $(cd "$T/cold" && ls p/*.bin); do
	cmp -s "$T/cold/$f" "$C/$f" || { echo "differs: $f"; ok=0; }
	cmp -s "$T/cold/$f" "$C/$f" || { echo "differs (2nd): $f"; ok=0; }
done
check "files of one chunk file through the passthrough mount equal the source (twice)" [ $ok = 1 ]
stop_mount "$MPID"
read -r OPENS PTO READS <<<"$(counters "$T/mount.log")"
echo "one-chunk-file mount: opens=$OPENS passthrough_opens=$PTO read_requests=$READS"
if [ "$NEWK" = 1 ]; then
	check "the kernel offered passthrough and the mount asked for it" \
		grep -q "passthrough=on" "$T/mount.log"
	check "every open of a one-chunk file passed through ($PTO of $OPENS)" \
		[ "${PTO:-0}" -ge 26 ] && [ "$PTO" = "$OPENS" ]
	check "no READ request for them (read_requests=$READS)" [ "${READS:-x}" = 0 ]
fi

# ---- passthrough=auto, every file read twice: small ones from segments
P=$T/mnt_pt
: >"$T/mount.log"
tcm_mount "$P" -d ds || exit 1
PPID_=$MPID
ok=1
for f in $(cd "$T/cold" && find . -type f | sort); do
	cmp -s "$T/cold/$f" "$P/$f" || { echo "differs: $f"; ok=0; }
	cmp -s "$T/cold/$f" "$P/$f" || { echo "differs (2nd): $f"; ok=0; }
done
check "every file through the passthrough mount equals the source (twice)" [ $ok = 1 ]
check "/proc/mounts: ro fuse.tiercache mount" \
	grep -qE " $P fuse.tiercache ro,nosuid,nodev" /proc/mounts

cat >"$T/pt.py" <<'PYEOF'
import mmap, os, sys
signal_ok = True
P, C = sys.argv[1:3]
def check(what, cond):
    print(('ok: ' if cond else 'FAIL: ') + what, flush=True)
def rd(p):
    with open(p, 'rb') as f:
        return f.read()
src = rd(C + '/p/p7.bin')
a = os.open(P + '/p/p7.bin', os.O_RDONLY)
b = os.open(P + '/p/p7.bin', os.O_RDONLY)
check('two descriptors of one file read the same bytes',
      os.pread(a, len(src) + 10, 0) == src and os.pread(b, 1000, 500) == src[500:1500])
os.close(a)
check('the second one still reads after the first closed', os.pread(b, len(src), 0) == src)
os.close(b)
with open(P + '/p/p9.bin', 'rb') as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    check('mmap of a passed-through file reads the source', m[:] == rd(C + '/p/p9.bin'))
    m.close()
with open(P + '/d/s9.bin', 'rb') as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    check('mmap of a small file (a segment item) reads the source', m[:] == rd(C + '/d/s9.bin'))
    m.close()
# a changed source: the next open reads the new version; an open
# descriptor of the old one keeps reading the old bytes
old = rd(C + '/chg.bin')
fd = os.open(P + '/chg.bin', os.O_RDONLY)
check('chg.bin v1', os.pread(fd, len(old) + 1, 0) == old)
new = os.urandom(900000)
with open(C + '/chg.bin', 'wb') as f:
    f.write(new)
st = os.stat(C + '/chg.bin')
os.utime(C + '/chg.bin', (st.st_mtime + 60, st.st_mtime + 60))
check('changed source: a new open reads v2 while v1 is open', rd(P + '/chg.bin') == new)
check('the descriptor opened before still reads v1', os.pread(fd, len(old) + 1, 0) == old)
os.close(fd)
check('after it closed: v2 again', rd(P + '/chg.bin') == new)
newer = os.urandom(600000)
with open(C + '/chg.bin', 'wb') as f:
    f.write(newer)
os.utime(C + '/chg.bin', (st.st_mtime + 120, st.st_mtime + 120))
check('shrunk source, no descriptor open: a new open reads exactly v3',
      rd(P + '/chg.bin') == newer)
check('... and stat says its size', os.stat(P + '/chg.bin').st_size == len(newer))
PYEOF
$PY "$T/pt.py" "$P" "$T/cold" >"$T/pt.out" 2>&1
while read -r line; do
	case "$line" in
	ok:*) ok "${line#ok: }" ;;
	FAIL:*) fail "${line#FAIL: }" ;;
	*) echo "$line" ;;
	esac
done <"$T/pt.out"

stop_mount "$PPID_"
check "SIGTERM: exit 0" [ $? = 0 ]
check "SIGTERM: unmounted" bash -c "! mountpoint -q '$P'"
read -r OPENS PTO READS <<<"$(counters "$T/mount.log")"
echo "passthrough mount: opens=$OPENS passthrough_opens=$PTO read_requests=$READS"
if [ "$NEWK" = 1 ]; then
	# passed through: p/ and exact x2, chg x2, pt.py's opens of p7, p9
	# and chg; not: the 40 small files x2 (+ s9's mmap), big, empty x2
	check "one-chunk files passed through (opens=$OPENS passthrough_opens=$PTO)" \
		[ "${PTO:-0}" -ge 32 ]
	check "small files (segment items) not passed through ($((OPENS - PTO)) opens not)" \
		[ "$((OPENS - ${PTO:-0}))" -ge 81 ] && [ "$((OPENS - ${PTO:-0}))" -le 90 ]
	# READs: the small files' first reads (a second open of the same
	# version reads the kept page cache), s9's mmap, big.bin and chg.bin's
	# direct-I/O descriptor
	check "small files read through the mount (read_requests=$READS)" \
		[ "${READS:-0}" -ge 40 ]
fi

# ---- passthrough=off: the old path, same bytes, every read a request
O=$T/mnt_off
: >"$T/mount.log"
tcm_mount "$O" -d -o passthrough=off ds || exit 1
OPID=$MPID
ok=1
for f in $(cd "$T/cold" && find . -type f | sort); do
	cmp -s "$T/cold/$f" "$O/$f" || { echo "differs: $f"; ok=0; }
done
check "passthrough=off: every file equals the source" [ $ok = 1 ]
stop_mount "$OPID"
read -r OPENS PTO READS <<<"$(counters "$T/mount.log")"
echo "passthrough=off mount: opens=$OPENS passthrough_opens=$PTO read_requests=$READS"
check "passthrough=off: nothing passed through (passthrough_opens=$PTO)" [ "${PTO:-x}" = 0 ]
check "passthrough=off: small files are read by READ requests ($READS)" [ "${READS:-0}" -ge 42 ]

# ---- fusermount3 -u unmounts our own mount, the process exits 0
U=$T/mnt_u
tcm_mount "$U" ds || exit 1
UPID=$MPID
check "read before fusermount3 -u" cmp -s "$T/cold/d/s3.bin" "$U/d/s3.bin"
check "fusermount3 -u" fusermount3 -u "$U"
wait "$UPID"
check "after fusermount3 -u: exit 0" [ $? = 0 ]
check "after fusermount3 -u: unmounted" bash -c "! mountpoint -q '$U'"

# ---- our own mount with allow_other, clone_fd and a name: the kernel gets
# them, passthrough still works
A=$T/mnt_a
: >"$T/mount.log"
tcm_mount "$A" -d -o allow_other,clone_fd,fsname=tcpt ds || exit 1
APID=$MPID
check "allow_other, clone_fd: a one-chunk file equals the source" cmp -s "$T/cold/p/p5.bin" "$A/p/p5.bin"
check "allow_other, clone_fd: a big file equals the source" cmp -s "$T/cold/big.bin" "$A/big.bin"
check "/proc/mounts: fsname and allow_other" \
	grep -qE "^tcpt $A fuse.tiercache ro,.*allow_other" /proc/mounts
stop_mount "$APID"
read -r OPENS PTO READS <<<"$(counters "$T/mount.log")"
[ "$NEWK" = 1 ] && check "allow_other, clone_fd: passed through ($PTO of $OPENS opens)" \
	[ "${PTO:-0}" -ge 1 ]

# ---- bad value
tcm_check_bad_value passthrough=yes "use auto or off" "passthrough=auto|off"
finish
