#!/usr/bin/env bash
# t_plot_bench.sh BUILD: scripts/plot-bench (make bench's charts) on a saved
# bench log (tests/integration/data/bench-sample.log): the rows it finds
# (every policy's hit% per epoch from bench/epochs.sh; every ratio-to-local
# summary row, and not the CPU table), the two PNGs written, listed and
# signed; an empty log is an error that says so. No bench is run.
. "$(dirname "$0")/lib.sh"
PB=scripts/plot-bench
LOG=tests/integration/data/bench-sample.log
SIG=89504e470d0a1a0a
sig() { head -c 8 "$1" | od -An -tx1 | tr -d ' \n'; }

"$PB" --list "$LOG" "$T" >"$T/out.txt" 2>&1
check "plot-bench exits 0 on the sample" test $? -eq 0
check "4 policies x 3 epochs found" test "$(grep -c '^epoch ' "$T/out.txt")" -eq 12
check "epoch's hit% in epoch 2 is the table's 60.7" grep -qx 'epoch epoch 2 60.7' "$T/out.txt"
check "lru's hit% in epoch 3 is the table's 25.0" grep -qx 'epoch lru 3 25.0' "$T/out.txt"
check "5 ratio-to-local rows found (2 core, 3 mount)" test "$(grep -c '^ratio ' "$T/out.txt")" -eq 5
check "the core sequential row: 1.24" grep -qx 'ratio 1.24 core: hot-hit sequential read (1 MiB)' "$T/out.txt"
check "the mount 100 KB row: 0.18" grep -qx 'ratio 0.18 mount: 100 KB files x4 readers, first pass' "$T/out.txt"
check "the CPU table is not drawn as a ratio" sh -c "! grep -q 'seq 1 GiB' '$T/out.txt'"
for png in epochs-hits ratio-to-local; do
	check "$png.png listed" grep -qx "$T/$png.png" "$T/out.txt"
	check "$png.png is a non-empty PNG" sh -c "test -s '$T/$png.png' && test \"\$(head -c 8 '$T/$png.png' | od -An -tx1 | tr -d ' \n')\" = $SIG"
done

: >"$T/empty.log"
"$PB" "$T/empty.log" "$T/e" >"$T/out.txt" 2>&1
check "an empty log exits 1" test $? -eq 1
check "... saying there is nothing to draw" grep -q 'no epoch table and no ratio rows' "$T/out.txt"
"$PB" "$T/missing.log" "$T" >"$T/out.txt" 2>&1
check "a missing log exits 1 naming it" sh -c "test $? -eq 1 && grep -q 'missing.log: No such file' '$T/out.txt'"
finish
