#!/bin/bash
# Access traces: tierctl trace start/stop records one CSV row per chunk
# access the daemon serves (hits by tier, misses, tagged jobs), in the
# format tiercache-sim --trace replays; --dataset filters, --max-bytes
# stops the trace itself (status says why); an existing file, a relative
# path sent over the wire, a second trace and a non-admin are refused; a
# daemon stopping ends the file complete.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"
TC=$(cd "$TC_BIN" && pwd)/tierctl
SIM=$TC_BIN/tiercache-sim
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "t_trace: needs root and setpriv to run a client as another user"
	exit 1
fi
chmod 0755 "$T" # nobody must reach the socket
mkdir -p "$T/cold" "$T/cold2" "$T/out"
# no readahead: every chunk is a miss or a hit by the client's own reads
TC_DAEMON_CONF="readahead_chunks = 0" tc_config 16M 32M 64K "policy = lru" "[dataset ds2]" "backend = posix" "path = $T/cold2" \
	"chunk_size = 64K" "policy = lru"
sed -i 's/^\[daemon\]$/[daemon]\nsocket_mode = 0666/' "$T/tc.conf"
head -c 150000 /dev/urandom >"$T/cold/a.bin"        # 3 chunks: 65536 65536 18928
head -c 1000 /dev/urandom >"$T/cold/x,y #1.bin"     # a comma, a space, a '#'
head -c 70000 /dev/urandom >"$T/cold2/b.bin"        # 2 chunks: 65536 4464
tc_start || exit 1
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
cat_ok() { "$TC" cat "$1" | cmp -s - "$2"; }
rows() { tail -n +2 "$1" | wc -l; }

# ---- a trace of hits, misses, two datasets and a tagged job ----
(cd "$T/out" && "$TC" trace start t1.csv) >"$T/start.out" 2>&1
check "trace start with a relative FILE: exit 0" [ $? -eq 0 ]
check "trace start names the absolute file" grep -q "tracing into $T/out/t1.csv" "$T/start.out"
check "the daemon made the file, mode 0600" [ "$(stat -c %a "$T/out/t1.csv" 2>/dev/null)" = 600 ]
check "status: recording into it" \
	[ "$(tc_json 's["trace"]["state"] + " " + s["trace"]["file"]')" = "recording $T/out/t1.csv" ]
check "a.bin read (misses)" cat_ok ds/a.bin "$T/cold/a.bin"
check "a.bin read again (hot hits)" cat_ok ds/a.bin "$T/cold/a.bin"
check "a path with a comma read" cat_ok "ds/x,y #1.bin" "$T/cold/x,y #1.bin"
check "ds2/b.bin read" cat_ok ds2/b.bin "$T/cold2/b.bin"
cat >"$T/tagged.py" <<'PY'
import sys, tiercache
c = tiercache.Client(job=7, rank=1)
data = c.open("ds2/b.bin").read()
sys.exit(0 if data == open(sys.argv[1], "rb").read() else 1)
PY
check "a tagged job (job 7, rank 1) reads ds2/b.bin" "${PY_ENV[@]}" "$PY" "$T/tagged.py" "$T/cold2/b.bin"
"$TC" trace stop >"$T/stop.out" 2>&1
check "trace stop: exit 0" [ $? -eq 0 ]
check "trace stop prints the accesses, the load rows and the file" \
	grep -q "^11 accesses and 0 load rows recorded, .* in $T/out/t1.csv" "$T/stop.out"
check "status: stopped by tierctl" \
	[ "$(tc_json 's["trace"]["state"] + "/" + s["trace"]["reason"]')" = "stopped/stopped by tierctl trace stop" ]
f=$T/out/t1.csv
check "header names the columns" [ "$(head -n 1 "$f")" = "object,size,rank,job,epoch,time_us,dataset,chunk,result" ]
check "one row per chunk access (11)" [ "$(rows "$f")" = 11 ]
# object,size,rank,job,epoch,time_us,dataset,chunk,result -> without time
cut -d, -f1-5,7- "$f" | tail -n +2 >"$T/rows"
cat >"$T/want" <<W
ds/a.bin#0,65536,,,,ds,0,miss
ds/a.bin#1,65536,,,,ds,1,miss
ds/a.bin#2,18928,,,,ds,2,miss
ds/a.bin#0,65536,,,,ds,0,hot
ds/a.bin#1,65536,,,,ds,1,hot
ds/a.bin#2,18928,,,,ds,2,hot
ds/x%2Cy%20%231.bin#0,1000,,,,ds,0,miss
ds2/b.bin#0,65536,,,,ds2,0,miss
ds2/b.bin#1,4464,,,,ds2,1,miss
ds2/b.bin#0,65536,1,0,,ds2,0,hot
ds2/b.bin#1,4464,1,0,,ds2,1,hot
W
check "rows: objects, sizes, tags and results as served" diff "$T/want" "$T/rows"
check "time_us never goes back" awk -F, 'NR > 1 { if ($6 + 0 < last) exit 1; last = $6 + 0 }' "$f"
check "hits in the trace = the daemon's hit counters" \
	[ "$(grep -c ',hot$\|,warm$' "$f")" = "$(tc_json 's["counters"]["hits_hot"] + s["counters"]["hits_warm"]')" ]
check "misses in the trace = the daemon's miss counter" \
	[ "$(grep -c ',miss$\|,unkept$' "$f")" = "$(tc_json 's["counters"]["misses"]')" ]
"$SIM" --trace "$f" --hot 1M --json >"$T/sim.json" 2>"$T/sim.err"
check "tiercache-sim replays the trace: exit 0" [ $? -eq 0 ]
check "tiercache-sim: as many accesses as rows" \
	[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trace"]["accesses"])' "$T/sim.json")" = 11 ]
check "tiercache-sim: 6 distinct chunks" \
	[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trace"]["objects"])' "$T/sim.json")" = 6 ]

# ---- refusals ----
"$TC" trace start "$f" >"$T/out.txt" 2>"$T/err"
check "an existing file: exit 1" [ $? -eq 1 ]
check "an existing file: says it never overwrites" grep -q "exists: a trace never overwrites a file" "$T/err"
check "the existing file is untouched" [ "$(rows "$f")" = 11 ]
python3 - "$T/sock" >"$T/wire.out" 2>&1 <<'PY'
import struct, sys
sys.path.insert(0, "tests/integration")
import tc_wire as w
s = w.connect(sys.argv[1])
s.sendall(w.hello())
w.recv_frame(s)
p = w.s_str(b"rel/t.csv") + w.s_str(b"") + struct.pack("<Q", 0)
s.sendall(w.hdr(29, len(p), 2) + p)
op, rid, aux, payload = w.recv_frame(s)
print(w.err_text(payload))
PY
check "a relative path over the wire: refused, says why" grep -q "is not an absolute path" "$T/wire.out"
"$TC" trace start "$T/out/t4.csv" >/dev/null 2>&1
"$TC" trace start "$T/out/t5.csv" >"$T/out.txt" 2>"$T/err"
check "a second trace: exit 1" [ $? -eq 1 ]
check "a second trace: names the running one" grep -q "already recording into $T/out/t4.csv" "$T/err"
check "a second trace: its file not made" [ ! -e "$T/out/t5.csv" ]
"$TC" trace stop >/dev/null 2>&1
as_nobody "$TC" trace start /tmp/tc_trace_nobody_$$.csv >"$T/out.txt" 2>"$T/err"
check "a non-admin: exit 1" [ $? -eq 1 ]
check "a non-admin: EPERM, says who may" grep -q "Operation not permitted.*admin operation" "$T/err"
check "a non-admin: no file made" [ ! -e /tmp/tc_trace_nobody_$$.csv ]
as_nobody "$TC" trace stop >"$T/out.txt" 2>"$T/err"
check "a non-admin may not stop a trace" grep -q "Operation not permitted" "$T/err"
"$TC" trace start --dataset nosuch "$T/out/t6.csv" >/dev/null 2>"$T/err"
check "an unknown dataset: refused, names it" grep -q 'no dataset named "nosuch"' "$T/err"
"$TC" trace start --max-bytes 12Q "$T/out/t6.csv" >/dev/null 2>"$T/err"
check "a bad --max-bytes: usage error (exit 2)" [ $? -eq 2 ]

# ---- --dataset ----
check "trace start --dataset ds2" "$TC" trace start --dataset ds2 "$T/out/t2.csv"
check "read ds (not traced)" cat_ok ds/a.bin "$T/cold/a.bin"
check "read ds2 (traced)" cat_ok ds2/b.bin "$T/cold2/b.bin"
"$TC" trace stop >/dev/null 2>&1
check "--dataset ds2: only ds2's 2 rows" [ "$(rows "$T/out/t2.csv")" = 2 ] && \
	check "--dataset ds2: every row is ds2's" [ "$(cut -d, -f7 "$T/out/t2.csv" | tail -n +2 | sort -u)" = ds2 ]

# ---- --max-bytes: the trace stops itself ----
check "trace start --max-bytes 200" "$TC" trace start --max-bytes 200 "$T/out/t3.csv"
for _ in 1 2 3; do cat_ok ds/a.bin "$T/cold/a.bin" || fail "read under --max-bytes"; done
check "status: stopped, max bytes reached" \
	[ "$(tc_json 's["trace"]["state"] + "/" + s["trace"]["reason"]')" = "stopped/stopped: max bytes reached (200)" ]
sz=$(stat -c %s "$T/out/t3.csv")
check "the file is within its bound ($sz <= 200)" [ "$sz" -le 200 ]
check "the file ends on a whole row" [ "$(tail -c 1 "$T/out/t3.csv" | od -An -c | tr -d ' ')" = '\n' ]
check "the status byte count is the file's" [ "$(tc_json 's["trace"]["file_bytes"]')" = "$sz" ]
"$TC" trace stop >"$T/out.txt" 2>"$T/err"
check "trace stop after it stopped itself: exit 1 with how it ended" \
	grep -q "no trace is recording; the last one ($T/out/t3.csv, .*) stopped: max bytes reached" "$T/err"

# ---- a reload that changes the config ends the trace ----
check "trace start before a reload" "$TC" trace start "$T/out/t7.csv"
sed -i 's/^log_level = .*/log_level = debug/' "$T/tc.conf"
"$TC" reload >/dev/null 2>&1
check "a reload ended it" \
	[ "$(tc_json 's["trace"]["reason"]')" = "stopped: the daemon's config was reloaded" ]

# ---- the daemon stopping ends the file complete ----
check "trace start before a stop" "$TC" trace start "$T/out/t8.csv"
check "read under it" cat_ok ds/a.bin "$T/cold/a.bin"
tc_stop
check "after the daemon stopped: header and 3 rows" [ "$(rows "$T/out/t8.csv")" = 3 ]
check "the log says why it ended" grep -q 'op=trace_stop file=.*t8.csv records=3 .*reason="stopped: the daemon stopped"' "$T/daemon.log"
rm -f /tmp/tc_trace_nobody_$$.csv
finish
