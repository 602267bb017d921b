# A RADOS dataset whose cephx credentials are wrong (a wrong key, a keyring
# file that does not exist, a user the keyring has no key for): tiercached
# still starts and serves its other datasets, logs one clear line per bad
# dataset naming the dataset and the keyring, and `tierctl status` shows the
# dataset unavailable with that reason. Reads of it fail at once with the
# reason; `tierctl import` into it fails with a message, never hangs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
MiB=1048576
tc_config 64M none 1M
mkdir -p "$T/cold"
echo "posix" >"$T/cold/p.txt"
ceph-authtool --create-keyring "$T/wrong.keyring" --gen-key -n client.admin >/dev/null
KR_ADMIN=$(dirname "$CEPH_CONF")/ceph.client.admin.keyring
rd_dataset rd "${RD_PREFIX}good/" plain 1M
rd_dataset badkey "${RD_PREFIX}bad/" plain 1M "keyring = $T/wrong.keyring"
rd_dataset nokeyring "${RD_PREFIX}bad/" plain 1M "keyring = $T/missing.keyring"
rd_dataset nouser "${RD_PREFIX}bad/" plain 1M "client_id = tc-nosuchuser" "keyring = $KR_ADMIN"
tc_gen_tree "$T/src" $MiB few
nfiles=$(find "$T/src" -type f | wc -l)
tc_start || exit 1

reason() { tc_ds "$1" "d['reason']"; }
has_reason() { [ "$(tc_ds "$1" "d['available']")" = False ] && [ "$(reason "$1")" != loading ] && [ -n "$(reason "$1")" ]; }
for ds in badkey nokeyring nouser; do
	check "$ds: status shows it unavailable, with a reason" wait_until 60 has_reason $ds
	echo "$ds: reason: $(reason $ds)"
done
check "badkey: the reason names the keyring" bash -c "grep -qF '$T/wrong.keyring' <<<'$(reason badkey)'"
check "badkey: ...and says cephx authentication failed" bash -c "grep -qiE 'cephx|authenticat' <<<'$(reason badkey)'"
check "nokeyring: the reason names the missing keyring" bash -c "grep -qF '$T/missing.keyring' <<<'$(reason nokeyring)'"
check "nouser: the reason names the user" bash -c "grep -qF 'tc-nosuchuser' <<<'$(reason nouser)'"
# log_line DATASET NEEDLE: one log line names the dataset and NEEDLE
log_line() { grep -F "dataset=$1 " "$T/daemon.log" | grep -qF "$2"; }
check "badkey: the log names the dataset and the keyring" log_line badkey "$T/wrong.keyring"
check "nokeyring: the log names the dataset and the keyring" log_line nokeyring "$T/missing.keyring"
check "nouser: the log names the dataset and the user" log_line nouser "tc-nosuchuser"
grep -E 'dataset=(badkey|nokeyring|nouser) ' "$T/daemon.log" | head -n 3

# the other datasets are served
check "rd: available" [ "$(tc_ds rd "d['available']")" = True ]
check "rd: import" [ "$(rd_import "$T/src" rd)" = "$nfiles 0 0" ]
check "rd: every file through the cache" "$TC_TESTS/tcverify" tree rd "$T/src" 1
check "the posix dataset is served" "$TC_TESTS/tcverify" tree ds "$T/cold"

# fails_with_reason MSG COMMAND...: fails (not timeout's 124), stderr has MSG
fails_with_reason() {
	local want=$1
	shift
	timeout 60 "$@" >/dev/null 2>"$T/err"
	local rc=$?
	echo "$*: exit $rc: $(head -c 400 "$T/err")"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF "$want" "$T/err"
}
check "badkey: tierctl cat fails with the reason" \
	fails_with_reason "$T/wrong.keyring" "$TC_BIN/tierctl" cat badkey/one.bin
check "badkey: tierctl ls fails with the reason" \
	fails_with_reason "unavailable" "$TC_BIN/tierctl" ls badkey
check "badkey: open through libtiercache: EIO" "$TC_TESTS/tcverify" errno badkey/one.bin EIO
check "badkey: tierctl import fails and names the keyring" \
	fails_with_reason "$T/wrong.keyring" "$TC_BIN/tierctl" import "$T/src" badkey
check "nokeyring: tierctl import fails and names the keyring" \
	fails_with_reason "$T/missing.keyring" "$TC_BIN/tierctl" import "$T/src" nokeyring
check "the failed imports wrote nothing" [ -z "$(rd_objects "${RD_PREFIX}bad/")" ]
retried() { [ "$(grep -cF 'dataset=badkey op=load' "$T/daemon.log")" -ge 2 ]; }
check "badkey: the daemon retries in the background" wait_until 60 retried
check "badkey: ...and it stays unavailable, with the reason" has_reason badkey
check "rd: still served" "$TC_TESTS/tcverify" tree rd "$T/src" 2
finish
