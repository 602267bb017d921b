# Read-ahead of the next files of a directory on a small-file miss
# ([daemon] readahead_files; cached/plan/dir_ahead.c), over RADOS. Checks:
# a miss reads exactly readahead_files neighbours ahead (bounded), in its
# own directory only (not a subdirectory's files, not the next directory);
# files read ahead are then served with no cold read and count as
# prefetch hits; a walk of the directory reads each object once and every
# byte equals the source; a neighbour changed at the source before it was
# read ahead fails only its read-ahead and is served at its new version;
# with a dataset larger than the tier, a miss that is not a step of a walk
# in listing order reads nothing ahead, the next file's miss does;
# read-ahead nobody opens is given up first when the tier needs room
# (prefetch.evicted_unused), the tier stays within its capacity and the
# bytes stay right; readahead_files = 0 reads nothing ahead.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
PP="${RD_PREFIX}da/"
mkdir -p "$T/cold" "$T/src"
python3 - "$T/src" <<'PY'
import os, random, sys
d = sys.argv[1]
r = random.Random(24)
def put(rel):
    p = os.path.join(d, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(os.urandom(r.randint(20, 60) * 1024))
for i in range(24):
    put("a/f%03d.jpg" % i)
for i in range(3):
    put("a/sub/s%d.jpg" % i)   # sorts after a/f*: skipped, not read ahead
for i in range(8):
    put("b/g%03d.jpg" % i)
for i in range(40):
    put("c/h%03d.jpg" % i)     # only for the tier smaller than the data
PY
nfiles=$(find "$T/src" -type f | wc -l)
sum_sizes() { find "$@" -maxdepth 1 -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}'; }
cold_reads() { tc_json "s['counters']['cold_reads']"; }
pf() { tc_json "s['prefetch']['$1']"; }
idle() { [ "$(pf inflight)" = 0 ]; }
ds_section() { # ds_section REVALIDATE [CHUNK_SIZE]
	{
		echo "[dataset rs]"
		echo "backend = rados"
		echo "ceph_conf = $CEPH_CONF"
		echo "pool = $CEPH_POOL"
		echo "prefix = $PP"
		echo "layout = plain"
		echo "chunk_size = ${2:-1M}"
		echo "op_timeout = 5s"
		echo "revalidate_after = $1"
	} >>"$T/tc.conf"
}
readf() { "$TC_TESTS/tcverify" file "rs/$1" "$T/src/$1" >"$T/v.out" 2>&1 || { cat "$T/v.out"; return 1; }; }

# ---- readahead_files = 3, a tier larger than the data ----
TC_DAEMON_CONF=$'readahead_files = 3\nsync_delay = 100ms'
tc_config 64M none 1M
ds_section 0s
tc_start || exit 1
check "import uploads every file" [ "$(rd_import "$T/src" rs)" = "$nfiles 0 0" ]
c0=$(cold_reads)
check "a miss: the bytes equal the source" readf a/f000.jpg
check "...read ahead settles" wait_until 30 idle
check "...exactly 3 neighbours read ahead (1 + 3 cold reads)" [ $(($(cold_reads) - c0)) = 4 ]
check "...counted as dir_ahead" [ "$(pf dir_ahead)" = 3 ]
c1=$(cold_reads)
for f in a/f001.jpg a/f002.jpg a/f003.jpg; do
	check "read ahead $f: bytes equal the source" readf $f
done
check "...served with no cold read" [ "$(cold_reads)" = "$c1" ]
check "...and counted as prefetch hits" [ "$(pf hits)" -ge 3 ]
# change a/f009 at the source before it is read ahead (the manifest still
# names the old version): its read-ahead fails, its open reads the new one
head -c "$(stat -c %s "$T/src/a/f009.jpg")" /dev/urandom >"$T/new.jpg"
sleep 1.1 # RADOS mtimes have 1 s resolution
rd_rados put "${PP}a/f009.jpg" "$T/new.jpg"
cp "$T/new.jpg" "$T/src/a/f009.jpg"
bad=0
for i in $(seq 4 23); do
	readf "a/f$(printf %03d "$i").jpg" || bad=1
done
check "a walk of the directory: every byte equals the source (f009 changed)" [ $bad = 0 ]
wait_until 30 idle
check "each object of a/ read once, nothing of a/sub/ or b/ or c/" \
	[ "$(tc_ds rs "d['bytes_from_cold']")" = "$(sum_sizes "$T/src/a")" ] ||
	echo "   bytes_from_cold $(tc_ds rs "d['bytes_from_cold']") a/ $(sum_sizes "$T/src/a")"
check "no cold read errors (a failed read-ahead is no fault)" \
	[ "$(tc_json "s['counters']['cold_errors']")" = 0 ]
check "no checksum errors" [ "$(tc_json "s['counters']['checksum_errors']")" = 0 ]
tc_stop

# ---- unused read-ahead is given up first; the tier stays in bounds ----
rm -rf "$T/state" "$T/hot"
TC_DAEMON_CONF=$'readahead_files = 4\nsegment_threshold = 0\nsync_delay = 100ms'
tc_config 1M none 1M
ds_section 1h
tc_start || exit 1
c0=$(cold_reads)
check "b/ (the dataset is larger than the tier): a first miss" readf b/g003.jpg
wait_until 30 idle
check "...reads nothing ahead (a shuffled read of more than the cache holds)" \
	[ $(($(cold_reads) - c0)) = 1 ] && [ "$(pf dir_ahead)" = 0 ]
check "b/: the next file, a miss too (a walk)" readf b/g004.jpg
wait_until 30 idle
check "...reads 2 of b/ ahead (a walk's first step: its read-ahead ramps up)" \
	[ "$(pf dir_ahead)" = 2 ]
check "b/g007, just past what was read ahead: a step of the walk" readf b/g007.jpg
c0=$(cold_reads)
check "c/h030 then c/h034 (4 files on; within readahead_files + 1): both read" \
	readf c/h030.jpg && readf c/h034.jpg
wait_until 30 idle
check "...not a walk: nothing read ahead (the walk test does not widen with the depth)" \
	[ $(($(cold_reads) - c0)) = 2 ] && [ "$(pf dir_ahead)" = 2 ]
bad=0
for i in $(seq 0 39); do
	readf "c/h$(printf %03d "$i").jpg" || bad=1
done
check "c/ (2x the tier): every byte equals the source" [ $bad = 0 ]
check "read-ahead nobody opened was evicted (evicted_unused)" [ "$(pf evicted_unused)" -ge 1 ]
wait_until 30 idle
check "hot stays within its capacity" [ "$(tc_json "s['tiers'][0]['used_bytes']")" -le $((1024 * 1024)) ]
tc_stop

# ---- small files: read-ahead bounded by bytes in flight, not count ----
# prefetch_inflight = 2 chunks of 1M: 2 MiB in flight, far more than 2
# files of 20-60 KB; then chunks of 64K: 128 KiB in flight at most
rm -rf "$T/state" "$T/hot"
TC_DAEMON_CONF=$'readahead_files = 20\nprefetch_inflight = 2\nsync_delay = 100ms'
tc_config 64M none 1M
ds_section 1h
tc_start || exit 1
c0=$(cold_reads)
check "bytes bound: a miss, the bytes equal the source" readf a/f000.jpg
check "...read ahead settles" wait_until 30 idle
check "...20 neighbours read ahead, more than prefetch_inflight (1 + 20 cold reads)" \
	[ "$(pf dir_ahead)" = 20 ] && [ $(($(cold_reads) - c0)) = 21 ]
check "...more than 2 in flight at once, within 2 x 1M bytes" \
	[ "$(pf inflight_peak)" -gt 2 ] && [ "$(pf inflight_bytes_peak)" -le $((2 * 1048576)) ]
bad=0
for i in $(seq 1 20); do
	readf "a/f$(printf %03d "$i").jpg" || bad=1
done
check "...files read ahead: bytes equal the source" [ $bad = 0 ]
check "...served with no cold read" [ $(($(cold_reads) - c0)) = 21 ]
tc_stop
rm -rf "$T/state" "$T/hot"
tc_config 64M none 1M
ds_section 1h 64K
tc_start || exit 1
check "64K chunks: a miss, the bytes equal the source" readf a/f000.jpg
check "...read ahead settles" wait_until 30 idle
check "...read-ahead cut by bytes: in flight at most 2 x 64K" \
	[ "$(pf inflight_bytes_peak)" -le $((2 * 65536)) ] && [ "$(pf dir_ahead)" -ge 1 ] &&
	[ "$(pf dir_ahead)" -lt 20 ]
check "...no cold read errors" [ "$(tc_json "s['counters']['cold_errors']")" = 0 ]
tc_stop

# ---- readahead_files = 0: nothing read ahead ----
rm -rf "$T/state" "$T/hot"
TC_DAEMON_CONF=$'readahead_files = 0\nsync_delay = 100ms'
tc_config 64M none 1M
ds_section 1h
tc_start || exit 1
c0=$(cold_reads)
check "off: a miss reads its file" readf b/g005.jpg
check "...and nothing ahead" [ $(($(cold_reads) - c0)) = 1 ] && [ "$(pf dir_ahead)" = 0 ]
check "no cold read errors" [ "$(tc_json "s['counters']['cold_errors']")" = 0 ]
finish
