# The daemon keeps what its policy would keep (issue #18, the two cases of
# its text):
# (a) lru, hot 16M + warm 64M, ~100 files (30 MiB, more than hot) read by 4
#     readers at once: afterwards every chunk is resident (hot or warm),
#     `tierctl warm` of the set exits 0 and reads nothing from cold again,
#     and no chunk was served unkept (warm always had room);
# (b) hot 16M + warm 32M holding ~30 MiB of unpinned data: `tierctl pin
#     ds/shards` (25 MiB, fits the tiers' pin room) evicts unpinned data to
#     make room and exits 0; the pinned bytes equal the source.
. "$(dirname "$0")/lib.sh"

KiB=1024
MiB=1048576
tierctl() { "$TC_BIN/tierctl" "$@"; }
ctr() { tc_json "s['counters']['$1']"; }
ds_field() { tc_json "s['datasets'][0]['$1']"; }

# --- (a) concurrent readers, hot full, warm with room ---
mkdir -p "$T/cold/set/r0" "$T/cold/set/r1" "$T/cold/set/r2" "$T/cold/set/r3"
for i in $(seq 1 102); do
	# 200-400 KiB: one or two 256K chunks each
	head -c $((200 * KiB + (i * 7919) % (200 * KiB))) /dev/urandom >"$T/cold/set/r$((i % 4))/f$i.bin"
done
SET=$(find "$T/cold/set" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
check "the set ($SET bytes) is more than hot (16 MiB)" [ "$SET" -gt $((16 * MiB)) ]

tc_config 16M 64M 256K "policy = lru"
tc_start || exit 1
settled() { [ "$(tc_json "sum(t['reserved_bytes'] for t in s['tiers'])")" = 0 ]; }
resident() { tc_json "s['datasets'][0]['resident_hot_bytes'] + s['datasets'][0]['resident_warm_bytes']"; }
# a1: a plan of the 102 files in a shuffled order, read in that order: the
# prefetcher runs ahead on hot while the reads fill behind it
(cd "$T/cold" && find set -type f | sort) |
	python3 -c "import random,sys; l=sys.stdin.read().split(); random.Random(5).shuffle(l); print('\n'.join(l))" >"$T/order"
check "plan of 102 files registered" bash -c "'$TC_TESTS/tcplan' set ds 1 0 1 0 <'$T/order' | grep -q 'registered 102'"
check "reading the plan: every byte equals the source" \
	bash -c "'$TC_TESTS/tcplan' read ds '$T/cold' <'$T/order' >'$T/plan_read.out' 2>&1"
unkept=$(ctr served_unkept)
check "no chunk served unkept while warm had room (served_unkept=$unkept)" [ "$unkept" = 0 ]
check "... and the room counter agrees" [ "$(ctr served_unkept_with_room)" = 0 ]
wait_for 30 settled
check "every byte of the set is resident on hot or warm ($(resident) of $SET)" [ "$(resident)" = "$SET" ]
# a2: the same set again from nothing, 4 readers at once without a plan
"$TC_TESTS/tcplan" cancel ds 1 0 >/dev/null 2>&1
tierctl evict ds >/dev/null
wait_for 30 '[ "$(resident)" = 0 ]'
pids=
for r in 0 1 2 3; do
	"$TC_TESTS/tcverify" tree "ds/set/r$r" "$T/cold/set/r$r" $((r + 1)) >"$T/read$r.out" 2>&1 &
	pids="$pids $!"
done
bad=0
for p in $pids; do wait "$p" || bad=$((bad + 1)); done
check "4 concurrent readers: every byte equals the source ($bad failed)" [ "$bad" = 0 ]
check "no chunk served unkept (served_unkept=$(ctr served_unkept))" [ "$(ctr served_unkept)" = 0 ]
wait_for 30 settled
check "every byte of the set is resident on hot or warm ($(resident) of $SET)" [ "$(resident)" = "$SET" ]
cold=$(ctr cold_reads)
tierctl warm ds/set >"$T/w1.out" 2>"$T/w1.err"
check "tierctl warm of the set exits 0" [ $? -eq 0 ]
check "... says nothing is NOT resident" bash -c "! grep -q 'NOT resident' '$T/w1.err'"
check "... and read nothing from cold (cold_reads $cold -> $(ctr cold_reads))" [ "$(ctr cold_reads)" = "$cold" ]
check "bytes after the warm equal the source" "$TC_TESTS/tcverify" tree ds/set "$T/cold/set" 9 >/dev/null
tc_stop

# --- (b) pin evicts unpinned data to make room ---
rm -rf "$T/state" "$T/hot" "$T/warm" "$T/cold"
mkdir -p "$T/cold/other" "$T/cold/shards"
for i in $(seq 1 30); do head -c $MiB /dev/urandom >"$T/cold/other/o$i.bin"; done
for i in 1 2 3 4 5; do head -c $((5 * MiB)) /dev/urandom >"$T/cold/shards/s$i.bin"; done
tc_config 16M 32M 1M "policy = lru"
tc_start || exit 1
check "30 MiB of unpinned data read" "$TC_TESTS/tcverify" tree ds/other "$T/cold/other" 3 >/dev/null
wait_for 30 settled
held=$(tc_json "sum(t['used_bytes'] for t in s['tiers'])")
check "the tiers hold the unpinned data ($held bytes)" [ "$held" -ge $((24 * MiB)) ]
tierctl pin ds/shards >"$T/p1.out" 2>"$T/p1.err"
rc=$?
check "tierctl pin ds/shards (25 MiB) exits 0" [ $rc -eq 0 ]
check "... without a word of no room" bash -c "! grep -qi 'no room\|could not be kept' '$T/p1.err' '$T/p1.out'"
[ $rc -eq 0 ] || cat "$T/p1.err"
check "the pinned bytes are 25 MiB" [ "$(ds_field pinned_bytes)" = $((25 * MiB)) ]
check "unpinned data made room (evictions > 0)" [ "$(ctr evictions)" -gt 0 ]
cold=$(ctr cold_reads)
check "pinned bytes equal the source" "$TC_TESTS/tcverify" tree ds/shards "$T/cold/shards" 5 >/dev/null
check "... read from the tiers, not from cold" [ "$(ctr cold_reads)" = "$cold" ]
check "unpinned data still readable, bytes equal" "$TC_TESTS/tcverify" tree ds/other "$T/cold/other" 7 >/dev/null
finish
