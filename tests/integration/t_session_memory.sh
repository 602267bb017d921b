#!/usr/bin/env bash
# What one connection can make the daemon keep (issue #16, item 6): staged
# PLAN_SET frames cost about 4 bytes an entry (not a copy of the path per
# entry) and are bounded and freed at disconnect; handles are sized by
# their path and bounded per connection in number and bytes. Measured in
# the daemon's RSS (/proc/PID/status).
. "$(dirname "$0")/lib.sh"

# one file with a path of about 1 KiB, sorting first (manifest index 0)
long=a
for i in 1 2 3 4; do long="$long/$(printf 'd%.0s' $(seq 1 240))$i"; done
long="$long/file.bin"
mkdir -p "$T/cold/$(dirname "$long")"
head -c 1000 /dev/urandom >"$T/cold/$long"
head -c 1000 /dev/urandom >"$T/cold/z.bin"
tc_config 64M none 64K
sed -i 's/^workers = 4$/workers = 2\nplan_grace = 1h/' "$T/tc.conf"
tc_measure_memory
tc_start || finish

python3 "$(dirname "$0")/py_session_mem.py" "$T/sock" "$TC_PID" "$long" z.bin >"$T/mem.out" 2>&1
rc=$?
while IFS= read -r l; do
	case $l in
	"ok: "*) ok "${l#ok: }" ;;
	"FAIL: "*) fail "${l#FAIL: }" ;;
	*) echo "$l" ;;
	esac
done <"$T/mem.out"
check "the script exited 0 (got $rc)" [ $rc = 0 ]
check "the daemon is still up and answers" "$TC_BIN/tierctl" status
finish
