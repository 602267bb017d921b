# A prefetch nobody planned (readahead, open-ahead: READ_PLACED) lands
# where the placement puts the miss it stands for (cache/fill.c,
# fill_place), under lru's default demote=flat on warm once hot is at its
# room; the prefetcher's room check (plan/prefetch.c, pf_fit) must ask
# that tier, not hot (fill_first_tier). Hot is filled by pinned files to
# less than a chunk of free bytes, warm has room: a large file read front
# to back still gets its next chunks read ahead (onto warm), every byte
# equals the source, the pinned files stay on hot.
. "$(dirname "$0")/lib.sh"

ctr() { tc_json "s['counters']['$1']"; }
pf() { tc_json "s['prefetch']['$1']"; }
pol() { "$TC_BIN/tierctl" policy show ds --json | python3 -c "import json,sys; p=json.load(sys.stdin)['policies'][0]; print($1)"; }
settled() { [ "$(tc_json "s['daemon']['moves_inflight'] + s['daemon']['fills_inflight']")" = 0 ]; }
tier() { tc_json "[t for t in s['tiers'] if t['name'] == 'hot'][0]['$1']"; }

mkdir -p "$T/cold/keep" "$T/cold/big"
# 2M + 700000 = 2,797,152 bytes pinned on hot (4M; pins stay below its
# low watermark, 70 %): hot keeps 1,397,152 free bytes, less than one 2M
# chunk
head -c 2097152 /dev/urandom >"$T/cold/keep/k1.bin"
head -c 700000 /dev/urandom >"$T/cold/keep/k2.bin"
head -c $((8 * 2097152)) /dev/urandom >"$T/cold/big/b1.bin"
head -c $((8 * 2097152)) /dev/urandom >"$T/cold/big/b2.bin"
tc_config 4M 64M 2M
tc_start || exit 1

check "lru's default placement, demote=flat, is in force" [ "$(pol "p['demote_flat']")" = "True" ]
check "pin keep/ (2.8 MB) on hot" "$TC_BIN/tierctl" pin ds/keep
wait_for 30 settled
check "hot holds the pinned files, less than a chunk free ($(tier used_bytes) used of 4M)" \
	[ $((4194304 - $(tier used_bytes))) -lt 2097152 ]
for f in 1 2; do
	i0=$(pf issued) fw0=$(pol "p['fills_warm']")
	check "big/b$f.bin (8 chunks) read front to back: bytes equal the source" \
		"$TC_TESTS/tcverify" file ds/big/b$f.bin "$T/cold/big/b$f.bin"
	wait_for 30 settled
	i=$(($(pf issued) - i0)) fw=$(($(pol "p['fills_warm']") - fw0))
	echo "  b$f: prefetch issued $i, fills on warm $fw"
	check "b$f: its next chunks were read ahead although hot is full (issued $i >= 2)" [ "$i" -ge 2 ]
	check "b$f: its 8 chunks landed on warm ($fw >= 8)" [ "$fw" -ge 8 ]
done
check "the pinned files are still on hot, bytes equal the source" \
	"$TC_TESTS/tcverify" file ds/keep/k2.bin "$T/cold/keep/k2.bin"
check "hot still holds the pinned bytes" [ "$(tier pinned_bytes)" = 2797152 ]
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
finish
