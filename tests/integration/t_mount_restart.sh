# tiercache-mount across daemon restarts: a program reading through the
# mount while tiercached is stopped and started again (cleanly, or killed)
# finishes with the right bytes; a read that starts during a short outage
# waits for the daemon; during a longer one (past -o reconnect_timeout) it
# fails with ETIMEDOUT instead of hanging, later requests fail at once, and
# the same mount reads again once the daemon is back; a source changed
# during the outage gives ESTALE, logged in rate-limited lines.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

MB=1048576
tc_config 256M 256M 1M
mkdir -p "$T/cold"
head -c $((40 * MB + 4321)) /dev/urandom >"$T/cold/big.bin"
for i in $(seq 1 12); do head -c $((150000 + i * 1000)) /dev/urandom >"$T/cold/f$i.bin"; done
tc_start || exit 1

M=$T/mnt
tcm_mount "$M" ds || exit 1
mpid=$MPID
Q=$T/mnt_quick
tcm_mount "$Q" -o reconnect_timeout=1 ds || exit 1
qpid=$MPID

# A slow reader: 128 KiB every 5 ms, progress in $T/progress, then the
# sha256 of what it read. An alarm turns a hang into a failure.
cat >"$T/reader.py" <<'EOF'
import hashlib, os, signal, sys, time
signal.alarm(120)
path, progress = sys.argv[1], sys.argv[2]
h = hashlib.sha256()
n = 0
with open(path, 'rb', buffering=0) as f:
    while True:
        b = f.read(131072)
        if not b:
            break
        h.update(b)
        n += len(b)
        with open(progress + '.tmp', 'w') as p:
            p.write(str(n))
        os.replace(progress + '.tmp', progress)  # never seen half-written
        time.sleep(0.005)
print(h.hexdigest())
EOF
want_big=$(sha256sum <"$T/cold/big.bin" | cut -d' ' -f1)

# restart_under_reader HOW FILE: stop the daemon (tc_stop or tc_kill9) when
# the reader of FILE is past 8 MiB, start it again a second later.
restart_under_reader() {
	echo 0 >"$T/progress"
	"$PY" "$T/reader.py" "$M/$2" "$T/progress" >"$T/reader.out" 2>&1 &
	local reader=$!
	for _ in $(seq 1 400); do
		[ "$(cat "$T/progress")" -ge $((8 * MB)) ] 2>/dev/null && break
		sleep 0.01
	done
	local at
	at=$(cat "$T/progress")
	"$1"
	sleep 1
	tc_start || return 1
	wait "$reader"
	local rc=$?
	check "$1 under a reader: stopped mid-file ($at of $((40 * MB)) bytes read)" \
		[ "$at" -lt $((40 * MB)) ]
	check "$1 under a reader: the reader exits 0" [ $rc = 0 ]
	check "$1 under a reader: every byte correct" [ "$(tail -n 1 "$T/reader.out")" = "$want_big" ]
}
# a new file for the second round: its bytes are in no cache yet
restart_under_reader tc_stop big.bin
cp "$T/cold/big.bin" "$T/cold/big2.bin"
"$TC_BIN/tierctl" refresh ds >/dev/null
restart_under_reader tc_kill9 big2.bin
check "the library reconnected under the readers (logged)" grep -q 'connection to tiercached lost' "$T/mount.log"
check "the mounts stayed up" bash -c "mountpoint -q '$M' && mountpoint -q '$Q'"
check "the mount processes are alive" kill -0 "$mpid" "$qpid"

# a read that starts while the daemon is down waits for it (timeout 30 s)
tc_stop
sha256sum <"$M/f3.bin" >"$T/f3.out" 2>&1 &
waiter=$!
sleep 1
tc_start || exit 1
wait "$waiter"
check "a read started during a short outage completes after the restart" \
	[ "$(cut -d' ' -f1 "$T/f3.out")" = "$(sha256sum <"$T/cold/f3.bin" | cut -d' ' -f1)" ]

# past the reconnect timeout (1 s on $Q): ETIMEDOUT, not a hang
cat >"$T/outage.py" <<'EOF'
import errno, os, signal, sys
signal.alarm(60)
step = sys.argv[1]
def err(fn):
    try:
        fn()
        return 'OK'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
q = sys.argv[2]
if step == 'down':
    # a handle opened before the outage, reading a chunk it has not seen
    fd = os.open(q + '/big.bin', os.O_RDONLY)
    os.pread(fd, 4096, 0)
    sys.stdin.readline()             # the test stops the daemon here
    print(err(lambda: os.pread(fd, 4096, 30 * 1048576)))
    print(err(lambda: open(q + '/f5.bin', 'rb').read()))
    print(err(lambda: os.stat(q + '/f6.bin')))
    sys.stdin.readline()             # the test starts the daemon again
    want = open(sys.argv[3] + '/big.bin', 'rb')
    want.seek(30 * 1048576)
    print('same' if os.pread(fd, 4096, 30 * 1048576) == want.read(4096) else 'differ')
    print('same' if open(q + '/f5.bin', 'rb').read() == open(sys.argv[3] + '/f5.bin', 'rb').read() else 'differ')
EOF
coproc OUTAGE { "$PY" "$T/outage.py" down "$Q" "$T/cold" 2>&1; }
# bash unsets OUTAGE_PID once the coprocess has ended: keep it
outage_pid=$OUTAGE_PID
sleep 0.5
tc_stop
echo >&"${OUTAGE[1]}"
read -r -t 60 r1 <&"${OUTAGE[0]}"
read -r -t 60 r2 <&"${OUTAGE[0]}"
read -r -t 60 r3 <&"${OUTAGE[0]}"
check "outage past reconnect_timeout: read of an open file fails with ETIMEDOUT (got $r1)" [ "$r1" = ETIMEDOUT ]
check "outage: open of another file fails with ETIMEDOUT (got $r2)" [ "$r2" = ETIMEDOUT ]
check "outage: lookup of a new name fails with ETIMEDOUT (got $r3)" [ "$r3" = ETIMEDOUT ]
check "outage: the mount is still up" mountpoint -q "$Q"
tc_start || exit 1
echo >&"${OUTAGE[1]}"
read -r -t 60 r4 <&"${OUTAGE[0]}"
read -r -t 60 r5 <&"${OUTAGE[0]}"
check "daemon back: the open handle reads correct bytes again" [ "$r4" = same ]
check "daemon back: new opens read correct bytes" [ "$r5" = same ]
wait "$outage_pid" 2>/dev/null
check "the unreachable daemon was logged once as an error" \
	[ "$(grep -c 'tiercached unreachable' "$T/mount.log")" -ge 1 ]

check "a full pass after all that: every file correct" \
	bash -c "cd '$T/cold' && for f in *.bin; do cmp -s \"\$f\" '$M/'\"\$f\" || exit 1; done"
# the source changes while the daemon is down: a descriptor opened before
# reads ESTALE for bytes it does not hold, and the mount's log says so in
# at most 10 lines per 10 s (rate limited), however many reads fail
cat >"$T/stale.py" <<'EOF'
import errno, os, signal, sys
signal.alarm(60)
fd = os.open(sys.argv[1], os.O_RDONLY)
os.pread(fd, 4096, 0)
print('open', flush=True)
sys.stdin.readline()             # the test changes the source here
got = set()
for i in range(8, 28):           # chunks no read through this mount touched
    try:
        os.pread(fd, 4096, i * 1048576 + 8192)
        got.add('OK')
    except OSError as e:
        got.add(errno.errorcode.get(e.errno, str(e.errno)))
print(' '.join(sorted(got)), flush=True)
EOF
coproc STALE { "$PY" "$T/stale.py" "$Q/big.bin" 2>&1; }
stale_pid=$STALE_PID
read -r -t 60 s0 <&"${STALE[0]}"
tc_stop
touch -d '2001-02-03 04:05:06' "$T/cold/big.bin"
tc_start || exit 1
echo >&"${STALE[1]}"
read -r -t 60 s1 <&"${STALE[0]}"
wait "$stale_pid" 2>/dev/null
check "changed source: every read of bytes not held is ESTALE (got $s0, $s1)" [ "$s1" = ESTALE ]
nstale=$(grep -c 'op=read.*err="File changed in its source' "$T/mount.log")
check "ESTALE logged, at most 10 lines in 10 s (got $nstale)" [ "$nstale" -ge 1 -a "$nstale" -le 10 ]
check "the log says further lines are suppressed" \
	grep -q 'more lines like the last are suppressed' "$T/mount.log"

kill -TERM "$mpid" "$qpid"
wait "$mpid"
rc1=$?
wait "$qpid"
rc2=$?
check "both mounts stop cleanly (exit 0)" [ "$rc1$rc2" = 00 ]
finish
