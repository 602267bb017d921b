# Ceph unreachable when tiercached starts (its ceph.conf names a monitor
# address where nothing listens): the daemon starts anyway, serves its other
# datasets, serves what it cached of a RADOS dataset in an earlier run (the
# manifest persisted in the index), says in `tierctl status` that the
# dataset is unavailable and why, fails the reads that need the cold store
# instead of hanging, and reconnects in the background: once the monitors
# answer, every dataset becomes available without a restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
MiB=1048576
tc_config 256M none 1M
mkdir -p "$T/cold"
echo "posix" >"$T/cold/p.txt"
# the datasets read this copy of the cluster's conf; phase 2 breaks it
cp "$CEPH_CONF" "$T/ceph.conf"
RD_CEPH_CONF=$T/ceph.conf # read by rd_dataset
rd_dataset rd "${RD_PREFIX}plain/" plain 1M "serve_stale_on_error = yes"
rd_dataset rs "${RD_PREFIX}striped/" striper 1M "serve_stale_on_error = yes"
cp "$T/tc.conf" "$T/tc.conf.phase1"
mkdir -p "$T/src/hot" "$T/src/miss" "$T/src/chg"
head -c $((5 * MiB / 2)) /dev/urandom >"$T/src/hot/a.bin"
head -c 10000 /dev/urandom >"$T/src/hot/b.bin"
head -c $((3 * MiB / 2)) /dev/urandom >"$T/src/chg/changed.bin"
head -c $((2 * MiB)) /dev/urandom >"$T/src/miss/m.bin"

# ---- phase 1: Ceph up; cache hot/ ----
tc_start || exit 1
pid_of_run1=$TC_PID
for ds in rd rs; do
	check "run 1, $ds: import" [ "$(rd_import "$T/src" $ds)" = "4 0 0" ]
	check "run 1, $ds: hot/ read through the cache" "$TC_TESTS/tcverify" tree $ds/hot "$T/src/hot" 1
done
for ds in rd rs; do
	check "run 1, $ds: chg/changed.bin read through the cache" \
		"$TC_TESTS/tcverify" file $ds/chg/changed.bin "$T/src/chg/changed.bin"
done
# hot/changed.bin changes at the source after the import: the daemon
# revalidates it on open and caches the new version
head -c $((3 * MiB / 2)) /dev/urandom >"$T/src/chg/changed.bin"
rd_rados put "${RD_PREFIX}plain/chg/changed.bin" "$T/src/chg/changed.bin"
rd_rados --striper put "${RD_PREFIX}striped/chg/changed.bin" "$T/src/chg/changed.bin" 2>>"$T/rados-cli.err"
for ds in rd rs; do
	check "run 1, $ds: the changed file is served new" \
		"$TC_TESTS/tcverify" file $ds/chg/changed.bin "$T/src/chg/changed.bin"
done
check "run 1: clean stop" tc_stop

# ---- phase 2: the monitors do not answer; a new dataset appears ----
DEAD_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
sed -i "s|^mon host = .*|mon host = v2:127.0.0.1:$DEAD_PORT|" "$T/ceph.conf"
rd_dataset late "${RD_PREFIX}late/" plain 1M
head -c 300000 /dev/urandom >"$T/late.bin"
rd_rados put "${RD_PREFIX}late/late.bin" "$T/late.bin" # (with the good conf)

check "run 2: tiercached starts with Ceph unreachable" tc_start
pid_of_run2=$TC_PID
check "run 2: the posix dataset is served" "$TC_TESTS/tcverify" tree ds "$T/cold"
reason() { tc_ds "$1" "d['reason']"; }
unavailable() { [ "$(tc_ds "$1" "d['available']")" = False ] && [ "$(reason "$1")" != loading ] && [ -n "$(reason "$1")" ]; }
for ds in rd rs late; do
	check "run 2, $ds: status shows it unavailable, with a reason" wait_until 60 unavailable $ds
	echo "$ds: reason: $(reason $ds)"
done
check "run 2, rd: the reason says Ceph cannot be reached" bash -c "grep -qiE 'reach|monitor|connect' <<<'$(reason rd)'"
check "run 2, rd: the log says so too" grep -qE 'dataset=rd .*(reach|monitor|connect)' "$T/daemon.log"
check "run 2: the persisted manifest was restored" grep -q 'dataset=rd op=restore_manifest' "$T/daemon.log"
for ds in rd rs; do
	check "run 2, $ds: what run 1 cached is served" "$TC_TESTS/tcverify" tree $ds/hot "$T/src/hot" 2
	check "run 2, $ds: tierctl cat of a cached file" \
		bash -c "timeout 60 '$TC_BIN/tierctl' cat $ds/hot/a.bin | cmp - '$T/src/hot/a.bin'"
done
rr() { echo $(($(tc_ds rd "d['$1']") + $(tc_ds rs "d['$1']"))); }
check "run 2: ...as hits: nothing from cold" [ "$(rr bytes_from_cold)" = 0 ]
check "run 2: ...no misses" [ "$(rr misses)" = 0 ]
check "run 2: ...hits counted" [ "$(rr hits)" -gt 0 ]
# run 1 cached the new version of chg/changed.bin after revalidating it: the
# cache holds those bytes, so they are served too
for ds in rd rs; do
	check "run 2, $ds: a file revalidated to a new version in run 1 is served" \
		bash -c "timeout 60 '$TC_BIN/tierctl' cat $ds/chg/changed.bin | cmp - '$T/src/chg/changed.bin'"
done
# fails_clearly COMMAND...: an error (not timeout's 124) with a message
fails_clearly() {
	timeout 60 "$@" >/dev/null 2>"$T/err"
	local rc=$?
	echo "$*: exit $rc: $(head -c 400 "$T/err")"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qiE 'unavailable|timed out|cold|reach' "$T/err"
}
check "run 2, rd: an uncached file fails, with a message" fails_clearly "$TC_BIN/tierctl" cat rd/miss/m.bin
check "run 2, rs: an uncached file fails, with a message" fails_clearly "$TC_BIN/tierctl" cat rs/miss/m.bin
check "run 2, late (never loaded): open fails with EIO" "$TC_TESTS/tcverify" errno late/late.bin EIO
check "run 2, late: tierctl cat fails, with a message" fails_clearly "$TC_BIN/tierctl" cat late/late.bin

# ---- phase 3: the monitors answer again; no restart ----
cp "$CEPH_CONF" "$T/ceph.conf"
available() { [ "$(tc_ds "$1" "d['available']")" = True ]; }
for ds in rd rs late; do
	check "run 2, $ds: becomes available in the background" wait_until 60 available $ds
done
check "run 2, rd: every file matches" "$TC_TESTS/tcverify" tree rd "$T/src" 3
check "run 2, rs: every file matches" "$TC_TESTS/tcverify" tree rs "$T/src" 3
check "run 2, late: its file is read from cold" "$TC_TESTS/tcverify" file late/late.bin "$T/late.bin"
check "run 2: misses were read from cold" [ "$(tc_json "s['counters']['bytes_from_cold']")" -gt 0 ]
check "run 2: the same daemon throughout" [ "$(tc_json "s['daemon']['pid']")" = "$pid_of_run2" ]
check "run 2 is a new process" [ "$pid_of_run2" != "$pid_of_run1" ]

finish
