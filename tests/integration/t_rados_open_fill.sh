# One request per small miss (TC_F_FILL_CHUNK0, cached/api/open_fill.c): the
# library's open of a one-chunk file that is not resident waits for the
# cold read and comes back with the chunk, so the client sends no CHUNK
# frame; every byte equals the source. An object overwritten behind the
# daemon's back opens at its new version; a cold read that fails fails the
# open with a clear message; a client killed while its open waits leaves
# nothing behind (opens_filling, fills in flight and held bytes back to 0);
# a connection has at most 32 opens waiting, the rest answered at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
# exact counts: no read-ahead of a directory's next files
TC_DAEMON_CONF='readahead_files = 0'
tc_config 64M none 1M
P="${RD_PREFIX}of/"
# rp: every open revalidates (its fill starts beside the stat); rl: opens
# trust the listing for an hour (the open waits for the fill alone)
rd_dataset rp "$P" plain 1M
{
	echo "[dataset rl]"
	echo "backend = rados"
	echo "ceph_conf = $CEPH_CONF"
	echo "pool = $CEPH_POOL"
	echo "prefix = $P"
	echo "layout = plain"
	echo "chunk_size = 1M"
	echo "op_timeout = 5s"
	echo "revalidate_after = 1h"
} >>"$T/tc.conf"
# rc: the same as rl with a longer op_timeout (the bound test below)
sed -n '/^\[dataset rl\]/,$p' "$T/tc.conf" | sed 's/^\[dataset rl\]/[dataset rc]/; s/^op_timeout = .*/op_timeout = 10s/' >"$T/rc.conf"
cat "$T/rc.conf" >>"$T/tc.conf"
mkdir -p "$T/src/d" "$T/src/e"
for i in $(seq -w 0 19); do head -c $((2000 + 10#$i * 5133)) /dev/urandom >"$T/src/d/f$i"; done
for i in 0 1 2 3 4 5; do head -c $((40000 + i * 999)) /dev/urandom >"$T/src/e/g$i"; done
head -c $((2 * 1048576 + 4321)) /dev/urandom >"$T/src/big.bin"
mkdir -p "$T/src/h"
for i in $(seq -w 0 39); do head -c $((3000 + 10#$i)) /dev/urandom >"$T/src/h/h$i"; done
tc_start || exit 1
check "import uploads the 67 files" [ "$(rd_import "$T/src" rp)" = "67 0 0" ]
"$TC_BIN/tierctl" refresh rl >/dev/null 2>&1
"$TC_BIN/tierctl" refresh rc >/dev/null 2>&1
lists67() { [ "$(tc_ds rl "d['files']") $(tc_ds rc "d['files']")" = "67 67" ]; }
check "rl and rc list the 67 files" wait_until 30 lists67

ctr() { tc_json "s['counters']['$1']"; }
dmn() { tc_json "s['daemon']['$1']"; }
# frames OPEN, CHUNK, opens answered with a fill, misses: one line
frames() { tc_json "' '.join(str(s['counters'][k]) for k in ('frames_open', 'frames_chunk', 'opens_filled', 'misses'))"; }
delta() { python3 -c "import sys; a=sys.argv[1].split(); b=sys.argv[2].split(); print(' '.join(str(int(y)-int(x)) for x, y in zip(a, b)))" "$1" "$2"; }
# read_all DS DIR SRCDIR: every file of DIR through tiercache_open + pread,
# compared with the source; prints how many matched
read_all() {
	local n=0 f
	for f in "$3"/*; do
		tc_pread "$1/$2/$(basename "$f")" 0 "$(stat -c %s "$f")" "$T/got" 2>>"$T/pread.err" &&
			cmp -s "$T/got" "$f" && n=$((n + 1))
	done
	echo $n
}

# rp: the fill that each open starts beside its stat may land before the
# stat ends (the open then finds it resident) or after (the open waits)
for ds in rp rl; do
	f0=$(frames)
	n=$(read_all $ds d "$T/src/d")
	d=$(delta "$f0" "$(frames)")
	check "$ds: 20 small misses read, every byte equal ($n)" [ "$n" = 20 ]
	read -r nopen nchunk nfilled nmiss <<<"$d"
	check "$ds: ...20 OPEN frames, no CHUNK frame, 20 misses ($d)" [ "$nopen $nchunk $nmiss" = "20 0 20" ]
done
check "rl: ...each open answered with its fill ($d)" [ "$nfilled" = 20 ]
f0=$(frames)
n=$(read_all rl d "$T/src/d")
d=$(delta "$f0" "$(frames)")
check "rl: read again: hits, every byte equal ($n), no CHUNK, no fill ($d)" [ "$n" = 20 -a "$d" = "20 0 0 0" ]

f0=$(frames)
check "rl: a file of 3 chunks read through the cache" \
	bash -c "'$TC_BIN/tierctl' cat rl/big.bin | cmp - '$T/src/big.bin'"
d=$(delta "$f0" "$(frames)")
check "rl: ...its open does not wait for a fill (3 CHUNK frames, $d)" [ "${d% *}" = "1 3 0" ]

# ---- changed behind the daemon's back (rl trusts its listing) ----
head -c 31234 /dev/urandom >"$T/src/e/g0"
rd_rados put "${P}e/g0" "$T/src/e/g0"
s0=$(ctr stale_reads)
check "rl: an object overwritten in the pool opens at its new version" \
	bash -c "$(declare -f tc_pread); O='$O'; tc_pread rl/e/g0 0 40000 '$T/g0' && cmp '$T/g0' '$T/src/e/g0'"
# (the open run again reads nothing ahead at the version known stale)
check "rl: ...after one stale read of the old version ($s0 -> $(ctr stale_reads))" \
	[ "$(ctr stale_reads)" = $((s0 + 1)) ]

# ---- the OSD stops: opens wait for fills that fail ----
check "the OSD stops" rd_osd_stop
# a client killed while its open waits, and one that waits for the error
O=$O bash -c "$(declare -f tc_pread); tc_pread rl/e/g1 0 50000 '$T/g1'" 2>"$T/g1.err" &
killed=$!
O=$O bash -c "$(declare -f tc_pread); tc_pread rl/e/g2 0 50000 '$T/g2'" 2>"$T/g2.err" &
waiter=$!
two_waiting() { [ "$(dmn opens_filling)" = 2 ]; }
check "two opens wait for their fills" wait_until 30 two_waiting
kill -9 "$killed" 2>/dev/null
wait "$killed" 2>/dev/null
wait "$waiter"
rc=$?
echo "open with the OSD down: exit $rc: $(cat "$T/g2.err")"
check "the waiting open fails with the cold read's error" \
	grep -qE '^open: (EIO|ETIMEDOUT|EHOSTDOWN|ENOTCONN): cold read of rl/e/g2 failed' "$T/g2.err"
none_left() {
	[ "$(tc_json "'%d %d %d' % (s['daemon']['opens_filling'], s['daemon']['fills_inflight'], s['daemon']['held_bytes'])")" = "0 0 0" ]
}
check "nothing left waiting or held (opens_filling, fills_inflight, held_bytes = 0)" wait_until 60 none_left
# the bound: 40 OPENs pipelined on one connection (raw frames; the
# library sends one at a time) of files rc has not read (rc's store still
# counts as reachable: only rl's reads failed): 32 wait for their fills,
# the 8 past the cap are answered at once without a chunk; then the
# client hangs up with its 32 waiting
python3 - "$T/sock" "$TC_BIN/tierctl" >"$T/cap.out" 2>&1 <<'PY'
import json, select, socket, struct, subprocess, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
def frame(op, payload, rid, aux=0):
    return struct.pack("<HBBIII", 0x4354, 2, op, len(payload), rid, aux) + payload
def recv_frame(deadline):
    buf = b""
    while len(buf) < 16:
        if not select.select([s], [], [], max(0, deadline - time.time()))[0]:
            return None
        # descriptors that come with a reply are dropped with its ancillary data
        b, _, _, _ = s.recvmsg(16 - len(buf), socket.CMSG_SPACE(4 * 8))
        if not b:
            return None
        buf += b
    _, _, op, n, rid, aux = struct.unpack("<HBBIII", buf)
    body = b""
    while len(body) < n:
        b, _, _, _ = s.recvmsg(n - len(body), socket.CMSG_SPACE(4 * 8))
        if not b:
            return None
        body += b
    return rid, aux, body
s.sendall(frame(1, struct.pack("<I", 2), 1))
assert recv_frame(time.time() + 10) is not None
out = b""
for i in range(40):
    p = ("rc/h/h%02d" % i).encode()
    out += frame(2, struct.pack("<I", len(p)) + p, 100 + i, 0x2 | 0x20)
s.sendall(out)
now, no_chunk = [], 0
deadline = time.time() + 8
while len(now) < 8:
    r = recv_frame(deadline)
    if r is None:
        break
    now.append(r[0])
    no_chunk += r[1] == 0 and len(r[2]) > 28 and r[2][28] == 0
st = json.loads(subprocess.run([sys.argv[2], "status", "--json"], capture_output=True).stdout)
print("answered_at_once=%d without_chunk=%d ids=%s opens_filling=%d" %
      (len(now), no_chunk, ",".join(str(x) for x in sorted(now)), st["daemon"]["opens_filling"]))
PY
cat "$T/cap.out"
check "40 pipelined opens: 32 wait for their fills, the 8 past the cap are answered at once without a chunk" \
	grep -q "answered_at_once=8 without_chunk=8 ids=132,133,134,135,136,137,138,139 opens_filling=32" "$T/cap.out"
check "...and after its hang-up, nothing is left waiting or held" wait_until 60 none_left
check "the daemon is alive" kill -0 "$TC_PID"
check "the OSD starts again" rd_osd_start
ok_after() {
	tc_pread rl/e/g1 0 50000 "$T/g1" 2>/dev/null && cmp -s "$T/g1" "$T/src/e/g1" &&
		tc_pread rl/e/g2 0 50000 "$T/g2" 2>/dev/null && cmp -s "$T/g2" "$T/src/e/g2"
}
check "after the OSD is back, both files read equal to the source" wait_until 60 ok_after
check "...and nothing is left waiting" none_left
finish
