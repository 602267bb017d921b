# sd_notify: with NOTIFY_SOCKET set (as systemd does for Type=notify) the
# daemon sends READY=1 once serving, RELOADING=1 then READY=1 around a
# reload, STOPPING=1 on SIGTERM, with STATUS= lines. A python datagram
# socket stands in for systemd.
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
tc_config 16M none 256K
mkdir -p "$T/cold"
head -c 500000 /dev/urandom >"$T/cold/a.bin"

cat >"$T/listen.py" <<'PY'
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
open(out + ".bound", "w").close()
with open(out, "a") as f:
    while True:
        msg = s.recv(4096).decode()
        for line in msg.split("\n"):
            f.write(line + "\n")
        f.write("--\n")
        f.flush()
        if "STOPPING=1" in msg:
            break
PY
python3 "$T/listen.py" "$T/notify" "$T/notify.log" &
lpid=$!
until_ok() {
	for _ in $(seq 1 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
	return 1
}
check "notify socket bound" until_ok test -f "$T/notify.log.bound"
NOTIFY_SOCKET=$T/notify tc_start || exit 1
check "READY=1 once serving" until_ok grep -qx "READY=1" "$T/notify.log"
check "STATUS= says it serves" grep -q "^STATUS=serving 1 datasets" "$T/notify.log"
check "MAINPID is the daemon" grep -qx "MAINPID=$TC_PID" "$T/notify.log"
check "serving when READY came" bash -c "'$TC' cat ds/a.bin | cmp -s - '$T/cold/a.bin'"

"$TC" reload >/dev/null
check "RELOADING=1 on reload" until_ok grep -qx "RELOADING=1" "$T/notify.log"
check "READY=1 again after the reload" until_ok bash -c "sed -n '/RELOADING=1/,\$p' '$T/notify.log' | grep -qx READY=1"
echo "[tier nope]" >>"$T/tc.conf"
kill -HUP "$TC_PID"
check "a rejected reload still ends in READY=1, saying so" \
	until_ok grep -q "^STATUS=serving 1 datasets (last reload rejected: see the log)" "$T/notify.log"

tc_stop || fail "clean stop"
check "STOPPING=1 on SIGTERM" grep -qx "STOPPING=1" "$T/notify.log"
wait "$lpid"
check "the listener saw STOPPING and ended" [ $? -eq 0 ]
finish
