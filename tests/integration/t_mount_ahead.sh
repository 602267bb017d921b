# tiercache-mount with -o job: a plan registered by another process (the
# job's sampler) makes the mount's opens of planned files cost no OPEN
# frame (its library connection holds the files handed ahead); every byte
# read through the mount equals the source. The same reads through a
# mount without the job each cost an OPEN (so the count can fail).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

TP=$TC_TESTS/tcplan
mkdir -p "$T/cold/f"
for i in $(seq -w 0 79); do head -c $((20000 + RANDOM % 80000)) /dev/urandom >"$T/cold/f/s$i.bin"; done
TC_DAEMON_CONF='plan_grace = 1h'
tc_config 64M none 256K
tc_start || exit 1
ctr() { tc_json "s['counters']['$1']"; }
for i in $(seq -w 0 79); do echo "f/s$i.bin"; done | shuf >"$T/order"
check "warm the files: bytes equal the source" "$TP" read ds "$T/cold" <"$T/order"

tcm_check_bad_value job=x "not JOB or JOB:RANK" "job=JOB[:RANK]"

# reads every file of the order through the mount at $1, comparing bytes
read_all() {
	local f
	while IFS= read -r f; do cmp -s "$1/$f" "$T/cold/$f" || { echo "  differs: $f"; return 1; }; done <"$T/order"
}

tcm_mount "$T/plain" ds || exit 1
o0=$(ctr frames_open)
check "without a job: the 80 files read through the mount equal the source" read_all "$T/plain"
check "... and each open cost an OPEN frame ($(($(ctr frames_open) - o0)))" \
	test $(($(ctr frames_open) - o0)) -ge 80

check "the job's sampler registers job 21's plan" "$TP" set ds 21 0 1 0 <"$T/order"
tcm_mount "$T/mnt" -o job=21,connections=4 ds || exit 1
o0=$(ctr frames_open)
a0=$(ctr frames_open_ahead)
u0=$(ctr ahead_used)
check "with -o job=21: the planned files read through the mount equal the source" read_all "$T/mnt"
opens=$(($(ctr frames_open) - o0))
echo "  OPEN frames: $opens, OPEN_AHEAD frames: $(($(ctr frames_open_ahead) - a0)), used: $(($(ctr ahead_used) - u0))"
check "the planned opens sent no OPEN frame" test "$opens" = 0
check "the 80 files were handed ahead and used" test $(($(ctr ahead_used) - u0)) = 80
check "the plan followed the mount's reads to its end" \
	test "$(tc_json "[p for p in s['plans'] if p['job'] == 21][0]['position']")" = 80
fusermount3 -u "$T/mnt"
fusermount3 -u "$T/plain"
check "after unmounting nothing is held ahead" \
	wait_for 10 'test "$(tc_json "s[\"daemon\"][\"ahead_out\"]")" = 0'
finish
