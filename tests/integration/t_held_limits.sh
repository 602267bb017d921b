#!/usr/bin/env bash
# Held-bytes caps (issue #16, item 8): chunk files a client holds through
# passed descriptors cannot be evicted, so they are capped per connection
# (max_held_per_client) and per uid (max_held_per_user). Past a cap the
# daemon answers ENOBUFS with a message naming the limit; other clients
# are served meanwhile, a holder's bytes go with its connection, and the
# client library gives back its other files' chunks and retries once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"

CS=$((4 << 20))
mkdir -p "$T/cold"
for i in $(seq -w 0 39); do head -c $CS /dev/urandom >"$T/cold/f$i.bin"; done
head -c $((CS * 3 + 99)) /dev/urandom >"$T/cold/multi.bin"
TC_DAEMON_CONF=$'max_held_per_client = 64M\nmax_held_per_user = 96M\nsocket_mode = 0666' \
	tc_config 128M 256M 4M
chmod 0755 "$T"
tc_start || finish

held() { tc_json "s['counters']['held_refusals']"; }

# 1. the caps, while a client of another uid reads
mkfifo "$T/go"
"${PY_ENV[@]}" "$PY" "$(dirname "$0")/py_held.py" "$T/sock" "$T/cold" ds $CS hold <"$T/go" >"$T/hold.out" 2>&1 &
HOLDER=$!
exec 9>"$T/go"
for _ in $(seq 1 400); do grep -q '^holding' "$T/hold.out" && break; kill -0 $HOLDER 2>/dev/null || break; sleep 0.05; done
check "the holders hold their chunks" grep -q '^holding' "$T/hold.out"
# nobody reads files no one holds and files the holders hold: every miss is
# served although the uid holding chunks pinned most of hot
bad=0
for f in f30.bin f31.bin f32.bin f33.bin f34.bin f35.bin f00.bin f21.bin multi.bin; do
	runuser -u nobody -- "$TC_BIN/tierctl" cat "ds/$f" >"$T/got" 2>"$T/cat.err" || { bad=1; cat "$T/cat.err"; }
	cmp -s "$T/got" "$T/cold/$f" || { bad=1; echo "differs: $f"; }
done
check "another uid's reads meanwhile equal the source" [ $bad = 0 ]
check "status counts the refusals (held_refusals >= 2)" [ "$(held)" -ge 2 ]
exec 9>&-
wait $HOLDER
rc=$?
py_report hold $rc

# 2. the holders' connections closed: their bytes went with them
"${PY_ENV[@]}" "$PY" "$(dirname "$0")/py_held.py" "$T/sock" "$T/cold" ds $CS after >"$T/after.out" 2>&1
py_report after $?

# 3. the library: gives back other files' chunks on ENOBUFS, then the caller sees it
"${PY_ENV[@]}" "$PY" "$(dirname "$0")/py_held.py" "$T/sock" "$T/cold" ds $CS lib >"$T/lib.out" 2>&1
py_report lib $?

finish
