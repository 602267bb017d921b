# tiercache-mount's direct I/O for large files (root, kernel >= 6.6: the
# mount must be allowed to let such files be mmapped). A file over 1 MiB
# read in large pieces is read with direct I/O: the bytes equal the source
# and the mount's own page cache stays empty (fincore); a thread that reads
# in small pieces gets the page cache for its next file, and a new thread
# follows that verdict; -o direct_io=large is direct whatever the reads,
# -o direct_io=off never; mmap of a direct file reads the source; small
# files are never direct; the counters at unmount agree; a bad value is
# refused with exit 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ]; then
	echo "t_mount_direct: needs root and /dev/fuse; skipped"
	exit 0
fi

tc_config 128M 128M 1M
mkdir -p "$T/cold"
for i in 1 2 3 4 5 6; do head -c $((8 * 1048576 + i * 4097)) /dev/urandom >"$T/cold/big$i.bin"; done
head -c 300000 /dev/urandom >"$T/cold/small.bin"
tc_start || exit 1

counters() { # counters LOG -> "direct_opens opens"
	sed -n 's/.* direct_opens=\([0-9]*\) opens=\([0-9]*\) .*unmounting.*/\1 \2/p' "$1" | tail -n 1
}
resident() { # resident FILE: bytes of FILE in the page cache
	fincore --bytes --noheadings --output RES "$1" | tr -d " "
}
# rd FILE BS: read FILE in BS-byte read()s, one process, compare with the
# source; prints nothing, fails on a difference
cat >"$T/rd.py" <<'PYEOF'
import os, sys
bs = int(sys.argv[1])
for mnt, src in zip(sys.argv[2::2], sys.argv[3::2]):
    fd = os.open(mnt, os.O_RDONLY)
    got = bytearray()
    while True:
        b = os.read(fd, bs)
        if not b:
            break
        got += b
    os.close(fd)
    with open(src, 'rb') as f:
        if got != f.read():
            sys.exit('differs: ' + mnt)
PYEOF
rd() { # rd BS NAME...: one process reads every NAME from the mount $D
	local bs=$1 args=() n
	shift
	for n in "$@"; do args+=("$D/$n" "$T/cold/$n"); done
	$PY "$T/rd.py" "$bs" "${args[@]}"
}

D=$T/mnt
: >"$T/mount.log"
tcm_mount "$D" -d -o passthrough=off ds || exit 1
DPID_=$MPID
if ! grep -q "direct_io=on" "$T/mount.log"; then
	# an older kernel: the page cache for everything, logged once
	check "without the kernel's permission: why is logged" grep -q "direct_io=off reason=" "$T/mount.log"
	check "... and a large file reads through the page cache" rd 1048576 big1.bin
	kill -TERM "$DPID_"
	wait "$DPID_"
	finish
fi
check "the kernel allows mmap of direct I/O files: direct_io=on" true

check "1 MiB reads of a large file equal the source" rd 1048576 big1.bin
check "... and left no page of it in the mount's page cache (direct I/O)" \
	[ "$(resident "$D/big1.bin")" = 0 ]
cat >"$T/mm.py" <<'PYEOF'
import mmap, sys
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'rb') as g:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    ok = m[:] == g.read()
    m.close()
sys.exit(0 if ok else 1)
PYEOF
check "mmap (MAP_SHARED) of a large file opened direct equals the source" \
	$PY "$T/mm.py" "$D/big5.bin" "$T/cold/big5.bin"
check "a thread reading 8 KiB pieces: its first large file equals the source" \
	rd 8192 big2.bin big3.bin
check "... its first file was direct (nothing cached)" [ "$(resident "$D/big2.bin")" = 0 ]
check "... its next file went through the page cache" [ "$(resident "$D/big3.bin")" -gt 0 ]
check "a new thread after that verdict: its file equals the source" rd 1048576 big4.bin
check "... and follows the verdict (page cache)" [ "$(resident "$D/big4.bin")" -gt 0 ]
check "a small file equals the source" rd 65536 small.bin
check "... and is never direct (page cache)" [ "$(resident "$D/small.bin")" -gt 0 ]

kill -TERM "$DPID_"
wait "$DPID_"
check "SIGTERM: exit 0" [ $? = 0 ]
read -r DIRECT OPENS <<<"$(counters "$T/mount.log")"
# fincore opens the file too. Direct: big1 (reader, then fincore: the
# last verdict was 'large'), mm.py's big5, big2; the rest follow the
# 'small' verdict of big2's reader (strangers 1-4, none the 8th, which
# would be probed) or are small: 4 of 11
check "counters: 4 of 11 opens direct (direct_opens=$DIRECT opens=$OPENS)" \
	[ "$DIRECT" = 4 ] && [ "$OPENS" = 11 ]

# ---- direct_io=large: direct whatever the reads; off: never
: >"$T/mount.log"
tcm_mount "$D" -d -o passthrough=off,direct_io=large ds || exit 1
DPID_=$MPID
check "direct_io=large: 8 KiB reads of two files equal the source" rd 8192 big2.bin big6.bin
check "... and both stayed out of the page cache" \
	[ "$(resident "$D/big2.bin")" = 0 ] && [ "$(resident "$D/big6.bin")" = 0 ]
kill -TERM "$DPID_"
wait "$DPID_"
read -r DIRECT OPENS <<<"$(counters "$T/mount.log")"
check "direct_io=large: every open direct, fincore's too ($DIRECT of $OPENS)" \
	[ "$DIRECT" = 4 ] && [ "$OPENS" = 4 ]

: >"$T/mount.log"
tcm_mount "$D" -d -o direct_io=off ds || exit 1
DPID_=$MPID
check "direct_io=off: 1 MiB reads equal the source" rd 1048576 big6.bin
check "... through the page cache" [ "$(resident "$D/big6.bin")" -gt 0 ]
kill -TERM "$DPID_"
wait "$DPID_"
read -r DIRECT OPENS <<<"$(counters "$T/mount.log")"
check "direct_io=off: no open direct ($DIRECT of $OPENS)" [ "$DIRECT" = 0 ] && [ "$OPENS" = 1 ]

# ---- bad value
tcm_check_bad_value direct_io=yes "use auto, large or off" "direct_io=auto|large|off"
finish
