# Batched opens of a planned job's files (tiercache_open_many with
# open-ahead, docs/plans.md and docs/client.md): a reader tagged with the
# job opens its files in batches of 64, and the files handed ahead are
# opened from the library's table, so the batches send no OPEN_MANY frame
# at all (the daemon counts frames by op, as t_open_ahead.sh does for
# OPEN). A mixed batch read by user nobody (held ahead, not planned and
# resident, not planned and not resident, nonexistent, planned but
# forbidden) answers every file: bytes equal the source, per-file errors
# as tiercache_open gives them, and only the files not held go in the
# frame. Status and the metrics endpoint show open-ahead's bound, the
# connections asking and the per-connection share, consistent with what
# is held. Runs as root (the forbidden file is read by user nobody, as in
# t_open_many.sh).
. "$(dirname "$0")/lib.sh"
TP=$TC_TESTS/tcplan
TA=$TC_TESTS/tcahead
if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null; then
	echo "t_open_ahead_many: needs root and runuser to run a client as another user"
	exit 1
fi
chmod 0711 "$T"
C=$T/cold
mkdir -p "$C/f" "$C/u"
for i in $(seq -w 0 119); do head -c $((20000 + RANDOM % 80000)) /dev/urandom >"$C/f/s$i.bin"; done
for i in 0 1; do head -c 30000 /dev/urandom >"$C/u/u$i.bin"; done
head -c 5000 /dev/urandom >"$C/secret"
chmod -R a+rX "$C"
chmod 0600 "$C/secret"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TC_DAEMON_CONF=$'plan_grace = 1h\nmax_held_per_client = 64M\nsocket_mode = 0666'
TC_DAEMON_CONF+=$'\n'"metrics_listen = 127.0.0.1:$PORT"
# hot 512M alone, 90/70: the tiers' share of open-ahead is half of 20% of it
BOUND=$((536870912 / 100 * 20 / 2))
tc_config 512M none 256K "access = source"
tc_start || exit 1

ctr() { tc_json "s['counters']['$1']"; }
dmn() { tc_json "s['daemon']['$1']"; }
plan() { tc_json "[p for p in s['plans'] if p['job'] == $1][0]['$2']"; }
( cd "$C" && find f -type f ) | shuf >"$T/order"

check "warm the 120 planned files and u/u0 (untagged reads): bytes equal the source" \
	"$TP" read ds "$C" <<<"$(cat "$T/order"; echo u/u0.bin)"

# ---- status before anyone asks ----
check "status: open-ahead's bound is half of hot's watermark band ($BOUND)" \
	test "$(dmn ahead_bound_bytes)" = "$BOUND"
check "status: nobody asks yet, so one connection's share is min(bound, max_held_per_client / 4)" \
	test "$(dmn ahead_askers) $(dmn ahead_conn_bound_bytes)" = "0 16777216"

# ---- a planned job read in batches of 64: no OPEN_MANY frame ----
check "job 7's plan over the 120 files is registered" "$TP" set ds 7 0 1 0 <"$T/order"
m0=$(ctr frames_open_many)
f0=$(ctr open_many_files)
o0=$(ctr frames_open)
a0=$(ctr frames_open_ahead)
u0=$(ctr ahead_used)
c0=$(ctr frames_close)
"$TA" many ds "$C" 7 64 <"$T/order" >"$T/r7" 2>&1
grep FAIL "$T/r7"
# the reader's last CLOSEs (no reply) may still be queued on its
# connection when it exits; the daemon reads them before it sees the end
wait_for 10 'test "$(ctr frames_close)" -ge $((c0 + 120)) && test "$(dmn ahead_out)" = 0'
check "job 7 read its 120 files with open_many, 64 a call: bytes equal the source" \
	grep -qx "read 120 failed 0" "$T/r7"
echo "  OPEN_MANY frames: $(($(ctr frames_open_many) - m0)), OPEN: $(($(ctr frames_open) - o0))," \
	"OPEN_AHEAD: $(($(ctr frames_open_ahead) - a0)), handles used: $(($(ctr ahead_used) - u0))"
check "the batches sent no OPEN_MANY frame and no OPEN" \
	test "$(($(ctr frames_open_many) - m0)) $(($(ctr open_many_files) - f0)) $(($(ctr frames_open) - o0))" = "0 0 0"
check "a few OPEN_AHEAD frames carried the 120 (1..8)" \
	test $(($(ctr frames_open_ahead) - a0)) -ge 1 -a $(($(ctr frames_open_ahead) - a0)) -le 8
check "all 120 handed handles were used" test $(($(ctr ahead_used) - u0)) = 120
check "the uses moved the plan: position 120, none skipped" \
	test "$(plan 7 position) $(plan 7 skipped)" = "120 0"
check "nothing is held ahead or at all once the reader is gone" \
	test "$(dmn ahead_out) $(dmn ahead_out_bytes) $(dmn held_bytes)" = "0 0 0"
check "... and it no longer counts as asking" test "$(dmn ahead_askers)" = 0

# ---- a mixed batch, read by user nobody ----
# job 8's plan (registered by root) holds 40 files and the 0600 file,
# which open-ahead never hands to nobody (access = source)
head -40 "$T/order" >"$T/order8"
check "job 8's plan over 40 files and the forbidden one is registered" \
	"$TP" set ds 8 0 1 0 <<<"$(head -5 "$T/order8"; echo secret; tail -35 "$T/order8")"
# batch 1 (16): 10 planned, u/u0 (resident), u/u1 (not resident), a
# missing file, the forbidden one, 2 planned; then 2 batches of planned
{
	head -10 "$T/order8"
	echo u/u0.bin
	echo u/u1.bin
	echo "nothing.bin !ENOENT"
	echo "secret !EACCES"
	sed -n 11,40p "$T/order8"
} >"$T/mixed"
m0=$(ctr frames_open_many)
f0=$(ctr open_many_files)
u0=$(ctr ahead_used)
c0=$(ctr frames_close)
runuser -u nobody -- "$TA" many ds "$C" 8 16 <"$T/mixed" >"$T/r8" 2>&1
cat "$T/r8"
wait_for 10 'test "$(ctr frames_close)" -ge $((c0 + 42)) && test "$(dmn ahead_out)" = 0'
check "mixed: every file opened reads equal to its source, the two others fail as expected" \
	grep -qx "read 42 failed 2" "$T/r8"
echo "  OPEN_MANY frames: $(($(ctr frames_open_many) - m0)), files in them: $(($(ctr open_many_files) - f0))"
check "mixed: one OPEN_MANY frame, naming only the 4 files not held ahead" \
	test "$(($(ctr frames_open_many) - m0)) $(($(ctr open_many_files) - f0))" = "1 4"
check "mixed: the 40 planned files came from handed handles" test $(($(ctr ahead_used) - u0)) = 40
check "mixed: nothing held once the reader is gone" \
	test "$(dmn ahead_out) $(dmn held_bytes)" = "0 0"

# ---- the share fields while two connections hold files ahead ----
check "job 9's plan over the 120 files is registered" "$TP" set ds 9 0 1 0 <"$T/order"
python3 "$(dirname "$0")/py_ahead_take.py" "$T/sock" 9 "$T/hold9" >"$T/t9" 2>&1 &
T9=$!
check "taker 1 (job 9) got handles" wait_for 30 "grep -q '^handed' '$T/t9' 2>/dev/null"
check "status: one connection asks; its share is min(bound, 16M)" \
	test "$(dmn ahead_askers) $(dmn ahead_conn_bound_bytes)" = "1 16777216"
python3 "$(dirname "$0")/py_ahead_take.py" "$T/sock" 9 "$T/hold9" >"$T/t9b" 2>&1 &
T9B=$!
check "taker 2 (job 9) got handles" wait_for 30 "grep -q '^handed' '$T/t9b' 2>/dev/null"
check "status: two connections ask" test "$(dmn ahead_askers)" = 2
check "status: held ahead within the bound and within two connections' shares" \
	tc_json "int(s['daemon']['ahead_out_bytes'] <= s['daemon']['ahead_bound_bytes'] and
		s['daemon']['ahead_out_bytes'] <= 2 * s['daemon']['ahead_conn_bound_bytes'] and
		s['daemon']['ahead_out_bytes'] > 0 and s['daemon']['ahead_conn_bound_bytes'] ==
		min(s['daemon']['ahead_bound_bytes'] // 2, 16777216)) or exit(1)"
cat >"$T/scrape.py" <<'PY'
"""scrape.py PORT STATUS.json: the endpoint's open-ahead gauges equal status's."""
import json, sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10) as r:
    text = r.read().decode()
vals = {}
for line in text.splitlines():
    if line and not line.startswith("#"):
        name, v = line.rsplit(" ", 1)
        vals[name] = int(float(v))
d = json.load(open(sys.argv[2]))["daemon"]
for m, k in (("tiercache_ahead_bound_bytes", "ahead_bound_bytes"),
             ("tiercache_ahead_conn_bound_bytes", "ahead_conn_bound_bytes"),
             ("tiercache_ahead_askers", "ahead_askers")):
    assert vals.get(m) == d[k], (m, vals.get(m), d[k])
assert "# TYPE tiercache_ahead_askers gauge" in text
print("metrics ok")
PY
"$TC_BIN/tierctl" status --json >"$T/st.json"
check "metrics: tiercache_ahead_bound_bytes, _conn_bound_bytes and _askers equal status" \
	python3 "$T/scrape.py" "$PORT" "$T/st.json"
check "tierctl status (text) shows the share fields" \
	bash -c "'$TC_BIN/tierctl' status | grep -q 'ahead_conn_bound_bytes'"
touch "$T/hold9"
wait $T9 $T9B
b0=$(ctr bad_frames)
python3 "$(dirname "$0")/py_ahead_stride.py" "$T/sock" 9 >"$T/st" 2>&1
rc=$?
cat "$T/st"
check "OPEN_AHEAD strides: malformed ones get EBADMSG, a good one is answered" test $rc = 0
check "... and the four malformed ones count as bad frames" \
	test $(($(ctr bad_frames) - b0)) = 4
check "the takers gone: nobody asks, nothing held" \
	test "$(dmn ahead_askers) $(dmn ahead_out) $(dmn held_bytes)" = "0 0 0"

finish
