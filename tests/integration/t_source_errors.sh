# Errors at the source stay where they belong (issue #16, items 2 and 10).
#  - A file of the dataset swapped for a symlink loop, a dangling symlink, a
#    FIFO or a device node fails alone, at once, with its own errno and a
#    message naming it; the store is not marked failing, so a file rewritten
#    at the source meanwhile is served new on every read.
#  - A tier write error (hot tier remounted read-only) is not a cold store
#    failure.
#  - The store itself down (its directory moved away): a file checked longer
#    than revalidate_after ago is refused with EIO and a message saying what
#    to do, unless serve_stale_on_error = yes, which serves the cached bytes,
#    counts them and shows it in status; once the directory is back, reads
#    are checked again.
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
MNT=
mount_cleanup() {
	[ -n "$MNT" ] && mountpoint -q "$MNT" && umount -l "$MNT"
	tc_cleanup
}
trap mount_cleanup EXIT

tc_config 64M 64M 256K "revalidate_after = 0s"
mkdir -p "$T/cold/sub"
for f in good loop dangling gone fifo dev changing; do
	head -c 300000 /dev/urandom >"$T/cold/$f.bin"
done
head -c 5000 /dev/urandom >"$T/cold/sub/deep.bin"
tc_start || exit 1
for f in good loop dangling gone fifo dev changing; do
	"$TC" cat "ds/$f.bin" >/dev/null || fail "first read of $f.bin"
done

# swap listed files for things that are not regular files of the dataset
rm "$T/cold/loop.bin" && ln -s loop.bin "$T/cold/loop.bin"
rm "$T/cold/dangling.bin" && ln -s /nonexistent/x "$T/cold/dangling.bin"
rm "$T/cold/gone.bin"
rm "$T/cold/fifo.bin" && mkfifo "$T/cold/fifo.bin"
rm "$T/cold/dev.bin" && mknod "$T/cold/dev.bin" c 1 3

check "symlink loop: ELOOP" "$TC_TESTS/tcverify" errno ds/loop.bin ELOOP
check "dangling symlink: ELOOP (never followed)" "$TC_TESTS/tcverify" errno ds/dangling.bin ELOOP
check "removed file: ENOENT" "$TC_TESTS/tcverify" errno ds/gone.bin ENOENT
msg=$(timeout 10 "$TC" cat ds/fifo.bin 2>&1 >/dev/null)
rc=$?
echo "fifo: rc=$rc $msg"
check "FIFO: refused at once (not the 10 s timeout)" [ "$rc" -ne 124 -a "$rc" -ne 0 ]
check "FIFO: the message names the file and says why" bash -c "echo \"\$1\" | grep -q 'ds/fifo.bin is not a regular file'" _ "$msg"
check "FIFO: EINVAL" timeout 10 "$TC_TESTS/tcverify" errno ds/fifo.bin EINVAL
check "device node: EINVAL" timeout 10 "$TC_TESTS/tcverify" errno ds/dev.bin EINVAL
msg=$("$TC" cat ds/loop.bin 2>&1 >/dev/null)
echo "loop: $msg"
check "symlink: the message names the file and says why" bash -c "echo \"\$1\" | grep -q 'ds/loop.bin: the source path is a symbolic link'" _ "$msg"

# a FIFO open while another client reads: both answered
timeout 10 "$TC" cat ds/fifo.bin >/dev/null 2>&1 &
fifo_pid=$!
check "another client reads meanwhile" timeout 10 "$TC_TESTS/tcverify" file ds/good.bin "$T/cold/good.bin"
wait "$fifo_pid"
check "the FIFO reader got its error, not a hang" [ $? -ne 124 ]

# rewritten while the bad files keep failing: every read is the new version
same=0
for i in $(seq 1 10); do
	head -c 300000 /dev/urandom >"$T/cold/changing.bin"
	touch -d "@$(($(date +%s) + 10 * i))" "$T/cold/changing.bin"
	"$TC" cat ds/loop.bin >/dev/null 2>&1
	"$TC" cat ds/fifo.bin >/dev/null 2>&1
	"$TC" cat ds/changing.bin >"$T/out" && cmp -s "$T/out" "$T/cold/changing.bin" && same=$((same + 1))
done
check "rewritten file served new on 10 of 10 reads ($same)" [ "$same" = 10 ]
check "status: the store is not failing" [ "$(tc_json "s['datasets'][0]['available']")" = True ]
reason=$(tc_json "s['datasets'][0]['reason']")
check "status: no 'cold store failing' reason ($reason)" bash -c "! echo \"\$1\" | grep -q 'cold store'" _ "$reason"
check "the daemon log names the bad files" grep -q 'path=loop.bin op=revalidate err=' "$T/daemon.log"

# a tier write error is a tier error, not a cold one
tc_stop
tc_config 32M none 256K "revalidate_after = 0s"
MNT=$T/hot
mkdir -p "$MNT"
if mount -t tmpfs -o size=64M tiercache-test "$MNT"; then
	tc_start || exit 1
	check "read onto the tmpfs tier" "$TC_TESTS/tcverify" file ds/good.bin "$T/cold/good.bin"
	mount -o remount,ro "$MNT"
	"$TC" cat ds/sub/deep.bin >/dev/null 2>&1
	reason=$(tc_json "s['datasets'][0]['reason']")
	echo "after a tier write error: reason=\"$reason\""
	check "tier write error: the cold store is not marked failing" \
		[ "$(tc_json "s['datasets'][0]['available']")" = True ]
	check "tier write error: not reported as a cold store failure" \
		bash -c "! echo \"\$1\" | grep -q 'cold store'" _ "$reason"
	tc_stop
	umount "$MNT"
	MNT=
else
	fail "cannot mount a tmpfs for the tier (run as root)"
fi

# the store itself down: its directory moved away
rm -f "$T/cold/loop.bin" "$T/cold/dangling.bin" "$T/cold/fifo.bin" "$T/cold/dev.bin"
tc_config 64M 64M 256K "revalidate_after = 1s"
tc_start || exit 1
check "cached before the store goes" "$TC_TESTS/tcverify" file ds/good.bin "$T/cold/good.bin"
cp "$T/cold/good.bin" "$T/good.copy"
mv "$T/cold" "$T/cold.away"
sleep 1.2
check "store down, entry past revalidate_after: EIO" "$TC_TESTS/tcverify" errno ds/good.bin EIO
msg=$("$TC" cat ds/good.bin 2>&1 >/dev/null)
echo "store down: $msg"
check "the message says what happened and what to do" bash -c \
	"echo \"\$1\" | grep -q 'cold store unreachable; cannot check ds/good.bin is current' && echo \"\$1\" | grep -q 'serve_stale_on_error = yes'" _ "$msg"
check "status: dataset not available" [ "$(tc_json "s['datasets'][0]['available']")" = False ]
reason=$(tc_json "s['datasets'][0]['reason']")
echo "reason: $reason"
check "status: the reason names the directory" bash -c "echo \"\$1\" | grep -q 'cold directory'" _ "$reason"
check "status: not serving stale" [ "$(tc_json "s['datasets'][0]['serving_stale']")" = False ]

# opt in, live: the cached bytes are served, counted and shown
echo "serve_stale_on_error = yes" >>"$T/tc.conf"
check "reload with serve_stale_on_error = yes" "$TC" reload
check "serve_stale_on_error = yes: the cached bytes" "$TC_TESTS/tcverify" file ds/good.bin "$T/good.copy"
check "status: serving_stale" [ "$(tc_json "s['datasets'][0]['serving_stale']")" = True ]
check "status: stale_served counted per dataset" [ "$(tc_json "s['datasets'][0]['stale_served']")" -ge 1 ]
check "status: stale_served counted" [ "$(tc_json "s['counters']['stale_served']")" -ge 1 ]
check "metrics name it" bash -c "'$TC' status --json | grep -q stale_served"

# back: checked again, and a change made meanwhile is seen
head -c 300000 /dev/urandom >"$T/cold.away/good.bin"
touch -d "@$(($(date +%s) + 300))" "$T/cold.away/good.bin"
mv "$T/cold.away" "$T/cold"
check "store back: the new version, not the cached one" "$TC_TESTS/tcverify" file ds/good.bin "$T/cold/good.bin"
check "status: available again" [ "$(tc_json "s['datasets'][0]['available']")" = True ]
check "status: no longer serving stale" [ "$(tc_json "s['datasets'][0]['serving_stale']")" = False ]
finish
