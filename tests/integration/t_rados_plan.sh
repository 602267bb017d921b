# Plans over a RADOS dataset (the async backend): files imported into a
# plain-layout pool, a plan registered in a shuffled order, then read from
# another connection in that order: with the dataset 2.5x the hot tier,
# every chunk read hits because the prefetcher read it from Ceph first, and
# the bytes equal the source.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
TP=$TC_TESTS/tcplan
tc_config 3M none 64K
mkdir -p "$T/cold" "$T/src/f"
for i in $(seq -w 0 59); do head -c 131072 /dev/urandom >"$T/src/f/s$i.bin"; done
rd_dataset rp "${RD_PREFIX}p/" plain 64K "policy = clairvoyant"
tc_start || exit 1
check "import 60 files into the pool" [ "$(rd_import "$T/src" rp)" = "60 0 0" ]
ls "$T/src/f" | sed 's|^|f/|' |
	python3 -c "import random,sys; l=sys.stdin.read().split(); random.Random(3).shuffle(l); print('\n'.join(l))" >"$T/order"
"$TP" set rp 5 0 1 1 hold="$T/release" <"$T/order" >"$T/holder" &
holder=$!
for _ in $(seq 1 200); do grep -q registered "$T/holder" 2>/dev/null && break; sleep 0.05; done
check "register the plan" grep -q "registered 60" "$T/holder"
m0=$(tc_json "s['counters']['misses']")
h0=$(tc_json "s['counters']['hits_hot']")
check "read in plan order from another connection: bytes equal the source" \
	"$TP" read rp "$T/src" settle <"$T/order"
check "all 120 chunk reads hit (prefetched from Ceph)" \
	[ "$(tc_json "s['counters']['misses']") $(( $(tc_json "s['counters']['hits_hot']") - h0 ))" = "$m0 120" ]
check "prefetch counted them" [ "$(tc_json "s['prefetch']['hits']")" -ge 120 ]
check "the plan reached its end" \
	[ "$(tc_json "[p['position'] for p in s['plans'] if p['job'] == 5][0]")" = 120 ]
check "the dataset is over twice the hot tier" \
	[ "$(tc_ds rp "d['bytes']")" -gt "$(( 2 * $(tc_json "s['tiers'][0]['capacity_bytes']") ))" ]
touch "$T/release"
wait $holder
finish
