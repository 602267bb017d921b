#!/bin/bash
# Streamed READ's memory is bounded per connection (#16 item 6, READ's
# part): a client that pipelines READs of 16 MiB and never reads a reply,
# and clients that hang up in the middle of their replies, do not grow the
# daemon's RSS (read from /proc) past a fixed allowance, and other clients
# are served meanwhile with the source's bytes.
. "$(dirname "$0")/lib.sh"
PYF="python3 $(dirname "$0")/py_flood.py"

TC_DAEMON_CONF="scrub_rate = 0"
tc_config 64M none 1M
mkdir -p "$T/cold"
head -c $((8 << 20)) /dev/urandom >"$T/cold/big.bin"
head -c $((3 << 20)) /dev/urandom >"$T/cold/other.bin"
tc_start || finish
check "big.bin read whole through the library" "$TC_TESTS/tcverify" file ds/big.bin "$T/cold/big.bin"
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$TC_PID/status"; }
idle=$(rss)
echo "idle VmRSS: $idle KiB"
tc_measure_memory
LIMIT=$((200 * 1024 * TC_MEM_SCALE)) # KiB above idle

# one client pipelines READs for 6 s and never reads; meanwhile another reads
$PYF "$T/sock" readflood ds/big.bin "$TC_PID" 6 >"$T/flood.out" 2>&1 &
fpid=$!
sleep 2
check "another client is served while the flood waits (bytes equal)" \
	"$TC_TESTS/tcverify" file ds/other.bin "$T/cold/other.bin"
TIERCACHE_NO_FD_PASSING=1 "$TC_BIN/tierctl" cat ds/other.bin >"$T/other.out" 2>"$T/other.err"
check "... and a streamed reader too" cmp -s "$T/other.out" "$T/cold/other.bin"
wait "$fpid"
cat "$T/flood.out"
peak=$(awk '/^peak_rss_kib/ {print $2}' "$T/flood.out")
check "the flood ran" [ -n "$peak" ]
echo "pipelined READs: peak VmRSS $peak KiB (idle $idle)"
check "pipelined READs never read: RSS stays under idle + $((LIMIT / 1024)) MiB" [ "${peak:-999999999}" -lt $((idle + LIMIT)) ]

# clients that hang up mid-reply
$PYF "$T/sock" hangup ds/big.bin "$TC_PID" 10 >"$T/hang.out" 2>&1
cat "$T/hang.out"
peak=$(awk '/^peak_rss_kib/ {print $2}' "$T/hang.out")
echo "hang-ups: peak VmRSS $peak KiB (idle $idle)"
check "clients hanging up mid-reply: RSS stays under idle + $((LIMIT / 1024)) MiB" [ "${peak:-999999999}" -lt $((idle + LIMIT)) ]

# the daemon is still well and serves the exact bytes
check "after the floods: big.bin still matches" "$TC_TESTS/tcverify" file ds/big.bin "$T/cold/big.bin"
TIERCACHE_NO_FD_PASSING=1 "$TC_BIN/tierctl" cat ds/big.bin >"$T/big.out" 2>"$T/big.err"
check "after the floods: a streamed read matches" cmp -s "$T/big.out" "$T/cold/big.bin"
check "no connection left behind" [ "$(tc_json "s['daemon']['clients']")" -le 1 ]
finish
