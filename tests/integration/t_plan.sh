# Plans and the prefetcher in the real daemon: registering (paths and
# indices), replacing, appending, cancelling; expiry after the registering
# connection is gone for the grace period, and a new connection taking a
# plan over; bad input (unknown dataset, path not in the dataset, world_size
# 0, rank out of range, garbage payloads, a continuation frame with no
# registration in progress, a bad entry in the last frame of a long plan);
# a plan of several frames; with a plan, every read hits although the
# dataset is 2.5x the hot tier, bytes equal to the source; reads follow the
# plan from another connection and out of order; prefetch stops with the
# plan; and sequential readahead within a large file without a plan.
. "$(dirname "$0")/lib.sh"

TP=$TC_TESTS/tcplan
mkdir -p "$T/cold/f" "$T/cold/big" "$T/cold/z"
# 100 files of 2 chunks (64K chunks): 12.8 MB against a 5 MB hot tier;
# big/shard.bin and z/part.bin (24 chunks each) around them: 102 files
for i in $(seq -w 0 99); do head -c 131072 /dev/urandom >"$T/cold/f/s$i.bin"; done
head -c $((64 * 1024 * 24)) /dev/urandom >"$T/cold/big/shard.bin"
head -c $((64 * 1024 * 24)) /dev/urandom >"$T/cold/z/part.bin"
tc_config 5M none 64K "policy = clairvoyant"
sed -i 's/^workers = 4$/workers = 4\nplan_grace = 1h\nprefetch_inflight = 4\nreadahead_chunks = 4/' "$T/tc.conf"
tc_start || exit 1

js() { tc_json "$1"; }
nplans() { js "len(s['plans'])"; }
plan() { js "[p for p in s['plans'] if p['job'] == $1 and p['rank'] == $2][0]['$3']"; }
errs() { # errs WANT tcplan-args... (stdin passed on): prints "error WANT: ..."
	local want=$1
	shift
	"$TP" "$@" >"$T/out" 2>&1
	grep -q "^error $want: " "$T/out" || {
		echo "  got: $(cat "$T/out")"
		return 1
	}
}
# a shuffled order of the 100 files
ls "$T/cold/f" | sed 's|^|f/|' | python3 -c "import random,sys; l=sys.stdin.read().split(); random.Random(7).shuffle(l); print('\n'.join(l))" >"$T/order"
settle() { "$TP" settle; }

# ---- bad input: nothing registered ----
check "unknown dataset: ENOENT" errs ENOENT set nosuch 1 0 1 0 <"$T/order"
{ head -n 50 "$T/order"; echo "f/missing.bin"; } >"$T/badorder"
check "a path not in the dataset: ENOENT" errs ENOENT set ds 1 0 1 0 <"$T/badorder"
grep -q 'no file "f/missing.bin" in dataset ds' "$T/out" && ok "the message names the path" || fail "message: $(cat "$T/out")"
check "world_size 0: EINVAL" errs EINVAL set ds 1 0 0 0 <"$T/order"
check "rank >= world_size: EINVAL" errs EINVAL set ds 1 2 2 0 <"$T/order"
echo "f/../f/s00.bin" >"$T/dotdot"
check "a path with ..: EINVAL" errs EINVAL set ds 1 0 1 0 <"$T/dotdot"
echo 102 >"$T/badix"
check "an index past the file list: ENOENT" errs ENOENT set ds 1 0 1 0 indices <"$T/badix"
check "cancel without a plan: ENOENT" errs ENOENT cancel ds 1 0
# garbage: a truncated header, an entry count larger than the payload, a
# continuation with no registration in progress
check "truncated PLAN_SET: EBADMSG" errs EBADMSG raw 14 0200000064730100
hdr="020000006473""0100000000000000""00000000""01000000""00000000"
check "entry count beyond the payload: EBADMSG" errs EBADMSG raw 14 "${hdr}0002ffffff00"
check "unknown kind: EINVAL" errs EINVAL raw 14 "${hdr}000700000000"
check "continuation frame without a registration: EINVAL" errs EINVAL raw 14 "${hdr}040100000000"
check "truncated PLAN_CANCEL: EBADMSG" errs EBADMSG raw 15 020000006473
# the daemon checks what the library checks too (a client need not use it)
check "daemon: world_size 0 is EINVAL" errs EINVAL raw 14 \
	"020000006473""0100000000000000""00000000""00000000""00000000""000100000000"
check "daemon: rank 2 of world_size 2 is EINVAL" errs EINVAL raw 14 \
	"020000006473""0100000000000000""02000000""02000000""00000000""000100000000"
check "daemon: unknown flags are EINVAL" errs EINVAL raw 14 "${hdr}800100000000"
check "no plan was registered by any of that" test "$(nplans)" = 0

# ---- register, follow, prefetch: every read hits ----
check "register 100 files by path" "$TP" set ds 7 0 1 1 <"$T/order"
check "the plan is listed with 200 chunks at position 0" \
	test "$(plan 7 0 chunks) $(plan 7 0 position) $(plan 7 0 connected)" = "200 0 False"
settle
check "the prefetcher filled a window ahead of the plan" test "$(js "s['prefetch']['prefetched_bytes']")" -gt 0
h0=$(js "s['counters']['hits_hot']")
m0=$(js "s['counters']['misses']")
# another connection reads what this plan announced, in plan order
check "reading the plan through another connection: bytes equal the source" \
	"$TP" read ds "$T/cold" settle <"$T/order"
check "every one of the 200 chunk reads hit" \
	test "$(js "s['counters']['misses']") $(( $(js "s['counters']['hits_hot']") - h0 ))" = "$m0 200"
check "the plan reached its end (position 200, nothing late or skipped)" \
	test "$(plan 7 0 position) $(plan 7 0 lag) $(plan 7 0 skipped)" = "200 0 0"
check "prefetch hits counted (200)" test "$(js "s['prefetch']['hits']")" -ge 200
check "nothing prefetched was evicted unread" test "$(js "s['prefetch']['evicted_unused_bytes']")" = 0
check "the dataset is over twice the hot tier" \
	test "$(js "s['datasets'][0]['bytes']")" -gt "$(( 2 * $(js "s['tiers'][0]['capacity_bytes']") ))"
check "the hot tier stayed within capacity" \
	test "$(js "s['tiers'][0]['used_bytes'] + s['tiers'][0]['reserved_bytes'] <= s['tiers'][0]['capacity_bytes']")" = True

# ---- reordered reads (pairs swapped, as parallel workers do) ----
python3 -c "
l=open('$T/order').read().split()
r=[]
for i in range(0, len(l), 2): r += l[i:i+2][::-1]
print('\n'.join(r))" >"$T/swapped"
check "replace the plan (same job and rank)" "$TP" set ds 7 0 1 2 <"$T/order"
check "replacing restarts it: position 0, epoch 2, one plan" \
	test "$(plan 7 0 position) $(plan 7 0 epoch) $(nplans)" = "0 2 1"
check "reads in swapped pairs: bytes equal the source" "$TP" read ds "$T/cold" settle <"$T/swapped"
check "the plan followed the reordered reads to its end" \
	test "$(plan 7 0 position) $(plan 7 0 read) $(plan 7 0 skipped)" = "200 200 0"

# ---- append, indices, cancel, prefetch stops ----
head -n 20 "$T/order" >"$T/ep1"
check "register 20 files" "$TP" set ds 8 1 2 1 <"$T/ep1"
seq 0 29 >"$T/ix"
check "append 30 files by index" "$TP" set ds 8 1 2 2 append indices <"$T/ix"
# index 0 is big/shard.bin (24 chunks), then f/s00.bin ...
check "the appended plan holds 50 files, 122 chunks, epoch 2" \
	test "$(plan 8 1 items) $(plan 8 1 chunks) $(plan 8 1 epoch)" = "50 122 2"
check "cancel it" "$TP" cancel ds 8 1
check "cancelled: only job 7's plan is left" test "$(nplans)" = 1
check "cancel job 7" "$TP" cancel ds 7 0
settle
issued=$(js "s['prefetch']['issued']")
tail -n 30 "$T/order" | "$TP" read ds "$T/cold" >/dev/null
settle
check "without plans, reading small files prefetches nothing" test "$(js "s['prefetch']['issued']")" = "$issued"

# ---- a plan of several frames ----
python3 -c "
import sys
for i in range(150000): print('f/s%02d.bin' % (i % 100))" >"$T/long"
check "a plan of 150000 files (several frames) registers whole" "$TP" set ds 9 0 1 0 <"$T/long"
check "it holds 150000 items" test "$(plan 9 0 items) $(plan 9 0 files)" = "150000 100"
{ cat "$T/long"; echo "f/nope.bin"; } >"$T/longbad"
check "a bad entry in its last frame: ENOENT" errs ENOENT set ds 10 0 1 0 <"$T/longbad"
check "and nothing of it was registered" test "$(nplans)" = 1
check "cancel the long plan" "$TP" cancel ds 9 0

# ---- expiry after disconnect + grace; a new connection takes over ----
tc_stop
sed -i 's/^plan_grace = 1h$/plan_grace = 1s/' "$T/tc.conf"
tc_start || exit 1
check "register and disconnect" "$TP" set ds 11 0 1 0 <"$T/ep1"
check "the plan outlives its connection for now" test "$(plan 11 0 connected)" = False
gone=
for _ in $(seq 1 100); do [ "$(nplans)" = 0 ] && gone=1 && break; sleep 0.1; done
check "it expired after the grace period" test -n "$gone"
grep -q "op=plan_end why=expired" "$T/daemon.log" && ok "the log says it expired" || fail "no expiry in the log"
check "register again and disconnect" "$TP" set ds 12 0 1 0 <"$T/ep1"
"$TP" set ds 12 0 1 0 hold="$T/release" <"$T/ep1" >"$T/holder" &
holder=$!
for _ in $(seq 1 100); do grep -q registered "$T/holder" 2>/dev/null && break; sleep 0.05; done
check "a new connection took the plan over" test "$(plan 12 0 connected) $(nplans)" = "True 1"
sleep 2 # longer than the 1 s grace: a held plan must not expire
check "a plan whose connection is open does not expire" test "$(nplans)" = 1
touch "$T/release"
wait $holder
gone=
for _ in $(seq 1 100); do [ "$(nplans)" = 0 ] && gone=1 && break; sleep 0.1; done
check "released: it expires" test -n "$gone"

# ---- sequential readahead without a plan ----
ra0=$(js "s['prefetch']['readahead_bytes']")
h0=$(js "s['prefetch']['hits']")
check "a 24-chunk file read front to back: bytes equal the source" \
	"$TP" readseq ds/big/shard.bin "$T/cold/big/shard.bin" settle
check "readahead fetched chunks ahead of the reader" test "$(js "s['prefetch']['readahead_bytes']")" -gt "$ra0"
check "and the reader hit them (22 of 24 chunks)" test "$(( $(js "s['prefetch']['hits']") - h0 ))" = 22
ra1=$(js "s['prefetch']['readahead_bytes']")
check "4 chunks read in order from the middle of a file: bytes equal the source" \
	"$TP" readseq ds/z/part.bin "$T/cold/z/part.bin" settle 10 4
check "...fetch only what they cover (no readahead off chunk 0)" \
	test "$(js "s['prefetch']['readahead_bytes']")" = "$ra1"
check "status shows the prefetch and plans sections" sh -c "'$TC_BIN/tierctl' status | grep -q prefetch"

finish
