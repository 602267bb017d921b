#!/usr/bin/env bash
# bench/rados_small.sh BUILD_DIR: small files (60-140 KB) from Ceph RADOS,
# cold misses through libtiercache and epochs through tiercache-mount,
# against a direct librados read of the same objects in the same run
# (issue 17).
#
# Starts its own throwaway cluster (tests/ceph/start-ceph.sh, one memstore
# OSD on loopback, stopped at exit) and its own tiercached, imports
# BENCH_FILES files of BENCH_MIN_KB..BENCH_MAX_KB KiB (one object each,
# layout plain) with `tierctl import`, then:
#
#  part "lib", each repetition, for 1 and 4 readers, alternating:
#   direct  bench/rados_direct with N streams (each reads one object after
#           another, one read in flight)
#   cold    one epoch of bench/epoch_reader with N threads on a fresh cache
#           (daemon restarted, state and tiers wiped): every file a miss;
#           once per configuration of BENCH_CONFIGS, each KIND:THRESHOLD:
#             fit    one hot tier twice the data (misses only fill)
#             evict  hot BENCH_EVICT_HOT + warm BENCH_EVICT_WARM (default
#                    96M + 96M), smaller than the data: misses also evict
#           THRESHOLD = segment_threshold (512K: segments; 0: a file per
#           chunk, the control)
#   floor   once per configuration (before its variants), the least a
#           cache that keeps what it reads must do at that parallelism:
#           bench/rados_direct --through --segment CAPACITY with N
#           streams, each appending what it reads to one segment file of
#           its own in the tier directory and reading it back, and
#           punching its oldest bytes once it holds more than its share of
#           CAPACITY = the configuration's hot (+ warm): fit never
#           punches, evict punches about once per file past the first
#           CAPACITY bytes (BENCH_FLOOR_PUNCH=BYTES: once per BYTES
#           instead; BENCH_FLOOR_SYNC=BYTES: an fdatasync per BYTES
#           appended; BENCH_FLOOR=0: no floor)
#   ipcfloor  after the floor, the least any cache that is a separate
#           process must do: a server (bench/rados_direct --serve, started
#           for the row) reads each object for a reader that asked for it
#           over a Unix socket, appends it to a segment file per
#           connection punched over the same CAPACITY, and passes the
#           segment's fd; the reader (rados_direct --via, N streams, the
#           same objects in the same order as direct) preads the bytes.
#           One row per server form in BENCH_IPCFLOOR ("aio sync"; also
#           "inline"; "" for none): aio = an event loop + librados aio,
#           the completion thread writes the segment and the loop replies
#           (tiercached's hand-offs); inline = the completion thread also
#           replies; sync = a thread per connection, blocking rados_read.
#           Labelled ipc-FORM:CONFIG; its "daemon" CPU is the server's,
#           per file (BENCH_FLOOR=0: no ipcfloor rows either)
#   Prints files/s, cold/direct, floor/direct and cold/floor (ratio of
#   medians and median of the per-repetition ratios), cold/ipc (ratio of
#   the medians to the first form of BENCH_IPCFLOOR) and CPU per file: the
#   reader's (epoch_reader or rados_direct; user + sys of the whole
#   process, so it includes the listing, and rados_direct's stat of every
#   object before its timer; the floor's is all its own work),
#   the daemon's per miss and the OSD's, each from
#   /proc/PID/task/*/schedstat (first field, ns on CPU, summed over threads).
#
#  part "mount": BENCH_MOUNT_EPOCHS (4) epochs of the same files through
#   tiercache-mount, 4 reader threads (epoch_reader --local MOUNT: each
#   epoch a new random order), cache half the size of the data (hot 1/6 +
#   warm 1/3, default policy), segment_threshold BENCH_MOUNT_THRESHOLD
#   (512K); the mount is remounted before each epoch (the kernel's page
#   cache of the mount dropped: what is read again comes from the cache's
#   tiers, not from the kernel's copy of the FUSE file). Before each epoch
#   rados_direct with 4 streams. Prints each epoch's files/s against epoch
#   1 and against direct, and CPU per file (reader, tiercache-mount,
#   tiercached; direct: rados_direct).
#
# Benchmarks report; they do not fail the build.
#
# env: BENCH_FILES (4000), BENCH_MIN_KB (60), BENCH_MAX_KB (140),
#      BENCH_REPS (3), BENCH_READERS ("1 4"), BENCH_PARTS ("lib mount"),
#      BENCH_CONFIGS ("fit:512K evict:512K evict:0"),
#      BENCH_EVICT_HOT / BENCH_EVICT_WARM (96M / 96M), BENCH_CHUNK (4M),
#      BENCH_SEGMENT_SIZE (segment_size; default the daemon's, 64M),
#      BENCH_POLICY (the dataset's policy; default the daemon's, lru),
#      BENCH_WORKERS (daemon.workers), BENCH_REVALIDATE (revalidate_after),
#      BENCH_STAT_AHEAD (daemon.stat_ahead_inflight; a tiercached without
#      the key refuses it),
#      BENCH_MOUNT_EPOCHS (4), BENCH_MOUNT_THRESHOLD (512K),
#      BENCH_MOUNT_REMOUNT (1; 0 keeps the mount, and its page cache,
#      across epochs),
#      BENCH_TIER_DIR (where the tiers live; default a temp dir on TMPDIR),
#      BENCH_STATUS_DIR=DIR: the mount part saves `tierctl status --json`
#      after each epoch as DIR/status-REP-EPOCH.json (prefetch, per-tier and
#      per-dataset counters beside the few printed),
#      BENCH_PERF=DIR: `perf record -g` of tiercached during the first
#      repetition's cold epochs (DIR/cold-KIND-THRESHOLD-N.data) and the
#      mount's epochs 1 and 2 (DIR/mount-E.data), and of the ipcfloor
#      server during its first repetition (DIR/ipc-FORM-KIND-THRESHOLD-N.data),
#      BENCH_PERF_ARGS: perf record's arguments instead of -g (e.g.
#      "--call-graph dwarf,8192 -F 250", or "-e sched:sched_switch"),
#      BENCH_RA=N: readahead_files = N in the daemon's config (0: no
#      directory read-ahead, so that fit's misses are demand misses as
#      evict's are),
#      BENCH_IPCFLOOR ("aio sync"): the ipcfloor rows' server forms,
#      BENCH_CSW=1: context switches per file of the cold and ipcfloor
#      rows, printed on their lines: the reader's (`perf stat -e
#      context-switches` around it: needs perf), the daemon's or server's
#      and the OSD's (voluntary + involuntary, /proc/PID/task/*/status;
#      an ipcfloor reader counts its own during the read, and its OSD
#      figure includes the stat of every object before it),
#      BENCH_PIN=1: the cluster's mon and OSD on CPU 0, everything else on
#      CPU 1 (as bench/rados.sh; needs taskset and 2 CPUs),
#      BENCH_WALK=1: part lib's cold epochs read the files in the listing's
#      order (epoch_reader --seed 0: a walk of each directory in turn)
#      instead of a new random order per repetition,
#      BENCH_VARIANTS="NAME=BINARY[,VAR=VALUE...] ...": part lib runs each
#      configuration once per variant (a tiercached binary, e.g. one built
#      from another commit, with extra environment), alternating within
#      each repetition, labelled CONFIG@NAME: an A/B in the same run.
#      POLICY=NAME[:key=value...] among the VARs is the dataset's policy
#      line for that variant instead (e.g. POLICY=lru:demote=0).
set -uo pipefail
O=${1:-build/default}
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
NF=${BENCH_FILES:-4000}
MIN_KB=${BENCH_MIN_KB:-60}
MAX_KB=${BENCH_MAX_KB:-140}
REPS=${BENCH_REPS:-3}
READERS=${BENCH_READERS:-1 4}
PARTS=${BENCH_PARTS:-lib mount}
CONFIGS=${BENCH_CONFIGS:-fit:512K evict:512K evict:0}
EVICT_HOT=${BENCH_EVICT_HOT:-96M}
EVICT_WARM=${BENCH_EVICT_WARM:-96M}
CHUNK=${BENCH_CHUNK:-4M}
EPOCHS=${BENCH_MOUNT_EPOCHS:-4}
MTHRESH=${BENCH_MOUNT_THRESHOLD:-512K}
REMOUNT=${BENCH_MOUNT_REMOUNT:-1}
PERF=${BENCH_PERF:-}
ME=bench/rados_small.sh

for b in tiercached tierctl epoch_reader rados_direct; do
	[ -x "$O/bin/$b" ] || { echo "$ME: $O/bin/$b not built (make all)"; exit 0; }
done
for b in ceph-mon ceph-osd rados; do
	command -v $b >/dev/null || { echo "$ME: skipped: $b is not installed (scripts/install-deps)"; exit 0; }
done
MOUNT_OK=1
if [ ! -x "$O/bin/tiercache-mount" ] || [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	MOUNT_OK=
fi
if [ -n "$PERF" ]; then
	command -v perf >/dev/null || { echo "$ME: BENCH_PERF ignored: perf is not installed"; PERF=; }
	[ -n "$PERF" ] && mkdir -p "$PERF"
fi

B=$(mktemp -d "${TMPDIR:-/tmp}/tcbench-rsmall.XXXXXX")
TIER=${BENCH_TIER_DIR:-$B}
TIER=$(mktemp -d "$TIER/tiers.XXXXXX")
M=$B/mnt
MPID=
PERFPID=
. "$ROOT/bench/lib_daemon.sh"
cleanup() {
	[ -n "$PERFPID" ] && kill -INT "$PERFPID" 2>/dev/null && wait "$PERFPID" 2>/dev/null
	mountpoint -q "$M" 2>/dev/null && fusermount3 -u -z "$M" 2>/dev/null
	[ -n "$MPID" ] && kill -TERM "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
	stop_daemon
	"$ROOT/tests/ceph/stop-ceph.sh" "$B/ceph" >/dev/null 2>&1
	rm -rf "$B" "$TIER"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- data (before the cluster: its size sets the memstore's) ----
t0=$EPOCHREALTIME
mkdir -p "$B/src"
python3 - "$B/src" "$NF" "$MIN_KB" "$MAX_KB" <<'PY'
import os, random, sys
r = random.Random(17)
d, n, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for i in range(n):
    sub = os.path.join(d, "c%02d" % (i % 20))  # class folders, ImageNet style
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%05d.jpg" % i), "wb") as f:
        f.write(os.urandom(r.randint(lo, hi) * 1024))
PY
DATA=$(du -sb "$B/src" | cut -f1)
DATA_MB=$((DATA / 1048576))

. "$ROOT/bench/lib_ceph.sh"
bench_ceph_start "$ME" "$DATA_MB"
OSD_PID=$(cat "$CEPH_DIR/run/osd.0.pid")
bench_ceph_pin "$ME"

export TIERCACHE_SOCKET=$B/sock
# conf THRESHOLD HOT [WARM]: $B/tc.conf for one configuration
conf() {
	cat >"$B/tc.conf" <<CONF
[daemon]
socket = $B/sock
state_dir = $TIER/state
log_level = warn
segment_threshold = $1
${BENCH_SEGMENT_SIZE:+segment_size = $BENCH_SEGMENT_SIZE}
${BENCH_WORKERS:+workers = $BENCH_WORKERS}
${BENCH_RA:+readahead_files = $BENCH_RA}
${BENCH_STAT_AHEAD:+stat_ahead_inflight = $BENCH_STAT_AHEAD}
[tier hot]
path = $TIER/hot
capacity = $2
CONF
	[ -n "${3:-}" ] && printf '[tier warm]\npath = %s/warm\ncapacity = %s\n' "$TIER" "$3" >>"$B/tc.conf"
	cat >>"$B/tc.conf" <<CONF
[dataset small]
backend = rados
ceph_conf = $CEPH_CONF
pool = $CEPH_POOL
prefix = bench/small/
layout = plain
chunk_size = $CHUNK
${BENCH_REVALIDATE:+revalidate_after = $BENCH_REVALIDATE}
${VPOLICY:-${BENCH_POLICY:+policy = $BENCH_POLICY}}
CONF
}
# fresh THRESHOLD HOT [WARM]: restart the daemon on an empty cache
fresh() {
	stop_daemon
	rm -rf "$TIER/state" "$TIER/hot" "$TIER/warm"
	conf "$@"
	start_daemon "$ME"
}

conf 512K "$((2 * DATA_MB + 64))M"
start_daemon "$ME"
if ! "$O/bin/tierctl" import -j 8 "$B/src" small >/dev/null 2>"$B/import.log"; then
	echo "$ME: import failed:"
	cat "$B/import.log"
	exit 0
fi
echo "import: $(grep -o '[0-9.]* MB/s' "$B/import.log" | tail -n 1)"
# the mount's paths (the files under the dataset's root)
(cd "$B/src" && find . -type f | sed 's|^\./||' | sort) >"$B/names"
rm -rf "$B/src"
echo "setup (data, cluster, import): $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s"
echo "date $(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $NF files of $MIN_KB-$MAX_KB KiB ($DATA_MB MiB) in RADOS (one memstore OSD on this machine), chunk_size $CHUNK, tiers in $(df --output=fstype "$TIER" | tail -n 1), $REPS repetitions"
if [ -n "$PINNED" ]; then
	echo "pinned (BENCH_PIN=1): mon and OSD on CPU 0, everything else on CPU 1"
else
	echo "unpinned: OSD, daemon and readers share all CPUs"
fi

# ns on CPU of all threads of PID so far
cpu_ns() {
	local s=0 t
	for t in /proc/"$1"/task/*/schedstat; do
		# (a thread may end between the glob and the read)
		{ read -r n _ <"$t"; } 2>/dev/null && s=$((s + n))
	done
	echo "$s"
}
# context switches of all threads of PID so far (voluntary + involuntary)
csw() {
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'
}
# BENCH_CSW=1: the reader runs under perf stat; csw_begin / csw_end SERVER_PID
# write "reader server osd" switches per file to $B/csw.last
CSW_WRAP=()
if [ "${BENCH_CSW:-0}" = 1 ]; then
	if command -v perf >/dev/null; then
		CSW_WRAP=(perf stat -x ";" -e context-switches -o "$B/csw.reader" --)
	else
		echo "$ME: BENCH_CSW ignored: perf is not installed"
	fi
fi
csw_begin() {
	[ ${#CSW_WRAP[@]} -gt 0 ] || return 0
	cs0=$(csw "$1")
	co0=$(csw "$OSD_PID")
}
csw_end() {
	[ ${#CSW_WRAP[@]} -gt 0 ] || return 0
	local rd=${2:-}
	[ -n "$rd" ] || rd=$(awk -F";" '/context-switches/ {print $1}' "$B/csw.reader" 2>/dev/null)
	awk -v r="${rd:-0}" -v s=$(($(csw "$1") - cs0)) -v o=$(($(csw "$OSD_PID") - co0)) -v nf="$NF" \
		'BEGIN {printf "  switches/file reader %.2f server %.2f osd %.2f", r / nf, s / nf, o / nf}' >"$B/csw.last"
}
TIMEFORMAT='%3U %3S'
# perf_on FILE [PID] / perf_off: a profile of tiercached (or PID; call
# graphs unless BENCH_PERF_ARGS) meanwhile
perf_on() {
	[ -n "$PERF" ] || return 0
	# shellcheck disable=SC2086 # BENCH_PERF_ARGS is a list of arguments
	perf record -q ${BENCH_PERF_ARGS:--g} -p "${2:-$pid}" -o "$1" >/dev/null 2>&1 &
	PERFPID=$!
	sleep 0.5
}
perf_off() {
	[ -n "$PERFPID" ] || return 0
	kill -INT "$PERFPID" 2>/dev/null
	wait "$PERFPID" 2>/dev/null
	PERFPID=
}

# direct N -> "files/s client_ns osd_ns" (client: user + sys of rados_direct)
direct() {
	local o0 o1 t
	o0=$(cpu_ns "$OSD_PID")
	t=$({ time "$O/bin/rados_direct" --conf "$CEPH_CONF" --pool "$CEPH_POOL" --prefix bench/small/ \
		--chunk $((4 * 1048576)) --streams "$1" --reps 1 >"$B/direct.out" 2>&1; } 2>&1) ||
		{ cat "$B/direct.out" >&2; echo "0 0 0"; return; }
	o1=$(cpu_ns "$OSD_PID")
	awk -v t="$t" -v nf="$NF" -v o=$((o1 - o0)) 'END {split(t, c, " ");
		printf "%.1f %.0f %d\n", nf / $3, (c[1] + c[2]) * 1e9, o}' "$B/direct.out"
}
# size_bytes 96M -> 100663296 (K, M, G suffixes; plain bytes pass)
size_bytes() {
	local v=${1%[KkMmGg]} m=1
	case "$1" in
	*[Kk]) m=1024 ;;
	*[Mm]) m=1048576 ;;
	*[Gg]) m=1073741824 ;;
	esac
	echo $((v * m))
}
# floor N CAPACITY -> "files/s client_ns osd_ns punches": rados_direct
# --through --segment CAPACITY (the floor of a cache of that size)
floor() {
	local o0 o1 t
	rm -rf "$TIER/floor"
	mkdir -p "$TIER/floor"
	o0=$(cpu_ns "$OSD_PID")
	t=$({ time "$O/bin/rados_direct" --conf "$CEPH_CONF" --pool "$CEPH_POOL" --prefix bench/small/ \
		--chunk $((4 * 1048576)) --streams "$1" --reps 1 --through "$TIER/floor" --segment "$2" \
		${BENCH_FLOOR_PUNCH:+--punch "$(size_bytes "$BENCH_FLOOR_PUNCH")"} \
		${BENCH_FLOOR_SYNC:+--sync "$(size_bytes "$BENCH_FLOOR_SYNC")"} >"$B/floor.out" 2>&1; } 2>&1) ||
		{ cat "$B/floor.out" >&2; rm -rf "$TIER/floor"; echo "0 0 0 0"; return; }
	o1=$(cpu_ns "$OSD_PID")
	rm -rf "$TIER/floor"
	awk -v t="$t" -v nf="$NF" -v o=$((o1 - o0)) 'END {split(t, c, " ");
		printf "%.1f %.0f %d %d\n", nf / $3, (c[1] + c[2]) * 1e9, o, $6}' "$B/floor.out"
}
IPCFLOOR=${BENCH_IPCFLOOR-aio sync}
# ipcfloor FORM N CAPACITY -> "files/s reader_ns server_ns osd_ns": the
# server (rados_direct --serve, FORM) and its reader (--via, N streams)
ipcfloor() {
	local o0 o1 s0 s1 t spid
	rm -rf "$TIER/ipc" "$B/ipc.sock"
	mkdir -p "$TIER/ipc"
	"$O/bin/rados_direct" --conf "$CEPH_CONF" --pool "$CEPH_POOL" --chunk $((4 * 1048576)) \
		--serve "$B/ipc.sock" --through "$TIER/ipc" --serve-mode "$1" >/dev/null 2>"$B/ipcserver.err" &
	spid=$!
	for _ in $(seq 1 200); do [ -S "$B/ipc.sock" ] && break; sleep 0.05; done
	o0=$(cpu_ns "$OSD_PID")
	[ "$r" = 1 ] && perf_on "$PERF/ipc-$1-$kind-$th-$2.data" "$spid"
	s0=$(cpu_ns "$spid")
	csw_begin "$spid"
	t=$({ time "${CSW_WRAP[@]}" "$O/bin/rados_direct" --conf "$CEPH_CONF" --pool "$CEPH_POOL" --prefix bench/small/ \
		--chunk $((4 * 1048576)) --streams "$2" --reps 1 --via "$B/ipc.sock" --segment "$3" \
		>"$B/ipc.out" 2>&1; } 2>&1) || t=
	o1=$(cpu_ns "$OSD_PID")
	s1=$(cpu_ns "$spid")
	# the reader's own count, without its listing (rados_direct stats every object)
	csw_end "$spid" "$(awk '{for (i = 1; i < NF; i++) if ($i == "switches") print $(i + 1)}' "$B/ipc.out")"
	perf_off
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	rm -rf "$TIER/ipc" "$B/ipc.sock"
	[ -n "$t" ] || { cat "$B/ipc.out" "$B/ipcserver.err" >&2; echo "0 0 0 0"; return; }
	awk -v t="$t" -v nf="$NF" -v o=$((o1 - o0)) -v sv=$((s1 - s0)) 'END {split(t, c, " ");
		printf "%.1f %.0f %d %d\n", nf / $3, (c[1] + c[2]) * 1e9, sv, o}' "$B/ipc.out"
}
# epoch N SEED [DIR] -> "files/s reader_ns daemon_ns osd_ns misses errors"
# (epoch_reader, one epoch; with DIR it reads the files from DIR: the mount)
epoch() {
	local o0 o1 d0 d1 t
	o0=$(cpu_ns "$OSD_PID")
	d0=$(cpu_ns "$pid")
	csw_begin "$pid"
	t=$({ time "${CSW_WRAP[@]}" "$O/bin/epoch_reader" --epochs 1 --threads "$1" --seed "$2" --json \
		${3:+--local "$3"} small >"$B/er.json" 2>"$B/er.err"; } 2>&1)
	o1=$(cpu_ns "$OSD_PID")
	d1=$(cpu_ns "$pid")
	csw_end "$pid"
	python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))[0]
u, s = map(float, sys.argv[2].split())
print("%.1f %.0f %s %s %d %d" % (e["files_per_s"], (u + s) * 1e9, sys.argv[3], sys.argv[4],
      e["misses"], e["errors"]))' "$B/er.json" "$t" $((d1 - d0)) $((o1 - o0)) 2>/dev/null ||
		{ cat "$B/er.err" >&2; echo "0 0 0 0 0 1"; }
}

# counters SNAPSHOT_FILE: the daemon's counters now; with a second argument
# (the previous snapshot) also print what moved since
counters() {
	"$O/bin/tierctl" status --json 2>/dev/null | python3 -c '
import json, os, sys
keys = ("hits_hot hits_warm misses cold_reads served_unkept evictions demotions promotions "
        "segment_items_kept segment_items_dropped frames_open frames_chunk opens_filled "
        "segment_copy_syncs segment_reclaim_copied_bytes revalidations_by_read "
        "revalidation_stats stat_ahead_sent stat_ahead_used stat_ahead_joined stat_ahead_wasted").split()
def find(o):
    if isinstance(o, dict):
        if "misses" in o and "hits_hot" in o:
            return o
        for v in o.values():
            r = find(v)
            if r:
                return r
    return None
c = find(json.load(sys.stdin)) or {}
now = {k: int(c.get(k, 0)) for k in keys}
if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
    old = json.load(open(sys.argv[2]))
    print("        counters:", " ".join("%s %d" % (k, now[k] - old.get(k, 0)) for k in keys))
json.dump(now, open(sys.argv[1], "w"))' "$@"
}

# the lib part's labels: CONFIG, or CONFIG@NAME for each of BENCH_VARIANTS
LABELS=
for c in $CONFIGS; do
	if [ -n "${BENCH_VARIANTS:-}" ]; then
		for v in $BENCH_VARIANTS; do LABELS="$LABELS $c@${v%%=*}"; done
	else
		LABELS="$LABELS $c"
	fi
done
# variant LABEL: the daemon binary and environment of LABEL's variant
# (TIERCACHED, TIERCACHED_ENV, VNAME; none for a label without @)
variant() {
	local v spec
	TIERCACHED=
	TIERCACHED_ENV=
	VPOLICY=
	VNAME=
	[[ "$1" == *@* ]] || return 0
	VNAME=${1##*@}
	for v in $BENCH_VARIANTS; do
		[ "${v%%=*}" = "$VNAME" ] || continue
		spec=${v#*=}
		TIERCACHED=${spec%%,*}
		[[ "$spec" == *,* ]] && TIERCACHED_ENV=${spec#*,} && TIERCACHED_ENV=${TIERCACHED_ENV//,/ }
		# POLICY=NAME[:key=value...]: the dataset's policy line for this
		# variant (':' for the blanks), instead of BENCH_POLICY
		local e rest=
		for e in $TIERCACHED_ENV; do
			if [[ "$e" == POLICY=* ]]; then
				VPOLICY="policy = ${e#POLICY=}"
				VPOLICY=${VPOLICY//:/ }
			else
				rest="$rest $e"
			fi
		done
		TIERCACHED_ENV=${rest# }
	done
	[ -x "$TIERCACHED" ] || { echo "$ME: variant $VNAME: $TIERCACHED is not an executable"; exit 0; }
}

if [[ " $PARTS " == *" lib "* ]]; then
	echo
	echo "== cold misses through libtiercache vs direct librados"
	: >"$B/lib.res"
	for r in $(seq 1 "$REPS"); do
		for n in $READERS; do
			read -r df dc dosd <<<"$(direct "$n")"
			echo "direct $n $r $df $dc 0 $dosd $NF 0" >>"$B/lib.res"
			printf 'rep %d  %d reader(s)  direct %7.0f files/s\n' "$r" "$n" "$df"
			lastc=
			for cv in $LABELS; do
				c=${cv%@*}
				variant "$cv"
				kind=${c%%:*}
				th=${c#*:}
				if [ "${BENCH_FLOOR:-1}" != 0 ] && [ "$c" != "$lastc" ]; then
					if [ "$kind" = evict ]; then
						cap=$(($(size_bytes "$EVICT_HOT") + $(size_bytes "$EVICT_WARM")))
					else
						cap=$(((2 * DATA_MB + 64) * 1048576))
					fi
					stop_daemon # the floor alone, as direct, with the tiers' space back
					rm -rf "$TIER/state" "$TIER/hot" "$TIER/warm"
					read -r ff fc fosd fp <<<"$(floor "$n" "$cap")"
					echo "floor:$c $n $r $ff $fc 0 $fosd $NF 0" >>"$B/lib.res"
					printf '        %-11s floor %7.0f files/s  (%.2f of direct)  punches %d  (segment per stream, %d MiB held in all)\n' \
						"$c" "$ff" "$(awk -v a="$ff" -v b="$df" 'BEGIN{print b ? a / b : 0}')" "$fp" $((cap >> 20))
					for form in $IPCFLOOR; do
						read -r pf pc psv posd <<<"$(ipcfloor "$form" "$n" "$cap")"
						echo "ipc-$form:$c $n $r $pf $pc $psv $posd $NF 0" >>"$B/lib.res"
						printf '        %-11s ipcfloor %-6s %7.0f files/s  (%.2f of direct)  server %.0f us/file%s\n' \
							"$c" "$form" "$pf" "$(awk -v a="$pf" -v b="$df" 'BEGIN{print b ? a / b : 0}')" \
							"$(awk -v a="$psv" -v b="$NF" 'BEGIN{print a / b / 1000}')" "$(cat "$B/csw.last" 2>/dev/null)"
					done
				fi
				lastc=$c
				if [ "$kind" = evict ]; then
					fresh "$th" "$EVICT_HOT" "$EVICT_WARM"
				else
					fresh "$th" "$((2 * DATA_MB + 64))M"
				fi
				counters "$B/ctr.0"
				[ "$r" = 1 ] && perf_on "$PERF/cold-$kind-$th${VNAME:+-$VNAME}-$n.data"
				read -r f rc dmc oc mi er <<<"$(epoch "$n" "$([ -n "${BENCH_WALK:-}" ] && echo 0 || echo "$r")")"
				perf_off
				# misses = reads from the cold store: an open that revalidates
				# starts the read ahead (open-ahead), and the read that then
				# joins it is not counted as a miss
				counters "$B/ctr.1"
				mi=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[2]))["cold_reads"] - json.load(open(sys.argv[1]))["cold_reads"])' "$B/ctr.0" "$B/ctr.1")
				# the client's requests per file: OPEN + CHUNK frames
				rq=$(python3 -c 'import json, sys; a, b = (json.load(open(f)) for f in sys.argv[1:3]); d = {k: b.get(k, 0) - a.get(k, 0) for k in b}; print("%.2f  demotions %d  evictions %d  copy_syncs %d  reclaim_copied_MiB %d" % ((d["frames_open"] + d["frames_chunk"]) / int(sys.argv[3]), d["demotions"], d["evictions"], d["segment_copy_syncs"], d["segment_reclaim_copied_bytes"] >> 20))' "$B/ctr.0" "$B/ctr.1" "$NF")
				echo "$cv $n $r $f $rc $dmc $oc $mi $er" >>"$B/lib.res"
				printf '        %-11s cold %7.0f files/s  (%.2f of direct)  cold reads %d  errors %d  daemon %.0f us/miss  requests/file %s%s\n' \
					"$cv" "$f" "$(awk -v a="$f" -v b="$df" 'BEGIN{print b ? a / b : 0}')" "$mi" "$er" \
					"$(awk -v d="$dmc" -v m="$mi" 'BEGIN{print m ? d / m / 1000 : 0}')" "$rq" "$(cat "$B/csw.last" 2>/dev/null)"
			done
			variant ""
		done
	done
	echo
	echo "medians of $REPS (date $(date -u +%F), $DATA_MB MiB, hot+warm for evict: $EVICT_HOT + $EVICT_WARM)"
	echo "cold/dir, floor/dir, cold/floor: ratio of the medians; [rep]: median of each repetition's ratio"
	echo "floor: rados_direct --through --segment (append + read back + punch over the config's hot+warm), no daemon"
	echo "ipc-FORM: the IPC floor (rados_direct --serve FORM / --via: a server process, a Unix socket, the segment's fd passed); its daemon_us is the server's per file; cold/ipc: cold's median / ipc-${IPCFLOOR%% *}'s"
	echo "CPU us per file: reader = epoch_reader or rados_direct (whole process), daemon = tiercached per miss, osd"
	python3 - "$B/lib.res" "$READERS" "$LABELS" "$IPCFLOOR" <<'EOF'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = st.median
def ratio(a, b):
    return a / b if b else 0
def per_rep(num, den):
    """median over repetitions of num's files/s / den's (rows keyed by rep)"""
    v = [float(num[k][3]) / float(den[k][3]) for k in num if k in den and float(den[k][3]) > 0]
    return med(v) if v else 0
forms = sys.argv[4].split()
print("%-8s %-22s %8s %8s %6s %9s %6s %10s %6s %8s %9s %9s %7s %s" % ("readers", "config", "files/s",
      "cold/dir", "[rep]", "floor/dir", "[rep]", "cold/floor", "[rep]", "cold/ipc", "reader_us",
      "daemon_us", "osd_us", ""))
for n in sys.argv[2].split():
    d = {r[2]: r for r in rows if r[0] == "direct" and r[1] == n}
    if not d:
        continue
    dm = med(float(r[3]) for r in d.values())
    cpu = lambda rs, i: med(float(r[i]) / float(r[7]) / 1e3 for r in rs)
    print("%-8s %-22s %8.0f %8s %6s %9s %6s %10s %6s %8s %9.0f %9s %7.0f" % (n, "direct", dm, "", "",
          "", "", "", "", "", cpu(d.values(), 4), "-", cpu(d.values(), 6)))
    floors_done = set()
    for c in sys.argv[3].split():
        base = c.split("@")[0]
        fl = {r[2]: r for r in rows if r[0] == "floor:" + base and r[1] == n}
        fm = med(float(r[3]) for r in fl.values()) if fl else 0
        if fl and base not in floors_done:
            floors_done.add(base)
            print("%-8s %-22s %8.0f %8s %6s %9.2f %6.2f %10s %6s %8s %9.0f %9s %7.0f" % (n,
                  "floor:" + base, fm, "", "", ratio(fm, dm), per_rep(fl, d), "", "", "",
                  cpu(fl.values(), 4), "-", cpu(fl.values(), 6)))
            for f in forms:
                ip = {r[2]: r for r in rows if r[0] == "ipc-%s:%s" % (f, base) and r[1] == n}
                if not ip:
                    continue
                im = med(float(r[3]) for r in ip.values())
                # the floor/dir columns hold ipc/dir, cold/floor holds ipc/floor
                print("%-8s %-22s %8.0f %8s %6s %9.2f %6.2f %10s %6s %8s %9.0f %9.0f %7.0f" % (n,
                      "ipc-%s:%s" % (f, base), im, "", "", ratio(im, dm), per_rep(ip, d),
                      "%.2f" % ratio(im, fm), "%.2f" % per_rep(ip, fl), "", cpu(ip.values(), 4),
                      cpu(ip.values(), 5), cpu(ip.values(), 6)))
        ipc0 = {r[2]: r for r in rows if forms and r[0] == "ipc-%s:%s" % (forms[0], base) and r[1] == n}
        ipm = med(float(r[3]) for r in ipc0.values()) if ipc0 else 0
        cr = {r[2]: r for r in rows if r[0] == c and r[1] == n}
        if not cr:
            continue
        nfile = lambda r: float(d[r[2]][7])
        cm = med(float(r[3]) for r in cr.values())
        bad = sum(int(r[8]) for r in cr.values())
        print("%-8s %-22s %8.0f %8.2f %6.2f %9s %6s %10s %6s %8s %9.0f %9.0f %7.0f %s" % (n, c, cm,
              ratio(cm, dm), per_rep(cr, d), "", "",
              "%.2f" % ratio(cm, fm) if fl else "-", "%.2f" % per_rep(cr, fl) if fl else "-",
              "%.2f" % ratio(cm, ipm) if ipm else "-",
              med(float(r[4]) / nfile(r) / 1e3 for r in cr.values()),
              med(float(r[5]) / max(1, int(r[7])) / 1e3 for r in cr.values()),
              med(float(r[6]) / nfile(r) / 1e3 for r in cr.values()),
              "(%d errors)" % bad if bad else ""))
EOF
	echo "goal (issue 17): cold/direct >= 0.8 with 1 and with 4 readers"
fi

if [[ " $PARTS " == *" mount "* ]]; then
	echo
	echo "== $EPOCHS epochs through tiercache-mount, 4 readers, cache half the data, vs direct (4 streams)"
	if [ -z "$MOUNT_OK" ]; then
		echo "$ME: mount part skipped: needs $O/bin/tiercache-mount, /dev/fuse and fusermount3"
		exit 0
	fi
	mkdir -p "$M"
	HOT=$((DATA_MB / 6))M
	WARM=$((DATA_MB / 3))M
	mount_up() {
		"$O/bin/tiercache-mount" -f small "$M" 2>>"$B/mount.log" &
		MPID=$!
		for _ in $(seq 1 200); do mountpoint -q "$M" && return 0; sleep 0.05; done
		echo "$ME: tiercache-mount did not mount:"
		cat "$B/mount.log"
		exit 0
	}
	mount_down() {
		fusermount3 -u "$M"
		wait "$MPID" 2>/dev/null
		MPID=
	}
	: >"$B/mount.res"
	for r in $(seq 1 "$REPS"); do
		fresh "$MTHRESH" "$HOT" "$WARM"
		mount_up
		for e in $(seq 1 "$EPOCHS"); do
			read -r df dc dosd <<<"$(direct 4)"
			if [ "$REMOUNT" = 1 ] && [ "$e" -gt 1 ]; then
				mount_down
				mount_up
			fi
			counters "$B/ctr.0"
			m0=$(cpu_ns "$MPID")
			[ "$r" = 1 ] && [ "$e" -le 2 ] && perf_on "$PERF/mount-$e.data"
			read -r f rc dmc oc mi er <<<"$(epoch 4 $((100 * r + e)) "$M")"
			perf_off
			mc=$(($(cpu_ns "$MPID") - m0))
			echo "$r $e $df $dc $dosd $f $rc $mc $dmc $oc $mi $er" >>"$B/mount.res"
			printf 'rep %d epoch %d  direct %7.0f files/s   mount %7.0f files/s  (%.2f of direct)  misses %d  errors %d\n' \
				"$r" "$e" "$df" "$f" "$(awk -v a="$f" -v b="$df" 'BEGIN{print b ? a / b : 0}')" "$mi" "$er"
			counters "$B/ctr.1" "$B/ctr.0"
			[ -n "${BENCH_STATUS_DIR:-}" ] && "$O/bin/tierctl" status --json >"$BENCH_STATUS_DIR/status-$r-$e.json" 2>/dev/null
		done
		mount_down
	done
	echo
	echo "medians of $REPS (date $(date -u +%F), $DATA_MB MiB, hot $HOT + warm $WARM, segment_threshold $MTHRESH, remount each epoch: $REMOUNT)"
	echo "CPU us per file: reader (epoch_reader), mount (tiercache-mount), daemon (tiercached); direct: rados_direct, osd"
	python3 - "$B/mount.res" "$EPOCHS" <<'EOF'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = st.median
nf = None
print("%5s %9s %9s %8s %8s %8s %8s %7s" % ("epoch", "direct/s", "mount/s", "e/e1", "per-rep",
      "e/dir", "per-rep", "misses"))
by = {}
for r in rows:
    by.setdefault(int(r[0]), {})[int(r[1])] = r
for e in range(1, int(sys.argv[2]) + 1):
    er = [by[k][e] for k in by if e in by[k]]
    if not er:
        continue
    d, m = med(r[2] for r in er), med(r[5] for r in er)
    m1 = med(by[k][1][5] for k in by if 1 in by[k])
    pe1 = med(r[5] / by[int(r[0])][1][5] for r in er if by[int(r[0])][1][5])
    pd = med(r[5] / r[2] for r in er if r[2])
    print("%5d %9.0f %9.0f %8.2f %8.2f %8.2f %8.2f %7.0f" % (e, d, m, m / m1 if m1 else 0, pe1,
          m / d if d else 0, pd, med(r[10] for r in er)))
EOF
	NFILES=$(wc -l <"$B/names")
	python3 - "$B/mount.res" "$EPOCHS" "$NFILES" <<'EOF'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
n = float(sys.argv[3])
med = st.median
print("CPU us per file (medians): epoch  reader  mount  daemon  osd(mount)  |  direct  osd(direct)")
for e in range(1, int(sys.argv[2]) + 1):
    er = [r for r in rows if int(r[1]) == e]
    if er:
        u = lambda i: med(r[i] for r in er) / n / 1e3
        print("                           %5d %7.0f %6.0f %7.0f %11.0f  | %7.0f %12.0f" % (
              e, u(6), u(7), u(8), u(9), u(3), u(4)))
bad = sum(r[11] for r in rows)
if bad:
    print("(%d read errors)" % bad)
EOF
	echo "goal (issue 17): every epoch faster than epoch 1 and than direct"
fi
