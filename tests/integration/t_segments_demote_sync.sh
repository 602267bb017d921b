#!/bin/bash
# Demotions share their fdatasyncs (cached/cache/seg_sync.c, session 17):
# a copy into warm's segment waits up to 100 ms, or until 64 copies or
# 1/32 of the hot tier wait, for one sync that covers the whole group, and
# the group's records are written after it in one index write batch.
# Under two readers streaming small files through a hot tier smaller than
# the data: every byte read equals the source; far fewer syncs than
# demotions; every copy ends (the mover goes idle: a copy whose grouped
# sync never started would hang there). kill -9 once all is recorded
# loses nothing; kill -9 while copies wait for their group's sync, and a
# graceful stop then, serve nothing wrong (every byte compared), leave no
# bad item (tierctl verify) and keep the tiers' bytes on disk equal to
# their accounting.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"

mkdir -p "$T/cold"
python3 - "$T/cold" <<'PY'
import os, random, sys
r = random.Random(26)
for i in range(700):
    with open(os.path.join(sys.argv[1], "f%03d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(60, 140) * 1024))
PY
ctr() { tc_json "s['counters']['$1']"; }
tier() { tc_json "s['tiers'][$1]['$2']"; }
idle() { wait_for 30 '[ "$(tc_json "s[\"daemon\"][\"moves_inflight\"] + s[\"daemon\"][\"fills_inflight\"]")" = 0 ]'; }
syncing() { tc_json "s['daemon']['moves_syncing']"; }
# two readers, each in its own order (tcverify's seed), every byte compared
readers() {
	"$TC_TESTS/tcverify" tree ds "$T/cold" "$1" >"$T/r1.out" 2>&1 &
	local a=$!
	"$TC_TESTS/tcverify" tree ds "$T/cold" "$(($1 + 100))" >"$T/r2.out" 2>&1
	local rc=$?
	wait $a || rc=1
	[ $rc = 0 ] || cat "$T/r1.out" "$T/r2.out"
	return $rc
}
disk_ok() {
	tier_disk_ok hot 0 && tier_disk_ok warm 1
}

# hot 32M (a group of at most 1M) and warm 24M for about 68 MB
TC_DAEMON_CONF=$'segment_threshold = 512K\nsegment_size = 4M\nsync_delay = 100ms'
# demote=1 named: lru's default, demote=flat, demotes almost nothing
tc_config 32M 24M 1M "policy = lru demote=1"
tc_start || exit 1
check "two readers: every byte equals the source" readers 1
check "the mover goes idle (every grouped sync came back)" idle
d=$(ctr demotions)
syncs=$(ctr segment_copy_syncs)
n=$(($(ctr demotions) + $(ctr promotions) + $(ctr segment_items_kept)))
echo "demotions $d, copies into segments $n, segment_copy_syncs $syncs"
check "items were demoted into warm's segments (>= 100: $d)" [ "$d" -ge 100 ]
# the group bound here is 1M, about 10 items of 100 KB; before session 17
# this run made about one sync per 2 demotions
check "syncs are grouped: at most one per 4 copies ($syncs for $n)" [ $((syncs * 4)) -le "$n" ]
check "no copy waits once idle" [ "$(syncing)" = 0 ]
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
check "tiers: files on disk = used_bytes" disk_ok

# everything recorded: a kill -9 loses none of it
sleep 0.3 # fills are recorded after sync_delay (100ms)
before_w=$(tier 1 chunks)
before_h=$(tier 0 chunks)
tc_kill9
tc_start || exit 1
check "kill -9 when idle: every warm item survives ($before_w before, $(tier 1 chunks) after)" \
	[ "$(tier 1 chunks)" = "$before_w" ]
check "kill -9 when idle: every hot item survives ($before_h before, $(tier 0 chunks) after)" \
	[ "$(tier 0 chunks)" = "$before_h" ]
check "after kill -9: every byte equals the source" readers 3
check "tierctl verify finds every item good" "$TC_BIN/tierctl" verify ds

# kill -9 while copies wait for their group's sync
seen=0
for cycle in 1 2 3; do
	TIERCACHE_RECONNECT_TIMEOUT=0 "$TC_TESTS/tcverify" tree ds "$T/cold" $((cycle + 10)) >/dev/null 2>&1 &
	reader=$!
	wait_for 20 '[ "$(syncing)" -gt 0 ] || ! kill -0 $reader 2>/dev/null'
	w=$(syncing)
	tc_kill9
	[ "$w" -gt 0 ] && seen=$((seen + 1))
	echo "cycle $cycle: killed with $w copies waiting for their sync"
	wait $reader 2>/dev/null
	tc_start || exit 1
	check "cycle $cycle: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" $((cycle + 20))
	check "cycle $cycle: the mover goes idle" idle
	check "cycle $cycle: no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
	check "cycle $cycle: tierctl verify finds every item good" "$TC_BIN/tierctl" verify ds
	sleep 0.3
	check "cycle $cycle: tiers: files on disk = used_bytes" disk_ok
done
check "some kill came while copies waited ($seen of 3)" [ "$seen" -gt 0 ]

# a graceful stop while copies wait: they get their sync and records
"$TC_TESTS/tcverify" tree ds "$T/cold" 31 >/dev/null 2>&1 &
reader=$!
wait_for 20 '[ "$(syncing)" -gt 0 ] || ! kill -0 $reader 2>/dev/null'
echo "graceful stop with $(syncing) copies waiting"
check "graceful stop with copies waiting" timeout 60 bash -c "kill -TERM $TC_PID; while kill -0 $TC_PID 2>/dev/null; do sleep 0.1; done"
wait "$TC_PID" 2>/dev/null
TC_PID=
wait $reader 2>/dev/null
check "the stop left no copy unrecorded" bash -c "! grep -E 'op=(move|index_batch|fill_sync)' '$T/daemon.log'"
tc_start || exit 1
check "after the stop: every byte equals the source" readers 41
check "after the stop: tierctl verify finds every item good" "$TC_BIN/tierctl" verify ds
check "after the stop: the mover goes idle" idle
sleep 0.3
check "after the stop: tiers: files on disk = used_bytes" disk_ok
check "graceful stop" tc_stop
finish
