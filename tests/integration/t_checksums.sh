#!/bin/bash
# Never serve a corrupt chunk (#16 items 1 and 12), with real byte flips
# (dd conv=notrunc) and a real truncation of chunk files on the tier:
#   a. flipped while the daemon was stopped: the first use after the restart
#      checks the file; the library (tcverify), tierctl cat and Python read
#      the source's bytes; each bad chunk is counted and logged with its file
#   b. flipped while running, read by a streamed READ (no fd passing)
#   c. flipped while running, found by the scrubber (scrub_rate set live by
#      a reload), dropped; the next read is correct
#   d. truncated while running: the library reads short through its
#      descriptor, reports it, the daemon checks, drops and refetches
#   e. a client that claims a good chunk is bad: the daemon checks and keeps
#      it (one check per report, reports rate-limited per connection)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"
PYF="python3 $(dirname "$0")/py_flood.py"
MIB=$((1 << 20))

TC_DAEMON_CONF="scrub_rate = 0"
tc_config 64M none 1M
mkdir -p "$T/cold"
for f in a b c d e g h; do head -c $((3 * MIB + 4321)) /dev/urandom >"$T/cold/$f.bin"; done

ctr() { tc_json "s['counters']['$1']"; }
# chunk_file NAME IDX: the tier file that holds chunk IDX of cold/NAME
chunk_file() {
	local f size len
	size=$(stat -c %s "$T/cold/$1")
	len=$((size - $2 * MIB < MIB ? size - $2 * MIB : MIB))
	for f in "$T"/hot/chunks/*/*.chunk; do
		if [ "$(stat -c %s "$f")" = "$len" ] && cmp -s -n "$len" -i $(($2 * MIB)):0 "$T/cold/$1" "$f"; then
			echo "$f"
			return 0
		fi
	done
	return 1
}
# flip FILE OFFSET: invert one byte in place (through the page cache, as a
# rotting disk's bytes would be read)
flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
reload_scrub() {
	sed -i "s/^scrub_rate = .*/scrub_rate = $1/" "$T/tc.conf"
	"$TC_BIN/tierctl" reload >/dev/null
}

tc_start || finish
for f in a b c d e g h; do "$TC_TESTS/tcverify" file ds/$f.bin "$T/cold/$f.bin" >/dev/null || fail "fill $f.bin"; done
tc_stop || fail "clean stop"

# --- a. flipped at rest, found at first use after the restart ---
fa=$(chunk_file a.bin 1) fb=$(chunk_file b.bin 0) fc=$(chunk_file c.bin 2)
check "found the chunk files to flip" [ -n "$fa" ] && [ -n "$fb" ] && [ -n "$fc" ]
flip "$fa" 12345
flip "$fb" 0
flip "$fc" 4000
tc_start || finish
check "a: reconcile kept the flipped files (same size)" [ -e "$fa" ] && [ -e "$fb" ] && [ -e "$fc" ]
check "a: library reads the source bytes (chunk 1 flipped)" "$TC_TESTS/tcverify" file ds/a.bin "$T/cold/a.bin"
"$TC_BIN/tierctl" cat ds/b.bin >"$T/b.out" 2>"$T/b.err"
check "a: tierctl cat gives the source bytes (chunk 0 flipped, handed out with OPEN)" cmp -s "$T/b.out" "$T/cold/b.bin"
cat >"$T/read_c.py" <<PY
import tiercache, sys
with tiercache.Client() as tc:
    with tc.open("ds/c.bin") as f:
        data = f.read()
src = open("$T/cold/c.bin", "rb").read()
print("ok: python reads the source bytes (chunk 2 flipped)" if data == src else "FAIL: python read differs")
PY
"${PY_ENV[@]}" $PY "$T/read_c.py" >"$T/read_c.out" 2>&1
py_report read_c $?
check "a: 3 checksum errors counted" [ "$(ctr checksum_errors)" = 3 ]
for f in "$fa" "$fb" "$fc"; do
	check "a: the log names $(basename "$f")" grep -q "file=$f .*checksum mismatch" "$T/daemon.log"
done
before=$(ctr cold_reads)
check "a: an intact chunk is served after its check" "$TC_TESTS/tcverify" file ds/d.bin "$T/cold/d.bin"
check "a: ... without a cold read" [ "$(ctr cold_reads)" = "$before" ]
check "a: ... and still no other error" [ "$(ctr checksum_errors)" = 3 ]

# --- b. flipped while running, read by streamed READs ---
"$TC_TESTS/tcverify" file ds/e.bin "$T/cold/e.bin" >/dev/null || fail "b: e.bin checked at first use"
fe=$(chunk_file e.bin 1)
flip "$fe" 777
TIERCACHE_NO_FD_PASSING=1 "$TC_BIN/tierctl" cat ds/e.bin >"$T/e.out" 2>"$T/e.err"
check "b: streamed READ gives the source bytes" cmp -s "$T/e.out" "$T/cold/e.bin"
check "b: counted" [ "$(ctr checksum_errors)" = 4 ]
check "b: logged with the file (op=read)" grep -q "file=$fe op=read err=\"checksum mismatch" "$T/daemon.log"
check "b: the chunk was read again: its tier file holds the source bytes" [ "$(chunk_file e.bin 1)" = "$fe" ]

# --- c. the scrubber ---
fg=$(chunk_file g.bin 2)
flip "$fg" 99
reload_scrub 1G
for _ in $(seq 1 200); do [ "$(ctr checksum_errors)" -ge 5 ] && break; sleep 0.1; done
check "c: the scrubber found the flip (counted)" [ "$(ctr checksum_errors)" = 5 ]
check "c: logged with the file (op=scrub)" grep -q "file=$fg op=scrub" "$T/daemon.log"
check "c: the bad file is gone" [ ! -e "$fg" ]
check "c: scrubbed_bytes counted" [ "$(ctr scrubbed_bytes)" -gt 0 ]
check "c: the next read gives the source bytes" "$TC_TESTS/tcverify" file ds/g.bin "$T/cold/g.bin"
reload_scrub 0

# --- d. truncated while running: the client reports, the daemon refetches ---
fh=$(chunk_file h.bin 1)
truncate -s 1000 "$fh"
check "d: the library reads the source bytes" "$TC_TESTS/tcverify" file ds/h.bin "$T/cold/h.bin"
check "d: the client's report was counted" [ "$(ctr chunk_reports)" -ge 1 ]
check "d: the truncated chunk counted as a checksum error" [ "$(ctr checksum_errors)" = 6 ]
check "d: logged as short (client_report)" \
	grep -q "op=client_report err=\"the file is 1000 bytes, the chunk 1048576" "$T/daemon.log"
fh0=$(chunk_file h.bin 0)
truncate -s 0 "$fh0"
"$TC_BIN/tierctl" cat ds/h.bin >"$T/h.out" 2>"$T/h.err"
check "d: tierctl cat of a chunk truncated to 0 (OPEN's chunk 0) gives the source bytes" \
	cmp -s "$T/h.out" "$T/cold/h.bin"

# --- e. a client that lies about a good chunk ---
fd1=$(chunk_file d.bin 1)
errs=$(ctr checksum_errors) reps=$(ctr chunk_reports)
$PYF "$T/sock" report ds/d.bin 1 40 >"$T/rep.out" 2>&1
check "e: every CHUNK with a report is answered" grep -q "replies_ok 40" "$T/rep.out"
check "e: the good chunk is kept" [ -e "$fd1" ]
check "e: no checksum error" [ "$(ctr checksum_errors)" = "$errs" ]
n=$(($(ctr chunk_reports) - reps))
check "e: reports beyond the per-connection allowance are ignored ($n of 40 checked)" \
	[ "$n" -ge 1 ] && [ "$n" -lt 40 ]
check "e: d.bin still reads the source bytes" "$TC_TESTS/tcverify" file ds/d.bin "$T/cold/d.bin"
finish
