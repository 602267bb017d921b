# Tier pressure: a dataset larger than hot + warm. Usage (published +
# reserved, counting unlinked files clients still hold) never exceeds a
# tier's capacity; hot demotes to warm, warm evicts, warm hits promote; bytes
# stay correct throughout; files on disk match the accounting.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"

sample() { # record every status sample; fail if any tier is over capacity
	while [ -f "$T/sampling" ]; do
		"$TC_BIN/tierctl" status --json 2>/dev/null >>"$T/samples.jsonl" && echo "---" >>"$T/samples.jsonl"
		sleep 0.02
	done
}
over_capacity() {
	python3 - "$T/samples.jsonl" <<'PY'
import json, sys
n = bad = held = 0
for doc in open(sys.argv[1]).read().split("\n---\n"):
    if not doc.strip() or doc.strip() == "---":
        continue
    s = json.loads(doc); n += 1
    for t in s["tiers"]:
        if t["used_bytes"] + t["reserved_bytes"] > t["capacity_bytes"]:
            bad += 1
        held = max(held, t["held_unlinked_bytes"])
print("samples=%d over_capacity=%d max_held_unlinked=%d" % (n, bad, held))
open(sys.argv[1] + ".held", "w").write(str(held))
sys.exit(1 if bad or n == 0 else 0)
PY
}
# chunk files and segment files (small chunks are segment items when segment_threshold is set)

mkdir -p "$T/cold"
for i in $(seq -w 1 40); do head -c 204800 /dev/urandom >"$T/cold/f$i.bin"; done

idle() { # wait until no move or fill is in flight
	for _ in $(seq 1 100); do
		[ "$(tc_json "s['daemon']['moves_inflight'] + s['daemon']['fills_inflight']")" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# hot + warm; demote=1 named (lru's default is demote=flat, which copies
# down only what one cache of both would keep: t_demote_flat)
tc_config 2M 4M 256K "policy = lru demote=1"
tc_start || exit 1
# 10 files (2 MB) overflow hot's high watermark: the oldest go to warm
for i in $(seq -w 1 10); do "$TC_TESTS/tcverify" file ds/f$i.bin "$T/cold/f$i.bin" >/dev/null; done
check "demotions settle" idle
check "the first file was demoted to warm" [ "$(tc_json "s['counters']['demotions']")" -gt 0 ]
check "re-reading it is a warm hit" "$TC_TESTS/tcverify" file ds/f01.bin "$T/cold/f01.bin"
check "warm hit counted" [ "$(tc_json "s['counters']['hits_warm']")" -ge 1 ]
check "promotion settles" idle
check "the warm hit promoted the chunk" [ "$(tc_json "s['counters']['promotions']")" -ge 1 ]
"$TC_TESTS/tcverify" hold ds/f01.bin 4 >"$T/hold.out" &
hold_pid=$!
sleep 0.5
touch "$T/sampling"
sample &
sampler=$!
check "pass 1 bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
check "pass 2 bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 2
wait $hold_pid
check "pass 3 bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 3
rm -f "$T/sampling"
wait $sampler
check "no tier ever over capacity (incl. reserved and held-open bytes)" over_capacity
check "a held chunk was unlinked yet still counted" [ "$(cat "$T/samples.jsonl.held")" -gt 0 ]
check "hot demoted to warm" [ "$(tc_json "s['counters']['demotions']")" -gt 0 ]
check "warm evicted" [ "$(tc_json "s['counters']['evictions']")" -gt 0 ]
sleep 0.5
check "nothing held now" [ "$(tc_json "sum(t['held_unlinked_bytes'] for t in s['tiers'])")" = 0 ]
check "hot files on disk match used_bytes" tier_disk_ok hot 0
check "warm files on disk match used_bytes" tier_disk_ok warm 1
check "no checksum errors" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]
tc_stop

# hot only: eviction straight from hot
rm -rf "$T/state" "$T/hot" "$T/warm" "$T/samples.jsonl"
tc_config 2M none 256K
tc_start || exit 1
touch "$T/sampling"
sample &
sampler=$!
check "hot-only: bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 4
rm -f "$T/sampling"
wait $sampler
check "hot-only: never over capacity" over_capacity
check "hot-only: evicted" [ "$(tc_json "s['counters']['evictions']")" -gt 0 ]
check "hot-only: no demotions without a warm tier" [ "$(tc_json "s['counters']['demotions']")" = 0 ]
check "hot-only: disk matches accounting" tier_disk_ok hot 0
finish
