#!/usr/bin/env bash
# What an access trace costs (issue 18): hot-hit small-file throughput
# (tcbench small: open + read + close of 2000 cached files, one chunk each)
# with `tierctl trace` recording and without, alternated in the same run on
# the same daemon. Prints each side's median and on/off (goal >= 0.95).
# A shared machine is noisy: compare the ratio, not the absolute numbers.
set -uo pipefail
O=${1:-build/default}
cd "$(dirname "$0")/.."
B=$(mktemp -d "${TMPDIR:-/tmp}/tctrace.XXXXXX")
. bench/lib_daemon.sh
trap 'stop_daemon; rm -rf "$B"' EXIT
ROUNDS=${ROUNDS:-7}
[ "${QUICK:-0}" = 1 ] && ROUNDS=3
mkdir -p "$B/cold/small"
/usr/bin/env python3 scripts/gen-demo-data "$B/cold/small" --files 2000 --shards 0 >/dev/null
hot_conf 2G
export TIERCACHE_SOCKET=$B/sock
start_daemon trace_cost
TCB=$O/bin/tcbench
tc_rate() { # the tiercache files/s of one tcbench small run (3 passes, median)
	"$TCB" small bench/small "$B/cold/small" 3 | sed -n 's/.*tiercache *\([0-9.]*\) files\/s.*/\1/p'
}
tc_rate >/dev/null # fill the cache and warm both sides
off=() on=()
for r in $(seq 1 "$ROUNDS"); do
	# alternate which side goes first, so drift does not favour one
	for side in $([ $((r % 2)) = 0 ] && echo "off on" || echo "on off"); do
		if [ "$side" = on ]; then
			"$O/bin/tierctl" trace start "$B/trace-$r.csv" >/dev/null || exit 0
			on+=("$(tc_rate)")
			"$O/bin/tierctl" trace stop >"$B/stop.out" || exit 0
			rows=$(($(wc -l <"$B/trace-$r.csv") - 1))
			rm -f "$B/trace-$r.csv"
		else
			off+=("$(tc_rate)")
		fi
	done
done
python3 - "${off[*]}" "${on[*]}" "$rows" <<'PY'
import statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
mo, mn = statistics.median(off), statistics.median(on)
r = mn / mo if mo else 0
print("hot-hit small files, tracing off      %10.1f files/s (median of %d)" % (mo, len(off)))
print("hot-hit small files, tracing on       %10.1f files/s (median of %d; %s rows in the last trace)"
      % (mn, len(on), sys.argv[3]))
print("tracing on / off                      ratio %.3f (goal >= 0.95: %s)" % (r, "met" if r >= 0.95 else "NOT met"))
PY
