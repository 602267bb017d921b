# Small chunks from RADOS that no tier keeps (the `epoch` policy with tiers
# smaller than the data: once they are full, its misses are served, not
# kept) go to a sealed memfd written on librados' completion thread, not
# to a file created and unlinked on a tier (cached/cache/fill.c,
# place_unkept and fill_io_done). Checks that this path keeps every
# guarantee: 4 readers at once over two epochs read the bytes of the
# source; misses were served unkept; while readers hold unkept chunks they
# are in memory (each held descriptor reads its file's bytes); the memory
# goes back with the last descriptor; no file is left in the tiers' tmp
# directories; no checksum or cold read error.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
PP="${RD_PREFIX}unkept/"
mkdir -p "$T/cold" "$T/src"
rd_small_tree "$T/src" 27
nfiles=$(find "$T/src" -type f | wc -l)
ctr() { tc_json "s['counters']['$1']"; }
held_unlinked() { tc_json "sum(t['held_unlinked_bytes'] for t in s['tiers'])"; }

# tiers of 2M + 3M for about 13M of files: the epoch policy fills them and
# serves the rest unkept
TC_DAEMON_CONF=$'segment_threshold = 256K\nsegment_size = 1M\nsync_delay = 100ms'
tc_config 2M 3M 1M
rd_dataset rs "$PP" plain 1M "policy = epoch"
# a wide band between the policies' budget (low mark) and the high mark,
# where an unkept chunk of any size went before (and a large one still goes)
sed -i 's/^low_water = 70$/low_water = 30/' "$T/tc.conf"
tc_start || exit 1
check "import uploads every file" [ "$(rd_import "$T/src" rs)" = "$nfiles 0 0" ]

for e in 1 2; do
	pids=
	for i in 1 2 3 4; do
		"$TC_TESTS/tcverify" tree rs "$T/src" "$((10 * e + i))" >"$T/v$e$i.out" 2>&1 &
		pids="$pids $!"
	done
	bad=0
	for p in $pids; do wait "$p" || bad=1; done
	check "epoch $e, 4 concurrent readers: every byte equals the source" [ $bad = 0 ]
	[ $bad = 0 ] || cat "$T"/v$e?.out
done

# ---- readers that hold unkept chunks: in memory, not on a tier ----
# 48 readers each open one file and hold its descriptor 12 s. Which files
# a full tier serves unkept depends on what the epochs left resident (the
# readers' timing), so up to three sets of 48 are tried, until one holds
# some unkept chunks.
all_holding() { [ "$(cat "$T"/hold*.out 2>/dev/null | grep -c holding)" = "$n" ]; }
holders=()
n=0
unkept=0
bad=0
for set in "tail -n 48" "head -n 48" "sed -n 57,104p"; do
	for p in "${holders[@]}"; do wait "$p" || bad=1; done
	rm -f "$T"/hold*.out
	holders=()
	n=0
	u0=$(ctr served_unkept)
	for f in $(cd "$T/src" && find . -type f | sed 's|^\./||' | sort | $set); do
		n=$((n + 1))
		# each holds its file's descriptor 12 s, then reads the bytes through it
		"$TC_TESTS/tcverify" holdcheck "rs/$f" "$T/src/$f" 12 >"$T/hold$n.out" 2>&1 &
		holders+=($!)
	done
	wait_until 10 all_holding
	check "$n readers hold their files ($set)" all_holding
	unkept=$(($(ctr served_unkept) - u0))
	ram=$(tc_json "s['daemon']['unkept_ram_bytes']")
	unl=$(held_unlinked)
	echo "  held ($set): $unkept of $n served unkept; $ram bytes in memory, $unl unlinked on the tiers"
	[ "$unkept" -gt 0 ] && break
done
check "some held files were served unkept" [ "$unkept" -gt 0 ]
# (files are at least 20 KiB; a tier's unlinked bytes may also be kept
# chunks evicted while held, so they are printed, not checked)
check "... their bytes are in memory" [ "$ram" -ge $((unkept * 20 * 1024)) ]
check "no unkept file in the tiers' tmp directories" \
	[ "$(find "$T/hot/tmp" "$T/warm/tmp" -type f 2>/dev/null | wc -l)" = 0 ]
for p in "${holders[@]}"; do wait "$p" || bad=1; done
check "each held descriptor still reads its file's bytes" [ $bad = 0 ]
[ $bad = 0 ] || cat "$T"/hold*.out
ram_free() { [ "$(tc_json "s['daemon']['unkept_ram_bytes']")" = 0 ]; }
wait_until 10 ram_free
check "memory released with the last descriptor" [ "$(tc_json "s['daemon']['unkept_ram_bytes']")" = 0 ]
check "a third epoch: every byte equals the source" "$TC_TESTS/tcverify" tree rs "$T/src" 31
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
check "no cold read errors" [ "$(ctr cold_errors)" = 0 ]
finish
