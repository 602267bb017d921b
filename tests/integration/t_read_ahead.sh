# Client read-ahead: a file read front to back has chunk i + 1 fetched while
# chunk i is waited for (a CHUNK hint, counted in read_ahead), never a chunk
# twice and never past what the file has; TIERCACHE_READ_AHEAD=0 turns it
# off. The bytes match the source either way.
. "$(dirname "$0")/lib.sh"
tc_config 64M 64M 1M
mkdir -p "$T/cold"
head -c $((8 * 1048576 + 5)) /dev/urandom >"$T/cold/big.bin"
head -c $((3 * 1048576)) /dev/urandom >"$T/cold/other.bin"
tc_start || exit 1
check "a file read front to back matches" "$TC_TESTS/tcverify" file ds/big.bin "$T/cold/big.bin"
# tcverify reads 64 KiB blocks: chunk 0 is asked for by a small read (no
# hint), chunks 1..7 each hint the next: 2..8
check "...chunks 2..8 were read ahead" [ "$(tc_json "s['counters']['read_ahead']")" = 7 ]
check "...each of its 9 chunks read from cold once" [ "$(tc_json "s['counters']['cold_reads']")" = 9 ]
check "...and only its bytes" [ "$(tc_json "s['counters']['bytes_from_cold']")" = $((8 * 1048576 + 5)) ]
check "with TIERCACHE_READ_AHEAD=0 another file matches" \
	env TIERCACHE_READ_AHEAD=0 "$TC_TESTS/tcverify" file ds/other.bin "$T/cold/other.bin"
check "...without read-ahead" [ "$(tc_json "s['counters']['read_ahead']")" = 7 ]
check "...3 more cold reads" [ "$(tc_json "s['counters']['cold_reads']")" = 12 ]
finish
