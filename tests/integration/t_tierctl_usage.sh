# tierctl usage errors need no daemon: every bad command line (unknown
# option, missing argument or value, bad value) exits 2 with a line naming
# the problem and the usage, with TIERCACHE_SOCKET at a path where nothing
# listens. Good command lines pass the check and then fail to connect
# (exit 1), which shows nothing here was refused for want of a daemon.
. "$(dirname "$0")/lib.sh"

# TIERCACHE_SOCKET ($T/sock, from lib.sh) names a path nothing listens on
[ ! -e "$TIERCACHE_SOCKET" ] || { echo "FAIL: $TIERCACHE_SOCKET exists"; exit 1; }

# bad "PROBLEM" ARGS...: exit 2, "tierctl: ...PROBLEM..." and a usage line
bad() {
	local want=$1
	shift
	"$TC_BIN/tierctl" "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "tierctl: " "$T/err" && grep -qF -- "$want" "$T/err" &&
		grep -q '^usage: tierctl' "$T/err" && [ ! -s "$T/out" ]; then
		ok "tierctl $*: exit 2, '$want'"
	else
		fail "tierctl $*: exit $rc (want 2 and '$want'): $(tr '\n' '|' <"$T/err")"
	fi
}

# good ARGS...: the command line passes; connecting fails (exit 1)
good() {
	"$TC_BIN/tierctl" "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	if [ $rc -eq 1 ] && grep -q 'cannot connect to tiercached' "$T/err"; then
		ok "tierctl $*: passes the check, exit 1 on connect"
	else
		fail "tierctl $*: exit $rc (want 1, cannot connect): $(tr '\n' '|' <"$T/err")"
	fi
}

# ---- global ----
bad "name a COMMAND"
bad "unknown option '--frob'" --frob status
bad "--socket needs a PATH" --socket
bad "unknown command 'frob'" frob

# ---- policy ----
bad "policy: wrong number of arguments" policy
bad "unknown subcommand 'frob'" policy frob
bad "policy show: unknown option '--frob'" policy show --frob
bad "policy show: at most one DATASET" policy show a b
bad "policy show: 'a/b' is not a dataset name" policy show a/b
bad "policy set: need DATASET and a policy NAME" policy set ds
bad "policy set --config: need exactly one DATASET" policy set --config
bad "policy set: 'a/b' is not a dataset name" policy set a/b lru
bad "policy set: 'frob' is not key=value" policy set ds epoch frob
bad "policy set: unknown option '--frob'" policy set --frob ds lru

# ---- residency (admin) ----
for c in pin unpin evict; do
	bad "$c: wrong number of arguments" "$c"
	bad "$c: unknown option '--frob'" "$c" --frob ds
	bad "$c: '/abs' is not DATASET or DATASET/PATH (relative)" "$c" /abs
	bad "$c: wrong number of arguments" "$c" ds/a ds/b
done
bad "demote: need exactly one DATASET[/PATH]" demote --to warm
bad "demote: say where to: --to warm" demote ds
bad "demote: --to needs a value" demote ds --to
bad "demote: cannot demote to 'hot' (only --to warm)" demote ds --to hot
bad "demote: --to given twice" demote ds --to warm --to=warm
bad "verify: wrong number of arguments" verify a b
bad "verify: 'a/b' is not a dataset name" verify a/b
bad "verify: unknown option '--frob'" verify --frob
bad "lifecycle: say run" lifecycle
bad "lifecycle: say run" lifecycle walk
bad "lifecycle run: unknown option '--frob'" lifecycle run --frob
bad "lifecycle run: unexpected argument 'now'" lifecycle run now
bad "lifecycle run: --older-than needs a value" lifecycle run --older-than
bad "lifecycle run: --older-than 'soon' is not a duration" lifecycle run --older-than soon
bad "lifecycle run: --older-than '0' is not a duration" lifecycle run --older-than 0
bad "lifecycle run: --as-of 'tomorrow' is not a time" lifecycle run --as-of tomorrow
bad "lifecycle run: 'a/b' is not a dataset name" lifecycle run --dataset a/b
bad "lifecycle run: --dataset given twice" lifecycle run --dataset a --dataset b
bad "warm: wrong number of arguments" warm
bad "warm: wrong number of arguments" warm --json
bad "warm: unknown option '--frob'" warm --frob ds
bad "warm: --tier needs a value" warm ds --tier
bad "warm: unknown tier 'cold'" warm --tier cold ds
bad "warm: '/abs' is not DATASET or DATASET/PATH (relative)" warm /abs

# ---- service ----
bad "config: wrong number of arguments" config
bad "config: use 'tierctl config show [--json] [SECTION]'" config list
bad "config: unknown option '--frob'" config show --frob
bad "reload: unexpected argument 'now'" reload now
bad "reload: unknown option '--frob'" reload --frob

# ---- reading ----
bad "status: unknown option '--frob'" status --frob
bad "status: unexpected argument 'x'" status x
bad "datasets: unexpected argument 'x'" datasets x
bad "refresh: wrong number of arguments" refresh
bad "refresh: 'a/b' is not a dataset name" refresh a/b
bad "ls: wrong number of arguments" ls
bad "ls: unknown option '--frob'" ls --frob ds
bad "stat: unknown option '--frob'" stat --frob ds/x
bad "cat: wrong number of arguments" cat
bad "cat: unknown option '--frob'" cat --frob ds/x

# ---- import ----
bad "import: want SRC_DIR and DATASET" import "$T"
bad "import: unknown option '--frob'" import --frob "$T" ds
bad "import: unknown option '-x'" import -x "$T" ds
bad "import: -j needs a value" import -j
bad "import: --jobs needs a value" import --jobs
bad "import: -j wants 1..64, not '0'" import -j 0 "$T" ds
bad "import: --striper-above: 'big' is not a size" import --striper-above big "$T" ds

# ---- good command lines get as far as connecting ----
good status
good policy show
good policy set ds epoch
good policy set ds --config
good pin ds/a
good demote ds --to warm
good verify
good lifecycle run --dry-run --older-than 2h --as-of +1h --dataset ds
good warm --tier hot ds
good config show tier hot
good reload

finish
