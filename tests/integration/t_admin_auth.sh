# Admin operations need root, the daemon's user or daemon.admin_group,
# checked with the peer's credentials; readers connect through
# daemon.socket_mode / socket_group and may read and look, not change.
# Clients run as user nobody with setpriv (the test runs as root).
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "t_admin_auth: needs root and setpriv to run clients as another user"
	exit 1
fi
# nobody must reach the socket: the test dir is 0700 by default
chmod 0755 "$T"
tc_config 16M none 256K "policy = lru"
sed -i 's/^\[daemon\]$/[daemon]\nsocket_mode = 0666/' "$T/tc.conf"
mkdir -p "$T/cold"
head -c 400000 /dev/urandom >"$T/cold/a.bin"
tc_start || exit 1
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_users() { setpriv --reuid=nobody --regid=nogroup --groups=users "$@"; }
quiet() { "$@" >/dev/null 2>&1; }

check "socket_mode = 0666 applied" [ "$(stat -c %a "$T/sock")" = 666 ]
check "a reader reads the exact bytes" bash -c "$(declare -f as_nobody); as_nobody '$TC' cat ds/a.bin | cmp -s - '$T/cold/a.bin'"
check "a reader may see status" quiet as_nobody "$TC" status
check "a reader may see config show" quiet as_nobody "$TC" config show
as_nobody "$TC" reload >"$T/out" 2>"$T/err"
check "reload as a reader: exit 1" [ $? -eq 1 ]
check "reload as a reader: EPERM" grep -q "Operation not permitted" "$T/err"
check "reload as a reader: says who may" grep -q "run it as root (or set daemon.admin_group" "$T/err"
as_nobody "$TC" policy set ds arc >"$T/out" 2>"$T/err"
check "policy set as a reader: EPERM" grep -q "Operation not permitted" "$T/err"
check "policy unchanged" bash -c "'$TC' status --json | grep -q '\"policy\": \"lru\"'"
check "root may reload" quiet "$TC" reload
check "the refusals are logged" grep -q 'err="not an admin"' "$T/daemon.log"

# admin_group = users: a member may, a non-member still may not; the new
# group applies to clients that connect after the reload
sed -i 's/^\[daemon\]$/[daemon]\nadmin_group = users/' "$T/tc.conf"
check "reload: admin_group = users" bash -c "'$TC' reload | grep -qx 'applied: daemon.admin_group = \"users\" (was \"\", for clients that connect from now on)'"
check "a member of users may reload" quiet as_users "$TC" reload
as_nobody "$TC" reload >"$T/out" 2>"$T/err"
check "a non-member may not" grep -q "run it as root or as a member of group users (daemon.admin_group)" "$T/err"
check "a member of users may set a policy" quiet as_users "$TC" policy set ds arc
check "the policy changed" bash -c "'$TC' status --json | grep -q '\"policy\": \"arc\"'"
tc_stop || fail "clean stop"

# socket_mode 0660 + socket_group users: members connect, others cannot
sed -i -e 's/^socket_mode = 0666/socket_mode = 0660\nsocket_group = users/' "$T/tc.conf"
tc_start || exit 1
check "socket group is users" [ "$(stat -c %G "$T/sock")" = users ]
check "socket mode 0660" [ "$(stat -c %a "$T/sock")" = 660 ]
check "a member of socket_group reads" bash -c "$(declare -f as_users); as_users '$TC' cat ds/a.bin | cmp -s - '$T/cold/a.bin'"
as_nobody "$TC" status >"$T/out" 2>"$T/err"
check "a non-member cannot connect" [ $? -ne 0 ]
check "... and is told why" grep -qi "permission denied" "$T/err"
finish
