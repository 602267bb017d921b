# Job tags (TC_OP_CONN_JOB, tiercache_set_job): two jobs whose plans cover
# the same files in opposite orders. Untagged, a read goes to the plan that
# expects it soonest, which is the other job's when a job reads a little
# out of its plan's order (as a DataLoader's workers do). Tagged, each
# job's position follows only its own reads, a rank tag only its rank's
# plan; after kill -9 and a restart the library tags its new connection
# again. Every byte read is compared with the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_plan_shell.sh"

mkdir -p "$T/cold/f"
for i in $(seq -w 0 19); do head -c 131072 /dev/urandom >"$T/cold/f/s$i.bin"; done
tc_config 8M none 64K "policy = clairvoyant"
sed -i 's/^workers = 4$/workers = 4\nplan_grace = 1h\nprefetch_inflight = 4/' "$T/tc.conf"
tc_start || exit 1

js() { tc_json "$1"; }
errs() { # errs WANT tcplan-args...: prints "error WANT: ..."
	local want=$1
	shift
	"$TC_TESTS/tcplan" "$@" >"$T/out" 2>&1
	grep -q "^error $want: " "$T/out" || {
		echo "  got: $(cat "$T/out")"
		return 1
	}
}
plan() { js "[p for p in s['plans'] if p['job'] == $1][0]['$2']"; }
# A plans f00..f19; B plans f19..f00 but reads f09..f00 first, then
# f19..f10 (ahead of its position by 20 chunks, where A expects f09..f00
# sooner)
for i in $(seq -w 0 19); do echo "f/s$i.bin"; done >"$T/order_a"
tac "$T/order_a" >"$T/order_b"
{ tail -n 10 "$T/order_b"; head -n 10 "$T/order_b"; } >"$T/read_b"

shell_start a 3 4
shell_start b 5 6
shell_start c 7 8
check "A orders its reads" say 3 4 "order $T/order_a"
check "B orders its reads" say 5 6 "order $T/read_b"
check "C reads A's order" say 7 8 "order $T/order_a"

# ---- untagged: today's behaviour, B's reads move A's plan ----
check "register job 11 (A's order)" say 3 4 "plan 11 0 0 set $T/order_a"
check "register job 12 (B's order)" say 5 6 "plan 12 0 0 set $T/order_b"
check "B reads 10 files untagged: bytes equal the source" say 5 6 "read 10 settle"
check "untagged, B's reads went to job 11, which expected them sooner" \
	test "$(plan 11 read) $(plan 12 read)" = "20 0"
check "cancel job 11" say 3 4 "cancel 11 0"
check "cancel job 12" say 5 6 "cancel 12 0"

# ---- tagged ----
check "register job 1 (A's order)" say 3 4 "plan 1 0 0 set $T/order_a"
check "register job 2 (B's order)" say 5 6 "plan 2 0 0 set $T/order_b"
check "A's reading connection is tagged job 1 rank 0" say 3 4 "job 1 0"
check "B's reading connection is tagged job 2 (any rank)" say 5 6 "job 2 any"
check "C's reading connection is tagged job 1 rank 5" say 7 8 "job 1 5"
check "B re-orders its reads" say 5 6 "order $T/read_b"
check "B reads 10 files: bytes equal the source" say 5 6 "read 10 settle"
check "job 2 counts them (20 reads, position 0: its first files are still unread); job 1 none" \
	test "$(plan 2 read) $(plan 2 position) $(plan 1 read) $(plan 1 position)" = "20 0 0 0"
check "B reads its other 10 files" say 5 6 "read 10 settle"
check "job 2 is at its end (40); job 1 still at 0" \
	test "$(plan 2 position) $(plan 1 read) $(plan 1 position)" = "40 0 0"
check "C (job 1 rank 5) reads 5 of job 1's files" say 7 8 "read 5 settle"
check "rank 0's plan of job 1 did not move" test "$(plan 1 read) $(plan 1 position)" = "0 0"
check "A reads its 20 files: bytes equal the source" say 3 4 "read 20 settle"
check "job 1 followed A: position 40, 40 reads; job 2 unchanged" \
	test "$(plan 1 position) $(plan 1 read) $(plan 2 read)" = "40 40 40"

# ---- reads a request makes after it was dispatched carry its job too:
# a streamed READ (no fd passing) of 100003 bytes at offset 0 covers two
# 64K chunks, and the second is read from a completion, not in the request ----
TIERCACHE_NO_FD_PASSING=1 shell_start d 9 10
check "D (streamed READs) is tagged job 22" say 9 10 "job 22 any"
check "D orders B's reads" say 9 10 "order $T/read_b"
check "register job 21 (A's order)" say 3 4 "plan 21 0 0 set $T/order_a"
check "register job 22 (B's order)" say 5 6 "plan 22 0 0 set $T/order_b"
check "D reads 10 files in 100003-byte READs: bytes equal the source" say 9 10 "read 10"
check "both chunks of each went to job 22 (20 reads), none to job 21, which expected them sooner" \
	test "$(plan 22 read) $(plan 21 read)" = "20 0"
check "cancel job 21" say 3 4 "cancel 21 0"
check "cancel job 22" say 5 6 "cancel 22 0"

# ---- kill -9: the tag is sent again on the new connection ----
check "register job 1 again" say 3 4 "plan 1 0 0 set $T/order_a"
check "register job 2 again" say 5 6 "plan 2 0 0 set $T/order_b"
tc_kill9
tc_start || exit 1
check "A's planning connection reconnects" say 3 4 ping
check "B's planning connection reconnects" say 5 6 ping
check "both plans are back, resuming" test "$(plan 1 resuming) $(plan 2 resuming)" = "True True"
check "B re-orders its reads" say 5 6 "order $T/read_b"
check "B reads 1 file on a new connection: bytes equal the source" say 5 6 "read 1 settle"
check "it went to job 2 (tag restored), resumed at B's position 20; job 1 still waits" \
	test "$(plan 2 read) $(plan 2 resuming) $(plan 1 read) $(plan 1 resuming)" = "2 False 0 True"
check "B's tag can be removed" say 5 6 "job none"

# ---- $TIERCACHE_JOB for programs that cannot call tiercache_set_job ----
head -n 5 "$T/order_a" >"$T/first5"
check "TIERCACHE_JOB=2:0: a plain reader's 5 files: bytes equal the source" \
	env TIERCACHE_JOB=2:0 "$TC_TESTS/tcplan" read ds "$T/cold" settle <"$T/first5"
check "they went to job 2 (job 1, resuming, would take them untagged)" \
	test "$(plan 2 read) $(plan 1 read) $(plan 1 resuming)" = "12 0 True"
TIERCACHE_JOB=nonsense "$TC_TESTS/tcplan" settle >"$T/out" 2>&1
check "a malformed TIERCACHE_JOB fails the connect with EINVAL naming it" grep -q "^error EINVAL: cannot connect: TIERCACHE_JOB=\"nonsense\" is not JOB or JOB:RANK" "$T/out"
TIERCACHE_JOB=1:4294967295 "$TC_TESTS/tcplan" settle >"$T/out" 2>&1
check "a rank out of range in TIERCACHE_JOB fails too" grep -q "^error EINVAL" "$T/out"

# ---- bad CONN_JOB payloads ----
check "CONN_JOB truncated: EBADMSG" errs EBADMSG raw 25 0105
check "CONN_JOB with a trailing byte: EBADMSG" errs EBADMSG raw 25 01010000000000000000000000ff
check "CONN_JOB with unknown flags: EINVAL" errs EINVAL raw 25 02010000000000000000000000
check "a good CONN_JOB: ok" "$TC_TESTS/tcplan" raw 25 01010000000000000000000000
for fd in 3 5 7 9; do echo quit >&$fd; done
finish
