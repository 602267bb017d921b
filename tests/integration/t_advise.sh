#!/usr/bin/env bash
# t_advise.sh BUILD: what-if curves for admins, end to end.
#   tiercache-sim --curve on a generated trace: a table with OPT and every
#     policy; --plot writes a PNG (signature checked), --csv rows parse
#   tierctl advise TRACE --hot --warm names the policy the curve ranks
#     first at those capacities, and what doubling hot or warm gives
#   ... also where a policy without plans wins (zipf, --policy lru,arc,epoch)
#   tierctl advise TRACE with a running daemon takes the daemon's low
#     watermarks and names the curve's first policy at those
#   bad input: a missing trace, a malformed line, a bad size, no daemon
#     and no --hot, a missing plotter: a clear message and non-zero exit
. "$(dirname "$0")/lib.sh"
SIM=$TC_BIN/tiercache-sim
CTL=$TC_BIN/tierctl
TR=$T/trace.csv

# rank1 CSV POINT: the policy the curve's CSV ranks first at a point
rank1() { awk -F, -v p="$2" '$1 == p && $13 == 1 { print $5 }' "$1"; }

"$SIM" --gen multijob --jobs 2 --objects 1500 --epoch-count 3 --size uniform:60K:140K \
	--hot 10% --no-opt --policy lru --write-trace "$TR" >/dev/null
check "the generated trace has a header and 9000 reads" \
	test "$(grep -vc '^object' "$TR")" -eq 9000

# ---- the curve, its table, CSV and plot
"$SIM" --trace "$TR" --curve --points 6 --warm-share 0.7 --plot "$T/curve.png" >"$T/table.txt" 2>"$T/err.txt"
check "--curve --plot exits 0" test $? -eq 0
check "the table names OPT and every policy" \
	grep -qE '^ +size +hot +warm +opt +lru +arc +epoch +clairvoyant +best' "$T/table.txt"
check "the table says how cache size is split" grep -q '30% hot : 70% warm' "$T/table.txt"
check "the table says the trace was not sampled" grep -q '^sampled: no' "$T/table.txt"
check "the PNG exists and is not empty" test -s "$T/curve.png"
check "the PNG starts with the PNG signature" \
	test "$(head -c 8 "$T/curve.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a
check "the table names the plot" grep -q "^plot: $T/curve.png" "$T/table.txt"

"$SIM" --trace "$TR" --curve --sizes 30M:72M,60M:72M,30M:144M --csv >"$T/curve.csv"
check "--csv: 3 points x 5 columns and a header" \
	test "$(grep -c '^[0-9]' "$T/curve.csv")" -eq 15
best=$(rank1 "$T/curve.csv" 0)
check "the curve ranks one policy first at 30M + 72M ($best)" test -n "$best"
# OPT is never below a policy at the same size (equal to or above: a
# reference; for this trace it is above every policy but the clairvoyant)
check "OPT's hits >= every policy's at every point" \
	awk -F, '$5 == "opt" { o[$1] = $7 } $5 != "opt" && $1 in o && $7 > o[$1] * 1.02 { bad = 1 } END { exit bad }' "$T/curve.csv"

# ---- advise with given capacities
"$CTL" advise "$TR" --hot 30M --warm 72M >"$T/advise.txt" 2>&1
check "advise --hot 30M --warm 72M exits 0" test $? -eq 0
check "advise names the curve's first policy ($best)" \
	grep -q "^best policy at today's capacities: $best," "$T/advise.txt"
check "advise words doubling hot" grep -q '^doubling hot (hot 60M + warm 72M):' "$T/advise.txt"
check "advise words doubling warm" grep -q '^doubling warm (hot 30M + warm 144M):' "$T/advise.txt"
check "advise lists each policy against OPT" \
	test "$(grep -cE '^  (lru|arc|epoch|clairvoyant) +[0-9.]+% hits  [0-9.]+ of OPT' "$T/advise.txt")" -eq 4

# a workload where a policy without plans wins: advise follows the curve
ZT=$T/zipf.csv
"$SIM" --gen zipf --objects 3000 --accesses 20000 --alpha 0.8 --size uniform:20K:100K \
	--hot 10% --no-opt --policy lru --write-trace "$ZT" >/dev/null
"$SIM" --trace "$ZT" --curve --policy lru,arc,epoch --sizes 10M:20M,20M:20M,10M:40M --csv >"$T/zipf.csv.curve"
zbest=$(rank1 "$T/zipf.csv.curve" 0)
check "zipf: the curve ranks a policy first ($zbest)" test -n "$zbest"
"$CTL" advise "$ZT" --hot 10M --warm 20M --policy lru,arc,epoch >"$T/advise3.txt" 2>&1
check "zipf: advise --policy lru,arc,epoch names it" \
	grep -q "^best policy at today's capacities: $zbest," "$T/advise3.txt"
check "zipf: advise lists only the policies asked for" \
	test "$(grep -cE '^  (lru|arc|epoch|clairvoyant) +[0-9.]+% hits' "$T/advise3.txt")" -eq 3
"$CTL" advise "$ZT" --hot 10M --policy nope >"$T/out.txt" 2>&1
check "advise --policy nope fails (exit 1) naming the policy" \
	sh -c "test $? -eq 1 && grep -q 'unknown policy \"nope\"' '$T/out.txt'"

# ---- advise with the daemon's capacities (its low watermarks: 70%)
mkdir -p "$T/cold"
tc_config 40M 96M 1M
tc_start || { fail "daemon start"; finish; }
hot_low=$(tc_json "[t['low_water_bytes'] for t in s['tiers'] if t['name'] == 'hot'][0]")
warm_low=$(tc_json "[t['low_water_bytes'] for t in s['tiers'] if t['name'] == 'warm'][0]")
check "the daemon reports low watermarks ($hot_low, $warm_low)" test "$hot_low" -gt 0 -a "$warm_low" -gt 0
"$SIM" --trace "$TR" --curve --csv \
	--sizes "$hot_low:$warm_low,$((2 * hot_low)):$warm_low,$hot_low:$((2 * warm_low))" >"$T/daemon.csv"
dbest=$(rank1 "$T/daemon.csv" 0)
"$CTL" advise "$TR" >"$T/advise2.txt" 2>&1
check "advise without --hot exits 0 with a daemon" test $? -eq 0
check "advise says it used the daemon's low watermarks" \
	grep -q "^today: .*the daemon's low watermarks" "$T/advise2.txt"
check "advise names the curve's first policy at the daemon's capacities ($dbest)" \
	grep -q "^best policy at today's capacities: $dbest," "$T/advise2.txt"
tc_stop

# ---- bad input
"$CTL" advise "$T/trace.csv" >"$T/out.txt" 2>&1
rc=$?
check "advise with no daemon and no --hot fails (exit 1)" test $rc -eq 1
check "... and says to start it or give --hot" grep -q 'start it, or give --hot SIZE' "$T/out.txt"

"$CTL" advise "$T/missing.csv" --hot 30M >"$T/out.txt" 2>&1
check "advise on a missing trace exits 1" test $? -eq 1
check "... naming the file" grep -q "advise: $T/missing.csv: No such file" "$T/out.txt"
"$SIM" --trace "$T/missing.csv" --curve >"$T/out.txt" 2>&1
check "--curve on a missing trace exits 1 naming it" \
	sh -c "test $? -eq 1 && grep -q 'missing.csv: No such file' '$T/out.txt'"

{ head -5 "$TR"; echo "o1,12x,0,0,0"; } >"$T/bad.csv"
"$SIM" --trace "$T/bad.csv" --curve >"$T/out.txt" 2>&1
check "--curve on a malformed line exits 1" test $? -eq 1
check "... naming the line" grep -q 'bad.csv:6: size: "12x" is not a byte count' "$T/out.txt"
"$CTL" advise "$T/bad.csv" --hot 30M >"$T/out.txt" 2>&1
check "advise on a malformed line exits 1" test $? -eq 1
check "... with the simulator's message and what to do" \
	sh -c "grep -q 'bad.csv:6: size' '$T/out.txt' && grep -q 'fix the trace' '$T/out.txt'"

"$SIM" --trace "$TR" --curve --sizes 30Q >"$T/out.txt" 2>&1
check "--sizes 30Q is a usage error (64)" test $? -eq 64
check "... naming the size" grep -q '"30Q" is not a cache size' "$T/out.txt"
"$CTL" advise "$TR" --hot 12Q >"$T/out.txt" 2>&1
check "advise --hot 12Q is a usage error (2)" test $? -eq 2

TIERCACHE_PLOT_CURVE=$T/no-plotter "$SIM" --trace "$TR" --curve --points 2 --plot "$T/none.png" \
	>"$T/out.txt" 2>&1
check "--plot without a plotter exits 1" test $? -eq 1
check "... saying what to set" grep -q 'cannot find the plotter.*TIERCACHE_PLOT_CURVE' "$T/out.txt"
check "... and writes no PNG" test ! -e "$T/none.png"

finish
