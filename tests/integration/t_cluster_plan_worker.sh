# A whole-job plan's encode (to publish) and decode (of a loaded version)
# run on a worker, not on the loop (docs/cluster.md, "DDP plans"); a newer
# registration, a cancel, a stop or a kill that comes meanwhile wins.
# Three daemons with [cluster] and a real Redis, a dataset of 20,000
# one-chunk files, whole-job plans of 200,000 entries (world_size 3,
# registered by rank 0 on node 1). TIERCACHE_PLAN_CODEC_DELAY_MS holds
# every encode and decode 3 s on its worker, so each step below lands
# inside one:
#   1. a client on every node pings its daemon throughout; plan A (epoch
#      1), and while A is encoded, plan B (epoch 2): A is never published
#      nor loaded anywhere, B is everywhere; no ping waited 2 s or more;
#   2. B's order again (epoch 4), untouched: every node's view has exactly
#      the chunks it had after 1;
#   3. plan C (epoch 3), cancelled on node 1 while nodes 2 and 3 decode
#      it: C is installed nowhere, no plan is left;
#   4. plan E (epoch 5), cancelled while node 1 encodes it: never
#      published, installed nowhere;
#   5. plan F (epoch 6): node 3 stopped (SIGTERM) while it decodes F exits
#      cleanly; then plan G (epoch 7) and node 1 killed (-9) while it
#      encodes G: Redis and node 2 keep F, G reaches nobody.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
WORLD=3
FILES=20000
REPEAT=10
JOB=27182
SRC=$T/src
TCPLAN=$TC_TESTS/tcplan
export TIERCACHE_PLAN_CODEC_DELAY_MS=3000
mkdir -p "$SRC/v"
python3 - "$SRC/v" "$FILES" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, "f%06d" % i), "w") as f:
        f.write("%016d\n" % i)
EOF
for e in 1 2 3; do
	(cd "$SRC" && find v -type f) | python3 -c "
import random, sys
v = sys.stdin.read().split() * $REPEAT
random.Random($e).shuffle(v)
print('\n'.join(v))" >"$T/order$e"
done
cp "$T/order2" "$T/order4"
for e in 5 6 7; do cp "$T/order$((e - 4))" "$T/order$e"; done
ENTRIES=$((FILES * REPEAT))
HOLD=()
PROBES=()

tc_redis_start || exit 1
tc_cluster_key
COLD=$SRC
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=64M warm=none chunk=1M
	tc_node_start "$i" || exit 1
done
for i in $(seq 1 $N); do
	check "node $i lists all $N members up" \
		tc_node_members_up $i $N 60
	check "node $i lists the $FILES files" \
		wait_for 120 "[ \"\$(tc_node_json $i \"all(d['serving'] and d['files'] == $FILES for d in s['datasets'])\")\" = True ]"
done

register() { # register E TAG: node 1 registers order E, holding its connection
	TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" set ds $JOB 0 $WORLD "$1" job hold="$T/stop" <"$T/order$1" \
		>"$T/reg$1.$2.out" 2>&1 &
	HOLD+=($!)
	wait_for 60 "grep -qs '^registered $ENTRIES' $T/reg$1.$2.out"
}
cp_json() { tc_node_json "$1" "s['cluster_plans']['$2']" 2>/dev/null; }
codec_busy() { [ "$(cp_json "$1" codec_jobs)" = 1 ]; }
# epochs I: node I's job plan epochs of the job
epochs() { tc_node_json "$1" "' '.join(str(j['epoch']) for j in s['job_plans'] if j['job'] == $JOB)" 2>/dev/null; }
version() { tc_node_json "$1" "' '.join(str(j['version']) for j in s['job_plans'] if j['job'] == $JOB)" 2>/dev/null; }
# the job's field in Redis: "VERSION PIECES ..." (PIECES 0: a tombstone)
field() { tc_redis_cli HGET "tc:{tctest}:jplans" "ds $JOB"; }
settled() { # settled I E: node I has plan E, its view and no build running: the view's chunks
	local v
	v=$(tc_node_json "$1" "'%d' % [p['chunks'] for p in s['plans'] if p['job'] == $JOB and p['home_view']][0] if [j['epoch'] for j in s['job_plans'] if j['job'] == $JOB] == [$2] and s['job_slices']['home_views_building'] == 0 and [p['epoch'] for p in s['plans'] if p['job'] == $JOB and p['home_view']] == [$2] else 'no'" 2>/dev/null)
	[ -n "$v" ] && [ "$v" != no ] && echo "$v"
}
# slice I: node I's rank-0 slice of the job as EPOCH:ENTRIES, and the slice builds running
slice() { tc_node_json "$1" "' '.join('%d:%d' % (p['epoch'], p['items']) for p in s['plans'] if p['job'] == $JOB and p['job_slice'] and p['rank'] == 0) + ' building=%d' % s['job_slices']['slices_building']" 2>/dev/null; }
SLICE0=$(((ENTRIES + WORLD - 1) / WORLD))
never_loaded() { ! grep -q "job=$JOB epoch=$2 op=job_plan_loaded" "$T/n$1/daemon.log"; }
none_left() { [ "$(tc_node_json "$1" "len(s['job_plans']) + s['job_slices']['home_views_building'] + sum(1 for p in s['plans'] if p['job'] == $JOB)" 2>/dev/null)" = 0 ]; }

# 1. pings throughout; A, and B while A is encoded
rm -f "$T/stop" "$T/probes_stop"
for i in $(seq 1 $N); do
	TIERCACHE_SOCKET=$T/n$i/sock "$TCPLAN" probe "$T/probes_stop" >"$T/probe$i.out" 2>&1 &
	PROBES+=($!)
done
check "plan A (epoch 1) registered" register 1 a
check "node 1 encodes A on a worker" wait_for 10 "codec_busy 1"
check "plan B (epoch 2) registered while A is encoded" register 2 a
declare -A C1
for i in $(seq 1 $N); do
	check "node $i: B's plan and view only, no build running" wait_for 120 "settled $i 2 >/dev/null"
	C1[$i]=$(settled "$i" 2)
done
touch "$T/probes_stop"
for p in "${PROBES[@]}"; do wait "$p"; done
for i in $(seq 1 $N); do
	max=$(awk '{for (k = 1; k < NF; k++) if ($k == "max_us") print $(k + 1)}' "$T/probe$i.out")
	check "node $i answered every ping within 2 s during the registrations ($(cat "$T/probe$i.out"))" \
		[ -n "$max" ] && [ "$max" -lt 2000000 ]
done
check "node 1: rank 0's slice is B's, whole, no build left ($(slice 1))" wait_for 30 "[ \"\$(slice 1)\" = '2:$SLICE0 building=0' ]"
check "node 1 dropped A's encode (overtaken)" [ "$(cp_json 1 codec_dropped)" -ge 1 ]
check "node 1 published once (B, not A)" [ "$(cp_json 1 published)" = 1 ]
for i in 2 3; do
	check "node $i never loaded A" never_loaded "$i" 1
	check "node $i has node 1's version of B ($(version 1))" [ "$(version "$i")" = "$(version 1)" ]
done
check "Redis holds B's version" [ "$(field | cut -d' ' -f1)" = "$(version 1)" ]

# 2. B's order again, untouched: the same views
check "B's order registered again as epoch 4" register 4 a
for i in $(seq 1 $N); do
	check "node $i built its view of epoch 4" wait_for 120 "settled $i 4 >/dev/null"
	c=$(settled "$i" 4)
	check "node $i: the same view as after the overtaken encode (${C1[$i]} = $c chunks)" [ "$c" = "${C1[$i]}" ]
done
check "node 1: rank 0's slice of epoch 4, whole ($(slice 1))" wait_for 30 "[ \"\$(slice 1)\" = '4:$SLICE0 building=0' ]"

# 3. C cancelled while nodes 2 and 3 decode it
check "plan C (epoch 3) registered" register 3 a
check "C published" wait_for 30 "[ \"\$(field | cut -d' ' -f1)\" = \"\$(version 1)\" ] && [ \"\$(epochs 1)\" = 3 ]"
check "nodes 2 and 3 decode C on a worker" wait_for 10 "codec_busy 2 && codec_busy 3"
out=$(TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" cancel ds $JOB 0)
check "node 1 cancels C: $out" [ "$out" = cancelled ]
for i in $(seq 1 $N); do
	check "node $i: no plan, view or build of the job left" wait_for 60 "none_left $i"
done
for i in 2 3; do
	check "node $i dropped the decoded C" wait_for 30 "[ \"\$(cp_json $i codec_dropped)\" -ge 1 ] && [ \"\$(cp_json $i codec_jobs)\" = 0 ]"
	check "node $i never installed C" never_loaded "$i" 3
	check "node $i: still no plan" none_left "$i"
done

# 4. E cancelled while node 1 encodes it
pub=$(cp_json 1 published)
check "plan E (epoch 5) registered" register 5 a
check "node 1 encodes E" wait_for 10 "codec_busy 1"
out=$(TIERCACHE_SOCKET=$T/n1/sock "$TCPLAN" cancel ds $JOB 0)
check "node 1 cancels E: $out" [ "$out" = cancelled ]
check "node 1's encode of E ends" wait_for 30 "[ \"\$(cp_json 1 codec_jobs)\" = 0 ]"
sleep 1 # five heartbeats: what was published would be loaded by now
check "E was never published" [ "$(cp_json 1 published)" = "$pub" ]
for i in $(seq 1 $N); do
	check "node $i: no plan of the job" none_left "$i"
done
for i in 2 3; do check "node $i never loaded E" never_loaded "$i" 5; done
f=$(field)
check "Redis holds no live plan of the job (${f:-none})" [ -z "$f" -o "$(cut -d' ' -f2 <<<"$f")" = 0 ]

# 5. F; node 3 stopped while it decodes F; G; node 1 killed while it encodes G
check "plan F (epoch 6) registered" register 6 a
check "nodes 2 and 3 decode F" wait_for 30 "codec_busy 2 && codec_busy 3"
tc_node_stop 3
check "node 3, stopped while decoding, exits cleanly" [ $? = 0 ]
check "node 2 installs F" wait_for 60 "[ \"\$(epochs 2)\" = 6 ]"
vf=$(version 1)
check "plan G (epoch 7) registered" register 7 a
check "node 1 encodes G" wait_for 10 "codec_busy 1"
tc_node_kill 1
sleep 4 # twenty heartbeats and more than a decode: G, were it in Redis, would be on node 2
check "Redis still holds F's version" [ "$(field | cut -d' ' -f1)" = "$vf" ]
check "node 2 still has F" [ "$(epochs 2)" = 6 ]
check "node 2 never loaded G" never_loaded 2 7
touch "$T/stop"
for p in "${HOLD[@]}"; do wait "$p" 2>/dev/null; done
tcc_finish
