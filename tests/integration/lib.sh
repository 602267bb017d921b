# Shared helpers for integration tests (sourced). Each test runs the real
# tiercached on its own temp dirs and socket, and stops it on exit.
#   O=build dir (from $1), T=this test's temp dir, TC_BIN=$O/bin
set -uo pipefail
O=${1:?usage: $0 BUILD}
TC_BIN=$O/bin
TC_TESTS=$O/tests
# Tests that bound the daemon's memory (read from /proc) call
# tc_measure_memory first: under ASan freed memory is then reused instead of
# quarantined, and TC_MEM_SCALE (1, or 3 for ASan's redzones and headers)
# scales their bounds. No effect on other builds.
TC_MEM_SCALE=1
tc_measure_memory() {
	# not `ldd | grep -q`: under pipefail, grep leaving at the first match
	# can kill ldd with SIGPIPE and the pipeline then says "no ASan"
	local libs
	libs=$(ldd "$TC_BIN/tiercached" 2>/dev/null)
	if [[ $libs == *libasan* ]]; then
		export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
		TC_MEM_SCALE=3
	fi
	export TC_MEM_SCALE
}
T=$(mktemp -d "${TMPDIR:-/tmp}/tctest.XXXXXX")
export TIERCACHE_SOCKET=$T/sock
TC_PID=
TC_FAILS=0
TC_CHECKS=0

tc_cleanup() {
	if [ -n "$TC_PID" ] && kill -0 "$TC_PID" 2>/dev/null; then
		kill -TERM "$TC_PID" 2>/dev/null
		wait "$TC_PID" 2>/dev/null
	fi
	[ "${TC_KEEP:-0}" = 1 ] || rm -rf "$T"
}
trap tc_cleanup EXIT

ok() { TC_CHECKS=$((TC_CHECKS + 1)); echo "ok: $*"; }
fail() { TC_CHECKS=$((TC_CHECKS + 1)); TC_FAILS=$((TC_FAILS + 1)); echo "FAIL: $*"; }
check() { # check "description" command...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
finish() {
	# a daemon built with a sanitizer reports at exit: stop it and read the log
	if [ -n "$TC_PID" ]; then
		tc_stop || fail "daemon exited with an error at the end of the test"
	fi
	if [ -f "$T/daemon.log" ] && grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$T/daemon.log"; then
		fail "sanitizer report in the daemon log"
		grep -A 30 -E 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$T/daemon.log" | head -60
	fi
	echo "$(basename "$0" .sh): $((TC_CHECKS - TC_FAILS)) of $TC_CHECKS checks passed"
	if [ "$TC_FAILS" -ne 0 ] && [ -f "$T/daemon.log" ]; then
		echo "--- daemon log (last 40 lines)"
		tail -n 40 "$T/daemon.log"
	fi
	[ "$TC_FAILS" -eq 0 ]
	exit $?
}

# tc_config [HOT_CAP] [WARM_CAP|none] [CHUNK] [extra dataset lines...]
# Hooks (lib_cluster.sh writes one config per node with them): TC_DIR holds
# the socket, state, tiers and tc.conf (default $T), TC_COLD is the dataset's
# path (default $T/cold), TC_DATASET its name (default ds).
tc_config() {
	local hot=${1:-64M} warm=${2:-128M} chunk=${3:-1M} d=${TC_DIR:-$T}
	shift 3 2>/dev/null || shift $#
	{
		echo "[daemon]"
		echo "socket = $d/sock"
		echo "state_dir = $d/state"
		echo "log_level = ${TC_LOG_LEVEL:-info}"
		echo "workers = 4"
		[ -n "${TC_DAEMON_CONF:-}" ] && printf '%s\n' "$TC_DAEMON_CONF"
		echo "[tier hot]"
		echo "path = $d/hot"
		echo "capacity = $hot"
		echo "high_water = 90"
		echo "low_water = 70"
		if [ "$warm" != none ]; then
			echo "[tier warm]"
			echo "path = $d/warm"
			echo "capacity = $warm"
			echo "high_water = 90"
			echo "low_water = 70"
		fi
		echo "[dataset ${TC_DATASET:-ds}]"
		echo "backend = posix"
		echo "path = ${TC_COLD:-$T/cold}"
		echo "chunk_size = $chunk"
		for l in "$@"; do echo "$l"; done
	} >"$d/tc.conf"
}

# tc_gen_tree DIR CHUNK_BYTES [few]: files at and around chunk boundaries, an
# empty file, a subtree, names with spaces. "few": the same edge cases in
# fewer files (the Ceph tests: each `rados get` costs a CLI start).
tc_gen_tree() {
	local d=$1 cs=$2 few=${3:-}
	mkdir -p "$d/sub/deeper" "$d/with space"
	: >"$d/empty.bin"
	head -c 1 /dev/urandom >"$d/one.bin"
	head -c $((cs - 1)) /dev/urandom >"$d/chunk_minus.bin"
	head -c "$cs" /dev/urandom >"$d/chunk_exact.bin"
	head -c $((cs + 1)) /dev/urandom >"$d/chunk_plus.bin"
	echo "hello tiercache" >"$d/with space/a file.txt"
	if [ "$few" = few ]; then
		head -c $((cs * 3 + 12345)) /dev/urandom >"$d/sub/multi.bin"
		head -c 4321 /dev/urandom >"$d/sub/deeper/small.dat"
		return 0
	fi
	head -c $((cs * 3 + 12345)) /dev/urandom >"$d/multi.bin"
	for i in $(seq 1 20); do head -c $((i * 977)) /dev/urandom >"$d/sub/s$i.dat"; done
	head -c $((cs * 2)) /dev/urandom >"$d/sub/deeper/big.dat"
}

tc_start() { # $TC_WRAP, if set, runs the daemon (e.g. seccomp_exec)
	${TC_WRAP:-} "$TC_BIN/tiercached" -c "$T/tc.conf" >>"$T/daemon.log" 2>&1 &
	TC_PID=$!
	for _ in $(seq 1 200); do
		[ -S "$T/sock" ] && "$TC_BIN/tierctl" status >/dev/null 2>&1 && return 0
		kill -0 "$TC_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "tiercached did not start; log:"
	cat "$T/daemon.log"
	return 1
}

tc_stop() {
	[ -n "$TC_PID" ] || return 0
	kill -TERM "$TC_PID" 2>/dev/null
	wait "$TC_PID"
	local rc=$?
	TC_PID=
	return $rc
}

tc_kill9() {
	kill -KILL "$TC_PID" 2>/dev/null
	wait "$TC_PID" 2>/dev/null
	TC_PID=
}

# tc_json EXPR: evaluate a Python expression on `tierctl status --json` (as s)
wait_for() { # wait_for SECONDS 'SHELL TEST': poll until it holds (evaluated each time)
	local end=$((SECONDS + $1))
	while [ $SECONDS -lt $end ]; do
		eval "$2" && return 0
		sleep 0.2
	done
	eval "$2"
}

tc_json() {
	"$TC_BIN/tierctl" status --json | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

# tc_need_torch: end the test (failed) unless /usr/bin/python3 imports torch
tc_need_torch() {
	if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
		fail "/usr/bin/python3 cannot import torch (install python3-torch: scripts/install-deps)"
		finish
	fi
}

# tc_imagefolder DIR N NESTED: an ImageFolder-style tree under DIR/train:
# classes cat, dog and fish with N samples each of varied sizes (some across
# a 256 KiB chunk boundary), and bird/nested with NESTED samples
tc_imagefolder() {
	local c i
	for c in cat dog fish; do
		mkdir -p "$1/train/$c"
		for i in $(seq 1 "$2"); do
			head -c $(((RANDOM * 13 + i * 1009) % 400000 + 1)) /dev/urandom >"$1/train/$c/img_$i.jpg"
		done
	done
	mkdir -p "$1/train/bird/nested"
	for i in $(seq 1 "$3"); do head -c $((i * 30011)) /dev/urandom >"$1/train/bird/nested/b$i.jpg"; done
}

# tc_source_access_setup NAME: the config of a test that runs clients as
# nobody (root and runuser needed, else exit 1): $T and the socket reachable
# by others, dataset ds (on $T/cold) with `access = source`, and dataset NAME
# on $T/cold2 with the default access (the socket's). Sets nogroup.
tc_source_access_setup() {
	if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null; then
		echo "$(basename "$0" .sh): needs root and runuser to run clients as another user"
		exit 1
	fi
	chmod 0711 "$T" # T is 0700: nobody must reach the socket and mount points
	nogroup=$(id -gn nobody)
	tc_config 16M none 256K "access = source"
	sed -i 's/^\[daemon\]$/[daemon]\nsocket_mode = 0666/' "$T/tc.conf"
	printf '[dataset %s]\nbackend = posix\npath = %s\nchunk_size = 256K\n' "$1" "$T/cold2" >>"$T/tc.conf"
	mkdir -p "$T/cold2"
}

# tc_start_traced POLICY TRACE DAEMON_CONF: a fresh daemon (state and tiers
# wiped; hot 2M, warm 4M, 64K chunks, DAEMON_CONF's lines added) under
# POLICY, recording TRACE (t_trace_replay*: replayed in the simulator)
tc_start_traced() {
	tc_stop >/dev/null 2>&1
	rm -rf "$T/state" "$T/hot" "$T/warm"
	TC_DAEMON_CONF="$3" tc_config 2M 4M 64K "policy = $1"
	tc_start || return 1
	"$TC_BIN/tierctl" trace start "$2" >/dev/null
}

# tc_tmpfs_mount SIZE: a tmpfs of SIZE at $T/hotmnt (MNT) for a tier the
# test breaks (fills, remounts, removes); at exit the daemon stops before
# the mount goes, then tc_cleanup. Needs root: without it the test fails
# saying so.
tc_tmpfs_mount() {
	if [ "$(id -u)" != 0 ]; then
		fail "needs root for tmpfs mounts"
		finish
	fi
	MNT=$T/hotmnt
	trap tc_tmpfs_cleanup EXIT
	mkdir -p "$MNT"
	mount -t tmpfs -o size="$1" tmpfs "$MNT" || { fail "mount tmpfs"; finish; }
}
tc_tmpfs_cleanup() {
	if [ -n "$TC_PID" ] && kill -0 "$TC_PID" 2>/dev/null; then
		kill -TERM "$TC_PID" 2>/dev/null
		wait "$TC_PID" 2>/dev/null
	fi
	TC_PID=
	if mountpoint -q "$MNT" 2>/dev/null; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	tc_cleanup
}

# tc_flat_files DIR: 160 files of 60-140 KB in DIR/a (the same bytes' sizes
# every run), $T/pass their names in one shuffled order and $T/newest the
# last 40 of it, newest first (t_demote_flat, t_rados_open_ahead_flat)
tc_flat_files() {
	mkdir -p "$1/a"
	python3 - "$1" "$T/pass" "$T/newest" <<'PY'
import os, random, sys
r = random.Random(29)
names = []
for i in range(160):
    name = "a/f%03d.bin" % i
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(os.urandom(r.randint(60, 140) * 1024))
    names.append(name)
random.Random(3).shuffle(names)
with open(sys.argv[2], "w") as f:
    f.write("\n".join(names) + "\n")
with open(sys.argv[3], "w") as f:
    f.write("\n".join(reversed(names[-40:])) + "\n")
PY
}
