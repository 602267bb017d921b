# Batched opens of a RADOS dataset (tiercache_open_many; docs/client.md),
# where every open revalidates on a worker (revalidate_after = 0s): the
# one reply waits for all of them. Every byte read equals the source; a
# file removed from the pool is ENOENT in its record and the others are
# served; a file rewritten in the pool opens at its new version; a client
# that goes away while its batch waits on a stopped OSD leaves the daemon
# serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
OM=$TC_TESTS/tcopenmany
# exact hit/miss counts: no read-ahead of a directory's next files
TC_DAEMON_CONF='readahead_files = 0'
tc_config 64M none 1M
P="${RD_PREFIX}om/"
rd_dataset rp "$P" plain 1M
mkdir -p "$T/src/d"
for i in $(seq -w 0 79); do head -c $((2000 + 10#$i * 1733)) /dev/urandom >"$T/src/d/f$i"; done
mkdir -p "$T/src/e"
for i in $(seq -w 0 19); do head -c $((3000 + 10#$i * 977)) /dev/urandom >"$T/src/e/g$i"; done
tc_start || exit 1
check "import uploads the 100 files" [ "$(rd_import "$T/src" rp)" = "100 0 0" ]
# hits / misses: "H M"
hm() { tc_json "'%d %d' % (s['counters']['hits_hot'] + s['counters']['hits_warm'], s['counters']['misses'])"; }

"$OM" dir rp/d "$T/src/d" 80 >"$T/out" 2>&1
cat "$T/out"
check "80 files, every open revalidated, every byte equal" \
	grep -qx "opened=80 errors=0 mismatched=0" "$T/out"
check "two OPEN_MANY frames" [ "$(tc_json "s['counters']['open_many_frames']")" -eq 2 ]
# each open started its chunk's fill while its stat ran: a miss, found
# resident or not when the stat came back
check "the first read of 80 files counts 80 misses and no hit ($(hm))" [ "$(hm)" = "0 80" ]
# the same for single opens (TC_OP_OPEN), one file at a time
ok_e=0
for i in $(seq -w 0 19); do
	"$TC_BIN/tierctl" cat "rp/e/g$i" | cmp -s - "$T/src/e/g$i" && ok_e=$((ok_e + 1))
done
check "20 single opens, every byte equal ($ok_e)" [ "$ok_e" = 20 ]
check "...20 more misses and still no hit ($(hm))" [ "$(hm)" = "0 100" ]

# one removed, one rewritten in the pool: each answered on its own
rd_rados rm "${P}d/f03"
rm "$T/src/d/f03"
head -c 7777 /dev/urandom >"$T/src/d/f04"
rd_rados put "${P}d/f04" "$T/src/d/f04"
"$OM" check rp/d/f03 rp/d/f04="$T/src/d/f04" rp/d/f05="$T/src/d/f05" >"$T/out" 2>&1
cat "$T/out"
check "removed from the pool: ENOENT" grep -qx "rp/d/f03 ENOENT" "$T/out"
check "rewritten in the pool: read at its new version" grep -qx "rp/d/f04 ok" "$T/out"
check "the third file of the batch served" grep -qx "rp/d/f05 ok" "$T/out"

# a client gone while its batch waits for revalidations on a stopped OSD
rd_osd_stop
"$OM" dir rp/d "$T/src/d" 64 >"$T/out" 2>&1 &
cpid=$!
sleep 1
kill -9 "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
rd_osd_start
check "the daemon is alive after the client left mid-batch" kill -0 "$TC_PID"
wait_until 60 rd_pool_writable
ok2() { "$OM" dir rp/d "$T/src/d" 10 2>/dev/null | grep -q "errors=0 mismatched=0"; }
check "after the OSD is back, a batch reads equal to the source" wait_until 60 ok2
finish
