# kill -9 at any moment: during fills, during demotions. A restarted daemon
# reconciles index and tier directories and serves only correct bytes; the
# files on disk (chunk files and segment files: 256K chunks are segment
# items when segment_threshold is set) match its accounting.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"
mkdir -p "$T/cold/a" "$T/cold/b"
for i in $(seq 1 30); do head -c $((100000 + i * 7919)) /dev/urandom >"$T/cold/a/f$i.bin"; done
for i in 1 2 3; do head -c $((3 * 1048576 + i)) /dev/urandom >"$T/cold/b/shard$i.bin"; done
# hot smaller than the data so demotions run while reading
tc_config 4M 64M 256K
for delay in 0.05 0.2 0.4 0.7; do
	tc_start || exit 1
	# this reader loses its daemon mid-read: let it fail at once, not retry
	TIERCACHE_RECONNECT_TIMEOUT=0 "$TC_TESTS/tcverify" tree ds "$T/cold" 7 >/dev/null 2>&1 &
	reader=$!
	sleep "$delay"
	tc_kill9
	wait $reader 2>/dev/null
	tc_start || exit 1
	check "after kill -9 at ${delay}s: every byte matches" "$TC_TESTS/tcverify" tree ds "$T/cold" 8
	sleep 0.3
	check "after kill -9 at ${delay}s: hot files on disk = used_bytes" tier_disk_ok hot 0
	check "after kill -9 at ${delay}s: warm files on disk = used_bytes" tier_disk_ok warm 1
	check "no temp files left after restart" [ -z "$(ls "$T/hot/tmp" "$T/warm/tmp" 2>/dev/null | grep -v ':$' | grep -v '^$' | grep tmp)" ]
	tc_kill9
done
# a corrupt tier file is caught by its checksum when it moves, never served
# after the move: zero one hot segment (or chunk file), then force
# demotion by reading more
tc_start || exit 1
f=$(find "$T/hot/segments" "$T/hot/chunks" -type f 2>/dev/null | head -1)
check "a hot tier file to corrupt" [ -n "$f" ]
if [ -n "$f" ]; then
	sz=$(stat -c %s "$f")
	head -c "$sz" /dev/zero | dd of="$f" conv=notrunc status=none
	bad=0
	for i in $(seq 1 30); do "$TC_TESTS/tcverify" file ds/a/f$i.bin "$T/cold/a/f$i.bin" >/dev/null || bad=$((bad + 1)); done
	check "after the corruption every file reads the source's bytes ($bad failed)" [ "$bad" = 0 ]
	check "... and the whole tree too" "$TC_TESTS/tcverify" tree ds "$T/cold" 9
fi
finish
