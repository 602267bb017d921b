# Bad input gets clear errors and breaks nothing: malformed frames, bad
# paths, missing datasets and files, too many clients, bad configs.
. "$(dirname "$0")/lib.sh"
tc_config 64M 64M 256K
mkdir -p "$T/cold/dir"
echo data >"$T/cold/dir/f.txt"
head -c 300000 /dev/urandom >"$T/cold/big.bin"
tc_start || exit 1

check "malformed frames are answered or cut off" python3 "$(dirname "$0")/frames.py" "$T/sock"
E="$TC_TESTS/tcverify"
check "absolute path: EINVAL" "$E" errno /ds/dir/f.txt EINVAL
check "dot-dot path: EINVAL" "$E" errno ds/../ds/dir/f.txt EINVAL
check "dot-dot inside: EINVAL" "$E" errno ds/dir/../dir/f.txt EINVAL
check "empty component: EINVAL" "$E" errno ds/dir//f.txt EINVAL
long=$(printf 'x%.0s' $(seq 1 300))
check "component over 255 bytes: ENAMETOOLONG" "$E" errno "ds/$long" ENAMETOOLONG
vlong=$(printf 'ab/%.0s' $(seq 1 1500))
check "path over 4095 bytes: ENAMETOOLONG" "$E" errno "ds/$vlong" ENAMETOOLONG
check "missing dataset: ENOENT" "$E" errno nosuch/x ENOENT
check "missing file: ENOENT" "$E" errno ds/dir/nope ENOENT
check "directory: EISDIR" "$E" errno ds/dir EISDIR
msg=$("$TC_BIN/tierctl" cat ds/nope 2>&1 >/dev/null)
check "tierctl cat of a missing file says so" bash -c "echo '$msg' | grep -q 'no file'"
"$TC_BIN/tierctl" cat ds/nope >/dev/null 2>&1
check "tierctl cat of a missing file exits 1" [ $? -eq 1 ]
check "daemon still alive and serving after all that" "$E" file ds/big.bin "$T/cold/big.bin"
check "nothing counted as read from cold for rejected requests" [ "$(tc_json "s['counters']['bytes_from_cold']")" = 300000 ]
tc_stop

# too many clients: the extra one is told why
tc_config 64M 64M 256K
sed -i 's/^workers = 4/workers = 4\nmax_clients = 2/' "$T/tc.conf"
tc_start || exit 1
python3 - "$T/sock" <<'PY'
import socket, struct, sys, errno
socks = []
for i in range(2):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); socks.append(s)
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
h = s.recv(16)
ok = len(h) == 16 and struct.unpack("<HBBIII", h)[5] == errno.EBUSY
print("ok: third client refused with EBUSY" if ok else "FAIL: third client not refused")
sys.exit(0 if ok else 1)
PY
check "max_clients enforced with EBUSY" [ $? -eq 0 ]
tc_stop

# a low descriptor limit (a shell's 1024): the soft limit is raised to the
# hard one, and a limit still too low for max_clients is warned about
tc_config 64M 64M 256K
: >"$T/daemon.log"
(ulimit -Sn 1000 && ulimit -Hn 1500 && exec "$TC_BIN/tiercached" -c "$T/tc.conf" >>"$T/daemon.log" 2>&1) &
TC_PID=$!
for _ in $(seq 1 200); do
	"$TC_BIN/tierctl" status >/dev/null 2>&1 && break
	sleep 0.05
done
check "soft descriptor limit raised to the hard one (1000 -> 1500)" \
	grep -qE "^Max open files +1500 +1500" "/proc/$TC_PID/limits"
check "a limit below max_clients + the fd cache is warned about, saying what to do" \
	grep -q "op=start nofile=1500 wanted=2304.*raise it" "$T/daemon.log"
check "... and the daemon serves anyway" "$E" file ds/big.bin "$T/cold/big.bin"
tc_stop

# bad configs: exit 78 with FILE:LINE: key: reason
printf '[daemon]\nsocket = %s/s\nstate_dir = %s/st\n[tier hot]\npath = %s/h\ncapacity = 12Q\n' "$T" "$T" "$T" >"$T/bad.conf"
out=$("$TC_BIN/tiercached" -c "$T/bad.conf" --check-config 2>&1)
rc=$?
check "bad size: exit 78" [ $rc -eq 78 ]
check "bad size: message names file, line and key" bash -c "echo '$out' | grep -q 'bad.conf:6: hot.capacity'"
printf '[daemon]\nbogus = 1\n' >"$T/bad2.conf"
out=$("$TC_BIN/tiercached" -c "$T/bad2.conf" 2>&1)
check "unknown key: exit 78 naming line 2" bash -c "[ $? -eq 78 ] && echo '$out' | grep -q 'bad2.conf:2:'"
out=$("$TC_BIN/tiercached" -c "$T/missing.conf" 2>&1)
check "missing config file: exit 78 with the reason" bash -c "[ $? -eq 78 ] && echo '$out' | grep -q 'missing.conf'"
finish
