#!/usr/bin/env bash
# Cluster benchmarks (docs/cluster.md), ratios within one run:
#   egress     cold bytes / dataset bytes when 4 daemons read the same dataset
#              at once, with [cluster] (goal <= 1.02) and without (4)
#   transfer   one node reading a dataset whose chunks its peers hold (over
#              the peer port, loopback; one reader process, epoch_reader)
#              against reading it again from its own tier, against what
#              loopback TCP allows (bench/tcp_floor: sendfile + recv, chunk
#              by chunk; and the same writing each file to the tier's file
#              system, as a fill keeps its copy), and against the same node
#              without [cluster] filling the same bytes from the cold
#              directory (page-cached): throughput, and CPU per GB measured
#              per process (schedstat): the sender side (the serving daemons
#              per GB sent / a local read of the same bytes, goal <= 2) and
#              the whole path (all daemons + reader, the receiver keeping a
#              copy) against a local read and a cold fill
#   failover   reading a fresh part right after its home is killed -9,
#              against the same read with every node up (seconds, ratio)
# Uses the test harness (tests/integration/lib_cluster.sh): real redis-server,
# real daemons on 127.0.0.2..5, a counted cold directory (tccountfs).
# Usage: bench/cluster.sh [BUILD]   (bench/run runs it)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. tests/integration/lib.sh
. tests/integration/lib_cluster.sh
N=4
MIB=1048576
SRC=$T/src
mkdir -p "$SRC/egress" "$SRC/transfer" "$SRC/base" "$SRC/fail" "$SRC/fill"
for i in $(seq 1 48); do head -c $((2 * MIB)) /dev/urandom >"$SRC/egress/f$i.bin"; done
for d in transfer base fail fill; do
	for i in $(seq 1 32); do head -c $((4 * MIB)) /dev/urandom >"$SRC/$d/f$i.bin"; done
done
bytes_of() { find "$SRC/$1" -type f -printf '%s\n' | awk '{s += $1} END {print s}'; }
now() { date +%s.%N; }
read_dir() { # read_dir NODE DIR: every file through the daemon, to /dev/null
	local f
	for f in $(cd "$SRC" && ls "$2"/*); do
		TIERCACHE_SOCKET=$T/n$1/sock "$TC_BIN/tierctl" cat "ds/$f" >/dev/null || return 1
	done
}
read_everywhere() { # read_everywhere DIR NODES...
	local d=$1 i
	shift
	local -a p=()
	for i in "$@"; do read_dir "$i" "$d" & p+=($!); done
	for i in "${p[@]}"; do wait "$i"; done
}
start_nodes() { # start_nodes on|off
	local i
	for i in $(seq 1 $N); do
		rm -rf "$T/n$i"
		if [ "$1" = on ]; then tc_node_config "$i" hot=512M warm=none chunk=1M cluster.lease=10s
		else tc_node_config "$i" hot=512M warm=none chunk=1M cluster=off; fi
		tc_node_start "$i" >/dev/null || exit 1
	done
	if [ "$1" = on ]; then
		for i in $(seq 1 $N); do
			wait_for 30 "[ \"\$(tc_node_json $i 'sum(1 for m in s[\"cluster_members\"] if m[\"state\"] == \"up\")' 2>/dev/null)\" = $N ]" || exit 1
		done
	fi
}
stop_nodes() { local i; for i in $(seq 1 $N); do tc_node_stop "$i"; done; }

tc_redis_start >/dev/null || exit 1
tc_cluster_key
tc_countfs_start "$SRC" >/dev/null || exit 1

echo "== cluster egress: $N daemons read the same $(($(bytes_of egress) / MIB)) MiB at once"
start_nodes on
c0=$(tc_cold_bytes)
read_everywhere egress $(seq 1 $N)
on=$(awk -v c="$(($(tc_cold_bytes) - c0))" -v t="$(bytes_of egress)" 'BEGIN {printf "%.3f", c / t}')
echo "transfer + failover on the same nodes"
# transfer: nodes 2..4 read the part (each chunk lands at its home or is
# fetched from it); then node 1 reads it: 3/4 of its chunks from peers
read_everywhere transfer 2 3 4
read_everywhere base 1
# CPU: ns on CPU of every thread of a process (/proc/PID/task/*/schedstat,
# first field: exact, unlike the machine's 10 ms ticks in /proc/stat) for
# the daemons, and the reader's own (epoch_reader --cpu). Softirq work of
# loopback TCP is charged to whichever process was on the CPU (mostly the
# sender); writeback of the kept copies (kworkers) is in no process here.
cpu_ns() { local p; for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done | awk '{s += $1} END {printf "%.0f", s}'; }
node_pids() { local i; for i in "$@"; do printf "%s " "$(tc_node_pid "$i")"; done; }
sent_bytes() { # sent_bytes NODES...: chunk bytes those nodes sent to peers
	local i s=0
	for i in "$@"; do s=$((s + $(tc_node_json "$i" "s['counters']['bytes_to_peers']"))); done
	echo $s
}
# one process reads the part in one pass (no process per file); prints its CPU ns
reader() {
	TIERCACHE_SOCKET=$T/n$1/sock "$TC_BIN/epoch_reader" --cpu --epochs 1 --threads 1 "ds/$2" |
		awk '/^cpu_ns / {print $2}'
}
mbs() { awk -v t="$2" -v s="$1" -v b="$3" 'BEGIN {printf "%.0f", b / (t - s) / 1e6}'; }
per_gb() { awk -v n="$1" -v b="$2" 'BEGIN {if (b < 1) b = 1; printf "%.3f", n / 1e9 / (b / 1e9)}'; } # CPU s per GB
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b <= 0) {print "nan"; exit} printf "%.2f", a / b}'; }
# quiet NODES...: no fill in flight and no filled chunk waiting for its
# lazy sync (cache.sync_delay): work left from one phase is not charged to
# the next; a phase's own syncs are charged to it
quiet() {
	local i
	for i in "$@"; do
		wait_for 30 "[ \"\$(tc_node_json $i 's[\"daemon\"][\"fills_inflight\"] + s[\"daemon\"][\"sync_pending_chunks\"]')\" = 0 ]" ||
			{ echo "node $i still busy after 30 s" >&2; exit 1; }
	done
}
TB=$(bytes_of transfer)
quiet $(seq 1 $N)
# the link: loopback TCP moving the same files (bench/tcp_floor), right
# before and right after the peer read (the machine is shared: its load
# changes within seconds), the peer read against their mean. First one
# run over twice those bytes, not counted: on a VM the first write into a
# guest page never touched before costs several times a write into a
# recycled one, and a copy written later (after other files were freed)
# would look cheaper: now the peer read and both links reuse freed pages
"$TC_BIN/tcp_floor" --write "$T/n1" "$SRC"/transfer/* "$SRC"/fill/* >/dev/null
link=$("$TC_BIN/tcp_floor" "$SRC"/transfer/*)
linkw=$("$TC_BIN/tcp_floor" --write "$T/n1" "$SRC"/transfer/*)
# and what a fill that keeps a checked copy must add: a file per chunk,
# its XXH3, a rename (no index, no sync)
linkf=$("$TC_BIN/tcp_floor" --fill "$T/n1" "$SRC"/transfer/*)
# the same with as many chunks in flight as the read's read-ahead (4
# streams): the honest floor of a receiver that must check and keep a copy
linkf4=$("$TC_BIN/tcp_floor" --streams 4 --fill "$T/n1" "$SRC"/transfer/*)
# how much of the peer read the machine's CPUs were idle (/proc/stat): near
# 0 means CPU-bound (then CPU per GB decides), more means a wait somewhere
idle_ticks() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
s0=$(sent_bytes 2 3 4)
d0=$(cpu_ns $(node_pids 2 3 4)); n0=$(cpu_ns $(node_pids 1)); i0=$(idle_ticks); t0=$(now)
rp=$(reader 1 transfer) || { echo "peer read failed" >&2; exit 1; }
t1=$(now); i1=$(idle_ticks); d1=$(cpu_ns $(node_pids 2 3 4)) # the senders are done: they keep nothing
linkw2=$("$TC_BIN/tcp_floor" --write "$T/n1" "$SRC"/transfer/*)
quiet 1 # node 1's lazy syncs of its kept copies belong to the peer read
n1=$(cpu_ns $(node_pids 1)); d1q=$(cpu_ns $(node_pids 2 3 4)); t1q=$(now)
# less what an idle daemon spends meanwhile (heartbeats, timers: the mean
# of nodes 2-4 over the same wait, ~1 ms/s)
n1=$((n1 - (d1q - d1) / 3))
rl=$(reader 1 transfer) || { echo "local re-read failed" >&2; exit 1; } # now every chunk is on node 1's own tier
t2=$(now); d2=$(cpu_ns $(node_pids 2 3 4)); n2=$(cpu_ns $(node_pids 1))
s1=$(sent_bytes 2 3 4)
SB=$((s1 - s0))
peer_mbs=$(mbs "$t0" "$t1" "$TB")
echo "peer read: $peer_mbs MB/s ($((SB * 100 / TB))% of the bytes from peers), local re-read: $(mbs "$t1q" "$t2" "$TB") MB/s"
linkw_mbs=$(awk -v a="$(echo "$linkw" | awk '{print $3}')" -v b="$(echo "$linkw2" | awk '{print $3}')" 'BEGIN {printf "%.0f", (a + b) / 2}')
echo "loopback TCP, 1 MiB chunks: ${link#tcp_floor }; with the copy written: ${linkw#tcp_floor } before, ${linkw2#tcp_floor } after the peer read; as a fill (a file per chunk, XXH3, rename): ${linkf#tcp_floor }"
echo "transfer_ratio_to_local $(awk -v a="$t1" -v b="$t0" -v q="$t1q" -v c="$t2" 'BEGIN {printf "%.2f", (c - q) / (a - b)}') (throughput of a peer read / a local read, same node, same bytes)"
echo "transfer_ratio_to_link $(ratio "$peer_mbs" "$linkw_mbs") (peer read / loopback TCP writing the copy, mean of before and after: $linkw_mbs MB/s; goal >= 0.9)"
linkf4_mbs=$(echo "$linkf4" | awk '{print $3}')
echo "transfer_ratio_to_fill_floor $(ratio "$peer_mbs" "$linkf4_mbs") (peer read / loopback TCP doing a fill's work, a file per chunk, XXH3, rename, 4 chunks in flight: ${linkf4#tcp_floor })"
echo "transfer_cpu_idle $(awk -v a="$i0" -v b="$i1" 'BEGIN {split(a, x, " "); split(b, y, " "); if (y[2] <= x[2]) {print "nan"; exit} printf "%.2f", (y[1] - x[1]) / (y[2] - x[2])}') (share of both CPUs idle during the peer read: near 0, CPU-bound)"
# sender: the serving daemons' CPU per GB they sent, against a local read
# of the same bytes (node 1's daemon + the reader, per GB read)
snd=$(per_gb $((d1 - d0)) "$SB")
loc=$(per_gb $((n2 - n1 + rl)) "$TB")
echo "CPU s per GB: sender (nodes 2-4 serving, sendfile from the tier file) $snd; local read (node 1 + reader) $loc"
echo "transfer_sender_cpu_per_gb_ratio $(ratio "$snd" "$loc") (CPU per GB a home sends to a peer / per GB of a local read of the same bytes; goal <= 2)"
# whole path: every daemon + the reader; the receiver checksums and keeps
# a copy of each chunk (a fill), which a local read never does
WHOLE_PEER=$(per_gb $((d1 - d0 + n1 - n0 + rp)) "$TB")
whole_loc=$(per_gb $((d2 - d1q + n2 - n1 + rl)) "$TB")
echo "CPU s per GB, whole path (all daemons + reader): peer read $WHOLE_PEER (of it the receiver node 1 + reader $(per_gb $((n1 - n0 + rp)) "$TB")); local read $whole_loc"
echo "transfer_whole_cpu_per_gb_ratio $(ratio "$WHOLE_PEER" "$whole_loc") (whole path of a peer read, whose receiver writes and checksums a kept copy, / a local read; compare with a cold fill below)"
# failover: kill node 2, read a fresh part on node 1 at once
read_everywhere base 3 4 >/dev/null
t0=$(now); read_dir 1 base; t1=$(now) # hits: the reference time of the tool itself
tc_node_kill 2
t2=$(now); read_dir 1 fail; t3=$(now)
echo "failover: node 1 read $(($(bytes_of fail) / MIB)) MiB whose homes include a node just killed in $(awk -v a="$t3" -v b="$t2" 'BEGIN {printf "%.2f", a - b}') s (fallbacks: $(tc_node_json 1 "sum(v for k, v in s['cluster'].items() if k.startswith('fallback_'))"))"
stop_nodes

echo "control: the same $N daemons without [cluster]"
tc_countfs_stop
tc_countfs_start "$SRC" >/dev/null || exit 1
start_nodes off
read_everywhere egress $(seq 1 $N)
off=$(awk -v c="$(tc_cold_bytes)" -v t="$(bytes_of egress)" 'BEGIN {printf "%.3f", c / t}')
# the floor of any fill that keeps a copy: node 1 alone fills a fresh part
# from the cold directory, its source already in the page cache
cat "$SRC"/fill/* >/dev/null
FB=$(bytes_of fill)
quiet $(seq 1 $N)
f0=$(cpu_ns $(node_pids $(seq 1 $N))); c0=$(cpu_ns "$COUNTFS_PID"); t3=$(now)
rf=$(reader 1 fill) || { echo "cold fill failed" >&2; exit 1; }
t4=$(now)
quiet 1
f1=$(cpu_ns $(node_pids $(seq 1 $N))); c1=$(cpu_ns "$COUNTFS_PID")
whole_fill=$(per_gb $((f1 - f0 + rf + c1 - c0)) "$FB")
echo "cold fill without [cluster] (local cold directory, page-cached): $(mbs "$t3" "$t4" "$FB") MB/s; CPU s per GB (daemons + reader + the cold directory's FUSE server): $whole_fill (of it tccountfs $(per_gb $((c1 - c0)) "$FB"))"
echo "transfer_cpu_vs_cold_fill $(ratio "$WHOLE_PEER" "$whole_fill") (whole-path CPU per GB of a peer read / of a cold fill of the same size: both keep a copy)"
stop_nodes
echo "cluster_egress_ratio $on (cold bytes / dataset, goal <= 1.02); without [cluster]: $off"

# ddp: a DDP job of world_size N, rank r on node r+1 (tcplan ddp: tagged
# JOB:r, "computing" 20 ms per file); rank 0 registers the whole job's order
# (TIERCACHE_PLAN_JOB, a fresh shuffle) once per epoch on node 1. Dataset:
# 96 files of 1 MiB; each node's hot tier 60 MiB (the mover keeps it under
# 42 MiB): its home share (~24 MiB = 1/N) plus the prefetch window, with
# headroom for uneven shares. Hit ratio = reads whose chunk was resident,
# epochs 2-3, all nodes. Independent caches: the same nodes and clients
# without [cluster] (the plan reaches node 1 only).
DDP_FILES=96
DDP_JOB=24301
mkdir -p "$SRC/ddp"
for i in $(seq -w 1 $DDP_FILES); do head -c $MIB /dev/urandom >"$SRC/ddp/f$i.bin"; done
ddp_counts() { # ddp_counts: HITS / MISSES summed over the nodes
	local i
	HITS=0
	MISSES=0
	for i in $(seq 1 $N); do
		HITS=$((HITS + $(tc_node_json "$i" "s['datasets'][0]['hits']")))
		MISSES=$((MISSES + $(tc_node_json "$i" "s['datasets'][0]['misses']")))
	done
}
# how rank R registers: DDP_HOW=job (default): rank 0 the whole job's order;
# DDP_HOW=rank: every rank its own share (tiercache.torch's default)
ddp_how() { if [ "${DDP_HOW:-job}" = rank ]; then echo register-rank; elif [ "$1" = 0 ]; then echo register; fi; }
ddp_epoch() { # ddp_epoch E MODE: one epoch (MODE on: wait for every node's slice or plan)
	local e=$1 mode=$2 i r
	local -a p=()
	(cd "$SRC" && ls ddp/*) | python3 -c "
import random, sys
v = sys.stdin.read().split(); random.Random($e).shuffle(v); print('\n'.join(v))" >"$T/ddp_order$e"
	for i in $(seq 1 $N); do
		r=$((i - 1))
		TIERCACHE_SOCKET=$T/n$i/sock "$TC_TESTS/tcplan" ddp ds "$SRC" $DDP_JOB $r $N "$e" "$T/ddp_order$e" \
			"$T/ddp_go$e" 20 $(ddp_how $r) >"$T/ddp_rank$r.out" 2>&1 &
		p+=($!)
	done
	for i in $(seq 1 $N); do
		r=$((i - 1))
		wait_for 30 "grep -q ready $T/ddp_rank$r.out" || return 1
		[ "$mode" = on ] || [ "$i" = 1 ] || continue
		wait_for 30 "[ \"\$(tc_node_json $i 'any(p[\"job\"] == $DDP_JOB and p[\"rank\"] == $r and p[\"epoch\"] == $e for p in s[\"plans\"])')\" = True ]" || return 1
	done
	for i in $(seq 1 $N); do TIERCACHE_SOCKET=$T/n$i/sock "$TC_TESTS/tcplan" settle >/dev/null; done
	touch "$T/ddp_go$e"
	for i in "${p[@]}"; do wait "$i" || return 1; done
}
ddp_run() { # ddp_run on|off: sets DDP_HIT and DDP_COLD (in this shell: its
	# nodes and mount stay known to the cleanup)
	local i e h0 m0
	tc_countfs_stop
	tc_countfs_start "$SRC" >/dev/null || exit 1
	for i in $(seq 1 $N); do
		rm -rf "$T/n$i"
		if [ "$1" = on ]; then tc_node_config "$i" hot=60M warm=none chunk=1M ds.policy=clairvoyant
		else tc_node_config "$i" hot=60M warm=none chunk=1M ds.policy=clairvoyant cluster=off; fi
		tc_node_start "$i" >/dev/null || exit 1
	done
	if [ "$1" = on ]; then
		for i in $(seq 1 $N); do
			wait_for 30 "[ \"\$(tc_node_json $i 'sum(m[\"state\"] == \"up\" for m in s[\"cluster_members\"])' 2>/dev/null)\" = $N ]" || exit 1
		done
	fi
	# every node has its manifest (with [cluster] it may wait for its home);
	# the ddp files came after the cluster's manifest was first published:
	# one refresh lists them once, and the others pick the generation up
	for i in $(seq 1 $N); do tc_node_serving "$i" || exit 1; done
	TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/tierctl" refresh ds >/dev/null || exit 1
	for i in $(seq 1 $N); do
		wait_for 30 "TIERCACHE_SOCKET=$T/n$i/sock $TC_BIN/tierctl stat ds/ddp/f01.bin >/dev/null 2>&1" || exit 1
	done
	ddp_epoch 1 "$1" || { echo "ddp epoch 1 failed" >&2; tail -n 3 "$T"/ddp_rank*.out >&2; exit 1; }
	ddp_counts
	h0=$HITS
	m0=$MISSES
	for e in 2 3; do ddp_epoch "$e" "$1" || { echo "ddp epoch $e failed" >&2; tail -n 3 "$T"/ddp_rank*.out >&2; exit 1; }; done
	ddp_counts
	DDP_HIT=$(awk -v h=$((HITS - h0)) -v m=$((MISSES - m0)) 'BEGIN {printf "%.3f", h / (h + m)}')
	DDP_COLD=$(awk -v c="$(tc_cold_bytes)" -v t=$((DDP_FILES * MIB)) 'BEGIN {printf "%.3f", c / t}')
	stop_nodes
}
echo "== ddp: a job of world_size $N over $N daemons, $DDP_FILES MiB, each caching ~1/$N"
ddp_run on
ddp_on=$DDP_HIT
ddp_on_cold=$DDP_COLD
ddp_run off
ddp_off=$DDP_HIT
ddp_off_cold=$DDP_COLD
echo "ddp_hit_ratio $ddp_on (epochs 2-3, goal >= 0.95); independent caches: $ddp_off; ratio $(awk -v a="$ddp_on" -v b="$ddp_off" 'BEGIN {printf "%.2f", a / b}')"
echo "ddp_cold_ratio $ddp_on_cold (cold bytes / dataset over 3 epochs); independent caches: $ddp_off_cold"
DDP_HOW=rank DDP_JOB=$((DDP_JOB + 1)) ddp_run on # another job: the first one's plan may still be in Redis
echo "ddp_rank_plans_hit_ratio $DDP_HIT (each rank registers its own plan, as tiercache.torch does; epochs 2-3); cold bytes / dataset $DDP_COLD"
