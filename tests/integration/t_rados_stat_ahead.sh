# Stat-ahead over RADOS (issue 17, the mount's epoch in which every entry
# is past revalidate_after): when an open finds its file due for a stat,
# the other due files of its directory are confirmed against the pool
# ahead of their opens (daemon.stat_ahead_inflight in flight), so their
# opens find them fresh and wait for nothing.
# (a) 300 small files in 3 directories, revalidate_after = 4s: one pass
#     reads them all (every byte equals the pool's);
# (b) one object overwritten and one removed in the pool, then past
#     revalidate_after a second pass in a shuffled order: stats were sent
#     ahead, most opens found their file confirmed by one, far fewer opens
#     waited for a stat than files were read, no file was stat'd twice;
#     the overwritten file reads at its new bytes, the removed one is
#     ENOENT;
# (c) stat_ahead_inflight = 0 (a live reload), past revalidate_after again:
#     a third pass sends no stat ahead, every open waits for its own.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
TP=$TC_TESTS/tcplan
ctr() { tc_json "s['counters']['$1']"; }
read_list() { "$TP" read rp "$T/src" <"$1" >"$T/read.out" 2>&1 || { cat "$T/read.out"; return 1; }; }
RA=4

tc_config 64M 64M 1M
P="${RD_PREFIX}sa/"
rd_dataset rp "$P" plain 1M
sed -i "s/^revalidate_after = 0s\$/revalidate_after = ${RA}s/" "$T/tc.conf"
python3 - "$T/src" <<'PY'
import os, random, sys
d = sys.argv[1]
r = random.Random(30)
for i in range(300):
    sub = os.path.join(d, "c%d" % (i % 3))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%03d.jpg" % i), "wb") as f:
        f.write(os.urandom(r.randint(4, 40) * 1024))
PY
(cd "$T/src" && find . -type f | sed 's|^\./||' | sort) >"$T/all"
n=$(wc -l <"$T/all")

tc_start || exit 1
check "import uploads the $n files" [ "$(rd_import "$T/src" rp)" = "$n 0 0" ]
check "stat_ahead_inflight defaults to 32" \
	bash -c "'$TC_BIN/tierctl' config show | grep -qx 'stat_ahead_inflight = 32  # default'"

# (a) one pass, in listing order
check "(a) one pass: every byte equals the pool's" read_list "$T/all"

# (b) a change and a removal behind the daemon's back, then a shuffled
# pass once every entry is past revalidate_after
head -c 33333 /dev/urandom >"$T/src/c1/f001.jpg"
rd_rados put "${P}c1/f001.jpg" "$T/src/c1/f001.jpg"
rd_rados rm "${P}c2/f002.jpg"
rm "$T/src/c2/f002.jpg"
grep -v '^c2/f002.jpg$' "$T/all" | shuf --random-source=<(yes 30) >"$T/shuffled"
m=$(wc -l <"$T/shuffled")
sleep $((RA + 1))
s0=$(ctr stat_ahead_sent) u0=$(ctr stat_ahead_used) j0=$(ctr stat_ahead_joined)
r0=$(ctr revalidation_stats) b0=$(ctr revalidations_by_read)
check "(b) a shuffled pass past revalidate_after: every byte equals the pool's (the overwritten file's new bytes)" \
	read_list "$T/shuffled"
sent=$(($(ctr stat_ahead_sent) - s0)) used=$(($(ctr stat_ahead_used) - u0))
joined=$(($(ctr stat_ahead_joined) - j0)) own=$(($(ctr revalidation_stats) - r0))
byread=$(($(ctr revalidations_by_read) - b0))
waited=$((own + joined + byread))
echo "(b) files $m stat_ahead_sent $sent used $used joined $joined own_stats $own by_read $byread"
check "(b) stats were sent ahead ($sent >= $((m / 2)))" [ "$sent" -ge $((m / 2)) ]
check "(b) most opens found their file confirmed by one ($used >= $((m / 2)))" [ "$used" -ge $((m / 2)) ]
check "(b) far fewer opens waited for a stat ($waited) than files were read ($m)" [ "$waited" -le $((m / 4)) ]
check "(b) each file stat'd about once: $((sent + own)) stats for $n entries" [ $((sent + own)) -le $((n + 3)) ]
check "(b) the overwritten object reads at its new bytes" \
	"$TC_TESTS/tcverify" file rp/c1/f001.jpg "$T/src/c1/f001.jpg"
check "(b) the removed object is ENOENT" "$TC_TESTS/tcverify" errno rp/c2/f002.jpg ENOENT
check "(b) no stat ahead left in flight" [ "$(tc_json "s['daemon']['stat_ahead_inflight']")" = 0 ]

# (c) the key at 0, live
sed -i 's/^workers = 4$/workers = 4\nstat_ahead_inflight = 0/' "$T/tc.conf"
"$TC_BIN/tierctl" reload >"$T/r.out" 2>&1
check "(c) reload applies stat_ahead_inflight = 0 live" grep -qx "applied: daemon.stat_ahead_inflight = 0 (was 32)" "$T/r.out"
sleep $((RA + 1))
s0=$(ctr stat_ahead_sent) r0=$(ctr revalidation_stats) b0=$(ctr revalidations_by_read)
check "(c) a pass with stat-ahead off: every byte equals the pool's" read_list "$T/shuffled"
sent=$(($(ctr stat_ahead_sent) - s0)) own=$(($(ctr revalidation_stats) - r0))
byread=$(($(ctr revalidations_by_read) - b0))
echo "(c) files $m stat_ahead_sent $sent own_stats $own by_read $byread"
check "(c) no stat sent ahead" [ "$sent" = 0 ]
check "(c) every open waited for its own revalidation ($own + $byread = $m)" [ $((own + byread)) = "$m" ]
check "no cold errors" [ "$(ctr cold_errors)" = 0 ]
finish
