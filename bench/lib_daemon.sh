# Sourced by the benchmark scripts: start and stop one tiercached.
# Needs O (build dir) and B (scratch dir holding tc.conf); sets pid.
pid=

# stop_daemon: SIGTERM the daemon started by start_daemon and wait for it
stop_daemon() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pid=
	fi
}

# start_daemon NAME: start tiercached on $B/tc.conf (log in $B/daemon.log)
# and wait until every dataset is available (the binary is $TIERCACHED if
# set, else $O/bin/tiercached; $TIERCACHED_ENV: VAR=VALUE words for its
# environment, for A/B runs); if it does not come up, print
# the log's tail and end the benchmark (exit 0: a benchmark never fails
# the build)
start_daemon() {
	# shellcheck disable=SC2086
	env ${TIERCACHED_ENV:-} "${TIERCACHED:-$O/bin/tiercached}" -c "$B/tc.conf" >>"$B/daemon.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 300); do
		if "$O/bin/tierctl" status --json 2>/dev/null | python3 -c '
import json, sys
sys.exit(0 if all(d["available"] for d in json.load(sys.stdin)["datasets"]) else 1)' 2>/dev/null; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "$1: tiercached did not come up:"
	tail -20 "$B/daemon.log"
	exit 0
}

# hot_conf CAPACITY: write $B/tc.conf: one hot tier of CAPACITY under $B,
# dataset "bench" on $B/cold in 4M chunks, socket and state under $B
hot_conf() {
	cat >"$B/tc.conf" <<CONF
[daemon]
socket = $B/sock
state_dir = $B/state
log_level = warn
[tier hot]
path = $B/hot
capacity = $1
[dataset bench]
path = $B/cold
chunk_size = 4M
CONF
}
