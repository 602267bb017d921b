#!/bin/bash
# Copies into segments are synced in groups (cached/cache/seg_sync.c): a
# stream of small files through a hot tier far smaller than the data
# demotes hundreds of items into warm's segments and reclaims segments.
# Every byte read equals the source; every copy ended (the mover goes
# idle: a copy whose sync never came back would hang there); no more syncs
# than copies; every recorded copy survives kill -9 (its record was written
# after its sync); a kill -9 in the middle of the demotions loses nothing
# committed and serves nothing wrong; reclaim's byte counters add up.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"

mkdir -p "$T/cold"
python3 - "$T/cold" <<'PY'
import os, random, sys
r = random.Random(41)
for i in range(400):
    with open(os.path.join(sys.argv[1], "f%03d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(30, 120) * 1024))
PY
ctr() { tc_json "s['counters']['$1']"; }
tier() { tc_json "s['tiers'][$1]['$2']"; }
idle() { wait_for 30 '[ "$(tc_json "s[\"daemon\"][\"moves_inflight\"] + s[\"daemon\"][\"fills_inflight\"]")" = 0 ]'; }
copies() { echo $(($(ctr demotions) + $(ctr promotions) + $(ctr segment_items_kept))); }

# hot 8M and warm 16M for about 30 MB: most items are demoted once
TC_DAEMON_CONF=$'segment_threshold = 256K\nsegment_size = 1M\nsync_delay = 100ms'
# demote=1 named: lru's default, demote=flat, demotes almost nothing
tc_config 8M 16M 1M "policy = lru demote=1"
tc_start || exit 1
check "stream: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
check "the mover goes idle (every copy's sync came back)" idle
syncs=$(ctr segment_copy_syncs)
n=$(copies)
echo "copies into segments: $n (demotions $(ctr demotions), kept by reclaim $(ctr segment_items_kept)); syncs: $syncs"
check "items were demoted into warm's segments" [ "$(ctr demotions)" -gt 0 ]
check "copies were synced" [ "$syncs" -gt 0 ]
check "no more syncs than copies" [ "$syncs" -le "$n" ]
check "warm holds segment items" [ "$(tier 1 segment_bytes_live)" -gt 0 ]
check "reclaim: dropped bytes counted with dropped items" \
	[ "$(( $(ctr segment_items_dropped) > 0 ))" = "$(( $(ctr segment_reclaim_dropped_bytes) > 0 ))" ]
check "reclaim never copies more than it kept" \
	[ "$(ctr segment_reclaim_copied_bytes)" -le "$(( $(ctr segment_items_kept) * 120 * 1024 ))" ]
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
for i in 0 1; do
	check "tier $i: files on disk = used_bytes" tier_disk_ok "$([ $i = 0 ] && echo hot || echo warm)" $i
done
# fills are recorded after sync_delay, copies right after their sync
sleep 0.5
before=$(tier 1 chunks)
tc_kill9
tc_start || exit 1
check "every warm item survives kill -9 ($before before, $(tier 1 chunks) after)" [ "$(tier 1 chunks)" = "$before" ]
check "after kill -9: every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 2
check "tierctl verify finds every item good" "$TC_BIN/tierctl" verify ds

# kill -9 while copies wait for their syncs
for cycle in 1 2 3; do
	delay=$(python3 -c "import random; print(round(random.uniform(0.1, 0.8), 2))")
	TIERCACHE_RECONNECT_TIMEOUT=0 "$TC_TESTS/tcverify" tree ds "$T/cold" $((cycle + 10)) >/dev/null 2>&1 &
	reader=$!
	sleep "$delay"
	tc_kill9
	wait $reader 2>/dev/null
	tc_start || exit 1
	check "cycle $cycle (kill at ${delay}s): every byte equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" $((cycle + 20))
	check "cycle $cycle: the mover goes idle" idle
	check "cycle $cycle: no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
	sleep 0.3
	for i in 0 1; do
		check "cycle $cycle: tier $i files on disk = used_bytes" tier_disk_ok "$([ $i = 0 ] && echo hot || echo warm)" $i
	done
done
check "graceful stop" tc_stop
finish
