# The socket file cannot be turned against the host (#16 item 15): a
# socket directory other users can write is refused at start; a symlink
# planted at the socket path is replaced, its target keeps its mode; the
# configured socket_mode and socket_group are applied; a missing directory
# is created 0755.
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
mkdir -p "$T/cold"
head -c 300000 /dev/urandom >"$T/cold/f.bin"

# (a) a world-writable socket directory: refused, naming it and the fix
mkdir -p "$T/pub"
chmod 0777 "$T/pub"
tc_config 64M none 256K
sed -i "s|^socket = .*|socket = $T/pub/sock|" "$T/tc.conf"
"$TC_BIN/tiercached" -c "$T/tc.conf" >"$T/a.log" 2>&1
check "world-writable socket directory: the daemon does not start (exit 1)" [ $? -eq 1 ]
check "... the message names the directory and its mode" \
	grep -q "socket directory $T/pub is writable by every user (mode 0777)" "$T/a.log"
check "... and says what to do" grep -q "chmod 0755 $T/pub" "$T/a.log"
check "... and no socket was made there" [ ! -e "$T/pub/sock" ]
check "... nor a private directory left behind" \
	bash -c "[ -z \"\$(ls -A '$T/pub')\" ]"
# a directory writable by a group that is not the daemon's
chmod 0775 "$T/pub"
chgrp daemon "$T/pub"
"$TC_BIN/tiercached" -c "$T/tc.conf" >"$T/a2.log" 2>&1
check "group-writable (group daemon) socket directory: refused" \
	grep -q "socket directory $T/pub is writable by its group (mode 0775)" "$T/a2.log"
# a directory owned by another user
chmod 0755 "$T/pub"
chown nobody "$T/pub"
"$TC_BIN/tiercached" -c "$T/tc.conf" >"$T/a3.log" 2>&1
check "socket directory owned by nobody: refused" \
	grep -q "socket directory $T/pub is owned by another user (uid 65534)" "$T/a3.log"

# (b) a symlink planted at the socket path, pointing to a root-only file
echo secret >"$T/secret"
chmod 0600 "$T/secret"
ln -s "$T/secret" "$T/sock"
tc_config 64M none 256K
tc_start || exit 1
check "planted symlink: its target keeps mode 600" [ "$(stat -c %a "$T/secret")" = 600 ]
check "... and its contents" [ "$(cat "$T/secret")" = secret ]
check "the socket path is now the socket itself" bash -c "[ -S '$T/sock' ] && [ ! -L '$T/sock' ]"
check "default socket_mode 0660 applied" [ "$(stat -c %a "$T/sock")" = 660 ]
check "the replacement was logged" grep -q "a symlink is at the socket path" "$T/daemon.log"
check "no private bind directory left next to the socket" \
	bash -c "! ls -A '$T' | grep -q '^\.tc'"
check "served through it: bytes equal" bash -c "'$TC' cat ds/f.bin | cmp -s - '$T/cold/f.bin'"
tc_stop

# (c) socket_mode and socket_group from the config; a missing directory
# is created 0755
tc_config 64M none 256K
sed -i "s|^socket = .*|socket = $T/run/tc/sock\nsocket_mode = 0640\nsocket_group = daemon|" "$T/tc.conf"
export TIERCACHE_SOCKET=$T/run/tc/sock
"$TC_BIN/tiercached" -c "$T/tc.conf" >>"$T/daemon.log" 2>&1 &
TC_PID=$!
for _ in $(seq 1 200); do
	"$TC" status >/dev/null 2>&1 && break
	sleep 0.05
done
check "socket_mode 0640 applied" [ "$(stat -c %a "$T/run/tc/sock")" = 640 ]
check "socket_group daemon applied" [ "$(stat -c %G "$T/run/tc/sock")" = daemon ]
check "missing socket directory created 0755" [ "$(stat -c %a "$T/run/tc")" = 755 ]
chmod 0711 "$T"
out=$(runuser -u nobody -- "$TC" status 2>&1)
check "nobody (not in group daemon) cannot connect to a 0640 socket" [ $? -ne 0 ]
echo "$out" | head -2
check "root still can: bytes equal" bash -c "'$TC' cat ds/f.bin | cmp -s - '$T/cold/f.bin'"
tc_stop
finish
