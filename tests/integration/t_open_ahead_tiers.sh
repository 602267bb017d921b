#!/bin/bash
# Open-ahead on small tiers (docs/plans.md, "Open-ahead", Bounds): what all
# connections hold through handles handed ahead stays within half of the hot
# and warm tiers' room between their watermarks, shared among the
# connections holding ahead, whatever max_held_per_client allows (here 4G:
# a quarter of it is far above the tiers). Checked through the status
# gauges: a client that takes descriptors ahead and never opens them, a
# second connection of the same job beside it, then a DDP job of 4 ranks
# (one connection each) reading 2 epochs while status is sampled; every
# byte read is compared with the source, and the ranks still open most
# files from what was handed ahead.
. "$(dirname "$0")/lib.sh"
TP=$TC_TESTS/tcplan
W=4
NF=60
SZ=40960
mkdir -p "$T/cold"
for i in $(seq -w 0 $((NF - 1))); do head -c $SZ /dev/urandom >"$T/cold/f$i.bin"; done
( cd "$T/cold" && ls ) >"$T/all"
for e in 1 2; do shuf "$T/all" >"$T/order$e"; done
# hot 2M + warm 4M, both high 90 / low 70 (tc_config): the bound is half of
# (capacity / 100 * 20) summed over the two tiers, as ahead.c computes it
SHARE=$(((2097152 / 100 * 20 + 4194304 / 100 * 20) / 2))
# (revalidate_after is the default 5 s: the files warmed first fall due
# about when job 23 reads on a loaded machine; records are confirmed a
# little before they fall due, so they are still of use: docs/plans.md)
tc_config 2M 4M 64K
tc_start || exit 1
dmn() { tc_json "s['daemon']['$1']"; }
ctr() { tc_json "s['counters']['$1']"; }

check "warm the $NF files of 40 KB (untagged reads): bytes equal the source" \
	"$TP" read ds "$T/cold" <"$T/all"
check "every file is resident (2.4M in 6M of tiers)" \
	test "$(tc_json "sum(d['resident_hot_bytes'] + d['resident_warm_bytes'] for d in s['datasets'])")" -ge $((NF * SZ))

# ---- takers: descriptors handed ahead and never opened ----
check "register job 21's plan over the $NF files" "$TP" set ds 21 0 1 0 <"$T/all"
python3 "$(dirname "$0")/py_ahead_take.py" "$T/sock" 21 "$T/holdA" >"$T/tA" 2>&1 &
TA=$!
check "taker A (job 21) got handles" wait_for 30 "grep -q '^handed' '$T/tA' 2>/dev/null"
nA=$(sed -n 's/^handed \([0-9]*\) .*/\1/p' "$T/tA")
echo "  taker A: $(cat "$T/tA"); bound $SHARE bytes ($((SHARE / SZ)) files of 40 KB)"
check "taker A holds at least one file ahead, and at most the tiers' share ($nA x $SZ <= $SHARE)" \
	test "${nA:-0}" -ge 1 -a $((${nA:-0} * SZ)) -le "$SHARE"
check "status: ahead_out_bytes $(dmn ahead_out_bytes) <= $SHARE" test "$(dmn ahead_out_bytes)" -le "$SHARE"
check "status shows the bound ahead_bound_bytes = $SHARE" test "$(dmn ahead_bound_bytes)" = "$SHARE"
check "status: one connection asks, and its share is the whole bound" \
	test "$(dmn ahead_askers) $(dmn ahead_conn_bound_bytes)" = "1 $SHARE"
python3 "$(dirname "$0")/py_ahead_take.py" "$T/sock" 21 "$T/holdB" >"$T/tB" 2>&1 &
TB=$!
check "taker B (job 21, a second connection) got its answer" wait_for 30 "grep -q '^handed' '$T/tB' 2>/dev/null"
echo "  taker B: $(cat "$T/tB")"
out=$(dmn ahead_out_bytes)
check "status: both together hold ahead_out_bytes $out <= $SHARE" test "$out" -le "$SHARE"
check "status: held_bytes $(dmn held_bytes) <= $SHARE (nothing else is open)" \
	test "$(dmn held_bytes)" -le "$SHARE"
check "status: two connections ask, each with half the bound" \
	test "$(dmn ahead_askers) $(dmn ahead_conn_bound_bytes)" = "2 $((SHARE / 2))"
u0=$(ctr ahead_unused)
touch "$T/holdA" "$T/holdB"
wait $TA $TB
check "the takers' handles were released unused when they went" \
	test "$(dmn ahead_out) $(dmn ahead_out_bytes) $(dmn held_bytes)" = "0 0 0"
check "ahead_unused counts them" test "$(ctr ahead_unused)" -ge $((u0 + nA))
check "status: nobody asks any more" test "$(dmn ahead_askers)" = 0
# the daemon counts the connections holding ahead to share the bound: gone,
# they must not be counted any more (a new taker alone gets what A got)
python3 "$(dirname "$0")/py_ahead_take.py" "$T/sock" 21 "$T/holdC" >"$T/tC" 2>&1 &
TC3=$!
check "taker C (job 21, alone again) got handles" wait_for 30 "grep -q '^handed' '$T/tC' 2>/dev/null"
check "taker C alone got as many as A alone ($(cat "$T/tC"))" grep -q "^handed $nA " "$T/tC"
touch "$T/holdC"
wait $TC3
check "job 21's plan is cancelled" "$TP" cancel ds 21 0

# ---- a plan replaced while the reader gets bounded (short) batches ----
# its opens of the new order still come from what is handed ahead
check "register job 23's plan (order 1)" "$TP" set ds 23 0 1 0 <"$T/order1"
{ head -10 "$T/order1"; cat "$T/order2"; } >"$T/in23"
a23=$(ctr ahead_used)
"$TC_TESTS/tcahead" read ds "$T/cold" 23 "pause=10:$T/go23" <"$T/in23" >"$T/r23" 2>&1 &
R23=$!
check "the reader paused after 10 files of order 1" wait_for 30 "grep -q 'paused 10' '$T/r23' 2>/dev/null"
check "job 23's plan is replaced (order 2)" "$TP" set ds 23 0 1 1 <"$T/order2"
touch "$T/go23"
wait $R23
check "the reader read all $((10 + NF)) files: bytes equal the source" grep -qx "read $((10 + NF))" "$T/r23"
grep FAIL "$T/r23"
u23=$(($(ctr ahead_used) - a23))
check "most of order 2 was opened from what was handed ahead ($u23 used in all)" test "$u23" -ge $((10 + NF / 2))
check "job 23's plan is cancelled" "$TP" cancel ds 23 0

# ---- a DDP job: 4 ranks, one connection each, 2 epochs ----
# sample: the largest ahead_out_bytes, held_bytes and ahead_askers status
# shows until $T/stop exists, and the samples whose ahead_out_bytes is
# past their own ahead_bound_bytes
sample() {
	python3 - "$TC_BIN/tierctl" "$T/stop" >"$T/max" <<'PY'
import json, os, subprocess, sys, time
mo = mh = ma = over = n = 0
while not os.path.exists(sys.argv[2]):
    s = json.loads(subprocess.run([sys.argv[1], "status", "--json"], capture_output=True).stdout)
    d = s["daemon"]
    mo = max(mo, d["ahead_out_bytes"])
    mh = max(mh, d["held_bytes"])
    ma = max(ma, d["ahead_askers"])
    over += d["ahead_out_bytes"] > d["ahead_bound_bytes"]
    n += 1
    time.sleep(0.05)
print(mo, mh, n, ma, over)
PY
}
h0=$(ctr ahead_handed)
a0=$(ctr ahead_used)
o0=$(ctr frames_open)
f0=$(ctr frames_open_ahead)
sample &
SP=$!
for e in 1 2; do
	pids=()
	for r in $(seq 0 $((W - 1))); do
		reg=()
		[ "$r" = 0 ] && reg=(register)
		"$TP" ddp ds "$T/cold" 22 "$r" "$W" "$e" "$T/order$e" "$T/go$e" 4 "${reg[@]}" \
			>"$T/rank$e-$r.out" 2>&1 &
		pids+=($!)
	done
	for r in $(seq 0 $((W - 1))); do
		wait_for 30 "grep -q '^ready\\|FAIL\\|error' '$T/rank$e-$r.out'"
	done
	touch "$T/go$e"
	for r in $(seq 0 $((W - 1))); do
		wait "${pids[$r]}"
		check "epoch $e rank $r read its $((NF / W)) files: bytes equal the source" \
			grep -q "^ok read $((NF / W))\$" "$T/rank$e-$r.out"
		grep FAIL "$T/rank$e-$r.out"
	done
done
touch "$T/stop"
wait $SP
read -r mo mh ns ma over <"$T/max"
used=$(($(ctr ahead_used) - a0))
echo "  DDP: $ns status samples, largest ahead_out_bytes $mo, held_bytes $mh, ahead_askers $ma; handed $(($(ctr ahead_handed) - h0)), used $used, OPEN frames $(($(ctr frames_open) - o0)), OPEN_AHEAD frames $(($(ctr frames_open_ahead) - f0)) for $((2 * NF)) files"
check "the job's connections never held more than the tiers' share ahead ($mo <= $SHARE)" \
	test "${mo:-x}" -le "$SHARE" -a "${ns:-0}" -ge 1
check "no status sample showed more held ahead than its ahead_bound_bytes" test "${over:-x}" = 0
check "at most the $W ranks' connections asked at once ($ma)" test "${ma:-x}" -le "$W"
check "the ranks still opened files handed ahead ($used of $((2 * NF)))" test "$used" -ge $((NF / 2))
check "nothing is held ahead or at all once the ranks are gone" \
	test "$(dmn ahead_out) $(dmn ahead_out_bytes) $(dmn held_bytes)" = "0 0 0"
finish
