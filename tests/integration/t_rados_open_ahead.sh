# Open-ahead from plans over RADOS (docs/plans.md), where no stat is cheap
# and every file's version is past revalidate_after when it is read (the
# test waits that long first), so that every open would confirm it: the
# daemon confirms the versions of the files it hands ahead on its workers,
# a batch at once, and the planned opens still cost no OPEN frame. Every byte read equals the pool's; an
# object rewritten after the plan was registered is read at its new
# version; one removed is not handed and its open says ENOENT.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
TP=$TC_TESTS/tcplan
TA=$TC_TESTS/tcahead
TC_DAEMON_CONF=$'plan_grace = 1h\nmax_held_per_client = 64M'
tc_config 64M none 1M
P="${RD_PREFIX}oa/"
rd_dataset rp "$P" plain 1M
sed -i 's/^revalidate_after = 0s$/revalidate_after = 8s/' "$T/tc.conf"
mkdir -p "$T/src/d"
for i in $(seq -w 0 99); do head -c $((3000 + 10#$i * 997)) /dev/urandom >"$T/src/d/f$i"; done
tc_start || exit 1
check "import uploads the 100 files" [ "$(rd_import "$T/src" rp)" = "100 0 0" ]
ctr() { tc_json "s['counters']['$1']"; }

for i in $(seq -w 0 99); do echo "d/f$i"; done | shuf >"$T/order"
check "job 7 registers a plan of the 100 files" "$TP" set rp 7 0 1 0 <"$T/order"
sleep 9 # every version is past revalidate_after now
o0=$(ctr frames_open)
u0=$(ctr ahead_used)
"$TA" read rp "$T/src" 7 <"$T/order" >"$T/r7" 2>&1
grep -v '^ok' "$T/r7" | head
check "job 7 reads the 100 planned files: bytes equal the pool's" \
	bash -c "grep -qx 'read 100' '$T/r7' && ! grep -q FAIL '$T/r7'"
opens=$(($(ctr frames_open) - o0))
used=$(($(ctr ahead_used) - u0))
echo "  OPEN frames: $opens, handed-ahead handles used: $used"
check "their versions were confirmed ahead: no OPEN frame" test "$opens" = 0
check "all 100 were handed ahead and used" test "$used" = 100

# rewritten and removed after the plan was registered
check "job 8 registers the same plan" "$TP" set rp 8 0 1 0 <"$T/order"
head -c 5555 /dev/urandom >"$T/src/d/f10"
rd_rados put "${P}d/f10" "$T/src/d/f10"
rd_rados rm "${P}d/f11"
rm "$T/src/d/f11"
sleep 9
grep -vx "d/f11" "$T/order" >"$T/order8"
"$TA" read rp "$T/src" 8 <"$T/order8" >"$T/r8" 2>&1
grep -v '^ok' "$T/r8" | head
check "job 8 reads 99 files, the rewritten one at its new version" \
	bash -c "grep -qx 'read 99' '$T/r8' && ! grep -q FAIL '$T/r8'"
check "the removed object: its open says ENOENT" \
	bash -c "! '$TC_BIN/tierctl' cat rp/d/f11 >/dev/null 2>'$T/e11' && grep -q 'No such file' '$T/e11'"
check "nothing is held ahead once the readers are gone" \
	test "$(tc_json "s['daemon']['ahead_out']") $(tc_json "s['daemon']['held_bytes']")" = "0 0"
finish
