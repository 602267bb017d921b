# Plans survive daemon restarts: a client registers a plan and reads part
# of it, the daemon is stopped (TERM) and started again, later killed (-9)
# and started again; each time the library re-registers the plan on its
# new connection (before the request that found the old one gone), the
# daemon resumes it at the job's next read (not at its start), prefetch
# runs ahead of the position again, and every byte read equals the source.
# A cancelled plan is not re-registered.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_plan_shell.sh"

mkdir -p "$T/cold/f"
# 100 files of 2 chunks (64K chunks): 12.8 MB against a 5 MB hot tier
for i in $(seq -w 0 99); do head -c 131072 /dev/urandom >"$T/cold/f/s$i.bin"; done
tc_config 5M none 64K "policy = clairvoyant"
sed -i 's/^workers = 4$/workers = 4\nplan_grace = 1h\nprefetch_inflight = 4/' "$T/tc.conf"
tc_start || exit 1

ls "$T/cold/f" | sed 's|^|f/|' | python3 -c "import random,sys; l=sys.stdin.read().split(); random.Random(5).shuffle(l); print('\n'.join(l))" >"$T/order"
js() { tc_json "$1"; }
nplans() { js "len(s['plans'])"; }
plan() { js "[p for p in s['plans'] if p['job'] == $1][0]['$2']"; }
pf_bytes() { js "s['prefetch']['prefetched_bytes']"; }

shell_start a 3 4
check "register a plan of 100 files (200 chunks)" say 3 4 "plan 7 0 1 set $T/order"
check "the reading connection goes through the same order" say 3 4 "order $T/order"
check "read the first 30 files on it: bytes equal the source" say 3 4 "read 30 settle"
check "the plan is at position 60" test "$(plan 7 position)" = 60

# ---- TERM, start again ----
tc_stop
tc_start || exit 1
check "the restarted daemon has no plan yet" test "$(nplans)" = 0
check "the next request on the planning connection reconnects" say 3 4 ping
check "the plan is registered again (200 chunks), waiting for the job's next read" \
	test "$(plan 7 chunks) $(plan 7 resuming) $(plan 7 connected)" = "200 True True"
check "a resuming plan does not prefetch (it does not know where the job is)" test "$(pf_bytes)" = 0
check "read the next 10 files: bytes equal the source" say 3 4 "read 10 settle"
check "the plan resumed where the job was: position 80, 20 reads, none skipped" \
	test "$(plan 7 position) $(plan 7 read) $(plan 7 skipped) $(plan 7 resuming)" = "80 20 0 False"
p1=$(pf_bytes)
check "prefetch runs again ahead of the position ($p1 bytes)" test "$p1" -gt 0
check "read 10 more: bytes equal the source" say 3 4 "read 10 settle"
check "position 100" test "$(plan 7 position)" = 100
check "prefetched bytes keep growing" test "$(pf_bytes)" -gt "$p1"

# ---- kill -9, start again ----
tc_kill9
tc_start || exit 1
check "after kill -9: no plan in the new daemon" test "$(nplans)" = 0
check "the planning connection reconnects" say 3 4 ping
check "the plan is registered again" test "$(plan 7 chunks) $(plan 7 resuming)" = "200 True"
check "read the remaining 50 files: bytes equal the source" say 3 4 "read 50 settle"
check "the plan resumed at 100 and ran to its end: position 200, 100 reads, none skipped" \
	test "$(plan 7 position) $(plan 7 read) $(plan 7 skipped)" = "200 100 0"
check "prefetch ran after the second restart" test "$(pf_bytes)" -gt 0
check "every planned read after it found its chunk prefetched (lag 0 after the first file)" \
	test "$(plan 7 lag)" -le 2

# ---- a cancelled plan stays cancelled ----
check "cancel the plan" say 3 4 "cancel 7 0"
tc_stop
tc_start || exit 1
check "the planning connection reconnects" say 3 4 ping
check "the cancelled plan is not registered again" test "$(nplans)" = 0
echo quit >&3
finish
