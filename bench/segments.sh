#!/bin/bash
# Cold misses of many small files (60-140 KB) from a posix cold directory,
# one reader through the library (tcverify tree: open, read, compare), tiers
# smaller than the data so misses evict: file per chunk (segment_threshold
# 0) against segments. Prints files/s and the daemon's CPU per miss
# (utime + stime of tiercached / files), median of RUNS runs each.
# Usage: bench/segments.sh [BUILD_DIR] [FILES] [RUNS] [TIER_ROOT]
# Environment: THRESHOLDS (default "0 512K", the daemon's default) to sweep; MIN_KB / MAX_KB the
# file sizes (default 60 / 140; one 1M chunk each up to 1024).
# Below each median, that run's reclaim and move figures: bytes reclaim
# copied into the same tier and dropped per byte filled, copies (demotions,
# promotions, reclaim's) per segment sync, demotions, fills placed on warm
# because hot had no room then ("-" from a tree without those counters).
set -u
B=${1:-build/default}; N=${2:-2000}; RUNS=${3:-3}; ROOT=${4:-/tmp}
W=$(mktemp -d "$ROOT/tcseg.XXXXXX")
trap 'kill ${PID:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
mkdir -p "$W/cold"
MIN_KB=${MIN_KB:-60}; MAX_KB=${MAX_KB:-140}
python3 - "$W/cold" "$N" "$MIN_KB" "$MAX_KB" <<'PY'
import os, random, sys
r = random.Random(5)
for i in range(int(sys.argv[2])):
    with open(os.path.join(sys.argv[1], "f%05d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(int(sys.argv[3]), int(sys.argv[4])) * 1024))
PY
total=$(du -sb "$W/cold" | cut -f1)
hot=$((total / 3 / 1048576))M; warm=$((total / 3 / 1048576))M
run() { # threshold -> "files/s cpu_us_per_miss"
	rm -rf "$W/state" "$W/hot" "$W/warm"
	cat >"$W/tc.conf" <<CONF
[daemon]
socket = $W/sock
state_dir = $W/state
log_level = warn
workers = 4
segment_threshold = $1
[tier hot]
path = $W/hot
capacity = $hot
[tier warm]
path = $W/warm
capacity = $warm
[dataset ds]
backend = posix
path = $W/cold
chunk_size = 1M
CONF
	"$B/bin/tiercached" -c "$W/tc.conf" >>"$W/log" 2>&1 &
	PID=$!
	for _ in $(seq 1 200); do [ -S "$W/sock" ] && TIERCACHE_SOCKET=$W/sock "$B/bin/tierctl" status >/dev/null 2>&1 && break; sleep 0.05; done
	local c0 t0 t1 c1
	c0=$(awk '{print $14 + $15}' /proc/$PID/stat)
	t0=$(date +%s.%N)
	TIERCACHE_SOCKET=$W/sock "$B/tests/tcverify" tree ds "$W/cold" 1 >/dev/null || echo "BYTES DIFFER" >&2
	t1=$(date +%s.%N)
	c1=$(awk '{print $14 + $15}' /proc/$PID/stat)
	# what the moves and reclaims cost (a tree without these counters: -)
	local extra
	extra=$(TIERCACHE_SOCKET=$W/sock "$B/bin/tierctl" status --json 2>/dev/null | python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
f = max(c["bytes_from_cold"], 1)
g = lambda k: c.get(k)
cp, dr, sy = g("segment_reclaim_copied_bytes"), g("segment_reclaim_dropped_bytes"), g("segment_copy_syncs")
moves = c["demotions"] + c["promotions"] + c["segment_items_kept"]
print("%s %s %s %d %d" % ("-" if cp is None else "%.3f" % (cp / f), "-" if dr is None else "%.3f" % (dr / f),
      "-" if not sy else "%.1f" % (moves / sy), c["demotions"], c["fills_instead"]))' 2>/dev/null)
	kill $PID; wait $PID 2>/dev/null
	python3 -c "import os; hz=os.sysconf('SC_CLK_TCK'); print('%.0f %.0f ${extra:-- - - - -}' % ($N/($t1-$t0), ($c1-$c0)/hz*1e6/$N))"
}
echo "date=$(date -u +%F) files=$N sizes=${MIN_KB}-${MAX_KB}K data=$total hot=$hot warm=$warm root=$ROOT ($(df -T "$ROOT" | awk 'NR==2{print $2}')) load=shared"
for th in ${THRESHOLDS:-0 512K}; do
	rs=(); for i in $(seq 1 "$RUNS"); do rs+=("$(run $th)"); done
	printf '%s\n' "${rs[@]}" | sort -n | awk -v th=$th -v n="$RUNS" '{f[NR]=$1; c[NR]=$2; x[NR]=sprintf("reclaim_copied_per_filled=%s reclaim_dropped_per_filled=%s copies_per_sync=%s demotions=%s fills_instead=%s", $3, $4, $5, $6, $7)} END {m=int((n+1)/2); printf "segment_threshold=%s median files/s=%s daemon_cpu_us_per_miss=%s runs=%d\n", th, f[m], c[m], n; printf "  (that run) %s\n", x[m]}'
done
