# RADOS datasets whose objects change: re-running `tierctl import` uploads
# only what changed locally (an unchanged re-import rewrites nothing, so the
# cache stays valid), and an object overwritten or removed behind the
# daemon's back is served new on the next open (revalidate_after = 0s), in
# both layouts, without a `tierctl refresh`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
MiB=1048576
tc_config 256M none 1M
mkdir -p "$T/cold"
echo "posix" >"$T/cold/p.txt"
PP="${RD_PREFIX}plain/"
PS="${RD_PREFIX}striped/"
rd_dataset rp "$PP" plain 1M
rd_dataset rs "$PS" striper 1M
tc_gen_tree "$T/src" $MiB few
nfiles=$(find "$T/src" -type f | wc -l)
tree_bytes() { find "$1" -type f -printf '%s\n' | awk '{s+=$1} END {print s + 0}'; }
total=$(tree_bytes "$T/src")
cold() { tc_ds "$1" "d['bytes_from_cold']"; }
tc_start || exit 1

# ---- re-import ----
for ds in rp rs; do
	check "$ds: first import uploads every file" [ "$(rd_import "$T/src" $ds)" = "$nfiles 0 0" ]
	check "$ds: every file read through the cache" "$TC_TESTS/tcverify" tree $ds "$T/src" 1
	check "$ds: ...each byte from cold once" [ "$(cold $ds)" = "$total" ]
	check "$ds: re-import of an unchanged tree uploads nothing" \
		[ "$(rd_import "$T/src" $ds)" = "0 $nfiles 0" ]
	check "$ds: ...and rewrites nothing: the cache is still valid" "$TC_TESTS/tcverify" tree $ds "$T/src" 2
	check "$ds: ...no new cold bytes" [ "$(cold $ds)" = "$total" ]
done

head -c $((3 * MiB + 12345)) /dev/urandom >"$T/src/sub/multi.bin" # same size, new bytes
head -c 777 /dev/urandom >>"$T/src/chunk_minus.bin"                # grown
head -c 5000 /dev/urandom >"$T/src/new.bin"                        # new
changed=$((3 * MiB + 12345 + MiB - 1 + 777 + 5000))
for ds in rp rs; do
	c0=$(cold $ds)
	check "$ds: re-import uploads the 3 changed files only" \
		[ "$(rd_import "$T/src" $ds)" = "3 $((nfiles - 2)) 0" ]
	check "$ds: the cache serves the new tree" "$TC_TESTS/tcverify" tree $ds "$T/src" 3
	check "$ds: ...fetching only the changed files again" [ $(($(cold $ds) - c0)) = $changed ]
done
nfiles=$((nfiles + 1))
get_same() { rd_get_tree "$1" "$2" && diff -r "$T/src" "$2"; }
check "the plain pool holds the new tree (rados get)" get_same "$PP" "$T/got-plain"
check "the striper pool holds the new tree (rados --striper get)" get_same "$PS" "$T/got-striped"
for ds in rp rs; do
	check "$ds: after the rados gets, the cache still serves the tree" "$TC_TESTS/tcverify" tree $ds "$T/src" 4
done

# ---- objects changed behind the daemon's back: no refresh, no import ----
cp -a "$T/src" "$T/want"
head -c $((3 * MiB + 12345)) /dev/urandom >"$T/want/sub/multi.bin"
head -c 1000 /dev/urandom >"$T/want/chunk_plus.bin"
rm "$T/want/one.bin"
rd_rados put "${PP}sub/multi.bin" "$T/want/sub/multi.bin"
rd_rados put "${PP}chunk_plus.bin" "$T/want/chunk_plus.bin"
rd_rados rm "${PP}one.bin"
# (a striper put of a smaller file leaves the old data objects behind:
# remove the file first, as a writer replacing it would)
{
	rd_rados --striper rm "${PS}chunk_plus.bin"
	rd_rados --striper put "${PS}sub/multi.bin" "$T/want/sub/multi.bin"
	rd_rados --striper put "${PS}chunk_plus.bin" "$T/want/chunk_plus.bin"
	rd_rados --striper rm "${PS}one.bin"
} 2>>"$T/rados-cli.err"
for ds in rp rs; do
	c0=$(cold $ds)
	check "$ds: tierctl cat of an overwritten file serves the new bytes" \
		bash -c "'$TC_BIN/tierctl' cat $ds/sub/multi.bin | cmp - '$T/want/sub/multi.bin'"
	check "$ds: ...fetched from cold once" [ $(($(cold $ds) - c0)) = $((3 * MiB + 12345)) ]
	# stat, like open, must not answer from an entry older than
	# revalidate_after (a FUSE getattr would show the old size)
	check "$ds: tierctl stat of a shrunk file (not opened yet) shows its new size" \
		bash -c "'$TC_BIN/tierctl' stat $ds/chunk_plus.bin | grep -q '^size *1000 '"
	check "$ds: ...its new bytes" "$TC_TESTS/tcverify" file $ds/chunk_plus.bin "$T/want/chunk_plus.bin"
	check "$ds: ...and after the open, its new size" \
		bash -c "'$TC_BIN/tierctl' stat $ds/chunk_plus.bin | grep -q '^size *1000 '"
	check "$ds: a removed object is ENOENT" "$TC_TESTS/tcverify" errno $ds/one.bin ENOENT
done
check "no cold errors" [ "$(tc_json "s['counters']['cold_errors']")" = 0 ]
check "the posix dataset is untouched" "$TC_TESTS/tcverify" tree ds "$T/cold"
finish
