# Batched opens (tiercache_open_many, TC_OP_OPEN_MANY; docs/client.md): one
# batch mixing resident, not-yet-resident, nonexistent, directory and
# forbidden paths answers each file on its own, every byte read equals the
# source; a batch of 64 is one frame, 200 are four; files not resident are
# filled without a read asking; a client at its handle limit gets EMFILE
# for the rest of its batch and the daemon goes on. Runs as root (the
# forbidden file is read by user nobody, as in t_access.sh).
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
OM=$TC_TESTS/tcopenmany
if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null; then
	echo "t_open_many: needs root and runuser to run a client as another user"
	exit 1
fi
chmod 0711 "$T"

tc_config 64M 128M 1M "access = source"
sed -i 's/^\[daemon\]$/[daemon]\nsocket_mode = 0666/' "$T/tc.conf"
C=$T/cold
mkdir -p "$C/small" "$C/sub"
for i in $(seq -w 0 99); do head -c $((1000 + 10#$i * 1511)) /dev/urandom >"$C/small/f$i"; done
head -c 3000000 /dev/urandom >"$C/multi.bin"
head -c 5000 /dev/urandom >"$C/secret"
head -c 5000 /dev/urandom >"$C/sub/inner"
: >"$C/empty.bin"
chmod -R a+rX "$C"
chmod 0600 "$C/secret"
tc_start || exit 1

frames() { tc_json "s['counters']['open_many_frames']"; }
# chunks resident on the tiers (chunk files or segment items, when
# segment_threshold is set)
chunk_files() { tc_json "sum(t['chunks'] for t in s['tiers'])"; }

# ---- a mixed batch ----
for i in 0 1 2 3; do "$TC" cat "ds/small/f0$i" >/dev/null; done
"$TC" cat ds/multi.bin >/dev/null
f0=$(frames)
"$OM" check ds/small/f00="$C/small/f00" ds/small/f01="$C/small/f01" ds/small/f02="$C/small/f02" \
	ds/small/f03="$C/small/f03" ds/multi.bin="$C/multi.bin" \
	ds/small/f10="$C/small/f10" ds/small/f11="$C/small/f11" ds/sub/inner="$C/sub/inner" \
	ds/empty.bin="$C/empty.bin" ds/secret="$C/secret" \
	ds/nothing ds/small ds ds/small/f12/x nosuchds/f "/ds/abs" ds/small/../f00 >"$T/out" 2>&1
rc=$?
cat "$T/out"
check "mixed: every opened file read equals its source (root)" [ $rc -eq 0 ]
for p in f00 f01 f02 f03 f10 f11; do
	check "mixed: ds/small/$p ok" grep -qx "ds/small/$p ok" "$T/out"
done
check "mixed: a multi-chunk file ok" grep -qx "ds/multi.bin ok" "$T/out"
check "mixed: a file in a subdirectory ok" grep -qx "ds/sub/inner ok" "$T/out"
check "mixed: an empty file ok" grep -qx "ds/empty.bin ok" "$T/out"
check "mixed: root reads the 0600 file" grep -qx "ds/secret ok" "$T/out"
check "mixed: a missing file: ENOENT" grep -qx "ds/nothing ENOENT" "$T/out"
check "mixed: a directory: EISDIR" grep -qx "ds/small EISDIR" "$T/out"
check "mixed: the dataset itself: EISDIR" grep -qx "ds EISDIR" "$T/out"
check "mixed: under a file: ENOENT" grep -qx "ds/small/f12/x ENOENT" "$T/out"
check "mixed: an unknown dataset: ENOENT" grep -qx "nosuchds/f ENOENT" "$T/out"
check "mixed: an absolute path: EINVAL" grep -qx "/ds/abs EINVAL" "$T/out"
check "mixed: a .. component: EINVAL" grep -qx "ds/small/../f00 EINVAL" "$T/out"
check "mixed: one frame for the batch" [ "$(frames)" -eq $((f0 + 1)) ]

# forbidden for nobody (access = source, mode 0600), the rest still served
runuser -u nobody -- "$OM" check ds/secret ds/small/f20="$C/small/f20" ds/sub/inner="$C/sub/inner" \
	ds/small/f00="$C/small/f00" >"$T/out" 2>&1
rc=$?
cat "$T/out"
check "nobody: the 0600 file: EACCES" grep -qx "ds/secret EACCES" "$T/out"
check "nobody: the others read equal to their source" bash -c "[ $rc -eq 0 ] &&
	grep -qx 'ds/small/f20 ok' '$T/out' && grep -qx 'ds/sub/inner ok' '$T/out' &&
	grep -qx 'ds/small/f00 ok' '$T/out'"

# ---- files not resident are filled without a read asking ----
before=$(chunk_files)
"$OM" check ds/small/f30 ds/small/f31 ds/small/f32 ds/small/f33 ds/small/f34 >"$T/out" 2>&1
check "fill: five files opened, none read" [ "$(grep -c ' opened$' "$T/out")" -eq 5 ]
for _ in $(seq 1 100); do [ "$(chunk_files)" -ge $((before + 5)) ] && break; sleep 0.1; done
check "fill: their chunks became resident ($before -> $(chunk_files) chunks)" \
	[ "$(chunk_files)" -ge $((before + 5)) ]

# ---- frames: 64 files one frame, 200 files four ----
f0=$(frames)
"$OM" dir ds/small "$C/small" 64 >"$T/out" 2>&1
check "64: all opened, every byte equal" grep -qx "opened=64 errors=0 mismatched=0" "$T/out"
check "64: one OPEN_MANY frame" [ "$(frames)" -eq $((f0 + 1)) ]
f0=$(frames)
"$OM" dir ds/small "$C/small" 200 >"$T/out" 2>&1
check "200: all opened, every byte equal" grep -qx "opened=200 errors=0 mismatched=0" "$T/out"
check "200: four frames (64+64+64+8)" [ "$(frames)" -eq $((f0 + 4)) ]
check "status counts the files" [ "$(tc_json "s['counters']['open_many_files']")" -ge 264 ]

# ---- the connection's handle limit ----
"$OM" limit ds/empty.bin >"$T/out" 2>&1
cat "$T/out"
check "limit: 16384 handles, then refusals" grep -qx "opened=16384 refused=64 emfile=64" "$T/out"
check "limit: tiercache_close_many of 64 and a handle not open: EBADF" grep -qx "close_many=-1 EBADF" "$T/out"
check "limit: ... and the 64 were closed: a batch of 64 opens again" grep -qx "again=64" "$T/out"
check "limit: the daemon still answers" bash -c "'$TC' status >/dev/null"

# ---- malformed frames fail as a whole ----
"$TC_TESTS/tcplan" raw 27 00000000 >"$T/out" 2>&1
check "count 0: EINVAL" grep -q "^error EINVAL: " "$T/out"
"$TC_TESTS/tcplan" raw 27 41000000 >"$T/out" 2>&1
check "count 65: EINVAL" grep -q "^error EINVAL: " "$T/out"
"$TC_TESTS/tcplan" raw 27 020000000400000064732f61 >"$T/out" 2>&1
check "count 2, one path: EBADMSG" grep -q "^error EBADMSG: " "$T/out"
check "the daemon is alive" kill -0 "$TC_PID"

finish
