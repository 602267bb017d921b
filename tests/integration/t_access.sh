# Access control (docs/operations.md, "Access control"): with the socket
# open to every local user (socket_mode = 0666), who may read a dataset is
# the dataset's allow_users / allow_groups and, with access = source, the
# source file's own owner, group and mode; the FUSE mount run by root with
# allow_other enforces the same for each user of it (TC_OP_ACT_AS). Clients
# run as user nobody (runuser); the test runs as root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"
TC=$TC_BIN/tierctl
tc_source_access_setup open
mkdir -p "$T/cold/sub" "$T/cold/closed" "$T/cold2"
head -c 300000 /dev/urandom >"$T/cold/secret"
head -c 300000 /dev/urandom >"$T/cold/public"
head -c 1000 /dev/urandom >"$T/cold/sub/inner"
head -c 1000 /dev/urandom >"$T/cold/closed/hidden"
head -c 200000 /dev/urandom >"$T/cold2/plain"
chmod 0600 "$T/cold/secret"
chmod 0644 "$T/cold/public" "$T/cold/sub/inner" "$T/cold/closed/hidden" "$T/cold2/plain"
chmod 0755 "$T/cold" "$T/cold/sub" "$T/cold2"
chmod 0700 "$T/cold/closed"
tc_start || exit 1

nob() { runuser -u nobody -- "$@"; }
# cat_as WHO PATH SRC: WHO's `tierctl cat PATH` gives exactly SRC's bytes
cat_as() {
	if [ "$1" = root ]; then "$TC" cat "$2"; else nob "$TC" cat "$2"; fi >"$T/got" 2>"$T/err" &&
		cmp -s "$T/got" "$3"
}
# denied CMD...: nobody's CMD fails with "Permission denied" and no bytes
denied() {
	nob "$TC" "$@" >"$T/got" 2>"$T/err"
	local rc=$?
	[ $rc -ne 0 ] && [ ! -s "$T/got" ] && grep -q "Permission denied" "$T/err"
}

# ---- (a) access = source: the source file's own mode decides ----
check "a: root reads the 0600 root-owned file" cat_as root ds/secret "$T/cold/secret"
check "a: nobody cannot read it: EACCES" denied cat ds/secret
check "a: ... and is told why" grep -q "ds/secret: permission denied by the source file's mode (dataset.ds.access = source)" "$T/err"
check "a: nobody reads the 0644 file" cat_as nobody ds/public "$T/cold/public"
check "a: nobody reads a 0644 file in a 0755 directory" cat_as nobody ds/sub/inner "$T/cold/sub/inner"
check "a: a 0644 file in a 0700 directory: EACCES (search on the parent)" denied cat ds/closed/hidden
check "a: root reads it" cat_as root ds/closed/hidden "$T/cold/closed/hidden"
check "a: nobody cannot list a 0700 directory" denied ls ds/closed
check "a: nobody lists the dataset root" bash -c "runuser -u nobody -- '$TC' ls ds | grep -q public"
# the denial holds once root has made the file resident: bytes come from the tier
check "a: after root's read, still EACCES for nobody" denied cat ds/secret
chmod 0644 "$T/cold/secret"
check "a: chmod 0644 at the source: nobody reads it" cat_as nobody ds/secret "$T/cold/secret"
chmod 0600 "$T/cold/secret"
check "a: chmod 0600 again: EACCES" denied cat ds/secret
chown nobody "$T/cold/secret"
check "a: owned by nobody: nobody reads it" cat_as nobody ds/secret "$T/cold/secret"
chown root "$T/cold/secret"
check "a: the refusals are logged" grep -q 'err="denied by the source.s mode"' "$T/daemon.log"

# ---- (b) allow_users / allow_groups ----
sed -i 's/^\[dataset open\]$/[dataset open]\nallow_users = root/' "$T/tc.conf"
check "b: reload applies allow_users = root" bash -c "'$TC' reload | grep -q 'applied: dataset.open.allow_users = \"root\"'"
check "b: root reads" cat_as root open/plain "$T/cold2/plain"
check "b: nobody: EACCES on a file" denied cat open/plain
check "b: ... and is told why" grep -q "open: not allowed for uid $(id -u nobody) (dataset.open.allow_users/allow_groups)" "$T/err"
check "b: nobody: EACCES on a missing file too (nothing revealed)" denied cat open/nothing
check "b: nobody: EACCES on listing the dataset" denied ls open
check "b: nobody: EACCES on stat" denied stat open/plain
check "b: nobody: EACCES on warming a file (the daemon would read it for them)" denied warm open/plain
echo plain | nob "$TC_TESTS/tcplan" set open 9 0 1 1 >"$T/out" 2>&1
check "b: nobody: refused registering a plan of the dataset" grep -q "open: not allowed for uid" "$T/out"
check "b: ... and no plan was registered" [ "$(tc_json "len(s['plans'])")" = 0 ]
check "b: nobody still sees the dataset's name" bash -c "runuser -u nobody -- '$TC' datasets | grep -qw open"
# ---- (c) reload changes the list for new opens ----
sed -i "s/^allow_users = root\$/allow_users = root\nallow_groups = $nogroup/" "$T/tc.conf"
check "c: reload applies allow_groups = $nogroup" bash -c "'$TC' reload | grep -q 'applied: dataset.open.allow_groups = \"$nogroup\"'"
check "c: nobody (group $nogroup) reads now" cat_as nobody open/plain "$T/cold2/plain"
sed -i "s/^allow_groups = $nogroup\$/allow_groups = 0/" "$T/tc.conf"
check "c: reload applies allow_groups = 0" bash -c "'$TC' reload | grep -q 'applied: dataset.open.allow_groups = \"0\"'"
check "c: nobody: EACCES again" denied cat open/plain
sed -i "s/^allow_users = root\$/allow_users = root, nobody/" "$T/tc.conf"
check "c: reload applies allow_users = root, nobody" bash -c "'$TC' reload | grep -q 'applied: dataset.open.allow_users'"
check "c: nobody reads by name" cat_as nobody open/plain "$T/cold2/plain"
# a name the system does not know: the reload is refused, the old list stays
sed -i "s/^allow_users = root, nobody\$/allow_users = root nosuchuser_tc/" "$T/tc.conf"
"$TC" reload >"$T/out" 2>&1
check "c: unknown user: reload refused" [ $? -ne 0 ]
check "c: ... naming file, line and user" grep -qE "tc.conf:[0-9]+: dataset.open.allow_users: unknown user \"nosuchuser_tc\"" "$T/out"
check "c: the old list stays" cat_as nobody open/plain "$T/cold2/plain"

# ---- ACT_AS (what the mount uses) is for admins only ----
# payload: uid 65534, gid 65534, 0 groups
act=feff0000feff000000000000
nob "$TC_TESTS/tcplan" raw 26 $act >"$T/out" 2>&1
check "ACT_AS from nobody: EPERM" grep -q "^error EPERM: .*only root or an admin" "$T/out"
check "ACT_AS from root: ok" bash -c "'$TC_TESTS/tcplan' raw 26 $act | grep -qx ok"
"$TC_TESTS/tcplan" raw 26 feff0000feff0000ffff0000 >"$T/out" 2>&1
check "ACT_AS with too many groups: EINVAL" grep -q "^error EINVAL: " "$T/out"
"$TC_TESTS/tcplan" raw 26 feff0000feff000001000000 >"$T/out" 2>&1
check "ACT_AS with a group missing: EBADMSG" grep -q "^error EBADMSG: " "$T/out"

# ---- (d) the mount, run by root for every user (-o allow_other) ----
M=$T/mnt
tcm_mount "$M" -o allow_other ds || { fail "d: mount"; finish; }
# root first: the bytes are resident and in the kernel's caches after this
check "d: root reads the 0600 file" cmp -s "$M/secret" "$T/cold/secret"
check "d: root reads the 0644 file" cmp -s "$M/public" "$T/cold/public"
nob cat "$M/secret" >"$T/got" 2>"$T/err"
check "d: nobody cannot read the 0600 file: exit 1" [ $? -ne 0 ]
check "d: ... Permission denied" grep -q "Permission denied" "$T/err"
check "d: ... and got no bytes" [ ! -s "$T/got" ]
check "d: nobody reads the 0644 file" bash -c "runuser -u nobody -- cat '$M/public' | cmp -s - '$T/cold/public'"
check "d: nobody reads a 0644 file below a 0755 directory" bash -c "runuser -u nobody -- cat '$M/sub/inner' | cmp -s - '$T/cold/sub/inner'"
nob cat "$M/closed/hidden" >"$T/got" 2>"$T/err"
check "d: nobody: a file in a 0700 directory: Permission denied" grep -q "Permission denied" "$T/err"
nob ls "$M/closed" >"$T/got" 2>"$T/err"
check "d: nobody cannot list a 0700 directory" grep -q "Permission denied" "$T/err"
check "d: nobody lists the root" bash -c "runuser -u nobody -- ls '$M' | grep -qx public"
check "d: root still reads the 0600 file" cmp -s "$M/secret" "$T/cold/secret"
# the mount shows the source's owner and mode (access = source), so the
# kernel's default_permissions refuses nobody before the daemon is asked;
# the daemon's own check stays behind it (t_mount_owner.sh)
check "d: the mount shows secret as the source does: root 600" \
	[ "$(stat -c '%U %a' "$M/secret")" = "root 600" ]
fusermount3 -u "$M"
check "d: unmounted" bash -c "! mountpoint -q '$M'"
# -o immutable with other users: opens still reach the daemon
tcm_mount "$M" -o allow_other,immutable ds || { fail "d: mount immutable"; finish; }
check "d: immutable: root reads the 0600 file" cmp -s "$M/secret" "$T/cold/secret"
nob cat "$M/secret" >"$T/got" 2>"$T/err"
check "d: immutable: nobody: Permission denied" grep -q "Permission denied" "$T/err"
check "d: immutable: nobody reads the 0644 file" bash -c "runuser -u nobody -- cat '$M/public' | cmp -s - '$T/cold/public'"
fusermount3 -u "$M"
finish
