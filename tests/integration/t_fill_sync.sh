# A fill answers its readers before the chunk file is fdatasync'ed and
# writes the index record after the sync, which waits for daemon.sync_delay
# or for more than sync_backlog bytes to wait (docs/architecture.md). A
# graceful stop, even in the middle of fills, leaves every chunk file with
# its record: the next start finds no orphan, serves everything as hits, and
# the files on disk match the accounting. After kill -9 the chunks still
# waiting are orphans, removed at startup and read again; chunks evicted
# before their turn are never synced.
# This test is about chunk files (orphans, one file per chunk), so it turns
# segments off; t_segments_crash covers the same for segment items.
. "$(dirname "$0")/lib.sh"
NOSEG="segment_threshold = 0"
disk_bytes() { find "$T/$1/chunks" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}'; }
disk_files() { find "$T/hot/chunks" "$T/warm/chunks" -type f | wc -l; }
reconcile() { grep 'op=reconcile chunks=' "$T/daemon.log" | tail -n 1; }
mkdir -p "$T/cold"
for i in $(seq 1 6); do head -c $((2 * 1048576 + i * 4099)) /dev/urandom >"$T/cold/f$i.bin"; done
TC_DAEMON_CONF="$NOSEG" tc_config 64M 64M 256K
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

# --- lazy durability
pending() { tc_json "s['daemon']['sync_pending_chunks']"; }
counter() { tc_json "s['counters']['$1']"; }
nchunks=$((6 * 9)) # 6 files of 2 MiB + a bit, 256 KiB chunks: 9 chunks each
tc_stop
# a long delay: nothing is synced while the daemon runs
rm -rf "$T/hot" "$T/warm" "$T/state"
TC_DAEMON_CONF="$NOSEG
sync_delay = 1h" tc_config 64M 64M 256K
tc_start || exit 1
check "sync_delay 1h: every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 5
check "...every chunk waits for its sync" [ "$(pending)" = $nchunks ]
check "...none synced yet" [ "$(counter chunks_synced)" = 0 ]
tc_kill9
tc_start || exit 1
check "kill -9 while chunks wait: startup removes them as orphans" \
	bash -c "grep -q 'orphan_files_removed=$nchunks records_without_file=0' <<<\"$(reconcile)\""
check "...no chunk left" [ "$(disk_files)" = 0 ]
check "...every byte matches (read from cold again)" "$TC_TESTS/tcverify" tree ds "$T/cold" 6
check "...they were misses" [ "$(counter cold_reads)" = $nchunks ]
# a graceful stop syncs and records what waits
check "stopped cleanly with chunks waiting" tc_stop
tc_start || exit 1
check "...restart: no orphan, every chunk recorded" \
	bash -c "grep -q 'op=reconcile chunks=$nchunks .*orphan_files_removed=0 records_without_file=0' <<<\"$(reconcile)\""
check "...every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 7
check "...all hits, nothing read from cold" [ "$(counter cold_reads)" = 0 ]
tc_stop
# sync_delay 0: every fill is synced at once; kill -9 then loses nothing
rm -rf "$T/hot" "$T/warm" "$T/state"
TC_DAEMON_CONF="$NOSEG
sync_delay = 0" tc_config 64M 64M 256K
tc_start || exit 1
check "sync_delay 0: every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 8
for _ in $(seq 1 200); do [ "$(counter chunks_synced)" = $nchunks ] && break; sleep 0.05; done
check "...every chunk synced" [ "$(counter chunks_synced)" = $nchunks ]
check "...none waits" [ "$(pending)" = 0 ]
tc_kill9
tc_start || exit 1
check "...kill -9: no orphan, all recorded" \
	bash -c "grep -q 'op=reconcile chunks=$nchunks .*orphan_files_removed=0' <<<\"$(reconcile)\""
tc_stop
# a backlog of one chunk: waiting chunks are synced oldest first past it,
# long before the delay
rm -rf "$T/hot" "$T/warm" "$T/state"
TC_DAEMON_CONF="$NOSEG"$'\nsync_delay = 1h\nsync_backlog = 256K' tc_config 64M 64M 256K
tc_start || exit 1
check "sync_backlog 256K: every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 9
for _ in $(seq 1 200); do [ "$(counter chunks_synced)" -ge $((nchunks - 1)) ] && break; sleep 0.05; done
check "...all but the last chunk synced before the delay" [ "$(counter chunks_synced)" -ge $((nchunks - 1)) ]
check "...at most the backlog waits" [ "$(pending)" -le 1 ]
tc_stop
# a hot tier of 4 chunks, no warm tier, a backlog of 8 chunks: chunks are
# evicted before their turn comes, and those are never synced
rm -rf "$T/hot" "$T/warm" "$T/state"
TC_DAEMON_CONF="$NOSEG"$'\nsync_delay = 1h\nsync_backlog = 2M' tc_config 1M none 256K
tc_start || exit 1
check "evicted before the sync: every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 10
for _ in $(seq 1 200); do [ "$(counter syncs_skipped)" -gt 0 ] && break; sleep 0.05; done
check "...evicted chunks were skipped, not synced" [ "$(counter syncs_skipped)" -gt 0 ]
check "...no more waits than are resident" [ "$(pending)" -le 4 ]
check "...every byte still matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 11
finish
