# tierctl warm: loads files so the next reads hit; --verify re-reads every
# chunk; --tier warm places them on warm; a run that is interrupted resumes
# where it stopped (resident chunks are not read again); not enough room is
# exit 1 with how much is missing; bad input is a clear error.
. "$(dirname "$0")/lib.sh"

CS=262144
mkdir -p "$T/cold/data/sub" "$T/cold/big"
for i in $(seq 1 8); do head -c $((CS + i * 1000)) /dev/urandom >"$T/cold/data/f$i.bin"; done
for i in $(seq 1 4); do head -c $((CS * 3)) /dev/urandom >"$T/cold/data/sub/g$i.bin"; done
: >"$T/cold/data/empty.bin"
DATA=$(find "$T/cold/data" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
# 24 MiB in 96 files for the interrupt: many small steps
for i in $(seq -w 1 96); do head -c $((CS)) /dev/urandom >"$T/cold/big/b$i.bin"; done
BIG=$((96 * CS))

tierctl() { "$TC_BIN/tierctl" "$@"; }
wj() { # wj EXPR ARGS...: a field of `tierctl warm --json ARGS`
	local expr=$1
	shift
	tierctl warm --json "$@" 2>/dev/null | python3 -c "import json,sys; w=json.load(sys.stdin); print($expr)"
}

tc_config 64M 64M 256K
tc_start || exit 1

# --- warm, then the reads are hits ---
tierctl warm ds/data >"$T/w1.out" 2>"$T/w1.err"
check "warm of a directory exits 0" [ $? -eq 0 ]
check "it says every byte is resident on hot" \
	grep -qE "resident on hot .*\($DATA bytes\)" "$T/w1.out"
check "plain progress lines without a terminal" grep -q "^warm: .* of .* ETA" "$T/w1.err"
check "status: the dataset's hot bytes are the data" [ "$(tc_json "s['datasets'][0]['resident_hot_bytes']")" = "$DATA" ]
misses=$(tc_json "s['counters']['misses']")
check "reads after the warmup match the source" "$TC_TESTS/tcverify" file ds/data/f3.bin "$T/cold/data/f3.bin"
check "... as do the subdirectory's" "$TC_TESTS/tcverify" file ds/data/sub/g2.bin "$T/cold/data/sub/g2.bin"
check "... and they were all hits (no miss)" [ "$(tc_json "s['counters']['misses']")" = "$misses" ]
cold=$(tc_json "s['counters']['cold_reads']")
check "warming again reads nothing from cold" [ "$(wj "w['filled_bytes']" ds/data)" = 0 ]
check "... (cold reads unchanged)" [ "$(tc_json "s['counters']['cold_reads']")" = "$cold" ]
check "--check reports without loading" [ "$(wj "w['hot_bytes']" --check ds/data/f1.bin)" = $((CS + 1000)) ]

# --- --verify re-reads every chunk ---
nchunks=$((8 * 2 + 4 * 3))
check "--verify checks every chunk" [ "$(wj "w['checked_chunks']" --verify ds/data)" = "$nchunks" ]
check "--verify finds none bad" [ "$(wj "w['bad_chunks']" --verify ds/data)" = 0 ]

# --- --tier warm ---
tierctl evict ds/data >/dev/null
check "evicted: nothing of data resident" [ "$(tc_json "s['datasets'][0]['resident_hot_bytes']")" = 0 ]
tierctl warm --tier warm ds/data/sub >"$T/w2.out" 2>&1
check "warm --tier warm exits 0" [ $? -eq 0 ]
check "... and everything is on warm" [ "$(wj "w['warm_bytes']" --check ds/data/sub)" = $((4 * 3 * CS)) ]
check "... nothing on hot" [ "$(wj "w['hot_bytes']" --check ds/data/sub)" = 0 ]
check "bytes from warm match" "$TC_TESTS/tcverify" file ds/data/sub/g4.bin "$T/cold/data/sub/g4.bin"
tierctl warm --tier hot ds/data/sub >/dev/null 2>&1
check "warm --tier hot brings them back to hot" [ "$(wj "w['hot_bytes']" --check ds/data/sub)" = $((4 * 3 * CS)) ]
check "... none left on warm" [ "$(wj "w['warm_bytes']" --check ds/data/sub)" = 0 ]

# on a terminal the progress is a bar redrawn in place
if command -v script >/dev/null; then
	tierctl evict ds/data >/dev/null
	script -qec "$TC_BIN/tierctl warm ds/data" "$T/tty.log" >/dev/null 2>&1
	check "on a terminal: a progress bar with rate and ETA" grep -qE '\[#+\.*\] +[0-9.]+% .*/s ETA' "$T/tty.log"
	check "... redrawn in place (carriage returns)" grep -q $'\r' "$T/tty.log"
fi

# --- interrupt and resume ---
# ^C arrives once the warmup has read a few chunks: tierctl is stopped
# (SIGSTOP) as soon as the daemon's cold reads move, given SIGINT, resumed.
cold_reads() { tierctl status --json | grep -o '"cold_reads": [0-9]*' | grep -o '[0-9]*$'; }
base=$(cold_reads)
"$TC_BIN/tierctl" warm ds/big >"$T/w3.out" 2>"$T/w3.err" &
wpid=$!
for _ in $(seq 1 2000); do
	[ "$(cold_reads)" -gt $((base + 8)) ] && break
	kill -0 $wpid 2>/dev/null || break
done
kill -STOP $wpid 2>/dev/null
kill -INT $wpid 2>/dev/null
kill -CONT $wpid 2>/dev/null
wait $wpid
rc=$?
if grep -q interrupted "$T/w3.err"; then
	check "an interrupted warmup exits 1" [ $rc -eq 1 ]
	check "... and says how to resume" grep -q "run the same command again to resume" "$T/w3.err"
	have=$(wj "w['hot_bytes'] + w['warm_bytes']" --check ds/big)
	check "some of big was loaded before ^C ($have bytes)" [ "$have" -gt 0 ]
	filled=$(wj "w['filled_bytes']" ds/big)
	check "resuming reads exactly what is missing ($filled = $BIG - $have)" [ "$filled" = $((BIG - have)) ]
else
	echo "note: the warmup finished before ^C arrived; resume checked by a partial warm instead"
	tierctl evict ds/big >/dev/null
	tierctl warm ds/big/b01.bin ds/big/b02.bin >/dev/null 2>&1
	check "resuming reads only what is missing" [ "$(wj "w['filled_bytes']" ds/big)" = $((BIG - 2 * CS)) ]
fi
check "after resuming all of big is resident" [ "$(wj "w['missing_bytes']" --check ds/big)" = 0 ]
check "bytes match after resume" "$TC_TESTS/tcverify" file ds/big/b50.bin "$T/cold/big/b50.bin"

# --- bad input ---
tierctl warm --tier cold ds/data >/dev/null 2>"$T/e1"
check "unknown tier: usage error (exit 2)" [ $? -eq 2 ]
check "... naming the tiers" grep -q "use --tier hot or --tier warm" "$T/e1"
tierctl warm nope/x >/dev/null 2>"$T/e2"
check "unknown dataset: exit 1" [ $? -eq 1 ]
check "... says so" grep -q 'no dataset named "nope"' "$T/e2"
tierctl warm ds/missing.bin >/dev/null 2>"$T/e3"
check "unknown path: exit 1" [ $? -eq 1 ]
tierctl warm ds/../etc >/dev/null 2>"$T/e4"
check "path with ..: exit 1" [ $? -eq 1 ]
check "... refused as invalid" grep -qi "invalid\|not allowed" "$T/e4"
tc_stop

# --- not enough room: hot 2M, no warm; data is 5 MiB ---
rm -rf "$T/state" "$T/hot" "$T/warm"
tc_config 2M none 256K
tc_start || exit 1
tierctl warm ds/data >"$T/w4.out" 2>"$T/w4.err"
check "a warmup that does not fit exits 1" [ $? -eq 1 ]
check "... and says how much is NOT resident" grep -q "is NOT resident" "$T/w4.err"
missing=$(wj "w['missing_bytes']" --check ds/data)
check "... the missing bytes are real ($missing)" [ "$missing" -gt 0 ]
hot=$(wj "w['hot_bytes']" --check ds/data)
check "... resident + missing = the data" [ $((hot + missing)) = "$DATA" ]
check "reads still return the source bytes" "$TC_TESTS/tcverify" file ds/data/sub/g1.bin "$T/cold/data/sub/g1.bin"
tierctl warm --tier warm ds/data/f1.bin >/dev/null 2>"$T/e5"
check "--tier warm without a warm tier: exit 1" [ $? -eq 1 ]
check "... says there is no warm tier" grep -q "no warm tier" "$T/e5"
finish
