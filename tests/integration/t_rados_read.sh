# RADOS datasets end to end: `tierctl import` a tree into a plain and a
# striper dataset, check the pool holds exactly the source (`rados get`),
# then read every file through tiercached and compare with what `rados get`
# returned. Partial reads of a large striped file fetch only the chunks
# they cover (a chunk that straddles two RADOS objects included); a file
# of one chunk is fetched while its open revalidates; the second pass is
# all hits.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
MiB=1048576
# the open-ahead counts below are exact with no read-ahead of a file's
# neighbours (t_rados_dir_ahead covers that)
TC_DAEMON_CONF='readahead_files = 0'
tc_config 256M none 1M
mkdir -p "$T/cold"
echo "posix beside rados" >"$T/cold/p.txt"
PP="${RD_PREFIX}plain/"
PS="${RD_PREFIX}striped/"
rd_dataset rp "$PP" plain 1M
# 3 MiB chunks over 4 MiB RADOS objects: chunk 1 (3-6 MiB) spans two objects
rd_dataset rs "$PS" striper 3M
tc_gen_tree "$T/src" $MiB few
SHARD=$((20 * MiB + 12345))
head -c $SHARD /dev/urandom >"$T/src/shard.bin"
nfiles=$(find "$T/src" -type f | wc -l)
total=$(find "$T/src" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
tc_start || exit 1

check "import into the plain dataset uploads every file" [ "$(rd_import "$T/src" rp)" = "$nfiles 0 0" ]
check "import into the striper dataset uploads every file" [ "$(rd_import "$T/src" rs)" = "$nfiles 0 0" ]
check "plain layout: one object per file" [ "$(rd_objects "$PP" | wc -l)" = "$nfiles" ]
stat_size() { rd_rados stat "$1" | grep -q "size $2\$"; }
check "plain layout: the 20 MiB file is one object" stat_size "${PP}shard.bin" $SHARD
check "striper layout: files are .0000000000000000 objects" \
	[ "$(rd_objects "$PS" | grep -c '\.0000000000000000$')" = "$nfiles" ]
check "striper layout: the 20 MiB file is 6 RADOS objects" \
	[ "$(rd_objects "${PS}shard.bin." | wc -l)" = 6 ]

# What the pool holds, read without tiercache. (Done before any read
# through the cache: a striper read bumps the first object's version.)
get_same() { rd_get_tree "$1" "$2" && diff -r "$T/src" "$2"; }
check "rados get of the plain dataset equals the source" get_same "$PP" "$T/got-plain"
check "rados --striper get of the striper dataset equals the source" get_same "$PS" "$T/got-striped"
check "tierctl status: both rados datasets available" \
	[ "$(tc_ds rp "d['available']") $(tc_ds rs "d['available']")" = "True True" ]
check "the striper dataset lists the file once, with its logical size" \
	bash -c "'$TC_BIN/tierctl' stat rs/shard.bin | grep -q '^size *$SHARD '"

# ---- partial reads fetch only the chunks they cover ----
cold() { tc_ds "$1" "d['bytes_from_cold']"; }
cold_reads() { tc_json "s['counters']['cold_reads']"; }
# range_ok DATASET OFF LEN: the bytes [OFF, OFF+LEN) of shard.bin match
range_ok() {
	tc_pread "$1/shard.bin" "$2" "$3" "$T/range" && [ "$(stat -c %s "$T/range")" = "$3" ] &&
		cmp -s -n "$3" -i "$2:0" "$T/src/shard.bin" "$T/range"
}
c0=$(cold rs)
r0=$(cold_reads)
check "striped: 200 bytes across the 4 MiB object boundary match" range_ok rs $((4 * MiB - 100)) 200
check "striped: ...fetched one 3 MiB chunk from cold" [ $(($(cold rs) - c0)) = $((3 * MiB)) ]
check "striped: ...in one cold read" [ $(($(cold_reads) - r0)) = 1 ]
check "striped: 10 bytes at 13 MiB match" range_ok rs $((13 * MiB)) 10
check "striped: ...fetched one more chunk" [ $(($(cold rs) - c0)) = $((6 * MiB)) ]
check "striped: the last 12345 bytes match" range_ok rs $((20 * MiB)) 12345
check "striped: ...fetched only the short last chunk" [ $(($(cold rs) - c0)) = $((8 * MiB + 12345)) ]
check "striped: reading a cached range again" range_ok rs $((4 * MiB - 50)) 100
check "striped: ...fetched nothing" [ $(($(cold rs) - c0)) = $((8 * MiB + 12345)) ]
check "striped: ...3 cold reads in all" [ $(($(cold_reads) - r0)) = 3 ]
check "striped: 3 chunks of 7 resident" [ "$(tc_ds rs "d['resident_hot_bytes']")" = $((8 * MiB + 12345)) ]
c0=$(cold rp)
check "plain: 1 MiB from 2.5 MiB matches" range_ok rp $((5 * MiB / 2)) $MiB
check "plain: ...fetched the two 1 MiB chunks it covers" [ $(($(cold rp) - c0)) = $((2 * MiB)) ]
check "plain: 1 byte at 19 MiB + 5" range_ok rp $((19 * MiB + 5)) 1
check "plain: ...fetched one more chunk" [ $(($(cold rp) - c0)) = $((3 * MiB)) ]

# ---- every file, whole and by random preads, against `rados get` ----
# Every open here waits for a revalidation stat (revalidate_after = 0s);
# a file of one chunk has that chunk fetched meanwhile (open-ahead): the
# non-empty files up to the chunk size, 5 in rp (1 MiB chunks), 6 in rs
# (3 MiB chunks: chunk_plus.bin too). Each once: a second open finds it.
issued() { tc_json "s['prefetch']['open_ahead']"; }
i0=$(issued)
check "plain: every file through tiercache equals rados get" \
	"$TC_TESTS/tcverify" tree rp "$T/got-plain" 1
check "plain: the 5 one-chunk files fetched during their open's stat ($(($(issued) - i0)))" \
	[ $(($(issued) - i0)) = 5 ]
i0=$(issued)
check "striper: every file through tiercache equals rados --striper get" \
	"$TC_TESTS/tcverify" tree rs "$T/got-striped" 1
check "striper: the 6 one-chunk files fetched during their open's stat ($(($(issued) - i0)))" \
	[ $(($(issued) - i0)) = 6 ]
check "plain: each byte read from cold once" [ "$(cold rp)" = "$total" ]
check "striper: each byte read from cold once" [ "$(cold rs)" = "$total" ]
m1=$(tc_json "s['counters']['misses']")
check "second pass, plain: bytes match" "$TC_TESTS/tcverify" tree rp "$T/src" 2
check "second pass, striper: bytes match" "$TC_TESTS/tcverify" tree rs "$T/src" 2
check "second pass: no misses" [ "$(tc_json "s['counters']['misses']")" = "$m1" ]
check "second pass: nothing more from cold" [ "$(cold rp) $(cold rs)" = "$total $total" ]
check "second pass: hits counted" [ "$(tc_ds rs "d['hits']")" -gt 0 ]
check "no cold errors" [ "$(tc_json "s['counters']['cold_errors']")" = 0 ] || grep -E "level=(warn|err)" "$T/daemon.log"
check "the posix dataset beside them" "$TC_TESTS/tcverify" tree ds "$T/cold"
check "tierctl cat of a striped file" bash -c "'$TC_BIN/tierctl' cat rs/shard.bin | cmp - '$T/src/shard.bin'"
finish
