#!/bin/bash
# Dead bytes of segments do not push the policies' data out: with segments
# on and arc (whose frequent items keep segments partly live, so dead bytes
# fill the room between warm's budget and its capacity), hot's demotions
# into a warm tier full of dead bytes give up only what warm's policy would
# give up to take them, never more. Before the fix, making room for one
# demotion evicted warm's victims one after another (an item's bytes stay
# until its segment goes, so no eviction made room) until a chunk file came
# up: warm's policy then held half its budget and arc lost about a quarter
# of its hits in bench/epochs.sh (docs/simulator.md "Replay agreement").
# Where dead items' blocks are punched (the default on this file system),
# the same bound holds: a fill may give up only the policy's victims, and
# a fill of a 4M chunk file does not give up warm's small items one after
# another (with punching they make room, but 64 at most per fill: warm was
# emptied to nothing, repeatedly, before that was refused).
# Every byte read is compared with the source.
. "$(dirname "$0")/lib.sh"

python3 - "$T/cold" <<'PY'
import os, random, sys
r = random.Random(18)
d = os.path.join(sys.argv[1], "s")
os.makedirs(d)
for i in range(600):
    with open(os.path.join(d, "f%03d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(20, 80) * 1024))
# a few chunk files (files over the threshold) among them, as the shards
# of bench/epochs.sh: evicting one of those makes room at once
for i in range(4):
    with open(os.path.join(d, "big%d.bin" % i), "wb") as f:
        f.write(os.urandom(8 << 20))
PY
ctr() { tc_json "s['counters']['$1']"; }
idle() { wait_for 30 '[ "$(tc_json "s[\"daemon\"][\"moves_inflight\"] + s[\"daemon\"][\"fills_inflight\"]")" = 0 ]'; }
warm() { tc_json "s['tiers'][1]['$1']"; }

# about 34 MB of data through hot 4M + warm 12M (low marks 70 %: the
# policies' budgets are 2.8M and 8.4M)
TC_DAEMON_CONF=$'segment_threshold = 512K'
tc_config 4M 12M 4M
tc_start || exit 1
check "policy arc" "$TC_BIN/tierctl" policy set ds arc
for e in 1 2 3 4 5 6; do
	# 8 readers, each its own order (bench/epochs.sh has 4 over a larger set)
	rpids=()
	for r in 1 2 3 4 5 6 7 8; do
		"$TC_TESTS/tcverify" tree ds/s "$T/cold/s" $((e * 7 + r)) >"$T/r$r.out" 2>&1 &
		rpids+=($!)
	done
	# what warm holds for its policy (chunk files, live items, chunks
	# arriving: reserved), sampled while the readers run
	(
		while kill -0 "${rpids[@]}" 2>/dev/null; do
			"$TC_BIN/tierctl" status --json >>"$T/status-$e" 2>/dev/null && echo "#" >>"$T/status-$e"
		done
	) &
	spid=$!
	for r in 1 2 3 4 5 6 7 8; do
		check "epoch $e reader $r: every byte equals the source" wait "${rpids[$((r - 1))]}"
	done
	wait "$spid"
	idle
	echo "epoch $e: at rest: warm used $(warm used_bytes), dead $(warm segment_bytes_dead), low mark $(warm low_water_bytes)"
done
# the mean over every sample of epochs 2-6 (warm full from epoch 1): one
# chunk file given up for a fill dips it by a chunk for a moment, legitimately
read -r mean lo n < <(python3 -c '
import json, sys
v = []
for f in sys.argv[1:]:
    for doc in open(f).read().split("#\n"):
        if doc.strip():
            w = json.loads(doc)["tiers"][1]
            v.append(w["used_bytes"] + w["reserved_bytes"] - w["segment_bytes_dead"])
print(sum(v) // max(len(v), 1), min(v or [0]), len(v))' "$T"/status-[2-6])
low=$(warm low_water_bytes)
echo "warm's policy bytes while epochs 2-6 ran: mean $mean, least $lo ($n samples); its budget $low"
check "samples were taken" [ "$n" -ge 10 ]
check "warm dropped items (its tier was full of dead bytes)" [ "$(ctr evictions)" -gt 0 ]
check "warm's policy held at least 90 % of its budget on average while epochs 2-6 ran" \
	[ "$((mean * 10))" -ge "$((low * 9))" ]
# giving up a 4M chunk file for a fill takes it down to about 54 % for a
# moment; the old loop took it far lower
check "warm's policy never held less than half its budget while epochs 2-6 ran" \
	[ "$((lo * 2))" -ge "$low" ]
check "never over capacity" [ "$(tc_json "all(t['used_bytes'] + t['reserved_bytes'] <= t['capacity_bytes'] for t in s['tiers'])")" = True ]
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
check "graceful stop" tc_stop
finish
