# tiercache-mount over segments (segment_threshold on): a small file kept
# as a segment item is never passed through to the kernel. FUSE passthrough
# reads the backing file at the file's own offsets up to the backing
# file's end; a file that is the first item of a fresh segment has the
# segment's size when it is opened, but the segment grows as later items
# are appended, and a passed-through read then ran on into them (wrong
# bytes: t_mount_torch failed about half its runs with segments on). Here:
# open A (the first item of the dataset's first segment), read B (appended
# after it), then read A to its end through the descriptor opened first
# and through a new one: exactly A's bytes. Every file compared with the
# source; the mount reports no passthrough opens for segment items.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ]; then
	echo "t_mount_segments: needs root and /dev/fuse; skipped"
	exit 0
fi
TC_DAEMON_CONF=$'segment_threshold = 512K\nsync_delay = 100ms' tc_config 64M 64M 256K
mkdir -p "$T/cold"
head -c 70001 /dev/urandom >"$T/cold/a.bin"
head -c 150003 /dev/urandom >"$T/cold/b.bin"
for i in $(seq 1 20); do head -c $((3000 + i * 7001)) /dev/urandom >"$T/cold/s$i.bin"; done
tc_start || exit 1
M=$T/mnt
tcm_mount "$M" -d ds || exit 1

"$PY" - "$M" "$T/cold" >"$T/py.out" 2>&1 <<'PY'
import os, sys
m, c = sys.argv[1], sys.argv[2]
def src(n): return open(os.path.join(c, n), "rb").read()
def check(what, ok): print(("ok: " if ok else "FAIL: ") + what)
fd = os.open(os.path.join(m, "a.bin"), os.O_RDONLY)
first = os.pread(fd, 10, 0)
check("a.bin opened first (the first item of a fresh segment)", first == src("a.bin")[:10])
with open(os.path.join(m, "b.bin"), "rb") as f:
    check("b.bin (appended after a.bin) equals the source", f.read() == src("b.bin"))
got = b""
while True:
    piece = os.pread(fd, 1 << 20, len(got))
    if not piece:
        break
    got += piece
check("a.bin read to its end through the first descriptor: exactly its bytes (%d of %d)" %
      (len(got), len(src("a.bin"))), got == src("a.bin"))
os.close(fd)
with open(os.path.join(m, "a.bin"), "rb") as f:
    check("a.bin through a new open: exactly its bytes", f.read() == src("a.bin"))
bad = [n for n in sorted(os.listdir(c)) if open(os.path.join(m, n), "rb").read() != src(n)]
check("every file equals the source (%s)" % (",".join(bad) or "none differ"), not bad)
PY
cat "$T/py.out"
check "the reader's checks ran" [ "$(grep -c '^ok: ' "$T/py.out")" = 5 ]
check "... and none failed" bash -c "! grep -q '^FAIL' '$T/py.out'"
check "the items are in segments, not chunk files" \
	[ "$(find "$T/hot/chunks" "$T/warm/chunks" -name '*.chunk' | wc -l)" = 0 ]
kill -TERM "$MPID"
wait "$MPID" 2>/dev/null
line=$(grep -o 'opens=[0-9]* passthrough_opens=[0-9]*' "$T/mount.log" | tail -n 1)
echo "mount: $line"
check "no segment item was passed through ($line)" [ "${line##*passthrough_opens=}" = 0 ]
finish
