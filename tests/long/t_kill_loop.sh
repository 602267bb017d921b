#!/usr/bin/env bash
# kill -9 at random moments, many times, under load: the daemon must never
# serve a wrong byte, and after every restart what it reports must be what
# is on disk. Part of `make check-long`, not of `make check`.
#
#   bash tests/long/t_kill_loop.sh BUILD [CYCLES]     (CYCLES default 30)
#   KILL_LOOP_SEED=N     the random seed (default: chosen and printed; give
#                        the printed one to repeat a run's choices)
#   TC_KEEP=1            keep the temp dir (daemon.log, wrong.log, ops.log)
#
# Set-up: a posix dataset of about 20 MiB in 36 files, a hot tier of 6 MiB
# (less than the data: demotions and evictions run all the time) and a
# warm tier of 48 MiB, 256 KiB chunks.
# Load, running across every kill and restart, each in its own process group:
#   - two Python readers (libtiercache through the binding: chunk
#     descriptors passed over the socket) reading random files whole;
#   - a `tierctl cat` reader (streamed READ);
#   - an admin loop: warm (with and without --verify), demote --to warm,
#     pin / unpin, evict, lifecycle run --older-than 1s, and reload after
#     editing the config (hot capacity 6M <-> 8M, revalidate_after).
#   Readers compare every byte they get with the source. A connection error
#   while the daemon is down is not a failure, a wrong byte is: a reader that
#   fails mid-file must have received a prefix of the file.
# Each cycle: start the daemon; with the load stopped (SIGSTOP), compare it
# with the disk; let the load run for a random 0.1-2 s; kill -9; stop the
# load. The comparison after each restart:
#   - no tmp file survives the start (TIER/tmp is empty);
#   - per tier, the chunks status counts are the *.chunk files on disk and
#     its used bytes are the sum of their sizes;
#   - `tierctl verify` finds every resident chunk, none missing, none bad;
#   - every file read through the cache (tcverify tree: whole and by
#     random preads) equals the source;
#   - no reader has seen a wrong byte so far.
. "$(dirname "$0")/../integration/lib.sh"
CYCLES=${2:-30}
case $CYCLES in '' | *[!0-9]*) echo "usage: $0 BUILD [CYCLES]" >&2; exit 2 ;; esac
SEED=${KILL_LOOP_SEED:-$(((RANDOM << 15) | RANDOM))}
RANDOM=$SEED
echo "kill loop: $CYCLES cycles, seed $SEED (KILL_LOOP_SEED=$SEED repeats the choices)"
TC=$TC_BIN/tierctl
export TC T PYTHONPATH TIERCACHE_LIBRARY
TC_SRC=$(cd "$(dirname "$0")/../.." && pwd)
PYTHONPATH=$TC_SRC/client/python
TIERCACHE_LIBRARY=$(cd "$O/lib" && pwd)/libtiercache.so.0
# a reader that loses the daemon gives up after 2 s and starts over
export TIERCACHE_RECONNECT_TIMEOUT=2

# ---- data and config
mkdir -p "$T/cold/a" "$T/cold/b/deep"
for i in $(seq 1 16); do head -c $((40000 + i * 61211)) /dev/urandom >"$T/cold/a/f$i.bin"; done
for i in $(seq 1 16); do head -c $((i * 37813)) /dev/urandom >"$T/cold/b/g$i.dat"; done
for i in 1 2 3 4; do head -c $((3 * 1048576 + i * 4099)) /dev/urandom >"$T/cold/b/deep/big$i.bin"; done
(cd "$T/cold" && find . -type f | sed 's|^\./||' | sort) >"$T/files"
tc_config 6M 48M 256K "revalidate_after = 5s"
: >"$T/wrong.log"

# ---- the load (each worker: a bash loop in its own process group)
# record a wrong byte: WHAT
wrong() { echo "$(date +%T.%N) $*" >>"$T/wrong.log"; }
pick() { sed -n "$((RANDOM % $(wc -l <"$T/files") + 1))p" "$T/files"; }
export -f wrong pick

worker_cat() {
	while :; do
		local f out
		f=$(pick)
		out=$T/cat.out
		if "$TC" cat "ds/$f" >"$out" 2>/dev/null; then
			if cmp -s "$out" "$T/cold/$f"; then
				echo >>"$T/cat.count"
			else
				wrong "tierctl cat ds/$f: differs from the source"
			fi
		else
			# failed (daemon gone): what did arrive must be the file's start
			local n
			n=$(stat -c %s "$out")
			[ "$n" -le "$(stat -c %s "$T/cold/$f")" ] && cmp -s -n "$n" "$out" "$T/cold/$f" ||
				wrong "tierctl cat ds/$f failed after $n bytes that are not the file's start"
		fi
	done
}

cat >"$T/reader.py" <<'EOF'
# Read random files through the binding and compare them with the source,
# forever. OSError (the daemon down, a reconnect that gave up) is not a
# failure; different bytes are, and go to wrong.log.
import os, random, sys, time
import tiercache
T, seed = sys.argv[1], int(sys.argv[2])
rnd = random.Random(seed)
files = open(os.path.join(T, "files")).read().split()
client = None
count_file = os.path.join(T, "reads.%d" % seed)
reads = 0
while True:
    f = rnd.choice(files)
    try:
        if client is None:
            client = tiercache.Client()
        with client.open("ds/" + f) as fh:
            if rnd.random() < 0.5:
                got = fh.read()
            else:
                parts = []
                while True:
                    b = fh.read(rnd.choice([1, 4093, 65536, 300000]))
                    if not b:
                        break
                    parts.append(b)
                got = b"".join(parts)
    except OSError:
        try:
            if client is not None:
                client.close()
        except OSError:
            pass
        client = None
        time.sleep(0.05)
        continue
    want = open(os.path.join(T, "cold", f), "rb").read()
    if got != want:
        n = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                 min(len(got), len(want)))
        with open(os.path.join(T, "wrong.log"), "a") as w:
            w.write("python ds/%s: %d bytes, source %d, first difference at %d\n"
                    % (f, len(got), len(want), n))
    else:
        reads += 1
        with open(count_file, "w") as c:
            c.write("%d\n" % reads)
EOF

# one admin operation at random; failures are expected while the daemon is
# down, so only what they print is kept (ops.log), for reading after a run
worker_ops() {
	local cap=6M
	while :; do
		local f d
		f=$(pick)
		d=${f%/*}
		case $((RANDOM % 9)) in
		0) "$TC" warm "ds/$d" ;;
		1) "$TC" warm --verify "ds/$f" ;;
		2) "$TC" demote "ds/$d" --to warm ;;
		3) "$TC" pin "ds/$f" ;;
		4) "$TC" unpin ds ;;
		5) "$TC" evict "ds/$f" ;;
		6) "$TC" lifecycle run --older-than 1s ;;
		7 | 8)
			# a reload with a changed hot capacity and revalidate_after;
			# the file is replaced whole, never seen half-written
			if [ $cap = 6M ]; then cap=8M; else cap=6M; fi
			awk -v cap=$cap -v rv=$((RANDOM % 5 + 1))s '
				/^\[tier hot\]/ { hot = 1 } /^\[tier warm\]/ { hot = 0 }
				hot && /^capacity = / { $0 = "capacity = " cap }
				/^revalidate_after = / { $0 = "revalidate_after = " rv }
				{ print }' "$T/tc.conf" >"$T/tc.conf.new" && mv "$T/tc.conf.new" "$T/tc.conf"
			"$TC" reload
			;;
		esac
		sleep 0.0$((RANDOM % 10))
	done >>"$T/ops.log" 2>&1
}
export -f worker_cat worker_ops

WORKERS=()
start_workers() {
	setsid bash -c worker_cat </dev/null >/dev/null 2>&1 &
	WORKERS+=($!)
	setsid bash -c worker_ops </dev/null >/dev/null 2>&1 &
	WORKERS+=($!)
	for s in 1 2; do
		setsid /usr/bin/python3 "$T/reader.py" "$T" $((SEED + s)) </dev/null >>"$T/reader.log" 2>&1 &
		WORKERS+=($!)
	done
	# a signal to a group works once the worker has made it (setsid)
	local p
	for p in "${WORKERS[@]}"; do
		for _ in $(seq 1 100); do
			[ "$(ps -o pgid= -p "$p" | tr -d ' ')" = "$p" ] && break
			sleep 0.02
		done
	done
}
# SIG to every worker's process group (the workers and what they run)
signal_workers() {
	local p
	for p in "${WORKERS[@]}"; do kill -"$1" -- -"$p" 2>/dev/null; done
}
stop_workers_for_good() {
	signal_workers KILL
	signal_workers CONT
	local p
	for p in "${WORKERS[@]}"; do wait "$p" 2>/dev/null; done
	WORKERS=()
}
trap 'stop_workers_for_good; tc_cleanup' EXIT

# ---- the comparison after a restart
# per tier: "CHUNK_FILES BYTES" on disk
disk() { find "$T/$1/chunks" -name '*.chunk' -type f -printf '%s\n' 2>/dev/null |
	awk '{n++; s+=$1} END {print n+0, s+0}'; }
# per tier: "CHUNKS USED_BYTES" in status, once nothing is in flight
status_of() {
	"$TC" status --json | python3 -c "
import json,sys
s=json.load(sys.stdin); d=s['daemon']
busy = d['fills_inflight'] or d['moves_inflight']
t=[x for x in s['tiers'] if x['name']=='$1'][0]
print('busy' if busy else '%d %d' % (t['chunks'], t['used_bytes']))"
}
# status and disk agree; they may settle for a few seconds after a start
# (a move the mover began at once), so poll them to a generous deadline
agree() {
	local tier=$1 s d
	for _ in $(seq 1 100); do
		s=$(status_of "$tier") d=$(disk "$tier")
		[ "$s" = "$d" ] && return 0
		sleep 0.1
	done
	echo "tier $tier: status says chunks/bytes '$s', disk has '$d'"
	return 1
}
no_tmp() { [ -z "$(find "$T/hot/tmp" "$T/warm/tmp" -type f 2>/dev/null)" ]; }
verify_clean() {
	"$TC" verify --json ds >"$T/verify.json" 2>&1 && python3 -c "
import json,sys
r=json.load(open(sys.argv[1]))['result']
bad = {k: r[k] for k in ('missing_chunks','bad_chunks','failed_chunks') if r[k]}
sys.exit('verify: %s' % bad if bad else 0)" "$T/verify.json"
}
no_wrong() {
	[ -s "$T/wrong.log" ] || return 0
	cat "$T/wrong.log"
	return 1
}

read_all() {
	"$TC_TESTS/tcverify" tree ds "$T/cold" "$1" >"$T/tcverify.out" 2>&1 && return 0
	grep -v '^ok' "$T/tcverify.out" | head -20
	return 1
}

after_restart() {
	local c=$1
	check "cycle $c: no tmp file survives the start" no_tmp
	check "cycle $c: hot: status chunks and used bytes = the chunk files on disk" agree hot
	check "cycle $c: warm: status chunks and used bytes = the chunk files on disk" agree warm
	check "cycle $c: verify finds every chunk, none bad" verify_clean
	check "cycle $c: every file read through the cache equals the source" read_all "$c"
	check "cycle $c: no reader saw a wrong byte" no_wrong
}

# the load starts stopped, before the first daemon: every comparison below
# is made on a daemon just started, with no client connected
start_workers
signal_workers STOP
started=0
for c in $(seq 1 "$CYCLES"); do
	tc_start || { fail "cycle $c: the daemon did not start after kill -9"; break; }
	after_restart "$c"
	ms=$((100 + RANDOM % 1901))
	signal_workers CONT
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	tc_kill9
	signal_workers STOP
	started=$((started + 1))
	echo "cycle $c: killed after ${ms} ms under load"
	[ "$TC_FAILS" -eq 0 ] || break
done
stop_workers_for_good

# the last restart, then a clean stop
tc_start || fail "the daemon did not start after the last kill -9"
[ -n "$TC_PID" ] && after_restart final
# the load did run: each reader read whole files right, the admin loop got answers
check "the python readers raised nothing but OSError" [ ! -s "$T/reader.log" ]
py_reads=$(cat "$T"/reads.* 2>/dev/null | awk '{s+=$1} END {print s+0}')
cat_reads=$(wc -l <"$T/cat.count" 2>/dev/null || echo 0)
check "the python readers read files whole ($py_reads)" [ "$py_reads" -gt 0 ]
check "the tierctl cat reader read files whole ($cat_reads)" [ "$cat_reads" -gt 0 ]
check "the admin loop was answered" grep -q -e "demoted" -e "pinned" "$T/ops.log"
echo "kill loop: $started kills under load; python reads $py_reads, cat reads $cat_reads, admin ops $(grep -c . "$T/ops.log") lines of output; seed $SEED"
finish
