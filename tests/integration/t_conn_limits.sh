# The transport's limits (#16 items 5, 7, 9): out of descriptors the
# daemon neither spins nor leaves clients hanging; pipelined CHUNKs whose
# replies are never read cannot take its descriptors; 20 pipelined big
# LISTDIRs read slowly are all answered, in order; one uid cannot take
# every connection (max_clients_per_uid), admins keep a reserve;
# connections idle past idle_timeout that hold nothing are closed (the
# library reconnects on its next call); the metrics endpoint's connections
# are capped and idle ones closed.
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
PYC="python3 $(cd "$(dirname "$0")" && pwd)/conn_limits.py"
# run a conn_limits.py subcommand; its ok:/FAIL: lines become checks
pyc() {
	local l out rc
	out=$($PYC "$@" 2>&1)
	rc=$?
	while IFS= read -r l; do
		case $l in
		"ok: "*) ok "${l#ok: }" ;;
		"FAIL: "*) fail "${l#FAIL: }" ;;
		*) echo "  $l" ;;
		esac
	done <<<"$out"
	[ $rc -eq 0 ] || fail "conn_limits.py $1 exited $rc"
}
mkdir -p "$T/cold"
for i in 1 2 3; do head -c $((300000 + i)) /dev/urandom >"$T/cold/f$i.bin"; done

# ---- 1. out of descriptors (item 5): a daemon with 96 of them ----
tc_config 64M none 256K
prlimit --nofile=96:96 "$TC_BIN/tiercached" -c "$T/tc.conf" >>"$T/daemon.log" 2>&1 &
TC_PID=$!
for _ in $(seq 1 200); do "$TC" status >/dev/null 2>&1 && break; sleep 0.05; done
check "daemon started with nofile 96" grep -qE "^Max open files +96 +96" "/proc/$TC_PID/limits"
pyc emfile "$T/sock" "$TC_PID" 150
n=$(grep -c "turning new clients away" "$T/daemon.log")
check "running out of descriptors is logged once for the episode (got $n)" [ "$n" -eq 1 ]
check "... with the limit and the count of open descriptors" \
	grep -qE "op=accept err=\"Too many open files\" nofile=96 open_fds=[0-9]+ " "$T/daemon.log"
ok=0
for _ in $(seq 1 50); do "$TC" status >/dev/null 2>&1 && ok=1 && break; sleep 0.1; done
check "after the holders closed, a new client is served" [ $ok = 1 ]
check "... and the end of the episode is logged" grep -q "op=accept descriptors=available" "$T/daemon.log"
check "accept_errors counted" [ "$(tc_json "s['counters']['accept_errors']")" -gt 0 ]
check "bytes still equal to the source" "$TC_TESTS/tcverify" file ds/f1.bin "$T/cold/f1.bin"
tc_stop

# ---- 2. pipelined CHUNKs never read (item 5), big LISTDIRs (item 7),
# ---- the metrics endpoint's cap (item 9)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$T/cold/big"
python3 - "$T/cold/big" <<'PY'
import os, sys
for i in range(8192):
    open(os.path.join(sys.argv[1], "entry_%05d_%s" % (i, "x" * 100)), "w").close()
PY
tc_config 64M none 256K
sed -i "s/^\[daemon\]$/[daemon]\nmetrics_listen = 127.0.0.1:$PORT\nmetrics_max_clients = 16/" "$T/tc.conf"
tc_measure_memory # the RSS bound of queued LISTDIR replies (conn_limits.py)
tc_start || exit 1
for i in 1 2 3; do "$TC_TESTS/tcverify" file ds/f$i.bin "$T/cold/f$i.bin" >/dev/null || fail "warm f$i"; done
mv "$T/cold/big" "$T/big" # tcverify reads every file of its directory; the manifest keeps it
pyc chunkflood "$T/sock" "$TC_PID" ds/f1.bin "$TC_TESTS/tcverify" "$T/cold"
mv "$T/big" "$T/cold/big"
pyc listdir "$T/sock" ds/big 8192 "$TC_PID"
check "the LISTDIR client's connection is gone from the count" \
	bash -c "for i in \$(seq 1 50); do [ \"\$($TC status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"daemon\"][\"clients\"])')\" = 1 ] && exit 0; sleep 0.1; done; exit 1"

# metrics: 300 idle TCP connections with metrics_max_clients = 16
$PYC metricsflood "$PORT" "$TC_PID" 300 16 >"$T/mflood.out" 2>&1 &
mpid=$!
sleep 1.5
check "the Unix socket is unaffected meanwhile (tierctl status)" bash -c "'$TC' status >/dev/null"
wait $mpid
mrc=$?
while IFS= read -r l; do
	case $l in "ok: "*) ok "${l#ok: }" ;; "FAIL: "*) fail "${l#FAIL: }" ;; *) echo "  $l" ;; esac
done <"$T/mflood.out"
[ $mrc -eq 0 ] || fail "metricsflood exited $mrc"
check "metrics refusals logged" grep -q "op=metrics err=\"too many connections" "$T/daemon.log"
check "GET /metrics works again" python3 -c "
import urllib.request, sys
r = urllib.request.urlopen('http://127.0.0.1:$PORT/metrics', timeout=10)
sys.exit(0 if r.status == 200 and b'tiercache_clients ' in r.read() else 1)"
tc_stop

# ---- 3. per-uid limit, admin reserve, idle timeout (item 9) ----
# max_clients 12 keeps its last 3 (a quarter) for admins: users share 9
tc_config 64M none 256K
sed -i "s/^\[daemon\]$/[daemon]\nsocket_mode = 0666\nmax_clients = 12\nmax_clients_per_uid = 5\nidle_timeout = off/" "$T/tc.conf"
chmod 0711 "$T"
tc_start || exit 1
mkdir -m 0777 "$T/pub"
touch "$T/pub/flag"
runuser -u nobody -- $PYC hold "$T/sock" 6 "$T/pub/nobody" "$T/pub/flag" &
h1=$!
for _ in $(seq 1 100); do [ -f "$T/pub/nobody" ] && break; sleep 0.1; done
check "nobody: 5 connections served" [ "$(grep -c served "$T/pub/nobody")" = 5 ]
check "nobody's 6th refused with EBUSY naming the limit and the fix" \
	grep -qx "conn 6: refused EBUSY too many connections for uid 65534 (daemon.max_clients_per_uid = 5); close idle ones" "$T/pub/nobody"
check "root is not held to the per-uid limit (tierctl status)" bash -c "'$TC' status >/dev/null"
runuser -u daemon -- $PYC hold "$T/sock" 5 "$T/pub/daemon" "$T/pub/flag" &
h2=$!
for _ in $(seq 1 100); do [ -f "$T/pub/daemon" ] && break; sleep 0.1; done
check "user daemon: 4 served (9 user slots of 12)" [ "$(grep -c served "$T/pub/daemon")" = 4 ]
check "user daemon's 5th refused: the rest is kept for admins" \
	grep -qx "conn 5: refused EBUSY too many clients (daemon.max_clients = 12, of which the last 3 are kept for admins); try again later" "$T/pub/daemon"
check "root's tierctl status works while users hold every user slot" bash -c "'$TC' status >/dev/null"
check "root reads with bytes equal meanwhile" "$TC_TESTS/tcverify" file ds/f2.bin "$T/cold/f2.bin"
check "refusals counted (clients_refused = 2)" [ "$(tc_json "s['counters']['clients_refused']")" = 2 ]
check "refusals logged" grep -q "op=accept client_uid=65534 .*too many connections for uid 65534" "$T/daemon.log"

# idle timeout: on by reload (live); a connection with an open handle stays
$PYC handle "$T/sock" ds/f3.bin "$T/pub/handle" "$T/pub/flag" &
hpid=$!
for _ in $(seq 1 100); do [ -f "$T/pub/handle" ] && break; sleep 0.1; done
check "a client holds an open handle" grep -qx "open ok" "$T/pub/handle"
sed -i "s/^idle_timeout = off/idle_timeout = 2s/" "$T/tc.conf"
kill -HUP "$TC_PID"
clients() { tc_json "s['daemon']['clients']"; }
n=
for _ in $(seq 1 100); do n=$(clients); [ "$n" = 2 ] && break; sleep 0.1; done
check "after idle_timeout the 9 idle connections are closed (clients = handle holder + tierctl: $n)" [ "$n" = 2 ]
check "idle_closed counts them" [ "$(tc_json "s['counters']['idle_closed']")" = 9 ]
rm -f "$T/pub/flag"
wait $h1 $h2 $hpid
check "nobody's connections saw the daemon hang up" grep -qx "closed 5 of 5" "$T/pub/nobody.end"
check "daemon's connections too" grep -qx "closed 4 of 4" "$T/pub/daemon.end"
check "the connection holding a handle was not closed (CHUNK on it answered)" grep -qx "chunk ok" "$T/pub/handle.end"

# the library reconnects after an idle close (Python binding over libtiercache)
. "$(dirname "$0")/lib_python.sh"
before=$(tc_json "s['counters']['idle_closed']")
"${PY_ENV[@]}" "$PY" - "$T/cold/f1.bin" <<'PY' >"$T/py.out" 2>&1
import sys, time, tiercache
src = open(sys.argv[1], "rb").read()
tc = tiercache.Client()
with tc.open("ds/f1.bin") as f:
    a = f.read()
time.sleep(4)  # past idle_timeout (2 s): the daemon closes the connection
with tc.open("ds/f1.bin") as f:
    b = f.read()
print("first %s, after idle %s" % (a == src, b == src))
PY
check "python: read, idle past the timeout, read again: both equal to the source" \
	grep -qx "first True, after idle True" "$T/py.out"
cat "$T/py.out" | head -5
check "... and the daemon did close the idle connection in between" \
	[ "$(tc_json "s['counters']['idle_closed']")" -gt "$before" ]
finish
