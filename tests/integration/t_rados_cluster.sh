# The cluster over a RADOS dataset: three daemons with [cluster] share one
# prefix of the test pool. Read by all three at once, the pool is read about
# once (the per-node bytes_from_cold summed over the nodes <= 1.05x the
# dataset), the rest comes from the chunks' homes over the peer port, and
# every byte equals the source. Then a home is SIGSTOPped and the other two
# drop their copies and read again: every read completes with the right
# bytes from the pool, and the fallbacks are counted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/a" "$SRC/b" "$T/cold"
for i in $(seq 1 12); do
	head -c $((MIB + (i * 104729) % (2 * MIB))) /dev/urandom >"$SRC/$([ $((i % 2)) = 0 ] && echo a || echo b)/f$i.bin"
done
FILES=$(cd "$SRC" && find . -type f | sed 's|^\./||' | sort)
total=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

tc_redis_start || exit 1
tc_cluster_key

# Each node: the posix dataset lib_cluster.sh writes (unused here) and the
# RADOS dataset rc over this test's prefix.
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=64M warm=none chunk=1M || exit 1
	T=$T/n$i rd_dataset rc "${RD_PREFIX}c/" plain 1M
	cat "$T/n$i/tc.conf" >>"$T/n$i/tiercache.conf"
	rm "$T/n$i/tc.conf"
done
trap 'rd_cleanup; tcc_cleanup' EXIT

for i in $(seq 1 $N); do tc_node_start "$i" || exit 1; done
nmembers() { tc_node_json "$1" "len(s['cluster_members'])" 2>/dev/null; }
for i in $(seq 1 $N); do
	check "node $i sees $N members" wait_for 30 "[ \"\$(nmembers $i)\" = $N ]"
done
check "import the files into the pool through node 1" \
	[ "$(TIERCACHE_SOCKET=$T/n1/sock rd_import "$SRC" rc)" = "$(echo "$FILES" | wc -l) 0 0" ]
for i in $(seq 2 $N); do
	TIERCACHE_SOCKET=$T/n$i/sock "$TC_BIN/tierctl" refresh rc >/dev/null 2>&1
done

# read_on NODE...: those nodes read every file at once
read_on() { tcc_read_on rc "$FILES" "$@"; }
from_cold() { tc_node_json "$1" "[d['bytes_from_cold'] for d in s['datasets'] if d['name'] == 'rc'][0]"; }
from_peers() { tc_node_json "$1" "[d['bytes_from_peers'] for d in s['datasets'] if d['name'] == 'rc'][0]"; }
fallbacks() { tc_node_json "$1" "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))"; }
sum_over() { local f=$1 i s=0; shift; for i in "$@"; do s=$((s + $($f "$i"))); done; echo $s; }

check "all 3 nodes read every file at once: bytes equal the source" read_on 1 2 3
cold=$(sum_over from_cold 1 2 3)
peers=$(sum_over from_peers 1 2 3)
echo "dataset $total bytes; read from the pool $cold, from peers $peers"
check "the pool was read about once ($cold bytes for a $total-byte dataset)" \
	[ "$cold" -ge "$total" ] && [ "$cold" -le $((total * 105 / 100)) ]
check "the other copies came from peers ($peers bytes)" [ "$peers" -ge $((total * 2 * 95 / 100)) ]

# ---- a home hangs ----
tc_node_pause 2
for i in 1 3; do
	TIERCACHE_SOCKET=$T/n$i/sock "$TC_BIN/tierctl" evict rc >/dev/null ||
		fail "tierctl evict rc on node $i"
done
fb0=$(sum_over fallbacks 1 3)
check "node 2 stopped: nodes 1 and 3 read every file again, bytes equal the source" read_on 1 3
check "the reads that needed node 2 fell back, counted" [ "$(sum_over fallbacks 1 3)" -gt "$fb0" ]
tc_node_resume 2
tcc_finish
