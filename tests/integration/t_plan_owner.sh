#!/usr/bin/env bash
# Plans belong to the uid that registered them (issue #16, item 16): with a
# socket every local user may reach (socket_mode 0666), nobody cannot
# cancel, replace or extend root's plan (EPERM naming the owner) and root's
# plan stays as it was; nobody's own plans work; an admin may cancel
# anyone's. Status shows each plan's uid.
. "$(dirname "$0")/lib.sh"

tc_gen_tree "$T/cold" 65536
tc_config 5M none 64K
sed -i 's/^workers = 4$/workers = 4\nplan_grace = 1h\nsocket_mode = 0666/' "$T/tc.conf"
chmod 0755 "$T"
tc_start || finish

TP=$TC_TESTS/tcplan
NOBODY=$(id -u nobody)
js() { tc_json "$1"; }
plan() { js "[p for p in s['plans'] if p['job'] == $1 and p['rank'] == $2][0]['$3']"; }
# as USER|root, tcplan ARGS... with stdin passed on: the output in $T/out
as() {
	local who=$1
	shift
	if [ "$who" = root ]; then "$TP" "$@" >"$T/out" 2>&1; else runuser -u "$who" -- "$TP" "$@" >"$T/out" 2>&1; fi
}
said() { grep -q "$1" "$T/out" || { echo "  got: $(cat "$T/out")"; return 1; }; }
printf 'one.bin\nmulti.bin\nsub/s1.dat\n' >"$T/three"
printf 'chunk_exact.bin\n' >"$T/one"

as root set ds 7 0 1 0 <"$T/three"
check "root registers its plan (job 7)" said "^registered 3"
check "status shows the owner uid 0" [ "$(plan 7 0 uid)" = 0 ]

as nobody cancel ds 7 0
check "nobody cannot cancel root's plan: EPERM" said "^error EPERM: "
check "... and the message names the owner" said "belongs to uid 0"
as nobody set ds 7 0 1 0 <"$T/one"
check "nobody cannot replace root's plan: EPERM" said "^error EPERM: .*belongs to uid 0"
as nobody set ds 7 0 1 1 append <"$T/one"
check "nobody cannot extend root's plan: EPERM" said "^error EPERM: "
check "root's plan is intact (3 files, owner 0)" [ "$(plan 7 0 items)/$(plan 7 0 uid)" = 3/0 ]

as nobody set ds 8 0 1 0 <"$T/three"
check "nobody registers a plan of its own (job 8)" said "^registered 3"
check "status shows its owner uid $NOBODY" [ "$(plan 8 0 uid)" = "$NOBODY" ]
as nobody set ds 8 0 1 1 append <"$T/one"
check "nobody extends its own plan" said "^registered"
check "... to 4 files" [ "$(plan 8 0 items)" = 4 ]
as nobody cancel ds 8 0
check "nobody cancels its own plan" said "^cancelled"

as nobody set ds 9 0 1 0 <"$T/three"
check "nobody registers job 9" said "^registered 3"
as root cancel ds 9 0
check "an admin (root) cancels nobody's plan" said "^cancelled"
check "only root's plan is left" [ "$(js "[p['job'] for p in s['plans']]")" = "[7]" ]
as root cancel ds 7 0
check "root cancels its own plan" said "^cancelled"
grep -q "owner_uid=0 op=plan_cancel err=\"not the plan's owner\"" "$T/daemon.log" &&
	ok "the daemon logs the refused cancel" || fail "no log line for the refused cancel"
finish
