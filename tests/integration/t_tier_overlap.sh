# A tier directory that is, or reaches, the cold directory (issue #16 item
# 4): through a symlink the paths differ as written but not on disk. The
# config check and the daemon's start compare them resolved (realpath, then
# device and inode) and refuse; a tier directory that is not empty and has
# no tiercache marker is refused, not emptied; the daemon's own reconcile
# deletes only files of its own naming. Every cold file stays, byte for byte.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/cold/sub"
for i in 1 2 3; do head -c $((300000 * i)) /dev/urandom >"$T/cold/f$i.bin"; done
echo "a note" >"$T/cold/sub/notes.txt"
(cd "$T/cold" && find . -type f -exec sha256sum {} + | sort) >"$T/cold.sums"
cold_intact() { [ "$(cd "$T/cold" && find . -type f -exec sha256sum {} + | sort)" = "$(cat "$T/cold.sums")" ]; }

# (a) hot.path is a symlink to the dataset's cold directory
ln -s "$T/cold" "$T/hot"
tc_config 64M none 256K
"$TC_BIN/tiercached" -c "$T/tc.conf" --check-config >"$T/check.out" 2>&1
rc=$?
check "check-config: a tier symlinked to the cold dir exits 78 (got $rc)" [ "$rc" = 78 ]
check "check-config names both paths, resolved" \
	grep -q "hot: path \"$T/hot\" (resolved: \"$T/cold\") is the same directory as dataset.ds's path \"$T/cold\"" "$T/check.out"
"$TC_BIN/tiercached" -c "$T/tc.conf" >"$T/start.out" 2>&1
rc=$?
# the daemon loads its config with the same check (and looks again before
# it touches a tier directory)
check "the daemon refuses to start (exit $rc)" [ "$rc" = 78 ]
check "... saying why, with both paths" grep -q "hot: path \"$T/hot\" (resolved: \"$T/cold\") is the same directory as" "$T/start.out"
check "every cold file is still there, byte for byte" cold_intact
check "no marker, chunks/ or tmp/ in the cold dir" [ ! -e "$T/cold/.tiercache-tier" ] && [ ! -e "$T/cold/chunks" ] && [ ! -e "$T/cold/tmp" ]

# the symlink points inside the cold dir: a tier inside it
rm "$T/hot"
ln -s "$T/cold/sub" "$T/hot"
"$TC_BIN/tiercached" -c "$T/tc.conf" --check-config >"$T/check.out" 2>&1
rc=$?
check "check-config: a tier reaching inside the cold dir exits 78 (got $rc)" [ "$rc" = 78 ]
check "... 'is inside'" grep -q "is inside dataset.ds's path" "$T/check.out"
# the check passes when the symlink is made later (paths change between
# check and start): the daemon looks again at start
rm "$T/hot"
mkdir "$T/hot"
check "check-config passes for a plain directory" "$TC_BIN/tiercached" -c "$T/tc.conf" --check-config
rmdir "$T/hot"
ln -s "$T/cold" "$T/hot"
"$TC_BIN/tiercached" -c "$T/tc.conf" >"$T/start.out" 2>&1
check "a symlink made after check-config: the start still refuses" grep -q "is the same directory as dataset.ds's path" "$T/start.out"
check "every cold file is still there after the refused starts" cold_intact
rm "$T/hot"

# (b) hot.path is a foreign non-empty directory
mkdir -p "$T/hot/chunks/ab"
echo "someone's data" >"$T/hot/data.csv"
echo "someone's readme" >"$T/hot/chunks/ab/readme"
"$TC_BIN/tiercached" -c "$T/tc.conf" >"$T/start.out" 2>&1
rc=$?
check "a non-empty directory without a marker: refused (exit $rc)" [ "$rc" = 1 ]
check "... with the message that says what to do" \
	grep -q "$T/hot is not empty and has no tiercache marker; refusing to touch it; point hot.path at an empty directory or move its contents" "$T/start.out"
check "its files are untouched" [ "$(cat "$T/hot/data.csv")" = "someone's data" ] && [ "$(cat "$T/hot/chunks/ab/readme")" = "someone's readme" ]
check "nothing written into it" [ ! -e "$T/hot/.tiercache-tier" ] && [ ! -e "$T/hot/tmp" ] && [ ! -e "$T/hot/chunks/00" ]
rm -rf "$T/hot"

# (c) a normal start writes the marker; a restart keeps it; files the
# daemon did not make survive its reconcile
tc_start || exit 1
check "the marker is written" grep -q "^tiercache tier marker v1$" "$T/hot/.tiercache-tier"
check "... naming the tier" grep -q "^tier=hot$" "$T/hot/.tiercache-tier"
id1=$(sed -n 's/^id=//p' "$T/hot/.tiercache-tier")
check "... with a 32-hex id" [ "${#id1}" = 32 ]
check "reads through the cache match the source" "$TC_TESTS/tcverify" tree ds "$T/cold"
tc_stop
echo "not the daemon's" >"$T/hot/notes.txt"
echo "not a chunk" >"$T/hot/chunks/ab/readme"
echo "odd" >"$T/hot/chunks/00/0000000000000000.chunk.bak"
tc_start || exit 1
check "restart works" "$TC_TESTS/tcverify" tree ds "$T/cold"
check "TIER/notes.txt survives the restart" [ "$(cat "$T/hot/notes.txt")" = "not the daemon's" ]
check "TIER/chunks/ab/readme survives the restart" [ "$(cat "$T/hot/chunks/ab/readme")" = "not a chunk" ]
check "an odd name under chunks/00 survives" [ -f "$T/hot/chunks/00/0000000000000000.chunk.bak" ]
check "the marker keeps its id" [ "$(sed -n 's/^id=//p' "$T/hot/.tiercache-tier")" = "$id1" ]
tc_stop
# an orphan of the daemon's own naming is still removed
orphan=$T/hot/chunks/12/1234567890abcdef.chunk
echo "orphan" >"$orphan"
tc_start || exit 1
check "an orphan chunk file of the daemon's naming is removed" [ ! -e "$orphan" ]
tc_stop

# an install from before markers (chunks/ and tmp/ only) is adopted
rm -f "$T/hot/.tiercache-tier" "$T/hot/notes.txt" "$T/hot/chunks/ab/readme" "$T/hot/chunks/00/"*.bak
tc_start || exit 1
check "an earlier version's tier gets a marker" grep -q "^tier=hot$" "$T/hot/.tiercache-tier"
check "... and its chunks are still served" "$TC_TESTS/tcverify" tree ds "$T/cold"
check "every cold file is still there at the end" cold_intact
finish
