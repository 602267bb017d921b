# tiercache-mount -o immutable (no OPEN / RELEASE requests: the kernel is
# told the mount has no open, keeps pages across opens, and reads go
# through a handle per file) on small files, which are items of segments:
# every byte read equals the source on the first and the repeated reads;
# what the daemon sees (one OPEN frame per file on the first read, none
# when the pages are in the kernel's page cache); files evicted from the
# cache and from the page cache read correctly again; the daemon restarted
# under the mount: cached pages still read during the outage, every file
# afterwards; a file changed at the source is read at its new version
# within the documented window (revalidate_after + 2 x attr_timeout), and
# whole (old or new, never a mix); a file whose handle was closed for room
# and which changed meanwhile: the read that opens a new handle has the
# kernel drop its old pages and attributes (the mtime follows at once, one
# invalidation counted); with -o job and a plan, no OPEN frame, and every
# use reported to the daemon by the CLOSE at unmount.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

N=40
ATTR=2      # attr_timeout = entry_timeout of the mount under test
WINDOW=$((2 * ATTR)) # + revalidate_after, 0 s here
mkdir -p "$T/cold/d"
for i in $(seq -w 0 $((N - 1))); do head -c $((20000 + RANDOM % 80000)) /dev/urandom >"$T/cold/d/s$i.bin"; done
TC_DAEMON_CONF='plan_grace = 1h'
# more files than the mount keeps idle handles (1024): reading them closes
# the handle of a file read before
/usr/bin/python3 -c '
import os, sys
os.makedirs(sys.argv[1], exist_ok=True)
for i in range(1100):
    with open("%s/x%04d" % (sys.argv[1], i), "wb") as f:
        f.write(b"%d\n" % i)' "$T/cold/e"
tc_config 64M none 256K "revalidate_after = 0s"
tc_start || exit 1
ctr() { tc_json "s['counters']['$1']"; }
seq -w 0 $((N - 1)) | sed 's|^|d/s|; s|$|.bin|' >"$T/order"

read_all() { # read_all MNT: every file through the mount equals the source
	local f bad=0
	while IFS= read -r f; do cmp -s "$1/$f" "$T/cold/$f" || { echo "  differs: $f"; bad=1; }; done <"$T/order"
	return $bad
}
# drop the mount's pages of every file (clean pages: fadvise drops them)
drop_pages() {
	/usr/bin/python3 - "$1" "$T/order" <<'EOF'
import os, sys
for f in open(sys.argv[2]).read().split():
    fd = os.open(os.path.join(sys.argv[1], f), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
EOF
}
res() { fincore --bytes --noheadings --output RES "$1" | tr -d ' '; }

M=$T/mnt
tcm_mount "$M" -d -o immutable,attr_timeout=$ATTR,entry_timeout=$ATTR ds || exit 1
o0=$(ctr frames_open)
check "first read: the $N files through the mount equal the source" read_all "$M"
o1=$(ctr frames_open)
echo "  OPEN frames on the first read: $((o1 - o0))"
check "the daemon saw one OPEN per file on the first read" test $((o1 - o0)) = "$N"
f0=$(head -1 "$T/order")
sz0=$(stat -c %s "$T/cold/$f0")
check "the file's pages are in the kernel page cache ($(res "$M/$f0") bytes resident of $sz0)" \
	test "$(res "$M/$f0")" -ge "$sz0"
check "repeated read: the $N files equal the source" read_all "$M"
o2=$(ctr frames_open)
check "repeated read from the page cache: the daemon saw no OPEN ($((o2 - o1)))" test $((o2 - o1)) = 0

# evicted from the cache's tier and from the kernel's page cache
check "tierctl evict drops the dataset's chunks" "$TC_BIN/tierctl" evict ds
drop_pages "$M"
check "the mount's pages were dropped ($(res "$M/$f0") bytes)" test "$(res "$M/$f0")" = 0
check "evicted, then re-read: every file equals the source" read_all "$M"
check "... and again (now from the page cache)" read_all "$M"

# the daemon restarted under the mount
check "daemon stops" tc_stop
check "during the outage a file in the page cache reads from it" cmp -s "$M/$f0" "$T/cold/$f0"
tc_start || exit 1
drop_pages "$M"
check "after the restart every file (pages dropped) equals the source" read_all "$M"

# a file changed at the source: read new within the window, whole
f1=$(sed -n 2p "$T/order")
cp "$T/cold/$f1" "$T/old.bin"
check "before the change: $f1 reads the old version" cmp -s "$M/$f1" "$T/old.bin"
head -c 77777 /dev/urandom >"$T/new.bin"
cp "$T/new.bin" "$T/cold/$f1"
touch -d '+1 min' "$T/cold/$f1"
t0=$SECONDS
seen=old mixed=0
while [ $((SECONDS - t0)) -le $((WINDOW + 3)) ]; do
	cat "$M/$f1" >"$T/got.bin" 2>/dev/null
	if cmp -s "$T/got.bin" "$T/new.bin"; then
		seen=new
		break
	fi
	cmp -s "$T/got.bin" "$T/old.bin" || mixed=$((mixed + 1))
	sleep 0.2
done
echo "  the new version was read after $((SECONDS - t0)) s (window ${WINDOW} s + 1 s of mtime granularity)"
check "the changed file is read at its new version within the window" test "$seen" = new
check "every read before was the old version, whole (reads neither old nor new: $mixed)" test "$mixed" = 0
check "the kernel's size follows" test "$(stat -c %s "$M/$f1")" = 77777
check "and it stays new" cmp -s "$M/$f1" "$T/new.bin"

# a file whose handle was closed (room for others) changes at the source;
# the kernel still has its old attributes (60 s): the read that opens a
# new handle finds the new version and has the kernel drop the old pages
# and attributes (from the notifier thread), so stat shows it at once
L=$T/mnt_long
tcm_mount "$L" -d -o immutable ds || exit 1
f2=$(sed -n 3p "$T/order")
check "long timeouts: $f2 reads the old version" cmp -s "$L/$f2" "$T/cold/$f2"
m_old=$(stat -c %Y "$L/$f2")
/usr/bin/python3 -c '
import os, sys
for n in sorted(os.listdir(sys.argv[2])):
    with open(os.path.join(sys.argv[1], n), "rb") as f:
        assert f.read() == open(os.path.join(sys.argv[2], n), "rb").read(), n' "$L/e" "$T/cold/e"
check "1100 other files read (their handles push out the first ones)" test $? = 0
head -c "$(stat -c %s "$T/cold/$f2")" /dev/urandom >"$T/new2.bin"
cp "$T/new2.bin" "$T/cold/$f2"
touch -d '+2 min' "$T/cold/$f2"
drop_pages "$L"
check "its pages dropped, the new read is the new version" cmp -s "$L/$f2" "$T/new2.bin"
check "the kernel's mtime follows at once (old $m_old, new $(stat -c %Y "$T/cold/$f2"))" \
	wait_for 5 'test "$(stat -c %Y "$L/$f2")" = "$(stat -c %Y "$T/cold/$f2")"'
# both mounts log to mount.log: each one's last line names its mountpoint,
# and may come a while after fusermount3 returns on a busy machine
fusermount3 -u "$L"
wait_for 60 "grep -F 'mountpoint=$L ' '$T/mount.log' | grep -q ' unmounting'"
check "the mount sent the kernel one invalidation" \
	bash -c "grep -F 'mountpoint=$L ' '$T/mount.log' | grep -q 'invalidations=1 unmounting'"

fusermount3 -u "$M"
wait_for 60 "grep -F 'mountpoint=$M ' '$T/mount.log' | grep -q ' unmounting'"
# the mount's counters at unmount (-d: level info)
cnt=$(grep -F "mountpoint=$M " "$T/mount.log" | grep -o ' opens=[0-9]* .*invalidations=[0-9]*' | tail -1)
echo "  mount counters:$cnt"
check "the kernel sent no OPEN after the first (answered ENOSYS): opens=0" \
	grep -q ' opens=0 ' <<<"$cnt"
# N + 1: the first read and the changed file (its handle was closed when
# getattr showed the new version). After the eviction the handles stayed
# (their segment descriptors still read the bytes they were given); after
# the restart libtiercache reopened them by path
check "handles opened by reads: one per file, one more for the changed file" \
	grep -q "immutable_opens=$((N + 1)) " <<<"$cnt"

# with -o job and a plan registered by another process: no OPEN frame.
# Files handed ahead are trusted for revalidate_after (0 s above: none
# would be), so the daemon's default here
tc_stop
tc_config 64M none 256K
tc_start || exit 1
check "the job's sampler registers job 23's plan" "$TC_TESTS/tcplan" set ds 23 0 1 0 <"$T/order"
tcm_mount "$T/mj" -o immutable,job=23 ds || exit 1
o0=$(ctr frames_open)
u0=$(ctr ahead_used)
check "-o immutable,job=23: the planned files equal the source" read_all "$T/mj"
echo "  OPEN frames: $(($(ctr frames_open) - o0)), used ahead: $(($(ctr ahead_used) - u0))"
check "... with no OPEN frame" test $(($(ctr frames_open) - o0)) = 0
# the use of a file handed ahead is reported by its CLOSE, which comes when
# the mount closes the file's handle: at unmount here (idle handles stay)
check "before unmounting, the daemon was told of no use yet" test $(($(ctr ahead_used) - u0)) = 0
fusermount3 -u "$T/mj"
check "at unmount every file handed ahead is reported used" \
	wait_for 10 'test $(($(ctr ahead_used) - u0)) = "$N"'
finish
