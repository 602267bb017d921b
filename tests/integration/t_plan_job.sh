# Whole-job plans on one node (TIERCACHE_PLAN_JOB, docs/plans.md): rank 0
# registers a job's whole order once; ranks 0 and 1 of world_size 2, both
# on this node, tagged with their rank, each get their slice (entries
# i % 2 == rank) as a plan of the daemon's, with its prefetch window, and
# read every byte equal to the source, hitting. A rank served after the
# registration gets its slice at its tag. The next epoch's registration
# replaces both slices; APPEND with JOB extends the job's plan and both
# slices (with another world_size it is refused); a cancel with any rank
# ends them; another uid may not replace or cancel it. The python binding's
# whole_job=True registers the same, and extends it with append=True.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"

mkdir -p "$T/cold/d"
for i in $(seq -w 0 31); do head -c 65536 /dev/urandom >"$T/cold/d/s$i.bin"; done
tc_config 16M none 64K "policy = clairvoyant"
sed -i 's/^workers = 4$/workers = 4\nsocket_mode = 0666/' "$T/tc.conf" # nobody may connect
chmod 0755 "$T"
tc_start || exit 1
JOB=777
TP=$TC_TESTS/tcplan
js() { tc_json "$1"; }
slices() { js "sorted((p['rank'], p['epoch'], p['files']) for p in s['plans'] if p['job'] == $JOB and p['job_slice'])"; }
order() { (cd "$T/cold" && ls d/*) | python3 -c "
import random, sys
v = sys.stdin.read().split(); random.Random($1).shuffle(v); print('\n'.join(v))" >"$T/order$1"; }

# epoch 1: rank 0 registers and reads; rank 1 tags after the registration
order 1
rm -f "$T/go1"
"$TP" ddp ds "$T/cold" $JOB 0 2 1 "$T/order1" "$T/go1" 5 register >"$T/r0.out" 2>&1 &
p0=$!
check "rank 0 registered the whole-job plan" wait_for 20 "grep -q ready $T/r0.out"
check "rank 0's slice only, before rank 1 is served: $(slices)" [ "$(slices)" = "[(0, 1, 16)]" ]
"$TP" ddp ds "$T/cold" $JOB 1 2 1 "$T/order1" "$T/go1" 5 >"$T/r1.out" 2>&1 &
p1=$!
check "rank 1 is served at its tag: both slices" wait_for 20 "[ \"\$(slices)\" = '[(0, 1, 16), (1, 1, 16)]' ]"
check "job_plans shows the plan (local, 2 ranks served)" \
	[ "$(js "[(j['source'], j['ranks_served'], j['entries'], j['world_size']) for j in s['job_plans']]")" = "[('local', 2, 32, 2)]" ]
"$TP" settle >/dev/null
h0=$(js "s['datasets'][0]['hits']")
touch "$T/go1"
wait $p0
rc0=$?
wait $p1
rc1=$?
check "rank 0 read its 16 files, bytes equal the source" bash -c "[ $rc0 = 0 ] && grep -q '^ok read 16$' $T/r0.out"
check "rank 1 read its 16 files, bytes equal the source" bash -c "[ $rc1 = 0 ] && grep -q '^ok read 16$' $T/r1.out"
h=$(($(js "s['datasets'][0]['hits']") - h0))
check "the prefetched slices hit (at least 28 of 32 reads: $h)" [ "$h" -ge 28 ]
check "each slice's position is at its end" \
	[ "$(js "[p['remaining'] for p in s['plans'] if p['job_slice']]")" = "[0, 0]" ]

# epoch 2 replaces both slices
order 2
out=$("$TP" ddp ds "$T/cold" $JOB 1 2 2 "$T/order2" "$T/go2" 0 register </dev/null 2>&1 &
	sleep 0.5
	touch "$T/go2"
	wait)
check "epoch 2 registered by rank 1 replaces both slices" wait_for 20 "[ \"\$(slices)\" = '[(0, 2, 16), (1, 2, 16)]' ]"
check "... and rank 1 read its new slice" bash -c "grep -q '^ok read 16' <<<'$out'"

# an append: the job's plan goes on (entries 32, 33: one per rank)
printf 'd/s00.bin\nd/s01.bin\n' | "$TP" set ds $JOB 0 2 3 append job >"$T/out" 2>&1
check "APPEND with JOB extends the job's plan: $(cat "$T/out")" grep -q '^registered 2$' "$T/out"
check "... to 34 entries of epoch 3" [ "$(js "[(j['entries'], j['epoch']) for j in s['job_plans'] if j['job'] == $JOB]")" = "[(34, 3)]" ]
check "... and both slices were extended (epoch 3)" \
	[ "$(js "sorted((p['rank'], p['epoch']) for p in s['plans'] if p['job'] == $JOB and p['job_slice'])")" = "[(0, 3), (1, 3)]" ]
# errors
printf 'd/s00.bin\n' | "$TP" set ds $JOB 0 4 3 append job >"$T/out" 2>&1
check "APPEND with JOB of another world_size is refused (EINVAL): $(cat "$T/out")" grep -q '^error EINVAL: .*world_size' "$T/out"
check "... and the plan stays as it was" [ "$(js "[j['entries'] for j in s['job_plans'] if j['job'] == $JOB]")" = "[34]" ]
if [ "$(id -u)" = 0 ]; then
	out=$(runuser -u nobody -- "$TP" cancel ds $JOB 0 2>&1)
	check "another uid may not cancel it (EPERM): $out" bash -c "grep -q '^error EPERM: .*whole-job plan' <<<'$out'"
	out=$(printf 'd/s00.bin\n' | runuser -u nobody -- "$TP" set ds $JOB 0 2 3 job 2>&1)
	check "another uid may not replace it (EPERM): $out" bash -c "grep -q '^error EPERM: .*whole-job plan' <<<'$out'"
fi
out=$("$TP" cancel ds $JOB 1)
check "a cancel with any rank ends the job plan: $out" [ "$out" = cancelled ]
check "no slice and no job plan left" [ "$(js "len(s['job_plans']) + len([p for p in s['plans'] if p['job_slice']])")" = 0 ]

# python: whole_job=True
"${PY_ENV[@]}" "$PY" - >"$T/py.out" 2>&1 <<'EOF'
import tiercache
c = tiercache.Client()
order = ["d/s%02d.bin" % i for i in range(31, -1, -1)]
c.plan("ds", order, 778, rank=0, world_size=4, epoch=9, whole_job=True)
print("ok: python registered a whole-job plan")
c.plan("ds", order, 778, rank=0, world_size=4, epoch=9, whole_job=True, append=True)
print("ok: python appended to it")
try:
    c.plan("ds", order, 778, whole_job=True, append=True)
    print("FAIL: append with whole_job of another world_size accepted")
except tiercache.Error:
    print("ok: append with whole_job of another world_size refused")
EOF
py_report py $?
check "python's whole-job plan, appended to: world_size 4, 64 entries" \
	[ "$(js "[(j['world_size'], j['entries'], j['epoch']) for j in s['job_plans'] if j['job'] == 778]")" = "[(4, 64, 9)]" ]
check "... and its registering rank's slice (8 files, twice)" \
	[ "$(js "[(p['rank'], p['files'], p['chunks']) for p in s['plans'] if p['job'] == 778 and p['job_slice']]")" = "[(0, 8, 16)]" ]
finish
