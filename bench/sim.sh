#!/usr/bin/env bash
# bench/sim.sh BUILD_DIR: tiercache-sim throughput and the policy goals.
#
# 1. Throughput: accesses per CPU-second (the replaying thread's CPU time,
#    not wall time) per policy on one core, on traces of a million objects
#    (shuffle, ddp one node, zipf), median of 3 replays of the same trace
#    (the machine is shared and noisy: medians, not means).
#    The goal is >= 5 M accesses/s per policy.
# 2. Goals: hit ratios as ratios to OPT (Belady) and to LRU, from one run
#    each, exactly what docs/simulator.md tabulates.
set -euo pipefail

O=${1:-build/default}
SIM="$O/bin/tiercache-sim"
[ -x "$SIM" ] || { echo "bench/sim.sh: $SIM not built" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

field() { # FILE POLICY FIELD
	python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    if r["policy"] == sys.argv[2]:
        print(r[sys.argv[3]])
' "$@"
}

echo "== tiercache-sim throughput (1M objects, one core, M accesses per CPU-second, median of 3) =="
printf '%-34s %-12s %10s %8s\n' workload policy Macc/s hit%
throughput() { # NAME ARGS...
	local name=$1
	shift
	taskset -c 0 "$SIM" "$@" --repeat 3 --json >"$TMP/tp.json" 2>/dev/null ||
		"$SIM" "$@" --repeat 3 --json >"$TMP/tp.json"
	for p in opt lru arc epoch clairvoyant; do
		local r h
		r=$(field "$TMP/tp.json" "$p" accesses_per_sec)
		h=$(field "$TMP/tp.json" "$p" hit_ratio)
		awk -v n="$name" -v p="$p" -v r="$r" -v h="$h" \
			'BEGIN { printf "%-34s %-12s %10.2f %8.2f\n", n, p, r / 1e6, h * 100 }'
	done
}
throughput "shuffle 1M x5, cache 10%" --gen shuffle --objects 1000000 --epoch-count 5 --size 64K --hot 10%
throughput "ddp P=4 node 0, 1M x20, cache 12.5%" --gen ddp --objects 1000000 --ranks 4 --rank 0 \
	--epoch-count 20 --size 64K --hot 12.5%
throughput "zipf 0.9 1M objects x5M, cache 10%" --gen zipf --objects 1000000 --accesses 5000000 \
	--size 64K --hot 10%

echo
echo "== goals (ratios to OPT and to LRU from the same run) =="
printf '%-40s %8s %8s %8s %10s %10s\n' scenario opt lru policy policy/opt policy/lru
goal() { # NAME POLICY ARGS...
	local name=$1 pol=$2
	shift 2
	"$SIM" "$@" --json >"$TMP/g.json"
	local o l p
	o=$(field "$TMP/g.json" opt hit_ratio)
	l=$(field "$TMP/g.json" lru hit_ratio)
	p=$(field "$TMP/g.json" "$pol" hit_ratio)
	awk -v n="$name ($pol)" -v o="$o" -v l="$l" -v p="$p" 'BEGIN {
		printf "%-40s %8.4f %8.4f %8.4f %10.3f %10.2f\n", n, o, l, p, p / o, p / (l + 1e-9) }'
}
for c in 10 30 50 70 90; do
	goal "shuffle 200k x5, cache $c%" epoch --gen shuffle --objects 200000 --epoch-count 5 \
		--size 64K --hot "$c%"
done
ddp=(--gen ddp --objects 400000 --ranks 4 --rank 0 --epoch-count 10 --size 64K --hot 12.5%)
goal "ddp P=4 node, cache 12.5%, full plans" clairvoyant "${ddp[@]}"
goal "ddp P=4 node, cache 12.5%, plans +2 ep" clairvoyant "${ddp[@]}" --plan-epochs 2
goal "ddp P=4 node, cache 12.5%, plans +1 ep" clairvoyant "${ddp[@]}" --plan-epochs 1
goal "ddp P=4 node, cache 12.5%" epoch "${ddp[@]}"
goal "ddp P=4 node, cache 12.5%" arc "${ddp[@]}"
goal "zipf 0.8, cache 5%" arc --gen zipf --objects 400000 --accesses 4000000 --alpha 0.8 \
	--size 64K --hot 5%
goal "zipf 1.0, cache 5%" arc --gen zipf --objects 400000 --accesses 4000000 --alpha 1.0 \
	--size 64K --hot 5%
goal "multijob J=3, cache 30%" epoch --gen multijob --jobs 3 --objects 200000 --epoch-count 4 \
	--size 64K --hot 30%
goal "shards W=8, cache 20%" epoch --gen shards --shards 2000 --chunks 100 --readers 8 \
	--epoch-count 5 --size 64K --hot 20%
goal "shuffle lognormal sizes, hot 5% warm 15%" epoch --gen shuffle --objects 200000 \
	--epoch-count 5 --size lognormal:1M:1.0 --hot 5% --warm 15%
