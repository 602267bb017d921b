# tiercache-mount -o job with readers that do not keep the plan's order
# among themselves (a FUSE mount's readers, a loader's workers): one reads
# plan places 40..99 first, a laggard then reads places 0..39, then the
# rest. Every planned open is still served from what the mount's library
# was handed ahead: no OPEN frame, nothing handed released unused, every
# byte equal to the source. (Before, the library released what lay a batch
# behind the furthest file used, and the laggard paid an OPEN for 35 of its
# 40 files; no timing is involved in either outcome.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

TP=$TC_TESTS/tcplan
mkdir -p "$T/cold/f"
for i in $(seq -w 0 119); do head -c $((20000 + RANDOM % 80000)) /dev/urandom >"$T/cold/f/s$i.bin"; done
TC_DAEMON_CONF='plan_grace = 1h'
# the handed files stay fresh for the whole test, however slow the machine
tc_config 64M none 256K 'revalidate_after = 1h'
tc_start || exit 1
ctr() { tc_json "s['counters']['$1']"; }
for i in $(seq -w 0 119); do echo "f/s$i.bin"; done | shuf >"$T/order"
check "warm the files: bytes equal the source" "$TP" read ds "$T/cold" <"$T/order"

# read_places FIRST LAST: plan places FIRST..LAST (0-based) through the
# mount, each compared with the source
read_places() {
	local f
	sed -n "$(($1 + 1)),$(($2 + 1))p" "$T/order" | while IFS= read -r f; do
		cmp -s "$T/mnt/$f" "$T/cold/$f" || { echo "  differs: $f"; exit 1; }
	done
}

check "the job's sampler registers job 31's plan" "$TP" set ds 31 0 1 0 <"$T/order"
tcm_mount "$T/mnt" -o job=31,connections=4 ds || exit 1
o0=$(ctr frames_open)
u0=$(ctr ahead_used)
n0=$(ctr ahead_unused)
check "the reader ahead: places 40..99 equal the source" read_places 40 99
check "the laggard: places 0..39 equal the source" read_places 0 39
check "the rest: places 100..119 equal the source" read_places 100 119
opens=$(($(ctr frames_open) - o0))
echo "  OPEN frames: $opens, used: $(($(ctr ahead_used) - u0)), released unused: $(($(ctr ahead_unused) - n0))"
check "no planned open sent an OPEN frame (the laggard's included)" test "$opens" = 0
check "all 120 files were handed ahead and used" test $(($(ctr ahead_used) - u0)) = 120
check "none was released unused" test $(($(ctr ahead_unused) - n0)) = 0
fusermount3 -u "$T/mnt"
check "after unmounting nothing is held ahead" \
	wait_for 10 'test "$(tc_json "s[\"daemon\"][\"ahead_out\"]")" = 0'
finish
