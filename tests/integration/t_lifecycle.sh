# tierctl lifecycle run: demotes hot chunks not read for demote_after to
# warm and drops warm chunks not read for evict_after, per dataset with the
# [daemon] defaults; --older-than overrides both; --dry-run changes
# nothing. Ages are measured to --as-of (a time in the future), so nothing
# sleeps to age data.
. "$(dirname "$0")/lib.sh"

CS=262144
mkdir -p "$T/cold" "$T/cold2" "$T/cold3"
for i in 1 2 3; do head -c $((CS + i * 100)) /dev/urandom >"$T/cold/a$i.bin"; done
for i in 1 2; do head -c $((2 * CS)) /dev/urandom >"$T/cold2/b$i.bin"; done
head -c 5000 /dev/urandom >"$T/cold3/c.bin"
A=$((3 * CS + 600))
B=$((4 * CS))

tierctl() { "$TC_BIN/tierctl" "$@"; }
dsf() { tc_json "[d for d in s['datasets'] if d['name'] == '$1'][0]['$2']"; }
where() { echo "$(dsf "$1" resident_hot_bytes) $(dsf "$1" resident_warm_bytes)"; }
rj() {
	local expr=$1
	shift
	tierctl "$@" --json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); r=j['result']; print($expr)"
}
read_all() {
	for f in "$T"/cold/*.bin; do "$TC_TESTS/tcverify" file "ds/$(basename "$f")" "$f" >/dev/null || return 1; done
	for f in "$T"/cold2/*.bin; do "$TC_TESTS/tcverify" file "ds2/$(basename "$f")" "$f" >/dev/null || return 1; done
	"$TC_TESTS/tcverify" file ds3/c.bin "$T/cold3/c.bin" >/dev/null
}

# ds: demote after 1h, drop after 1d; ds2: demote after 3h, never dropped;
# ds3: the [daemon] defaults (30m, 2d)
tc_config 16M 16M 256K "demote_after = 1h" "evict_after = 1d"
sed -i "s|^\[tier hot\]|demote_after = 30m\nevict_after = 2d\n[tier hot]|" "$T/tc.conf"
cat >>"$T/tc.conf" <<EOF
[dataset ds2]
path = $T/cold2
chunk_size = 256K
demote_after = 3h
evict_after = off
[dataset ds3]
path = $T/cold3
chunk_size = 256K
EOF
tc_start || exit 1
check "read everything (all on hot)" read_all
check "ds on hot" [ "$(where ds)" = "$A 0" ]
check "ds2 on hot" [ "$(where ds2)" = "$B 0" ]

thr=$(tierctl lifecycle run --dry-run --json | python3 -c "import json,sys; j=json.load(sys.stdin); print(' '.join('%s:%d:%d' % (d['name'], d['demote_after_s'], d['evict_after_s']) for d in j['datasets']))")
check "thresholds per dataset, ds3 from [daemon] ($thr)" [ "$thr" = "ds:3600:86400 ds2:10800:0 ds3:1800:172800" ]

check "now: nothing is old enough" [ "$(rj "r['moved_chunks'], r['dropped_chunks']" lifecycle run)" = "0 0" ]

# in 2h: ds (1h) and ds3 (30m) are past demote_after, ds2 (3h) is not
out=$(rj "r['moved_bytes'], r['dropped_bytes']" lifecycle run --dry-run --as-of +2h)
check "dry run in 2h would demote ds and ds3 exactly ($out)" [ "$out" = "$((A + 5000)) 0" ]
check "... and changed nothing" [ "$(where ds) / $(where ds2) / $(where ds3)" = "$A 0 / $B 0 / 5000 0" ]
tierctl lifecycle run --as-of +2h >"$T/lc1.out" 2>&1
check "lifecycle run exits 0" [ $? -eq 0 ]
check "it prints what it demoted" grep -qE "demoted to warm +7 chunks" "$T/lc1.out"
check "ds is on warm now" [ "$(where ds)" = "0 $A" ]
check "ds3 is on warm now" [ "$(where ds3)" = "0 5000" ]
check "ds2 stays on hot" [ "$(where ds2)" = "$B 0" ]
check "demotions counted" [ "$(tc_json "s['counters']['demotions']")" = 7 ]

# --dataset limits the run
out=$(rj "r['moved_chunks'], r['dropped_chunks']" lifecycle run --dataset ds2 --as-of +2d --dry-run)
check "--dataset ds2 in 2d would demote its 4 chunks only ($out)" [ "$out" = "4 0" ]

# in 30h: ds's warm chunks are past evict_after (1d), ds3's not (2d);
# ds2 is past demote_after and never dropped
tierctl lifecycle run --as-of +30h >"$T/lc2.out" 2>&1
check "ds was dropped" [ "$(where ds)" = "0 0" ]
check "ds3 stays on warm (2d not reached)" [ "$(where ds3)" = "0 5000" ]
check "ds2 was demoted, not dropped" [ "$(where ds2)" = "0 $B" ]
check "it prints what it dropped" grep -qE "dropped +6 chunks" "$T/lc2.out"
check "ds reads the source bytes again" "$TC_TESTS/tcverify" file ds/a2.bin "$T/cold/a2.bin"

# --older-than overrides both thresholds: ds2's warm data goes even
# though its evict_after is off
out=$(rj "r['dropped_chunks']" lifecycle run --dataset ds2 --older-than 1h --as-of +2h)
check "--older-than 1h drops ds2's warm chunks ($out)" [ "$out" = 4 ]
check "ds2 is empty" [ "$(where ds2)" = "0 0" ]
check "ds2 reads the source bytes again" "$TC_TESTS/tcverify" file ds2/b1.bin "$T/cold2/b1.bin"
out=$(rj "r['moved_chunks'], r['dropped_chunks']" lifecycle run --older-than 7d --as-of +2h)
check "--older-than 7d moves nothing ($out)" [ "$out" = "0 0" ]

# no warm tier: hot data past evict_after is dropped
tc_stop
rm -rf "$T/state" "$T/hot" "$T/warm"
tc_config 16M none 256K "demote_after = 1h" "evict_after = 1d"
tc_start || exit 1
"$TC_TESTS/tcverify" file ds/a1.bin "$T/cold/a1.bin" >/dev/null
out=$(rj "r['moved_chunks'], r['dropped_chunks']" lifecycle run --as-of +2h)
check "no warm tier: nothing to demote to, not yet dropped ($out)" [ "$out" = "0 0" ]
out=$(rj "r['dropped_chunks']" lifecycle run --as-of +25h)
check "no warm tier: dropped past evict_after ($out)" [ "$out" = 2 ]

"$TC_TESTS/tcverify" file ds/a1.bin "$T/cold/a1.bin" >/dev/null
tierctl demote ds/a1.bin --to warm >/dev/null 2>"$T/e0"
check "demote without a warm tier: exit 1" [ $? -eq 1 ]
check "... says there is no warm tier" grep -q "no warm tier" "$T/e0"

# bad input
tierctl lifecycle run --older-than 5x >/dev/null 2>"$T/e1"
check "bad duration: usage error" [ $? -eq 2 ]
check "... says what a duration is" grep -q "is not a duration" "$T/e1"
tierctl lifecycle run --as-of yesterday >/dev/null 2>"$T/e2"
check "bad --as-of: usage error" [ $? -eq 2 ]
tierctl lifecycle run --dataset nope >/dev/null 2>"$T/e3"
check "unknown dataset: exit 1" [ $? -eq 1 ]
check "... says so" grep -q 'no dataset named "nope"' "$T/e3"
tierctl lifecycle >/dev/null 2>"$T/e4"
check "lifecycle without run: usage error" [ $? -eq 2 ]
tc_stop
sed -i 's|^demote_after = 1h|demote_after = soon|' "$T/tc.conf"
"$TC_BIN/tiercached" -c "$T/tc.conf" --check-config >/dev/null 2>"$T/e5"
check "a bad demote_after in the config is refused (exit 78)" [ $? -eq 78 ]
check "... naming the key" grep -q 'dataset.ds.demote_after: "soon" is not a duration' "$T/e5"
finish
