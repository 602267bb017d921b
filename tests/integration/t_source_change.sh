# A changed source file is fetched anew, never served stale; a removed one
# disappears; a new one appears after `tierctl refresh`.
. "$(dirname "$0")/lib.sh"
tc_config 64M 64M 256K "revalidate_after = 0s"
mkdir -p "$T/cold"
head -c 700000 /dev/urandom >"$T/cold/f.bin"
head -c 1000 /dev/urandom >"$T/cold/gone.bin"
tc_start || exit 1
check "original bytes" "$TC_TESTS/tcverify" file ds/f.bin "$T/cold/f.bin"
# same size, new content, new mtime
head -c 700000 /dev/urandom >"$T/cold/f.bin"
touch -d "@$(($(date +%s) + 60))" "$T/cold/f.bin"
check "changed file (same size) served new" "$TC_TESTS/tcverify" file ds/f.bin "$T/cold/f.bin"
head -c 900000 /dev/urandom >"$T/cold/f.bin"
check "grown file served new" "$TC_TESTS/tcverify" file ds/f.bin "$T/cold/f.bin"
# live bytes: a dropped segment item stays in used_bytes as a dead byte of
# its segment until the segment is reclaimed (docs/architecture.md)
check "old version's chunks were dropped" \
	[ "$(tc_json "s['tiers'][0]['used_bytes'] - s['tiers'][0]['segment_bytes_dead']")" -le 901000 ]
rm "$T/cold/gone.bin"
check "removed file: ENOENT" "$TC_TESTS/tcverify" errno ds/gone.bin ENOENT
head -c 5000 /dev/urandom >"$T/cold/new.bin"
check "new file unknown before refresh" "$TC_TESTS/tcverify" errno ds/new.bin ENOENT
out=$("$TC_BIN/tierctl" refresh ds)
echo "$out"
check "refresh reports the dataset" [ -n "$out" ]
check "new file readable after refresh" "$TC_TESTS/tcverify" file ds/new.bin "$T/cold/new.bin"
check "refresh of an unknown dataset fails" bash -c "! '$TC_BIN/tierctl' refresh nosuch 2>/dev/null"
# a change while the daemon is down is noticed at the next start
tc_stop
head -c 800000 /dev/urandom >"$T/cold/f.bin"
touch -d "@$(($(date +%s) + 120))" "$T/cold/f.bin"
tc_start || exit 1
check "change made while stopped: served new" "$TC_TESTS/tcverify" file ds/f.bin "$T/cold/f.bin"
finish
