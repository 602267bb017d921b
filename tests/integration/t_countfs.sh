# tccountfs, the counted cold directory of the cluster tests: reads through
# the mount return the source's bytes and are counted exactly (whole files,
# reads at offsets, the same file twice: no page cache hides a read), sizes
# and mtimes to the nanosecond are the source's, writes fail with EROFS, and
# it unmounts cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
SRC=$T/src
mkdir -p "$SRC/sub dir"
: >"$SRC/empty.bin"
head -c 1 /dev/urandom >"$SRC/one.bin"
head -c 131071 /dev/urandom >"$SRC/odd.bin"
head -c $((10 * 1024 * 1024)) /dev/urandom >"$SRC/big.bin"
head -c 5000 /dev/urandom >"$SRC/sub dir/five.dat"
touch -d @1614834367.123456789 "$SRC/one.bin"
tc_countfs_start "$SRC" || exit 1

check "count file starts at 0 bytes" [ "$(tc_cold_bytes)" = 0 ]
check "listing equals the source" [ "$(cd "$COLD" && find . | sort)" = "$(cd "$SRC" && find . | sort)" ]
expected=0
for f in empty.bin one.bin odd.bin big.bin "sub dir/five.dat"; do
	check "$f: bytes equal the source" cmp "$COLD/$f" "$SRC/$f"
	expected=$((expected + $(stat -c %s "$SRC/$f")))
	check "$f: size and mtime_ns equal the source's" \
		[ "$(stat -c '%s %.9Y %y' "$COLD/$f")" = "$(stat -c '%s %.9Y %y' "$SRC/$f")" ]
done
check "one.bin keeps its nanoseconds" [ "$(stat -c %.9Y "$COLD/one.bin")" = 1614834367.123456789 ]
check "count file: bytes = every byte read once ($expected)" [ "$(tc_cold_bytes)" = "$expected" ]
check "count file: per-file bytes of big.bin" [ "$(tc_cold_file_bytes /big.bin)" = $((10 * 1024 * 1024)) ]
check "count file: a name with a space is escaped" [ "$(tc_cold_file_bytes '/sub%20dir/five.dat')" = 5000 ]
check "count file: reads counted" [ "$(tc_cold_reads)" -gt 0 ]

# the same file again: counted again (direct_io, nothing kept by the kernel)
before=$(tc_cold_bytes)
check "second read of big.bin matches" cmp "$COLD/big.bin" "$SRC/big.bin"
check "second read of big.bin is counted again" [ "$(tc_cold_bytes)" = $((before + 10 * 1024 * 1024)) ]

# reads at offsets count exactly what was read
before=$(tc_cold_bytes)
dd if="$COLD/big.bin" of="$T/piece" bs=4096 skip=1000 count=37 status=none
dd if="$SRC/big.bin" of="$T/piece.src" bs=4096 skip=1000 count=37 status=none
check "dd at an offset: bytes equal the source" cmp "$T/piece" "$T/piece.src"
dd if="$COLD/odd.bin" of="$T/tail" bs=1000 skip=131 status=none # 71 bytes to EOF
check "dd to EOF: bytes equal the source" cmp "$T/tail" <(tail -c 71 "$SRC/odd.bin")
check "dd reads counted exactly ($((37 * 4096 + 71)) bytes)" [ "$(tc_cold_bytes)" = $((before + 37 * 4096 + 71)) ]
check "per-file bytes: odd.bin read once whole and 71 bytes more" [ "$(tc_cold_file_bytes /odd.bin)" = $((131071 + 71)) ]

# a change of the source is seen at once (no attribute caching)
head -c 777 /dev/urandom >>"$SRC/one.bin"
check "a grown source file shows its new size" [ "$(stat -c %s "$COLD/one.bin")" = 778 ]

# read-only
err=$( { echo x >"$COLD/one.bin"; } 2>&1)
check "writing a file fails with EROFS" grep -q "Read-only file system" <<<"$err"
err=$( { echo x >"$COLD/new.bin"; } 2>&1)
check "creating a file fails with EROFS" grep -q "Read-only file system" <<<"$err"
check "mkdir fails" bash -c "! mkdir '$COLD/d' 2>/dev/null"
check "rm fails" bash -c "! rm -f '$COLD/one.bin' 2>/dev/null"
check "the source is untouched" bash -c "[ -f '$SRC/one.bin' ] && [ ! -e '$SRC/new.bin' ]"

pid=$COUNTFS_PID
check "unmounts cleanly and tccountfs exits" tc_countfs_stop
check "the mount is gone" bash -c "! mountpoint -q '$COLD'"
check "the process is gone" bash -c "! kill -0 $pid 2>/dev/null"
finish
