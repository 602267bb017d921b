# Admin residency commands against the real daemon: pin survives eviction
# pressure and a restart and cannot exceed what the tiers can pin; evict and
# demote move exactly what was asked; verify finds a chunk corrupted on
# disk (an item of a segment file: this test turns segments on), drops it,
# and the next read returns the source bytes; a non-admin
# gets EPERM; bad input gets clear errors.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"

CS=262144
mkdir -p "$T/cold/keep" "$T/cold/bulk" "$T/cold/mid"
for i in $(seq -w 1 12); do head -c "$CS" /dev/urandom >"$T/cold/mid/m$i.bin"; done
MID=$((12 * CS))
for i in 1 2 3 4; do head -c "$CS" /dev/urandom >"$T/cold/keep/k$i.bin"; done
KEEP=$((4 * CS))
for i in $(seq -w 1 60); do head -c 204800 /dev/urandom >"$T/cold/bulk/b$i.bin"; done
for f in a b c; do head -c $((CS + 5000)) /dev/urandom >"$T/cold/$f.bin"; done

tierctl() { "$TC_BIN/tierctl" "$@"; }
ds() { tc_json "s['datasets'][0]['$1']"; }
tier() { tc_json "[t for t in s['tiers'] if t['name'] == '$1'][0]['$2']"; }
rj() { # rj EXPR CMD...: a field of the "result" of `tierctl CMD --json`
	local expr=$1
	shift
	tierctl "$@" --json 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['result']; print($expr)"
}
resident() { # resident PATH: "hot warm" bytes of one file
	tierctl warm --check --json "ds/$1" 2>/dev/null | python3 -c "import json,sys; w=json.load(sys.stdin); print(w['hot_bytes'], w['warm_bytes'])"
}
idle() {
	for _ in $(seq 1 200); do
		[ "$(tc_json "s['daemon']['moves_inflight'] + s['daemon']['fills_inflight']")" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}
read_bulk() {
	for f in "$T"/cold/bulk/*.bin; do
		"$TC_TESTS/tcverify" file "ds/bulk/$(basename "$f")" "$f" >/dev/null || return 1
	done
}

# hot 4M (pins up to 3.6M), warm 4M; bulk is 12M: far more than both
# segments on (as they would be by default at 512K): the verify section
# corrupts a segment item
TC_DAEMON_CONF="segment_threshold = 512K" tc_config 4M 4M 256K
tc_start || exit 1

# --- pin ---
tierctl pin ds/keep >"$T/pin.out" 2>&1
check "pin exits 0" [ $? -eq 0 ]
check "pin reports the 4 chunks it pinned" grep -qE "newly pinned +4 chunks" "$T/pin.out"
check "status: dataset pinned_bytes" [ "$(ds pinned_bytes)" = "$KEEP" ]
check "status: hot tier pinned_bytes" [ "$(tier hot pinned_bytes)" = "$KEEP" ]
check "read all bulk data (eviction pressure)" read_bulk
check "... settles" idle
check "pressure evicted other data" [ "$(tc_json "s['counters']['evictions']")" -gt 0 ]
check "pinned chunks are all still on hot" [ "$(resident keep)" = "$KEEP 0" ]
misses=$(tc_json "s['counters']['misses']")
check "pinned files read correctly" "$TC_TESTS/tcverify" file ds/keep/k2.bin "$T/cold/keep/k2.bin"
check "... and were hits" [ "$(tc_json "s['counters']['misses']")" = "$misses" ]
tierctl evict ds/keep >"$T/ev0.out" 2>&1
check "evict of pinned data keeps it" grep -qE "kept \(pinned\) +4 chunks" "$T/ev0.out"
check "... still pinned" [ "$(resident keep)" = "$KEEP 0" ]
tierctl demote ds/keep --to warm >"$T/dm0.out" 2>&1
check "demote of pinned data keeps it on hot" [ "$(resident keep)" = "$KEEP 0" ]
check "lifecycle leaves it too" [ "$(rj "r['skipped_pinned_chunks']" lifecycle run --older-than 1s --as-of +1d)" = 4 ]
check "... on hot" [ "$(resident keep)" = "$KEEP 0" ]

# pins cannot exceed what the tiers can pin (the whole of bulk does not fit)
tierctl pin ds/bulk >"$T/pin2.out" 2>"$T/pin2.err"
check "a pin that does not fit exits 1" [ $? -eq 1 ]
check "... with the numbers" grep -q "does not fit: pinning it needs .* bytes, the tiers can pin .* more" "$T/pin2.err"
check "... and pins nothing" [ "$(ds pinned_bytes)" = "$KEEP" ]

# a pin larger than hot's pin room (hot 2.8M budget, 1M taken by keep) is
# split: what hot cannot pin is pinned on warm
tierctl pin ds/mid >"$T/pin3.out" 2>&1
check "a pin spilling over to warm exits 0" [ $? -eq 0 ]
check "... pins all 12 chunks" grep -qE "newly pinned +12 chunks" "$T/pin3.out"
check "... hot and warm pins add up" [ $(($(tier hot pinned_bytes) + $(tier warm pinned_bytes))) = $((KEEP + MID)) ]
check "... some of it on warm" [ "$(tier warm pinned_bytes)" -gt 0 ]
check "... hot pins stay within hot's budget" [ "$(tier hot pinned_bytes)" -le $((4 * 1048576 * 70 / 100)) ]
check "pinned mid reads the source bytes" "$TC_TESTS/tcverify" file ds/mid/m07.bin "$T/cold/mid/m07.bin"
check "unpin mid" [ "$(rj "r['pinned_chunks']" unpin ds/mid)" = 12 ]
check "... leaves keep pinned" [ "$(ds pinned_bytes)" = "$KEEP" ]

# restart: the pin is in the index
tc_stop
tc_start || exit 1
check "after a restart the pin holds" [ "$(ds pinned_bytes)" = "$KEEP" ]
check "read all bulk data again" read_bulk
check "... settles" idle
check "pinned chunks survived the pressure after the restart" [ "$(resident keep)" = "$KEEP 0" ]

# unpin
tierctl unpin ds/keep/k1.bin >/dev/null 2>"$T/up1.err"
check "unpinning part of a pin is refused" [ $? -eq 1 ]
check "... saying which pin to unpin" grep -q "inside the pin on ds/keep" "$T/up1.err"
check "unpin ds/keep releases 4 chunks" [ "$(rj "r['pinned_chunks']" unpin ds/keep)" = 4 ]
check "status: nothing pinned" [ "$(ds pinned_bytes)" = 0 ]
tierctl unpin ds/keep >/dev/null 2>"$T/up2.err"
check "unpin of nothing pinned exits 1" [ $? -eq 1 ]
check "... saying nothing is pinned there" grep -q "nothing is pinned" "$T/up2.err"
tc_stop
tc_start || exit 1
check "the unpin survived the restart" [ "$(ds pinned_bytes)" = 0 ]

# --- evict and demote move exactly what was asked ---
tierctl evict ds >/dev/null
check "evict ds empties the dataset" [ "$(ds resident_hot_bytes) $(ds resident_warm_bytes)" = "0 0" ]
for f in a b c; do "$TC_TESTS/tcverify" file ds/$f.bin "$T/cold/$f.bin" >/dev/null; done
idle
F=$((CS + 5000))
check "a, b, c are on hot" [ "$(ds resident_hot_bytes)" = $((3 * F)) ]
check "evict ds/a.bin drops its 2 chunks" [ "$(rj "r['dropped_chunks']" evict ds/a.bin)" = 2 ]
check "... exactly its bytes" [ "$(ds resident_hot_bytes)" = $((2 * F)) ]
check "... a is gone, b is not" [ "$(resident a.bin) / $(resident b.bin)" = "0 0 / $F 0" ]
check "a still reads the source bytes" "$TC_TESTS/tcverify" file ds/a.bin "$T/cold/a.bin"
tierctl evict ds/a.bin >/dev/null
out=$(rj "r['moved_chunks'], r['moved_bytes']" demote ds/b.bin --to warm)
check "demote ds/b.bin moves its 2 chunks ($out)" [ "$out" = "2 $F" ]
check "... b is on warm" [ "$(resident b.bin)" = "0 $F" ]
check "... c stays on hot" [ "$(resident c.bin)" = "$F 0" ]
check "status: hot and warm bytes moved by exactly b" \
	[ "$(ds resident_hot_bytes) $(ds resident_warm_bytes)" = "$F $F" ]
check "b reads the source bytes from warm" "$TC_TESTS/tcverify" file ds/b.bin "$T/cold/b.bin"
tierctl demote ds/c.bin --to hot >/dev/null 2>"$T/dm1.err"
check "demote --to hot is a usage error" [ $? -eq 2 ]
tierctl demote ds/c.bin >/dev/null 2>"$T/dm2.err"
check "demote without --to is a usage error" [ $? -eq 2 ]

# --- verify: a chunk corrupted on disk (c's 5000-byte tail, a segment item) ---
tierctl evict ds >/dev/null
"$TC_TESTS/tcverify" file ds/c.bin "$T/cold/c.bin" >/dev/null
idle
check "c's 2 chunks are the only ones resident" [ "$(rj "r['checked_chunks']" verify ds)" = 2 ]
check "no chunk files: small chunks are segment items" [ "$(find "$T/hot/chunks" -type f | wc -l)" = 0 ]
check "a byte of c's tail flipped in its segment" seg_flip "$T/hot" "$T/cold/c.bin" "$CS" 5000 100
tierctl verify ds >"$T/v.out" 2>"$T/v.err"
check "verify with a bad chunk exits 1" [ $? -eq 1 ]
check "verify checked 2 chunks" grep -qE "checked +2 chunks" "$T/v.out"
check "... and found 1 bad" grep -qE "bad \(dropped\) +1 chunks" "$T/v.out"
check "the bad chunk is no longer resident" [ "$(rj "r['checked_chunks']" verify ds)" = 1 ]
check "checksum_errors counted" [ "$(tc_json "s['counters']['checksum_errors']")" = 1 ]
check "the next read returns the source bytes" "$TC_TESTS/tcverify" file ds/c.bin "$T/cold/c.bin"
check "verify is clean now" [ "$(rj "r['bad_chunks']" verify ds)" = 0 ]
check "verify of every dataset" [ "$(rj "r['checked_chunks']" verify)" = 2 ]

# --- bad input ---
tierctl pin nope >/dev/null 2>"$T/b1"
check "unknown dataset: exit 1" [ $? -eq 1 ]
check "... no dataset named" grep -q 'no dataset named "nope"' "$T/b1"
tierctl evict ds/no/such >/dev/null 2>"$T/b2"
check "unknown path: exit 1" [ $? -eq 1 ]
check "... no file or directory" grep -q 'no file or directory "no/such"' "$T/b2"
tierctl pin ds/../x >/dev/null 2>"$T/b3"
check "path with ..: exit 1" [ $? -eq 1 ]
tierctl pin /ds >/dev/null 2>"$T/b4"
check "absolute path: usage error" [ $? -eq 2 ]
tierctl verify nope >/dev/null 2>"$T/b5"
check "verify of an unknown dataset: exit 1" [ $? -eq 1 ]

# malformed residency frames get an error each, and the connection lives on
check "malformed residency requests are answered with errors" python3 - "$T/sock" <<'PY'
import errno, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
def string(b):
    return struct.pack("<I", len(b)) + b
def call(op, payload, rid):
    s.sendall(struct.pack("<HBBIII", 0x4354, 2, op, len(payload), rid, 0) + payload)
    h = b""
    while len(h) < 16:
        h += s.recv(16 - len(h))
    _, _, rop, n, rrid, aux = struct.unpack("<HBBIII", h)
    body = b""
    while len(body) < n:
        body += s.recv(n - len(body))
    return aux
cases = [
    (16, string(b"ds/c.bin") + b"\x00", errno.EBADMSG),            # WARM cut short
    (16, string(b"ds/c.bin") + b"\x07\x00" + b"\x00" * 8, errno.EINVAL),  # tier 7
    (16, string(b"ds/c.bin") + b"\x00\x80" + b"\x00" * 8, errno.EINVAL),  # unknown flag
    (16, string(b"ds") + b"\x00\x00" + b"\x00" * 8, errno.EISDIR),      # a dataset, not a file
    (17, struct.pack("<I", 1 << 30), errno.EBADMSG),                  # string longer than the frame
    (17, string(b"ds/" + b"x" * 300), errno.ENAMETOOLONG),            # a component over 255 bytes (as OPEN)
    (17, string(b"ds/" + b"x/" * 2500), errno.ENAMETOOLONG),          # a path over 4095 bytes (as OPEN)
    (17, string(b"ds/a/../b"), errno.EINVAL),                         # ".." (as OPEN)
    (20, string(b"ds/c.bin") + b"\x00", errno.EINVAL),                # demote to hot
    (21, string(b"x" * 65), errno.EINVAL),                            # dataset name too long
    (22, string(b"") + b"\x80" + b"\x00" * 16, errno.EBADMSG),        # unknown lifecycle flag
    (22, string(b"") + b"\x00" + struct.pack("<qq", -5, 0), errno.EBADMSG),
]
bad = 0
for i, (op, payload, want) in enumerate(cases):
    got = call(op, payload, i + 1)
    if got != want:
        print("op %d case %d: errno %d, want %d" % (op, i, got, want))
        bad += 1
if call(10, b"", 99) != 0:
    print("STATUS after the bad frames failed")
    bad += 1
sys.exit(1 if bad else 0)
PY

# --- a non-admin gets EPERM (daemon as root, client as nobody; the test
# opens the socket to everyone after start, which deployments do with the
# socket mode/group settings) ---
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 755 "$T"
	chmod 666 "$T/sock"
	asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$TC_BIN/tierctl" "$@"; }
	for cmd in "pin ds/c.bin" "unpin ds/c.bin" "evict ds/c.bin" "demote ds/c.bin --to warm" \
		"verify" "lifecycle run --dry-run"; do
		# shellcheck disable=SC2086
		asnobody $cmd >/dev/null 2>"$T/eperm"
		rc=$?
		check "nobody: $cmd fails (exit 1)" [ $rc -eq 1 ]
		check "... with EPERM" grep -qi "not permitted\|EPERM" "$T/eperm"
	done
	check "nobody may warm (not an admin op)" asnobody warm ds/c.bin
else
	echo "note: not root or no setpriv: EPERM checks skipped"
fi
finish
