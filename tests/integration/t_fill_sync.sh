# A fill answers its readers before the chunk file is fdatasync'ed and
# writes the index record after the sync (docs/architecture.md). A graceful
# stop, even in the middle of fills, leaves every chunk file with its
# record: the next start finds no orphan, serves everything as hits, and
# the files on disk match the accounting.
. "$(dirname "$0")/lib.sh"
disk_bytes() { find "$T/$1/chunks" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}'; }
disk_files() { find "$T/hot/chunks" "$T/warm/chunks" -type f | wc -l; }
reconcile() { grep 'op=reconcile chunks=' "$T/daemon.log" | tail -n 1; }
mkdir -p "$T/cold"
for i in $(seq 1 6); do head -c $((2 * 1048576 + i * 4099)) /dev/urandom >"$T/cold/f$i.bin"; done
tc_config 64M 64M 256K
tc_start || exit 1
check "first read: every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
check "stopped cleanly" tc_stop
tc_start || exit 1
check "restart: no orphan file (every fill got its record)" \
	bash -c "grep -q 'orphan_files_removed=0 records_without_file=0' <<<\"$(reconcile)\""
check "restart: as many chunks as chunk files" \
	[ "$(reconcile | sed 's/.*chunks=\([0-9]*\).*/\1/')" = "$(disk_files)" ]
check "restart: every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 2
check "...all hits, nothing read from cold" [ "$(tc_json "s['counters']['cold_reads']")" = 0 ]
# stop while fills run: the ones in flight finish, sync and are recorded
tc_stop
rm -rf "$T/hot" "$T/warm" "$T/state"
tc_start || exit 1
TIERCACHE_RECONNECT_TIMEOUT=0 "$TC_TESTS/tcverify" tree ds "$T/cold" 3 >/dev/null 2>&1 &
reader=$!
for _ in $(seq 1 100); do
	[ "$(tc_json "s['counters']['cold_reads']")" -gt 3 ] && break
	sleep 0.02
done
check "stopped cleanly while reading" tc_stop
wait $reader 2>/dev/null
tc_start || exit 1
check "restart after a stop mid-read: no orphan file" \
	bash -c "grep -q 'orphan_files_removed=0 records_without_file=0' <<<\"$(reconcile)\""
check "...hot files on disk = used_bytes" [ "$(disk_bytes hot)" = "$(tc_json "s['tiers'][0]['used_bytes']")" ]
check "...every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 4
finish
