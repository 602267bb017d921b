#!/usr/bin/env bash
# bench/epochs.sh BUILD_DIR: the `make demo` workload (small samples plus a
# few large shards, read whole in a new random order each epoch by 4
# threads) through the real daemon, with the dataset about twice hot + warm,
# once per policy. Prints a table per policy per epoch and, per epoch, each
# policy's hits as a ratio to lru's from the same run.
#
# Each epoch is its own epoch_reader run with its own seed: a multi-epoch
# run of epoch_reader gives two consecutive epochs the same order, which is
# LRU's worst case and would flatter the others.
#
# Sizes: EPOCHS_FILES (2000 samples of ~100 KB), EPOCHS_SHARDS (3 x 24 MB),
# EPOCHS_HOT / EPOCHS_WARM (40M / 96M), EPOCHS_N (4 epochs).
#
# Each policy's run is recorded (tierctl trace) and replayed in
# tiercache-sim with the tiers' low watermarks as the policies' budgets and
# hot held up to its capacity (--hot-max: the mover's demotions trail the
# fills): the daemon's hits over the simulator's and over OPT's on exactly
# the accesses the daemon saw (issue 18's goals); the budgets alone are
# shown beside it. EPOCHS_TRACE_DIR=DIR keeps the traces (trace-POLICY.csv).
# A run that registered a plan is replayed with the daemon's plan prefetch
# modelled (tiercache-sim --prefetch-window: each plan's window, half of
# hot's budget at most), since the daemon prefetches a plan under every
# policy; the simulator's loads are instant, so daemon/sim below 1 there
# is prefetches that came late (reads faster than the cold store). Then
# timed: at epoch 1's fill rate (one queue), and, for DDP, per epoch
# (tiercache-sim --prefetch-rate epoch: each epoch's cold read time from
# the trace's misses, prefetch_inflight loads at once). Last, with the
# daemon's own load timing (tiercache-sim --prefetch-rate trace: the
# trace's prefetch load rows; a chunk the model loads ahead is late when
# the daemon's load of it was): what is left is what the policies kept.
# With a training
# step (EPOCHS_COMPUTE=2) the readers are slower than the cold store and
# every column agrees within a few percent; with none, timing decides
# (docs/simulator.md, "Replay agreement").
#
# EPOCHS_DDP=W: a DDP job of world_size W instead (tcplan ddp, one process
# per rank, its connection tagged JOB:RANK): each epoch rank 0 registers
# the job's whole new shuffle (TIERCACHE_PLAN_JOB) under every policy, and
# rank r reads entries i % W == r, every byte compared with the source.
# EPOCHS_SEGMENT_THRESHOLD: the daemon's segment_threshold (default: the
# daemon's own, 512K; 0 keeps a file per chunk).
# EPOCHS_LOG_LEVEL: the daemon's log_level (default warn); with
# EPOCHS_TRACE_DIR its log is kept there too.
# EPOCHS_COMPUTE: ms of "training step" after each file (DDP: per file;
# otherwise epoch_reader's ms per MB), default 0: reads as fast as they go.
set -euo pipefail

O=${1:-build/default}
cd "$(dirname "$0")/.."
FILES=${EPOCHS_FILES:-2000}
SHARDS=${EPOCHS_SHARDS:-3}
HOT=${EPOCHS_HOT:-40M}
WARM=${EPOCHS_WARM:-96M}
N=${EPOCHS_N:-4}
POLICIES=${EPOCHS_POLICIES:-lru arc epoch clairvoyant}
# EPOCHS_PLACEMENT="demote=flat ...": placement tunables for every policy,
# in the daemon (tierctl policy set) and in each replay (--placement)
PLACEMENT=${EPOCHS_PLACEMENT:-}
plc=()
for kv in $PLACEMENT; do plc+=(--placement "$kv"); done
DDP=${EPOCHS_DDP:-0}
COMPUTE=${EPOCHS_COMPUTE:-0}
for b in bin/tiercached bin/tierctl bin/epoch_reader bin/tiercache-sim tests/tcplan; do
	[ -x "$O/$b" ] || { echo "bench/epochs.sh: $O/$b not built (make all)" >&2; exit 2; }
done
B=$(mktemp -d "${TMPDIR:-/tmp}/tcepochs.XXXXXX")
pid=
rpids=()
cleanup() {
	for r in "${rpids[@]}"; do kill -TERM "$r" 2>/dev/null || true; done
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null || true
	fi
	if [ -n "${EPOCHS_TRACE_DIR:-}" ] && [ -f "$B/daemon.log" ]; then
		mkdir -p "$EPOCHS_TRACE_DIR" && cp "$B/daemon.log" "$EPOCHS_TRACE_DIR/"
	fi
	rm -rf "$B"
}
trap cleanup EXIT

python3 scripts/gen-demo-data "$B/cold" --files "$FILES" --shards "$SHARDS" >/dev/null
rm -f "$B/cold/.complete"
export TIERCACHE_SOCKET=$B/sock

start() {
	rm -rf "$B/state" "$B/hot" "$B/warm"
	cat >"$B/tc.conf" <<CONF
[daemon]
socket = $B/sock
state_dir = $B/state
log_level = ${EPOCHS_LOG_LEVEL:-warn}
workers = 4
prefetch_inflight = ${EPOCHS_PREFETCH_INFLIGHT:-8}
${EPOCHS_SEGMENT_THRESHOLD:+segment_threshold = $EPOCHS_SEGMENT_THRESHOLD}
[tier hot]
path = $B/hot
capacity = $HOT
high_water = 90
low_water = 75
[tier warm]
path = $B/warm
capacity = $WARM
high_water = 90
low_water = 75
[dataset demo]
path = $B/cold
chunk_size = 4M
CONF
	"$O/bin/tiercached" -c "$B/tc.conf" 2>>"$B/daemon.log" &
	pid=$!
	for _ in $(seq 1 100); do
		"$O/bin/tierctl" status >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench/epochs.sh: tiercached did not start" >&2
	cat "$B/daemon.log" >&2
	exit 1
}

# ddp_epoch POLICY EPOCH: one epoch of the DDP job (EPOCHS_DDP ranks); a
# row of the table from the daemon's counters before and after
ddp_epoch() {
	local p=$1 e=$2 r go=$B/go-$p-$1-$2 t0 t1
	(cd "$B/cold" && find . -type f | sed 's|^\./||' | sort) | python3 -c '
import random, sys
names = sys.stdin.read().split()
random.Random(int(sys.argv[1])).shuffle(names)
print("\n".join(names))' $((100 + e)) >"$B/order"
	"$O/bin/tierctl" status --json >"$B/c0.json"
	rpids=()
	for r in $(seq 0 $((DDP - 1))); do
		reg=()
		[ "$r" = 0 ] && reg=(register)
		"$O/tests/tcplan" ddp demo "$B/cold" 18 "$r" "$DDP" "$e" "$B/order" "$go" "$COMPUTE" \
			"${reg[@]}" >"$B/rank$r.out" 2>&1 &
		rpids+=($!)
	done
	for r in $(seq 0 $((DDP - 1))); do
		for _ in $(seq 1 300); do
			grep -q '^ready' "$B/rank$r.out" && break
			grep -q 'FAIL\|error' "$B/rank$r.out" && break
			sleep 0.1
		done
	done
	t0=$(date +%s.%N)
	touch "$go"
	for r in $(seq 0 $((DDP - 1))); do
		wait "${rpids[$r]}" || { echo "bench/epochs.sh: rank $r failed:" >&2; cat "$B/rank$r.out" >&2; exit 1; }
	done
	t1=$(date +%s.%N)
	rpids=()
	"$O/bin/tierctl" status --json >"$B/c1.json"
	python3 - "$B/c0.json" "$B/c1.json" "$p" "$e" "$t0" "$t1" "$bytes" >>"$B/rows" <<'PY'
import json, sys
c0, c1 = (json.load(open(f))["counters"] for f in sys.argv[1:3])
d = {k: c1[k] - c0[k] for k in ("hits_hot", "hits_warm", "misses")}
wall = float(sys.argv[6]) - float(sys.argv[5])
print(sys.argv[3], sys.argv[4], "%.2f" % wall, "%.1f" % (int(sys.argv[7]) / 1e6 / wall),
      d["hits_hot"], d["hits_warm"], d["misses"])
PY
}

bytes=$(du -sb "$B/cold" | cut -f1)
readers="4 reader threads"
[ "$DDP" -gt 0 ] && readers="a DDP job of $DDP ranks (whole-job plan, every policy)"
echo "dataset: $FILES samples + $SHARDS shards, $((bytes / 1048576)) MiB; hot $HOT + warm $WARM" \
	"(policies keep each tier at its 75% low watermark); chunk 4M; $readers; compute $COMPUTE"
printf '%-12s %5s %8s %8s %9s %9s %8s %7s\n' policy epoch wall_s MB/s hits_hot hits_warm misses hit%
for p in $POLICIES; do
	start
	"$O/bin/tierctl" policy set demo "$p" $PLACEMENT >/dev/null
	"$O/bin/tierctl" trace start "$B/trace-$p.csv" >/dev/null
	for e in $(seq 1 "$N"); do
		# clairvoyant knows the future only from a plan: register each
		# epoch's order (as a sampler would), so that the daemon and the
		# simulator (which reads the trace ahead) see the same future
		if [ "$DDP" -gt 0 ]; then
			ddp_epoch "$p" "$e"
			continue
		fi
		plan=()
		[ "$p" = clairvoyant ] && plan=(--plan 7)
		"$O/bin/epoch_reader" --epochs 1 --threads 4 --seed $((100 + e)) "${plan[@]}" \
			--compute-ms-per-mb "$COMPUTE" --json demo >"$B/e.json"
		python3 - "$B/e.json" "$p" "$e" >>"$B/rows" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]
print(sys.argv[2], sys.argv[3], r["wall_s"], r["mb_per_s"], r["hits_hot"], r["hits_warm"], r["misses"])
PY
	done
	if [ "$DDP" -gt 0 ] || [ "$p" = clairvoyant ]; then
		"$O/bin/tierctl" status --json | python3 -c '
import json, sys
p = json.load(sys.stdin)["prefetch"]
print("             (prefetch: %d chunks, %.1f MB; %d read, %d late (read while in flight), %d evicted unused, %d stalls, %d waits for free room on hot, %d reclaims asked; a prefetch read took %.1f ms at the end)" % (
    p["issued"], p["prefetched_bytes"] / 1e6, p["hits"], p["late"], p["evicted_unused"], p["stalls"], p.get("room_waits", 0), p.get("reclaims", 0), p.get("latency_us", 0) / 1e3))' >>"$B/pf-$p"
	fi
	unkept=$("$O/bin/tierctl" status --json | python3 -c "import json,sys; c=json.load(sys.stdin)['counters']; print('%d, of which a tier had room for: %d' % (c['served_unkept'], c['served_unkept_with_room']))")
	awk -v p="$p" '$1 == p {
		h = $5 + $6; t = h + $7
		printf "%-12s %5d %8.2f %8.1f %9d %9d %8d %7.1f\n", $1, $2, $3, $4, $5, $6, $7, t ? 100 * h / t : 0
	}' "$B/rows"
	echo "             (chunks served without being kept: $unkept)"
	[ -f "$B/pf-$p" ] && cat "$B/pf-$p"
	"$O/bin/tierctl" trace stop >/dev/null
	# the daemon's own trace replayed in the simulator with the budgets its
	# policies manage (each tier's low watermark): daemon hits / simulator
	# hits, and / OPT's, on exactly the accesses the daemon saw
	lw=$("$O/bin/tierctl" status --json | python3 -c "import json,sys; t={x['name']: x['low_water_bytes'] for x in json.load(sys.stdin)['tiers']}; print(t['hot'], t['warm'])")
	# and what hot holds while the mover's demotions trail the fills: up
	# to its capacity (fills reserve against it; the mover demotes at most
	# 4 chunks at once, cached/cache/mover.c); warm's victims are dropped
	# in the pass itself, so warm stays at its budget (docs/simulator.md,
	# "The mover trailing")
	cap=$("$O/bin/tierctl" status --json | python3 -c "import json,sys; t={x['name']: x['effective_capacity_bytes'] for x in json.load(sys.stdin)['tiers']}; print(t['hot'])")
	band=(--hot-max "$cap")
	# a registered plan: model the prefetcher; its window per plan is
	# prefetch_max_bytes (1G, not set here) or half of hot's budget
	# shared between the plans reading (a DDP job's ranks; the simulator
	# divides by them as the daemon does), whichever is less, once a
	# pipeline of prefetch_inflight (8) x 4M chunks exceeds that (it does
	# for hot budgets up to 64M)
	pfw=()
	if [ "$DDP" -gt 0 ] || [ "$p" = clairvoyant ]; then
		pfw=(--prefetch-window $(("${lw% *}" / 2)))
	fi
	"$O/bin/tiercache-sim" --trace "$B/trace-$p.csv" --hot "${lw% *}" --warm "${lw#* }" --policy "$p" "${plc[@]}" \
		"${band[@]}" "${pfw[@]}" --json >"$B/sim-$p.json" 2>"$B/sim-$p.err" || cat "$B/sim-$p.err"
	"$O/bin/tiercache-sim" --trace "$B/trace-$p.csv" --hot "${lw% *}" --warm "${lw#* }" --policy "$p" "${plc[@]}" \
		"${pfw[@]}" --no-opt --json >"$B/simb-$p.json" 2>"$B/simb-$p.err" || cat "$B/simb-$p.err"
	python3 - "$B/trace-$p.csv" "$B/sim-$p.json" "$p" "$B/simb-$p.json" <<'PY' | tee -a "$B/replay"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))

hits = sum(r["result"] in ("hot", "warm") for r in rows)
res = json.load(open(sys.argv[2]))["results"]
sim = [x for x in res if x["policy"] == sys.argv[3]][0]
opt = [x for x in res if x["policy"] == "opt"]
bud = [x for x in json.load(open(sys.argv[4]))["results"] if x["policy"] == sys.argv[3]][0]
line = "replay %-11s daemon %6d hits, simulator %6d: %.2f" % (sys.argv[3], hits, sim["hits"], hits / sim["hits"] if sim["hits"] else 0)
line += " (hot held to its capacity; at the budgets only %d: %.2f)" % (bud["hits"], hits / bud["hits"] if bud["hits"] else 0)
if opt:
    line += "; OPT %6d: daemon/OPT %.2f" % (opt[0]["hits"], hits / opt[0]["hits"] if opt[0]["hits"] else 0)
print(line + " (%d accesses)" % sum(r["result"] in ("hot", "warm", "miss", "unkept") for r in rows))
PY
	# the same with the prefetch's loads timed (tiercache-sim
	# --prefetch-rate): the cold store brings them in at the rate this
	# daemon filled epoch 1 on this machine (every byte from cold), so
	# daemon/sim there asks whether the prefetcher did what that rate
	# allows; daemon/sim above (instant loads) is the best case
	if [ ${#pfw[@]} -gt 0 ]; then
		rate=$(awk -v p="$p" -v b="$bytes" '$1 == p && $2 == 1 && $3 > 0 { printf "%d", b / $3 }' "$B/rows")
		if [ -n "$rate" ]; then
			"$O/bin/tiercache-sim" --trace "$B/trace-$p.csv" --hot "${lw% *}" --warm "${lw#* }" \
				--policy "$p" "${plc[@]}" "${band[@]}" "${pfw[@]}" --prefetch-rate "$rate" --no-opt --json \
				>"$B/simt-$p.json" 2>"$B/simt-$p.err" || cat "$B/simt-$p.err"
			python3 - "$B/trace-$p.csv" "$B/simt-$p.json" "$p" "$rate" <<'PY' | tee -a "$B/replay"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
hits = sum(r["result"] in ("hot", "warm") for r in rows)
sim = [x for x in json.load(open(sys.argv[2]))["results"] if x["policy"] == sys.argv[3]][0]
print("replay %-11s daemon %6d hits, timed simulator %6d: %.2f (loads at %.0f MB/s, epoch 1's; %d late in the model)" % (
    sys.argv[3], hits, sim["hits"], hits / sim["hits"] if sim["hits"] else 0, int(sys.argv[4]) / 1e6, sim["prefetch_late"]))
PY
		fi
	fi
	# and with the cold store's speed per epoch measured from the trace's
	# own misses (--prefetch-rate epoch: one cold read's rate, the client's
	# time between reads taken off, prefetch_inflight loads at once, as
	# the daemon's prefetcher): DDP only, whose ranks tag their reads (the
	# 4 threads of epoch_reader share one untagged stream)
	if [ "$DDP" -gt 0 ]; then
		"$O/bin/tiercache-sim" --trace "$B/trace-$p.csv" --hot "${lw% *}" --warm "${lw#* }" \
			--policy "$p" "${plc[@]}" "${band[@]}" "${pfw[@]}" --prefetch-rate epoch --no-opt --json \
			>"$B/sime-$p.json" 2>"$B/sime-$p.err" || cat "$B/sime-$p.err"
		python3 - "$B/trace-$p.csv" "$B/sime-$p.json" "$p" <<'PY' | tee -a "$B/replay"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
hits = sum(r["result"] in ("hot", "warm") for r in rows)
sim = [x for x in json.load(open(sys.argv[2]))["results"] if x["policy"] == sys.argv[3]][0]
print("replay %-11s daemon %6d hits, per-epoch simulator %6d: %.2f (cold reads timed per epoch from the trace's misses; %d late in the model)" % (
    sys.argv[3], hits, sim["hits"], hits / sim["hits"] if sim["hits"] else 0, sim["prefetch_late"]))
PY
	fi
	# and with the daemon's own load timing (the trace's load rows,
	# tiercache-sim --prefetch-rate trace): a chunk the model loads ahead
	# is late when the daemon's load of it was (landed late, lost, or not
	# made before a read that missed), so what is left between the two is
	# what the policies kept, not when the cold store delivered
	if [ ${#pfw[@]} -gt 0 ] && grep -q ',load$' "$B/trace-$p.csv"; then
		"$O/bin/tiercache-sim" --trace "$B/trace-$p.csv" --hot "${lw% *}" --warm "${lw#* }" \
			--policy "$p" "${plc[@]}" "${band[@]}" "${pfw[@]}" --prefetch-rate trace --no-opt --json \
			>"$B/simr-$p.json" 2>"$B/simr-$p.err" || cat "$B/simr-$p.err"
		python3 - "$B/trace-$p.csv" "$B/simr-$p.json" "$p" <<'PY' | tee -a "$B/replay"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
hits = sum(r["result"] in ("hot", "warm") for r in rows)
loads = sum(r["result"] == "load" for r in rows)
late = sum(r["result"] == "landed_late" for r in rows)
sim = [x for x in json.load(open(sys.argv[2]))["results"] if x["policy"] == sys.argv[3]][0]
print("replay %-11s daemon %6d hits, simulator with the daemon's load timing %6d: %.2f (the daemon made %d loads, %d landed late; %d reads late in the model)" % (
    sys.argv[3], hits, sim["hits"], hits / sim["hits"] if sim["hits"] else 0, loads, late, sim["prefetch_late"]))
PY
	fi
	if [ -n "${EPOCHS_TRACE_DIR:-}" ]; then mkdir -p "$EPOCHS_TRACE_DIR" && cp "$B/trace-$p.csv" "$EPOCHS_TRACE_DIR/"; fi
	kill -TERM "$pid"
	wait "$pid" || true
	pid=
done
echo
echo "hits (hot + warm) as a ratio to lru's, same run:"
awk '{ h[$1 " " $2] = $5 + $6; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } if ($2 > ne) ne = $2 }
END {
	printf "%-12s", "epoch"
	for (e = 2; e <= ne; e++) printf " %8d", e
	printf "\n"
	for (i = 0; i < n; i++) {
		p = order[i]; printf "%-12s", p
		for (e = 2; e <= ne; e++) {
			l = h["lru " e]
			if (l > 0) printf " %8.2f", h[p " " e] / l; else printf " %8s", (h[p " " e] > 0 ? "inf" : "-")
		}
		printf "\n"
	}
}' "$B/rows"
