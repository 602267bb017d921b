# Policies in the real daemon: `tierctl policy show` and `set` with
# tunables; an unknown policy or a bad tunable is refused with the daemon's
# message and the old policy stays; the choice survives a restart and
# yields to `--config` or to an edited config file; bytes stay correct
# across switches and for chunks served without being kept; tiers never
# exceed their capacity; and on an epoch workload with the dataset about
# twice hot + warm, `epoch` gets more hits than `lru` in epochs 2 and 3.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_segments.sh"

TCTL=$TC_BIN/tierctl
mkdir -p "$T/cold"
# ~6 MB of samples (8-25 KB each) for the epoch workload, plus files around
# chunk boundaries for the byte checks
python3 "$(dirname "$0")/../../scripts/gen-demo-data" "$T/cold" --files 400 --mean-kb 15 --shards 0 --seed 5 >/dev/null
# not part of a dataset: a dot file, an empty directory
rm "$T/cold/.complete" && rmdir "$T/cold/shards"
tc_gen_tree "$T/cold/tree" 65536
mkdir -p "$T/cold/held"
NHELD=40
for i in $(seq -w 1 $NHELD); do head -c 65536 /dev/urandom >"$T/cold/held/h$i.bin"; done

pol() { # pol EXPR...: Python expressions on `tierctl policy show ds --json` (as p), printed space separated
	"$TCTL" policy show ds --json | python3 -c "import json,sys; p=json.load(sys.stdin)['policies'][0]; print($1)"
}
fails_with() { # fails_with "message part" tierctl-args...: exit 1 and the message on stderr
	local want=$1
	shift
	"$TCTL" "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	[ $rc -eq 1 ] && grep -qF -- "$want" "$T/err" || {
		echo "  rc=$rc stderr: $(cat "$T/err")"
		return 1
	}
}
idle() {
	for _ in $(seq 1 100); do
		[ "$(tc_json "s['daemon']['moves_inflight'] + s['daemon']['fills_inflight']")" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}
sample() {
	while [ -f "$T/sampling" ]; do
		"$TCTL" status --json 2>/dev/null >>"$T/samples.jsonl" && echo "---" >>"$T/samples.jsonl"
		sleep 0.02
	done
}
never_over_capacity() {
	python3 - "$T/samples.jsonl" <<'PY'
import json, sys
n = bad = 0
for doc in open(sys.argv[1]).read().split("\n---\n"):
    if not doc.strip() or doc.strip() == "---":
        continue
    s = json.loads(doc); n += 1
    for t in s["tiers"]:
        if t["used_bytes"] + t["reserved_bytes"] > t["capacity_bytes"]:
            bad += 1
print("  samples=%d over_capacity=%d" % (n, bad))
sys.exit(1 if bad or n == 0 else 0)
PY
}
# chunk files and segment files (small chunks are segment items when segment_threshold is set)

tc_config 1M 2M 64K
tc_start || exit 1

# ---- show
"$TCTL" policy show ds >"$T/show.txt"
check "show: exit 0" [ $? -eq 0 ]
check "show: the config file's lru" grep -q "^ds: lru (from the config file)" "$T/show.txt"
"$TCTL" policy show >"$T/show_all.txt"
check "show without a dataset lists the policies and their tunables" \
	grep -q "dead_factor first_epoch quantile rate" "$T/show_all.txt"
check "show --json: lru from config" [ "$(pol "p['policy'], p['source']")" = "lru config" ]
check "show of an unknown dataset fails with the daemon's message" \
	fails_with 'no dataset named "nope"' policy show nope

# ---- set with tunables
"$TCTL" policy set ds epoch dead_factor=3 quantile=0.9 demote=0 >"$T/set.txt"
check "set epoch with tunables: exit 0" [ $? -eq 0 ]
check "set prints the new state" grep -q "^ds: epoch (set with tierctl" "$T/set.txt"
check "policy tunables applied" [ "$(pol "p['tunables']")" = "dead_factor=3 quantile=0.9" ]
check "placement tunable applied" [ "$(pol "p['placement_tunables'], p['demote']")" = "demote=0 False" ]
check "the running instances have them" \
	pol "'dead_factor=3 ' in p['hot_state'] and 'quantile=0.9 ' in p['warm_state'] or sys.exit(1)" >/dev/null
check "status shows the policy and its source" \
	[ "$(tc_json "s['datasets'][0]['policy'], s['datasets'][0]['policy_source']")" = "epoch tierctl" ]

# ---- bad choices are refused, the old policy stays
check "unknown policy refused with the list of policies" \
	fails_with 'unknown policy "lfu" (policies: lru arc epoch clairvoyant)' policy set ds lfu
check "bad value refused with the range" \
	fails_with 'epoch: dead_factor: "0.5" is not a number in [1, 1e+06]' policy set ds epoch dead_factor=0.5
check "unknown tunable refused with the valid ones" \
	fails_with 'epoch: unknown tunable "bogus" (tunables: dead_factor first_epoch quantile rate size_ratio)' \
	policy set ds epoch bogus=1
check "bad placement value refused" fails_with 'placement: demote: "maybe" is not 0, 1, reread or flat' \
	policy set ds arc demote=maybe
check "unknown dataset refused" fails_with 'no dataset named "nope"' policy set nope lru
"$TCTL" policy set ds epoch notkv >/dev/null 2>&1
check "a word that is not key=value is a usage error (exit 2)" [ $? -eq 2 ]
check "after all that: still epoch with its tunables" \
	[ "$(pol "p['policy'], p['tunables'], p['placement_tunables']")" = "epoch dead_factor=3 quantile=0.9 demote=0" ]

# ---- switching while clients read: every byte stays right
# (lru with demote=1, arc's placement: lru's default, demote=flat, holds
# hot to its high watermark, so switching from it to arc then gives up
# what hot holds past arc's budget, which is not what this counts)
"$TCTL" policy set ds lru demote=1 >/dev/null
check "warm-up pass bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
check "settled" idle
before=$(pol "p['hot_entries'] + p['warm_entries']")
"$TCTL" policy set ds arc >/dev/null
check "a switch keeps every resident chunk" [ "$(pol "p['hot_entries'] + p['warm_entries']")" = "$before" ]
touch "$T/sampling"
sample &
sampler=$!
"$TC_TESTS/tcverify" tree ds "$T/cold" 2 >"$T/verify.out" 2>&1 &
reader=$!
for p in clairvoyant epoch lru arc clairvoyant epoch; do
	"$TCTL" policy set ds $p >/dev/null || fail "switch to $p"
	sleep 0.1
done
wait $reader
check "bytes match while the policy was switched 6 times" [ $? -eq 0 ]
check "clairvoyant with no plans serves correctly" \
	bash -c "'$TCTL' policy set ds clairvoyant >/dev/null && '$TC_TESTS/tcverify' tree ds '$T/cold' 3 >/dev/null"
check "clairvoyant without plans keeps data (like its LRU fallback)" \
	[ "$(pol "p['hot_entries'] + p['warm_entries']")" -gt 0 ]

# ---- chunks nobody admits are served, not kept
"$TCTL" policy set ds epoch >/dev/null
check "full epoch cache: bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 4
check "full epoch cache: bytes match again" "$TC_TESTS/tcverify" tree ds "$T/cold" 5
rm -f "$T/sampling"
wait $sampler
check "no tier ever over capacity (incl. reserved and held bytes)" never_over_capacity
check "chunks were served without being kept" [ "$(tc_json "s['counters']['served_unkept']")" -gt 0 ]
check "placement refused them" [ "$(pol "p['not_admitted']")" -gt 0 ]
check "settled after the reads" idle
sleep 0.3
check "nothing held once the readers closed" [ "$(tc_json "sum(t['held_unlinked_bytes'] for t in s['tiers'])")" = 0 ]
check "hot files on disk match used_bytes" tier_disk_ok hot 0
check "warm files on disk match used_bytes" tier_disk_ok warm 1
check "no unkept file left behind" [ "$(find "$T/hot/tmp" "$T/warm/tmp" -type f | wc -l)" = 0 ]

# ---- more unkept chunks held than the tiers' spare band: they go to memory
# The band (high mark - low mark, the policies' budget) is 9 chunks of 64K
# over both tiers here. Not every held chunk is unkept: a miss is kept when
# its tier's policy has free room (with segments, a reclaim that drops live
# items leaves such room: up to 16 of 24 were kept in a run), so the
# readers hold 4 bands' worth, and every unkept byte they hold must be in
# the band or in memory.
unkept0=$(tc_json "s['counters']['served_unkept']")
holders=()
for i in $(seq -w 1 $NHELD); do
	"$TC_TESTS/tcverify" hold ds/held/h$i.bin 60 >"$T/hold$i.out" 2>&1 &
	holders+=($!)
done
for _ in $(seq 1 300); do [ "$(cat "$T"/hold*.out | grep -c holding)" = $NHELD ] && break; sleep 0.05; done
check "$NHELD readers hold their chunks" [ "$(cat "$T"/hold*.out | grep -c holding)" = $NHELD ]
unkept=$(($(tc_json "s['counters']['served_unkept']") - unkept0))
ram=$(tc_json "s['daemon']['unkept_ram_bytes']")
inband=$(tc_json "sum(t['held_unlinked_bytes'] for t in s['tiers'])")
band=$(tc_json "sum((t['high_water_bytes'] - t['low_water_bytes']) // 65536 for t in s['tiers'])")
echo "  held: $unkept served unkept, the band has room for $band; $ram bytes in memory, $inband in the tiers' band"
check "more unkept chunks held than the band has room for ($unkept > $band)" [ "$unkept" -gt "$band" ]
check "past the band, unkept chunks are held in memory" [ "$ram" -gt 0 ]
check "... every unkept chunk held is in the band or in memory" [ $((ram + inband)) -ge $((unkept * 65536)) ]
# live bytes: dead bytes of segments (small chunks are segment items by
# default) stay in used_bytes until their segment is reclaimed, which the
# background reclaim does, not the placement of unkept chunks
tiers_under_high() {
	tc_json "all(t['used_bytes'] - t['segment_bytes_dead'] + t['reserved_bytes'] <= t['high_water_bytes'] for t in s['tiers']) or sys.exit(1)" >/dev/null ||
		{ echo "  tiers (name, used, dead, reserved, high, held): $(tc_json "[(t['name'], t['used_bytes'], t['segment_bytes_dead'], t['reserved_bytes'], t['high_water_bytes'], t['held_unlinked_bytes']) for t in s['tiers']]")"; return 1; }
}
check "... and no tier is over its high watermark" tiers_under_high
check "a held file still reads right" "$TC_TESTS/tcverify" file ds/held/h01.bin "$T/cold/held/h01.bin"
kill "${holders[@]}" 2>/dev/null
wait "${holders[@]}" 2>/dev/null
for _ in $(seq 1 100); do [ "$(tc_json "s['daemon']['unkept_ram_bytes']")" = 0 ] && break; sleep 0.05; done
check "memory released with the last descriptor" [ "$(tc_json "s['daemon']['unkept_ram_bytes']")" = 0 ]

# ---- persistence
"$TCTL" policy set ds epoch dead_factor=4 promote=0 >/dev/null
tc_stop
tc_start || exit 1
check "restart: the tierctl choice is back" \
	[ "$(pol "p['policy'], p['tunables'], p['placement_tunables'], p['source']")" = "epoch dead_factor=4 promote=0 tierctl" ]
check "restart: logged where it came from" grep -q 'op=policy_restore policy="epoch dead_factor=4 promote=0" source=tierctl' "$T/daemon.log"
check "restart: bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 6
"$TCTL" policy set ds --config >"$T/set.txt"
check "--config: back to the file's lru" [ "$(pol "p['policy'], p['source']")" = "lru config" ]
tc_stop
tc_start || exit 1
check "--config survives a restart" [ "$(pol "p['policy'], p['source']")" = "lru config" ]
"$TCTL" policy set ds epoch >/dev/null
tc_stop
sed -i 's/^chunk_size = 64K$/chunk_size = 64K\npolicy = arc/' "$T/tc.conf"
tc_start || exit 1
check "an edited config file wins over an older tierctl choice" \
	[ "$(pol "p['policy'], p['source']")" = "arc config" ]
check "... and says so in the log" grep -q "reason=\"the config file's policy changed" "$T/daemon.log"
"$TCTL" policy set ds epoch >/dev/null
tc_stop
tc_start || exit 1
check "a choice made after the edit persists again" [ "$(pol "p['policy'], p['source']")" = "epoch tierctl" ]
tc_stop

# ---- the epoch workload: epoch beats lru on hits in epochs 2 and 3
sed -i '/^policy = arc$/d' "$T/tc.conf"
for p in lru epoch; do
	rm -rf "$T/state" "$T/hot" "$T/warm"
	tc_start || exit 1
	"$TCTL" policy set ds $p >/dev/null
	# one run per epoch, each with its own seed: epoch_reader's --epochs
	# gives two consecutive epochs the same order (see docs/policies.md)
	: >"$T/epochs.$p.json"
	for s in 11 12 13; do
		"$TC_BIN/epoch_reader" --epochs 1 --threads 4 --seed $s --json ds/train >>"$T/epochs.$p.json" ||
			fail "$p workload, seed $s: epoch_reader failed"
	done
	tc_stop
done
python3 - "$T/epochs.lru.json" "$T/epochs.epoch.json" <<'PY' >"$T/compare.txt"
import json, sys
# one JSON array of one epoch per line
lru, ep = ([json.loads(l)[0] for l in open(f) if l.strip()] for f in sys.argv[1:3])
for e in range(3):
    l = lru[e]["hits_hot"] + lru[e]["hits_warm"]
    h = ep[e]["hits_hot"] + ep[e]["hits_warm"]
    print("epoch %d: lru %d hits, epoch %d hits (of %d reads)" % (e + 1, l, h, h + ep[e]["misses"]))
    if e > 0 and not h > l:
        print("NOT BETTER")
PY
sed 's/^/  /' "$T/compare.txt"
epoch_wins() { ! grep -q "NOT BETTER" "$T/compare.txt"; }
check "epoch beats lru on hits in epochs 2 and 3" epoch_wins
finish
