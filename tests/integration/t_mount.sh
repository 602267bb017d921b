# tiercache-mount with real programs: the mounted tree equals the source
# for find, ls -lR, sha256sum and tar; fio sequential and random reads
# verify; every write fails with EROFS; errors map to the right errno; a
# subdirectory mounts; -o immutable, -o no_splice and streamed reads give the same bytes; the command line is checked before mounting; the
# mount goes away cleanly with fusermount3 -u, SIGTERM and SIGINT, in the
# foreground and in the background.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

# wait_exit PID: its exit status, or 124 if it is still running after 10 s
wait_exit() {
	for _ in $(seq 1 200); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$1" 2>/dev/null && return 124
	wait "$1"
}

# tcm_umount MOUNTPOINT PID: fusermount3 -u, then the process must exit 0.
tcm_umount() {
	fusermount3 -u "$1" || return 1
	wait_exit "$2"
}

# listing of a tree: path, type, size and mtime (seconds) of files
tree_list() {
	(cd "$1" && find . -mindepth 1 \( -type f -printf '%P f %s %TY-%Tm-%Td %TT\n' \) -o \
		\( -type d -printf '%P d\n' \) | LC_ALL=C sort)
}
# ls -lR with what a read-only view may differ in removed (modes, owners,
# link counts, directory sizes and times): kind, size, time, name of files
ls_norm() {
	(cd "$1" && LC_ALL=C ls -lR --time-style=+%s . | awk '
		/^total / { next }
		/^-/ { printf "f %s %s", $5, $6; for (i = 7; i <= NF; i++) printf " %s", $i; print ""; next }
		/^d/ { printf "d"; for (i = 7; i <= NF; i++) printf " %s", $i; print ""; next }
		{ print }')
}
sums() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
# tar of a tree with what the view changes normalised (modes, owners,
# directory times); file times are compared by tree_list
tar_of() {
	tar -C "$1" -c --sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
		--mode=a=rX --mtime=@0 . | sha256sum
}
# errno_of PYTHON-STATEMENT: the errno name the statement fails with
errno_of() {
	"$PY" -c "
import errno, os, sys
try:
    $1
    print('OK')
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
"
}

# ---- command line, before any daemon ----
out=$("$MOUNT_BIN" --help)
check "--help exits 0" [ $? = 0 ]
missing=
for w in --socket reconnect_timeout entry_timeout attr_timeout negative_timeout connections \
	immutable read_ahead_kb no_splice allow_other max_threads -f -d -s fusermount3; do
	grep -q -- "$w" <<<"$out" || missing="$missing $w"
done
check "--help documents every option (missing:${missing:- none})" [ -z "$missing" ]
"$MOUNT_BIN" >/dev/null 2>&1
check "no arguments: usage error (exit 2)" [ $? = 2 ]
"$MOUNT_BIN" -o connections=0 ds "$T" >/dev/null 2>&1
check "connections=0: usage error (exit 2)" [ $? = 2 ]
"$MOUNT_BIN" -o attr_timeout=-1 ds "$T" >/dev/null 2>&1
check "attr_timeout=-1: usage error (exit 2)" [ $? = 2 ]
"$MOUNT_BIN" -o no_such_option ds "$T" >/dev/null 2>&1
check "an unknown -o option: usage error (exit 2), before connecting" [ $? = 2 ]
"$MOUNT_BIN" ds/../x "$T" >/dev/null 2>&1
check "'..' in the source: usage error (exit 2)" [ $? = 2 ]
err=$("$MOUNT_BIN" --socket "$T/nosock" ds "$T" 2>&1)
rc=$?
check "no daemon: exit 1" [ $rc = 1 ]
check "no daemon: the message names the socket" grep -q 'cannot connect.*nosock' <<<"$err"

# ---- a dataset: the shared tree, a big directory, fio files ----
CS=262144
tc_config 256M 256M 256K
tc_gen_tree "$T/cold" $CS
mkdir -p "$T/cold/bigdir"
for i in $(seq 1 2500); do echo "$i" >"$T/cold/bigdir/e$i"; done
(cd "$T/cold" && fio --name=seq --filename=fio_seq.bin --rw=write --bs=128k --size=24M \
	--verify=crc32c --do_verify=0 >/dev/null 2>&1 &&
	fio --name=rnd --filename=fio_rnd.bin --rw=write --bs=16k --size=8M \
		--verify=crc32c --do_verify=0 >/dev/null 2>&1 && rm -f ./*.state)
check "fio wrote its verify files" test -s "$T/cold/fio_seq.bin" -a -s "$T/cold/fio_rnd.bin"
tc_start || exit 1
nfiles=$(find "$T/cold" -type f | wc -l)

err=$("$MOUNT_BIN" nosuch "$T" 2>&1)
rc=$?
check "unknown dataset: exit 1" [ $rc = 1 ]
check "unknown dataset: the message names it" grep -q 'nosuch' <<<"$err"
err=$("$MOUNT_BIN" ds/one.bin "$T" 2>&1)
rc=$?
check "a file as source: exit 1, 'not a directory'" \
	bash -c '[ "$1" = 1 ] && grep -q "not a directory" <<<"$2"' _ "$rc" "$err"

M=$T/mnt
tcm_mount "$M" ds || exit 1
mpid=$MPID
check "mounted read-only as fuse.tiercache" \
	bash -c "grep -q ' $M fuse.tiercache ro,' /proc/mounts"
if [ "$(id -u)" = 0 ]; then
	check "readahead window raised to 4096 KiB (large reads)" \
		[ "$(cat "/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb")" = 4096 ]
fi

check "find: tree, sizes and mtimes equal the source" \
	diff <(tree_list "$T/cold") <(tree_list "$M")
check "ls -lR equals the source (kinds, sizes, times, names)" \
	diff <(ls_norm "$T/cold") <(ls_norm "$M")
check "sha256sum of every file equals the source" diff <(sums "$T/cold") <(sums "$M")
check "tar c of the mount equals tar c of the source" [ "$(tar_of "$M")" = "$(tar_of "$T/cold")" ]
check "second pass (page cache): sha256sum equal" diff <(sums "$T/cold") <(sums "$M")
check "cmp of a multi-chunk file" cmp "$T/cold/multi.bin" "$M/multi.bin"
check "odd-sized reads across chunk boundaries" \
	bash -c "dd if='$M/multi.bin' bs=12345 skip=7 2>/dev/null | cmp - <(dd if='$T/cold/multi.bin' bs=12345 skip=7 2>/dev/null)"

fio_read() { # fio_read NAME FILE RW BS
	(cd "$M" && fio --name="$1" --filename="$2" --rw="$3" --bs="$4" --verify=crc32c \
		--readonly --numjobs=2 --group_reporting --output-format=terse >"$T/fio.$1" 2>&1)
}
check "fio sequential read, 2 jobs, crc32c verify" fio_read seqrd fio_seq.bin read 128k
check "fio random read, 2 jobs, crc32c verify" fio_read rndrd fio_rnd.bin randread 16k
check "fio reports no errors" bash -c "! grep -qi 'verify failed\|err=[^0]' '$T/fio.seqrd' '$T/fio.rndrd'"

check "listing a directory twice on one fd (rewinddir) gives the same names" "$PY" -c "
import os, sys
fd = os.open('$M/bigdir', os.O_RDONLY)
a = os.listdir(fd)
b = os.listdir(fd)
want = sorted(os.listdir('$T/cold/bigdir'))
sys.exit(0 if sorted(a) == want and sorted(b) == want else 1)"
check "readdir d_ino and st_ino agree after lookup" "$PY" -c "
import os, sys
ents = {e.name: e.inode() for e in os.scandir('$M/sub')}
sys.exit(0 if all(os.stat('$M/sub/' + n).st_ino == i for n, i in ents.items()) else 1)"
check "statfs: one inode per file of the dataset" [ "$(stat -f -c %c "$M")" = "$nfiles" ]
nbytes=$(find "$T/cold" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
check "statfs: blocks cover the dataset's bytes" \
	[ $(($(stat -f -c '%b * %S' "$M"))) -ge "$nbytes" ]

# ---- read-only ----
check "create fails with EROFS" [ "$(errno_of "open('$M/new.bin', 'wb')")" = EROFS ]
check "write-open of a file fails with EROFS" [ "$(errno_of "open('$M/one.bin', 'r+b')")" = EROFS ]
check "append fails with EROFS" [ "$(errno_of "open('$M/one.bin', 'ab')")" = EROFS ]
check "truncate fails with EROFS" [ "$(errno_of "os.truncate('$M/one.bin', 0)")" = EROFS ]
check "unlink fails with EROFS" [ "$(errno_of "os.unlink('$M/one.bin')")" = EROFS ]
check "mkdir fails with EROFS" [ "$(errno_of "os.mkdir('$M/d')")" = EROFS ]
check "rmdir fails with EROFS" [ "$(errno_of "os.rmdir('$M/sub/deeper')")" = EROFS ]
check "rename fails with EROFS" [ "$(errno_of "os.rename('$M/one.bin', '$M/two.bin')")" = EROFS ]
check "chmod fails with EROFS" [ "$(errno_of "os.chmod('$M/one.bin', 0o644)")" = EROFS ]
check "symlink fails with EROFS" [ "$(errno_of "os.symlink('x', '$M/l')")" = EROFS ]
check "the source is untouched" test -s "$T/cold/one.bin" -a ! -e "$T/cold/new.bin"

# ---- errno ----
check "missing name: ENOENT" [ "$(errno_of "os.stat('$M/nope')")" = ENOENT ]
check "missing deeper name: ENOENT" [ "$(errno_of "open('$M/sub/nope/x', 'rb')")" = ENOENT ]
check "a directory opened as a file: EISDIR" [ "$(errno_of "open('$M/sub', 'rb').read()")" = EISDIR ]
check "a file as a directory: ENOTDIR" [ "$(errno_of "os.listdir('$M/one.bin')")" = ENOTDIR ]
check "a name longer than 255 bytes: ENAMETOOLONG" \
	[ "$(errno_of "os.stat('$M/' + 'x' * 300)")" = ENAMETOOLONG ]

# ---- files opened by a path list, no listing: lookups answered from the
# directory's listing once it has seen two (logged at debug level) ----
P=$T/mnt_paths
tcm_mount "$P" -d -o negative_timeout=0 ds || exit 1
ppid=$MPID
check "by path list: every file of sub/ equal" \
	bash -c 'for i in $(seq 1 20); do cmp -s "$1/sub/s$i.dat" "$2/sub/s$i.dat" || exit 1; done' _ "$P" "$T/cold"
check "by path list: the directory was listed to answer lookups" \
	grep -q "dir=ds/sub entries=21: listed to answer lookups" "$T/mount.log"
check "by path list: a name not in the listing is ENOENT" \
	[ "$(errno_of "os.stat('$P/sub/s99.dat')")" = ENOENT ]
check "by path list: a subdirectory found through the listing" cmp "$P/sub/deeper/big.dat" "$T/cold/sub/deeper/big.dat"
check "path-list mount unmounts cleanly" tcm_umount "$P" "$ppid"

# ---- -o immutable: no open/release requests, per-node read handles ----
I=$T/mnt_imm
tcm_mount "$I" -o immutable ds || exit 1
ipid=$MPID
check "immutable: find equals the source" diff <(tree_list "$T/cold") <(tree_list "$I")
check "immutable: sha256sum of every file (more files than kept handles)" \
	diff <(sums "$T/cold") <(sums "$I")
check "immutable: second pass equal" diff <(sums "$T/cold") <(sums "$I")
(cd "$I" && fio --name=imm --filename=fio_rnd.bin --rw=randread --bs=16k --verify=crc32c \
	--readonly --numjobs=2 --group_reporting --output-format=terse >"$T/fio.imm" 2>&1)
check "immutable: fio random read with verify" [ $? = 0 ]
check "immutable: writes still fail with EROFS" [ "$(errno_of "open('$I/one.bin', 'r+b')")" = EROFS ]
check "immutable: unmounts cleanly" tcm_umount "$I" "$ipid"

# ---- -o no_splice: read bytes copied through the mount's memory ----
N=$T/mnt_nosplice
tcm_mount "$N" -o no_splice ds || exit 1
npid=$MPID
check "no_splice: sha256sum of every file equals the source" diff <(sums "$T/cold") <(sums "$N")
check "no_splice: odd-sized reads across chunk boundaries" \
	bash -c "dd if='$N/multi.bin' bs=12345 skip=7 2>/dev/null | cmp - <(dd if='$T/cold/multi.bin' bs=12345 skip=7 2>/dev/null)"
check "no_splice: unmounts cleanly" tcm_umount "$N" "$npid"
# no descriptors passed at all: splicing falls back to streamed reads
TIERCACHE_NO_FD_PASSING=1 tcm_mount "$N" ds || exit 1
npid=$MPID
check "no fd passing: sha256sum of every file equals the source" diff <(sums "$T/cold") <(sums "$N")
check "no fd passing: unmounts cleanly" tcm_umount "$N" "$npid"

# ---- a subdirectory, a second mount at the same time ----
S=$T/mnt_sub
tcm_mount "$S" -o connections=1,attr_timeout=0,entry_timeout=0 ds/sub || exit 1
spid=$MPID
check "subdirectory mount: tree equals the source's sub/" \
	diff <(tree_list "$T/cold/sub") <(tree_list "$S")
check "subdirectory mount: bytes equal" diff <(sums "$T/cold/sub") <(sums "$S")
check "fusermount3 -u unmounts, the process exits 0" tcm_umount "$S" "$spid"
check "mountpoint is empty again" [ -z "$(ls -A "$S")" ]

tcm_mount "$S" -s ds/sub/deeper || exit 1
spid=$MPID
check "-s (single-threaded): bytes equal" cmp "$T/cold/sub/deeper/big.dat" "$S/big.dat"
kill -INT "$spid"
wait_exit "$spid"
check "SIGINT: exit 0" [ $? = 0 ]
check "SIGINT: unmounted" bash -c "! mountpoint -q '$S'"

# background mode: returns once mounted, leaves with fusermount3 -u
B=$T/mnt_bg
mkdir -p "$B"
MNT_DIRS+=("$B")
"$MOUNT_BIN" ds/sub "$B" >>"$T/mount.log" 2>&1
check "background mount: returns 0 mounted" bash -c "mountpoint -q '$B'"
check "background mount: reads" cmp "$T/cold/sub/s7.dat" "$B/s7.dat"
bgpid=$(pgrep -f -x "$MOUNT_BIN ds/sub $B")
check "background mount: unmounts with fusermount3 -u" fusermount3 -u "$B"
for _ in $(seq 1 100); do
	if [ -z "$bgpid" ] || ! kill -0 "$bgpid" 2>/dev/null; then break; fi
	sleep 0.05
done
check "background mount: the process is gone" bash -c "[ -n '$bgpid' ] && ! kill -0 '$bgpid' 2>/dev/null"

kill -TERM "$mpid"
wait_exit "$mpid"
check "SIGTERM: exit 0" [ $? = 0 ]
check "SIGTERM: unmounted" bash -c "! mountpoint -q '$M'"
check "mount log has no errors" bash -c "! grep -q 'level=error\|ERROR: AddressSanitizer' '$T/mount.log'"
finish
