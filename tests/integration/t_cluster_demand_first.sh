# The reader's own chunk first (docs/cluster.md "Measured", session 18): a
# read-ahead request to a peer is not sent while a request a client's read
# waits for (a demand) is in flight to any peer, so a file's first chunk,
# asked at the open with its read-ahead siblings, lands before them.
# Three daemons share a counted cold directory; nodes 2 and 3 read every
# file first, so each chunk is held by its home. Node 1 (log_level debug:
# each peer reply's stage line says demand or read-ahead, when it was sent
# and when its last byte came) then reads the files whole, one at a time,
# one reader. Checks: every byte equals the source; no read-ahead request
# was sent while a demand was in flight; no file's demand chunk landed
# after a read-ahead sibling of the same file; read-ahead requests were
# held (status peer_readahead_held), at most a few up to the hold's limit
# (with one reader, only a demand slower than PEER_HOLD_MS, 20 ms, does that);
# no read fell back to the cold store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a"
for i in $(seq -w 1 16); do head -c $((4 * MIB)) /dev/urandom >"$SRC/a/f$i.bin"; done

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1
for i in 1 2 3; do
	tc_node_config $i hot=512M warm=none chunk=1M cluster.lease=20s cluster.heartbeat=200ms
	[ $i = 1 ] && sed -i "s/^log_level = .*/log_level = debug/" "$T/n$i/tiercache.conf"
	tc_node_start $i || exit 1
done
for i in 1 2 3; do
	check "node $i lists 3 members up" tc_node_members_up $i 3
	check "node $i has its manifest" tc_node_serving "$i"
done
read_all() { # read_all NODE: every file through node NODE, compared with the source
	local f bad=0
	for f in $(cd "$SRC" && ls a/*); do
		timeout 120 env TIERCACHE_SOCKET="$T/n$1/sock" "$TC_BIN/tierctl" cat "ds/$f" | cmp -s - "$SRC/$f" || bad=1
	done
	return $bad
}
check "node 2 reads every file: bytes equal the source" read_all 2
check "node 3 reads every file: bytes equal the source" read_all 3
cold0=$(tc_cold_bytes)
lines0=$(wc -l <"$T/n1/daemon.log")
check "node 1 reads every file: bytes equal the source" read_all 1
tail -n +$((lines0 + 1)) "$T/n1/daemon.log" | grep 'op=peer_got' >"$T/got.log"
# per line: demand held sent_ns end_ns path
order=$(python3 - "$T/got.log" <<'PY'
import sys
rows = []
for line in open(sys.argv[1]):
    kv = dict(w.split('=', 1) for w in line.split() if '=' in w)
    if 'demand' in kv:
        rows.append((int(kv['demand']), int(kv['held']), int(kv['sent_ns']), int(kv['end_ns']), kv['path'],
                     int(kv['idx']), kv['node']))
dem = [r for r in rows if r[0]]
ra = [r for r in rows if not r[0]]
# a read-ahead request sent while a demand was in flight (but for those
# sent when they had been held as long as allowed: held=2)
during = sum(1 for d in dem for a in ra if d[2] < a[2] < d[3] and a[1] != 2)
# a read-ahead sibling of the same file, asked after its demand chunk,
# that landed before it (but for those sent at the hold's limit)
before = sum(1 for d in dem for a in ra if a[4] == d[4] and d[2] < a[2] and a[3] < d[3] and a[1] != 2)
for d in dem:
    for a in ra:
        if (a[4] == d[4] and d[2] < a[2] and a[3] < d[3] or d[2] < a[2] < d[3]) and a[1] != 2:
            print('demand', d, 'read-ahead', a, file=sys.stderr)
print(len(dem), len(ra), sum(1 for r in ra if r[1]), sum(1 for r in ra if r[1] == 2), during, before)
PY
)
read -r ndem nra nheld nout during before <<<"$order"
echo "node 1 peer replies: $ndem demand, $nra read-ahead ($nheld held back, $nout of them sent at the hold's limit); sent during a demand: $during; landed before their file's demand chunk: $before"
check "node 1 asked its peers for demand chunks ($ndem >= 4)" [ "${ndem:-0}" -ge 4 ]
check "and for read-ahead chunks ($nra >= 16)" [ "${nra:-0}" -ge 16 ]
check "no read-ahead request sent while a demand was in flight" [ "${during:-1}" = 0 ]
check "no demand chunk landed after a read-ahead sibling of its file" [ "${before:-1}" = 0 ]
held=$(tc_node_json 1 "s['cluster']['peer_readahead_held']")
check "read-ahead requests were held back ($held >= $nheld >= 1)" [ "${nheld:-0}" -ge 1 -a "$held" -ge "$nheld" ]
out=$(tc_node_json 1 "s['cluster']['peer_readahead_held_out']")
check "held ones sent at the hold's limit: as many as counted ($out >= $nout), at most a few ($nout <= 4)" [ "$out" -ge "${nout:-99}" -a "${nout:-99}" -le 4 ]
check "the cold store was not read for node 1" [ "$(tc_cold_bytes)" = "$cold0" ]
check "no fallback on node 1" [ "$(tc_node_json 1 "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))")" = 0 ]
tcc_finish
