#!/usr/bin/env bash
# The unplanned single open, polls off against polls on, in the same run:
# 2000 files of ~100 KB, warm, open + read + close one at a time through
# libtiercache against local page-cache reads (tcbench small), with CPU per
# file on both sides. Each setting gets its own daemon (the daemon's poll
# is read at start); settings alternate, REPS times.
#
#   bash bench/small_open.sh [BUILD] [REPS]
# Variants: PIN=1 also runs daemon and client pinned to one CPU (taskset);
# HOG=1 also runs them beside one busy-looping process.
set -uo pipefail
O=${1:-build/default}
REPS=${2:-2}
cd "$(dirname "$0")/.."
. bench/lib_daemon.sh
B=$(mktemp -d "${TMPDIR:-/tmp}/tcsmall.XXXXXX")
pid=
hog=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null
	rm -rf "$B"
}
trap cleanup EXIT
mkdir -p "$B/cold/small"
python3 scripts/gen-demo-data "$B/cold/small" --files 2000 --shards 0 >/dev/null
export TIERCACHE_SOCKET=$B/sock

one() { # one LABEL POLL_US [taskset CPU]
	local label=$1 poll=$2 pin=${3:-}
	rm -rf "$B/state" "$B/hot"
	hot_conf 2G
	local ts=()
	[ -n "$pin" ] && ts=(taskset -c "$pin")
	TIERCACHE_DAEMON_POLL_US=$poll "${ts[@]}" "$O/bin/tiercached" -c "$B/tc.conf" 2>"$B/daemon.log" &
	pid=$!
	for _ in $(seq 1 100); do "$O/bin/tierctl" status >/dev/null 2>&1 && break; sleep 0.1; done
	echo "-- $label (TIERCACHE_POLL_US=$poll TIERCACHE_DAEMON_POLL_US=$poll${pin:+, both on CPU $pin})"
	TIERCACHE_POLL_US=$poll TCBENCH_DAEMON_PID=$pid "${ts[@]}" "$O/bin/tcbench" small bench/small "$B/cold/small" 7
	kill -TERM "$pid"
	wait "$pid"
	pid=
}

for r in $(seq 1 "$REPS"); do
	one "polls off" 0
	one "polls on (default)" 50
	if [ "${PIN:-0}" = 1 ]; then
		one "polls off" 0 0
		one "polls on" 50 0
	fi
done
if [ "${HOG:-0}" = 1 ]; then
	sh -c 'while :; do :; done' &
	hog=$!
	echo "== beside one busy-looping process"
	one "polls off" 0
	one "polls on" 50
fi
