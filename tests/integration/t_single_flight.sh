# Single flight: many clients asking for the same uncached chunk at once
# cause exactly one cold read, and all of them get the right bytes.
. "$(dirname "$0")/lib.sh"
tc_config 256M 256M 32M
mkdir -p "$T/cold"
head -c $((32 * 1024 * 1024)) /dev/urandom >"$T/cold/shard.bin"
tc_start || exit 1
check "16 concurrent readers all read the right bytes" "$TC_TESTS/tcverify" concurrent ds/shard.bin "$T/cold/shard.bin" 16
check "one cold read for the one chunk" [ "$(tc_json "s['counters']['cold_reads']")" = 1 ]
check "bytes from cold equal one chunk" [ "$(tc_json "s['counters']['bytes_from_cold']")" = $((32 * 1024 * 1024)) ]
finish
