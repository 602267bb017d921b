# Core read path: every byte through the cache equals the source (whole
# files, reads across chunk boundaries, past EOF); the first pass fills from
# cold exactly once per chunk, the second is all hits; a restart keeps the
# cache; the streamed fallback and forked children read the same bytes.
. "$(dirname "$0")/lib.sh"
CS=262144
tc_config 64M 128M 256K
tc_gen_tree "$T/cold" $CS
total=$(find "$T/cold" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
tc_start || exit 1

check "first pass: tree and bytes match the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
check "first pass read each byte from cold exactly once" [ "$(tc_json "s['counters']['bytes_from_cold']")" = "$total" ]
m1=$(tc_json "s['counters']['misses']")
check "first pass had misses" [ "$m1" -gt 0 ]

check "second pass matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 2
check "second pass: no new misses" [ "$(tc_json "s['counters']['misses']")" = "$m1" ]
check "second pass: no new cold bytes" [ "$(tc_json "s['counters']['bytes_from_cold']")" = "$total" ]
hits=$(tc_json "s['counters']['hits_hot'] + s['counters']['hits_warm']")
check "second pass: hits counted" [ "$hits" -gt 0 ]
check "status: the tiers' read rate over the last 10 s shows the reads" \
	[ "$(tc_json "sum(t['read_rate_bytes'] for t in s['tiers'])")" -gt 0 ]

check "streamed fallback (no fd passing) matches" env TIERCACHE_NO_FD_PASSING=1 "$TC_TESTS/tcverify" tree ds "$T/cold" 3
check "forked children read through an inherited connection" "$TC_TESTS/tcverify" fork ds/multi.bin "$T/cold/multi.bin"
check "names with spaces" "$TC_TESTS/tcverify" file "ds/with space/a file.txt" "$T/cold/with space/a file.txt"

check "clean stop" tc_stop
tc_start || exit 1
check "after restart: index reloaded" [ "$(tc_json "sum(t['chunks'] for t in s['tiers'])")" -gt 0 ]
check "after restart: bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 4
check "after restart: all hits (no misses)" [ "$(tc_json "s['counters']['misses']")" = 0 ]
check "after restart: nothing read from cold" [ "$(tc_json "s['counters']['bytes_from_cold']")" = 0 ]

out=$("$TC_BIN/tierctl" cat ds/multi.bin | cmp - "$T/cold/multi.bin" && echo same)
check "tierctl cat streams the exact bytes" [ "$out" = same ]
check "tierctl ls lists the root" bash -c "'$TC_BIN/tierctl' ls ds | grep -q chunk_exact.bin"
check "tierctl stat shows the size" bash -c "'$TC_BIN/tierctl' stat ds/multi.bin | grep -q $((CS * 3 + 12345))"
finish
