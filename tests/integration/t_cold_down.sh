# The cold store is gone when the daemon starts: the daemon still starts,
# refuses what it has cached (from the manifest it persisted) with EIO and
# what to do, since it cannot check it is current, unless the dataset has
# serve_stale_on_error = yes (then serves it, counted), fails misses with a
# clear EIO naming the reason, shows the dataset unavailable in status, and
# picks the source up again in the background once it is back.
. "$(dirname "$0")/lib.sh"
tc_config 64M 64M 256K
mkdir -p "$T/cold"
head -c 600000 /dev/urandom >"$T/cold/cached.bin"
head -c 600000 /dev/urandom >"$T/cold/uncached.bin"
cp "$T/cold/cached.bin" "$T/cached.copy"
tc_start || exit 1
check "warm up one file" "$TC_TESTS/tcverify" file ds/cached.bin "$T/cold/cached.bin"
tc_stop
mv "$T/cold" "$T/cold.away"
tc_start || exit 1
check "daemon started without its cold directory" kill -0 "$TC_PID"
check "status: dataset unavailable" [ "$(tc_json "s['datasets'][0]['available']")" = False ]
reason=$(tc_json "s['datasets'][0]['reason']")
echo "reason: $reason"
check "status: the reason names the directory" bash -c "echo '$reason' | grep -q cold"
check "cached file not served unchecked: EIO" "$TC_TESTS/tcverify" errno ds/cached.bin EIO
out=$("$TC_BIN/tierctl" cat ds/cached.bin 2>&1 >/dev/null)
check "the message says serve_stale_on_error" bash -c "echo \"\$1\" | grep -q 'serve_stale_on_error = yes'" _ "$out"
echo "serve_stale_on_error = yes" >>"$T/tc.conf"
check "reload: serve_stale_on_error = yes" "$TC_BIN/tierctl" reload
check "cached file served (opted in), bytes match" "$TC_TESTS/tcverify" file ds/cached.bin "$T/cached.copy"
check "status: serving stale" [ "$(tc_json "s['datasets'][0]['serving_stale']")" = True ]
out=$("$TC_BIN/tierctl" cat ds/uncached.bin 2>&1 >/dev/null)
echo "tierctl: $out"
check "uncached file fails with a message naming the cold store" bash -c "echo \"$out\" | grep -qi 'unavailable\|cold'"
mv "$T/cold.away" "$T/cold"
for _ in $(seq 1 100); do
	[ "$(tc_json "s['datasets'][0]['available']")" = True ] && break
	sleep 0.1
done
check "dataset available again without a restart" [ "$(tc_json "s['datasets'][0]['available']")" = True ]
check "the uncached file is readable now" "$TC_TESTS/tcverify" file ds/uncached.bin "$T/cold/uncached.bin"
finish
