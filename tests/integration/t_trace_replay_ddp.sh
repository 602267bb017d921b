#!/bin/bash
# Replay agreement on a DDP plan workload (issue 18): a job of world_size 4
# (tcplan ddp: one process per rank, its connection tagged JOB:RANK, rank 0
# registering each epoch's whole new shuffle with TIERCACHE_PLAN_JOB) reads
# 240 files of 20-60 KB (one chunk each) for 2 epochs through tiers far
# smaller than the data, under a trace; each rank compares every byte with
# the source. The daemon prefetches the plan under every policy, so the
# trace is replayed with the prefetcher modelled (tiercache-sim
# --prefetch-window, the daemon's window: prefetch_max_bytes is set below
# the other bounds so it is exactly known). Each rank "computes" 4 ms per
# file, so the prefetcher, not the cold store's speed, is what is compared.
# daemon hits / simulator hits >= 0.9 for every policy in
# TRACE_REPLAY_DDP_ASSERT (default clairvoyant lru epoch); the others are
# printed. And the prefetcher does not fight the policy: at most 5 % of
# the chunks it loads are given up before their read (epoch gives up its
# newest entry first; before the ahead list, 146 of 407 were).
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
SIM=$TC_BIN/tiercache-sim
POLICIES=${TRACE_REPLAY_DDP_POLICIES:-"clairvoyant lru epoch"}
ASSERT=${TRACE_REPLAY_DDP_ASSERT:-"clairvoyant lru epoch"}
W=4
NF=240
WINDOW=262144
mkdir -p "$T/cold"
python3 - "$T/cold" "$NF" <<'PY'
import os, random, sys
r = random.Random(18)
for i in range(int(sys.argv[2])):
    with open(os.path.join(sys.argv[1], "f%03d.bin" % i), "wb") as f:
        f.write(r.randbytes(r.randint(20000, 60000)))
PY
for e in 1 2; do
	python3 - "$NF" "$e" >"$T/order$e" <<'PY'
import random, sys
names = ["f%03d.bin" % i for i in range(int(sys.argv[1]))]
random.Random(200 + int(sys.argv[2])).shuffle(names)
print("\n".join(names))
PY
done

# epoch POLICY E: the W ranks read epoch E; 0 if every rank read its share
epoch() {
	local pol=$1 e=$2 r pids=() go=$T/go-$1-$2
	for r in $(seq 0 $((W - 1))); do
		local reg=()
		[ "$r" = 0 ] && reg=(register)
		"$TC_TESTS/tcplan" ddp ds "$T/cold" 18 "$r" "$W" "$e" "$T/order$e" "$go" 4 "${reg[@]}" \
			>"$T/rank$r.out" 2>&1 &
		pids+=($!)
	done
	for r in $(seq 0 $((W - 1))); do
		wait_for 30 "grep -q '^ready\\|FAIL\\|error' '$T/rank$r.out'"
	done
	touch "$go"
	local bad=0
	for r in $(seq 0 $((W - 1))); do
		wait "${pids[$r]}" || bad=1
		grep -q "^ok read $((NF / W))\$" "$T/rank$r.out" || { bad=1; cat "$T/rank$r.out"; }
	done
	return $bad
}

# run POLICY: the job on a fresh daemon under a trace; writes
# "DAEMON_HITS SIM_HITS ROWS ACCESSES PREFETCHED" to $T/res
run() {
	local pol=$1 tr=$T/trace-$1.csv
	: >"$T/res"
	# segments on (the default: on these 2M/4M tiers a segment is 128K/256K,
	# two to six items). Until session 27 this test kept a file per chunk:
	# with segments lru gave up 19-72 of 470 prefetched chunks before their
	# read. The ranks' open-ahead handles held up to 3.9M of the 6M of
	# tiers; warm's backstop counted the held bytes and dropped its
	# policies' chunks down to 99K for room that brought back none of them,
	# chunks hot had just demoted unread among them (mover.c, tier_load);
	# with that fixed, demotions into warm were dropped while its victim
	# was a held item (mover_make_room), and 256K of demotions waiting for
	# their segment's sync took hot's room for the prefetcher
	# (SYNC_GROUP_BYTES_MIN)
	tc_start_traced "$pol" "$tr" "prefetch_max_bytes = $WINDOW" || return 1
	epoch "$pol" 1 || return 1
	epoch "$pol" 2 || return 1
	"$TC" trace stop >/dev/null || return 1
	local hot warm
	hot=$(tc_json '[t for t in s["tiers"] if t["name"] == "hot"][0]["low_water_bytes"]')
	warm=$(tc_json '[t for t in s["tiers"] if t["name"] == "warm"][0]["low_water_bytes"]')
	tc_json 's["prefetch"]' >"$T/pf-$pol"
	tc_json 'sum(t["segment_bytes_live"] for t in s["tiers"])' >"$T/seg-$pol"
	tc_stop
	"$SIM" --trace "$tr" --hot "$hot" --warm "$warm" --policy "$pol" --no-opt \
		--prefetch-window "$WINDOW" --json >"$T/sim-$pol.json" 2>"$T/sim-$pol.err" ||
		{ cat "$T/sim-$pol.err"; return 1; }
	python3 - "$tr" "$T/sim-$pol.json" >"$T/res" <<'PY'
import csv, json, sys
# accesses only: the prefetch's load rows (load, landed, ...) are not reads
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["result"] in ("hot", "warm", "miss", "unkept")]
hits = sum(r["result"] in ("hot", "warm") for r in rows)
sim = json.load(open(sys.argv[2]))["results"][0]
print(hits, sim["hits"], len(rows), sim["accesses"], sim["prefetched"])
PY
}

for pol in $POLICIES; do
	check "$pol: $W ranks read 2 epochs under a trace, every byte equal to the source" run "$pol"
	read -r dh sh rows acc pf <"$T/res" || true
	check "$pol: the trace has a row for every read, $((2 * NF)) (${rows:-none}), and the simulator replayed them all (${acc:-none})" \
		test "${rows:-0}" = $((2 * NF)) -a "${rows:-0}" = "${acc:-x}"
	check "$pol: the ranks' reads are tagged in the trace (rank column 0..$((W - 1)))" \
		python3 -c "import csv,sys; r={x['rank'] for x in csv.DictReader(open(sys.argv[1])) if x['result'] in ('hot', 'warm', 'miss', 'unkept')}; sys.exit(0 if r == {str(i) for i in range($W)} else 1)" "$T/trace-$pol.csv"
	seg=$(cat "$T/seg-$pol" 2>/dev/null)
	check "$pol: the chunks are kept as segment items (${seg:-no} bytes live in segments at the end)" \
		[ "${seg:-0}" -gt 0 ]
	check "$pol: the simulator modelled the prefetcher (${pf:-0} chunks loaded ahead)" [ "${pf:-0}" -gt 0 ]
	ratio=$(python3 -c "import sys; d, s = int(sys.argv[1]), int(sys.argv[2]); print('%.3f' % (d / s if s else 0))" "${dh:-0}" "${sh:-0}")
	echo "replay-ddp: policy=$pol daemon_hits=${dh:-?} sim_hits=${sh:-?} accesses=${rows:-?} daemon/sim=$ratio prefetch=$(tr -d '\n' <"$T/pf-$pol" 2>/dev/null | head -c 300)"
	case " $ASSERT " in
	*" $pol "*)
		check "$pol: daemon hits / simulator hits >= 0.9 ($ratio)" \
			python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 else 1)" "$ratio" ;;
	*) echo "note: $pol: not asserted (TRACE_REPLAY_DDP_ASSERT)" ;;
	esac
	read -r pfi pfu < <(python3 -c "import ast,sys; p=ast.literal_eval(open(sys.argv[1]).read()); print(p['issued'], p['evicted_unused'])" "$T/pf-$pol" 2>/dev/null) || true
	check "$pol: prefetched chunks given up before their read <= 5 % of those loaded (${pfu:-?} of ${pfi:-?})" \
		python3 -c "import sys; i, u = int(sys.argv[1]), int(sys.argv[2]); sys.exit(0 if i > 0 and u * 20 <= i else 1)" "${pfi:-0}" "${pfu:-x}"
done
finish
