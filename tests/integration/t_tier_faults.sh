# Faulty tier disks degrade, never fail a read (issue #16 item 11). Real
# file systems: the hot tier lives on an 8 MiB tmpfs while its capacity
# says 64M; the tmpfs is then remounted read-only and back, and the tier
# directory is removed and recreated, all while the daemon runs. Every read
# returns the source's bytes; status and metrics show the tier's effective
# capacity and its failed state; the tier is taken back when it works
# again; --check-config warns about the capacity. Needs root (mount).
. "$(dirname "$0")/lib.sh"

tc_tmpfs_mount 8m

MiB=1048576
mkdir -p "$T/cold"
for set in a b r c d; do
	n=10
	[ "$set" = a ] && n=40
	for i in $(seq -w 1 $n); do head -c $MiB /dev/urandom >"$T/cold/$set$i.bin"; done
done
read_set() { # read_set SET: every file of the set, compared with the source
	local f bad=0
	for f in "$T/cold/$1"*.bin; do
		"$TC_TESTS/tcverify" file "ds/$(basename "$f")" "$f" >/dev/null 2>>"$T/verify.err" || bad=$((bad + 1))
	done
	echo "$bad"
}
tier() { tc_json "[t for t in s['tiers'] if t['name'] == 'hot'][0]['$1']"; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
metric() { # metric NAME{LABELS}: its value from the Prometheus endpoint
	python3 - "$PORT" "$1" <<'PY'
import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode()
for line in body.splitlines():
    if line.startswith(sys.argv[2] + " "):
        print(line.split()[-1]); break
else:
    print("missing")
PY
}

# demote=1 named: (b) wants new fills on hot once it is back, and lru's
# default, demote=flat, sends them to warm while warm has room and the
# full hot's victims are not older
TC_DAEMON_CONF="metrics_listen = 127.0.0.1:$PORT
readahead_chunks = 0
sync_delay = 100ms" tc_config 64M 256M 1M "policy = lru demote=1"
sed -i "s|^path = $T/hot$|path = $MNT/hot|" "$T/tc.conf"

# (d) the config check warns about a capacity larger than the file system
"$TC_BIN/tiercached" -c "$T/tc.conf" --check-config >"$T/check.out" 2>&1
rc=$?
check "check-config: capacity > file system is a warning, exit 0 (got $rc)" [ "$rc" = 0 ]
check "... a warning: line naming both numbers" \
	grep -q "^warning: .*hot: capacity 64M (67108864 bytes) is larger than the file system that holds \"$MNT/hot\" (8M, 8388608 bytes" "$T/check.out"

tc_start || exit 1
check "the start logs the same warning" grep -q "op=start warning=.*capacity 64M" "$T/daemon.log"

# (a) 40 MiB through a hot tier whose disk holds 8
check "(a) 40 files of 1 MiB on an 8 MiB hot disk: all bytes correct (failures: $(read_set a))" \
	[ ! -s "$T/verify.err" ]
eff=$(tier effective_capacity_bytes)
check "(a) status: hot capacity stays 64M" [ "$(tier capacity_bytes)" = $((64 * MiB)) ]
check "(a) status: hot effective capacity shrunk to what the disk has ($eff)" [ "$eff" -le $((8 * MiB)) ] && [ "$eff" -gt 0 ]
check "(a) hot used within the disk" [ "$(tier used_bytes)" -le $((8 * MiB)) ]
check "(a) metrics: effective capacity exported" [ "$(metric 'tiercache_tier_effective_capacity_bytes{tier="hot"}')" -le $((8 * MiB)) ]
check "(a) hot is not failed for being small" [ "$(tier state)" = ok ]
check "(a) no cold error counted for a full tier" [ "$(tc_json "s['counters']['cold_errors']")" = 0 ]
check "(a) hot holds chunks" [ "$(tier chunks)" -gt 0 ]

# (b) read-only
sleep 0.5 # fills done; nothing open for writing
mount -o remount,ro "$MNT" || fail "remount ro"
: >"$T/verify.err"
check "(b) hot read-only: 10 new reads, all bytes correct (failures: $(read_set b))" [ ! -s "$T/verify.err" ]
check "(b) status: hot failed" wait_for 10 '[ "$(tier state)" = failed ]'
check "(b) status: the reason says read-only" wait_for 5 '[[ "$(tier reason)" == *ead-only* ]]'
check "(b) metrics: tiercache_tier_failed{tier=hot} 1" [ "$(metric 'tiercache_tier_failed{tier="hot"}')" = 1 ]
check "(b) metrics: warm not failed" [ "$(metric 'tiercache_tier_failed{tier="warm"}')" = 0 ]
check "(b) resident files still read correctly (failures: $(read_set a))" [ ! -s "$T/verify.err" ]
check "(b) the failure is logged once" [ "$(grep -c 'tier=hot .*op=health state=failed' "$T/daemon.log")" = 1 ]
mount -o remount,rw "$MNT" || fail "remount rw"
check "(b) remounted rw: hot comes back (within 15 s)" wait_for 15 '[ "$(tier state)" = ok ]'
check "(b) ... logged" grep -q "tier=hot .*op=health state=ok" "$T/daemon.log"
touch "$T/before_r"
sleep 1.1
: >"$T/verify.err"
check "(b) after the probe: 10 new reads, all correct (failures: $(read_set r))" [ ! -s "$T/verify.err" ]
check "(b) hot takes fills again" [ "$(find "$MNT/hot/chunks" -name '*.chunk' -newer "$T/before_r" | wc -l)" -gt 0 ]
check "(b) metrics: tiercache_tier_failed{tier=hot} 0" [ "$(metric 'tiercache_tier_failed{tier="hot"}')" = 0 ]

# (c) the tier directory removed while running
rm -rf "$MNT/hot"
: >"$T/verify.err"
# at once, before the health check notices: the daemon's cached descriptor
# of a chunk still reads the unlinked file; one it must open again is
# dropped and read from the cold store (op_chunk, on ENOENT)
check "(c) files resident on the removed tier read correctly at once (failures: $(read_set r))" [ ! -s "$T/verify.err" ]
check "(c) hot removed: 10 new reads, all bytes correct (failures: $(read_set c))" [ ! -s "$T/verify.err" ]
check "(c) status: hot failed" wait_for 10 '[ "$(tier state)" = failed ]'
check "(c) status: no chunks counted on the removed tier" wait_for 10 '[ "$(tier chunks)" = 0 ]'
check "(c) status: no bytes counted on it" wait_for 10 '[ "$(tier used_bytes)" = 0 ]'
check "(c) the dataset has nothing resident on hot" [ "$(tc_json "s['datasets'][0]['resident_hot_bytes']")" = 0 ]
check "(c) files that were on hot read correctly from cold again (failures: $(read_set a))" [ ! -s "$T/verify.err" ]
mkdir "$MNT/hot"
check "(c) recreated: hot comes back (within 15 s)" wait_for 15 '[ "$(tier state)" = ok ]'
check "(c) the daemon rewrote the layout and a marker" [ -f "$MNT/hot/.tiercache-tier" ] && [ -d "$MNT/hot/chunks/ff" ]
touch "$T/before_d"
sleep 1.1
: >"$T/verify.err"
check "(c) 10 new reads after it came back, all correct (failures: $(read_set d))" [ ! -s "$T/verify.err" ]
check "(c) hot takes fills again" [ "$(find "$MNT/hot/chunks" -name '*.chunk' -newer "$T/before_d" | wc -l)" -gt 0 ]
check "(c) hot failed twice in all" [ "$(tier failures)" = 2 ]
check "no read ever failed: no cold errors counted" [ "$(tc_json "s['counters']['cold_errors']")" = 0 ]
tc_stop || fail "daemon stop"
# a restart accepts the tier it re-initialised
tc_start || exit 1
check "restart after all that: everything reads correctly (failures: $(read_set ''))" [ ! -s "$T/verify.err" ]
finish
