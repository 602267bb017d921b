#!/usr/bin/env bash
# Peer transfer only (docs/cluster.md "Measured"), for profiles and A/B runs:
# 4 daemons; nodes 2-4 fill R parts of FILES files x FILE_MIB MiB (chunks 1M); then,
# per round, node 1 reads one fresh part (about 3/4 of its chunks from its
# peers) with one reader (epoch_reader), between two tcp_floor runs over the
# same files (--write: the copy written; --fill: a file per chunk, XXH3,
# rename; and --fill with 4 streams: as many chunks in flight as the
# daemon's read-ahead). Per round it prints throughput, the ratio to the link, CPU per
# GB (schedstat: node 1, the senders, the reader), how much of the read the
# machine's CPUs were idle (/proc/stat), and how long node 1's and the
# reader's threads waited for a CPU (schedstat field 2: run delay); then
# node 1 reads the same part again (every chunk now its own: a local read)
# and it prints the whole path's CPU per GB (every daemon, node 1's later
# syncs of its copies included, + the reader) against that local read's.
# node1_loop_s_per_gb: the CPU of node 1's loop thread alone (the path's one serial stage).
# The CPU floor, in the same round and on the same bytes: tcp_floor --write
# --sync (send, receive, write a copy, fdatasync it in batches as node 1's
# lazy sync does; floor_sync_s_per_gb, its sender's and receiver's share
# after it) plus the local read (the reader's own read of the kept copy):
# floor_s_per_gb, and floor_ratio_local = floor / local, the least
# whole_ratio_local any peer path that keeps a synced copy can reach here
# (the issue's goal: 2). A last line gives the medians over the rounds.
#   bench/cluster_xfer.sh BUILD   env: R=rounds (4), FILES=files per part (16), FILE_MIB=MiB per file (4), THREADS=reader threads (1), SEG=segment_threshold, RA=readahead_chunks, PF=prefetch_inflight,
#                                 PERF=FILE: perf record -a -g over round 1
#                                 SCHED=FILE: perf record of the scheduler's switches and wakeups over round 1
#                                   (off-CPU view; bench/sched_view.py FILE reads it)
#                                 STAGES=DIR: node 1 logs each peer reply's stage times (log_level debug);
#                                   DIR/stages-ROUND.log per round (bench/stage_view.py reads them)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. tests/integration/lib.sh
. tests/integration/lib_cluster.sh
N=4
MIB=1048576
R=${R:-4}
FILES=${FILES:-16} # per part
FILE_MIB=${FILE_MIB:-4} # each file's size (MiB): one chunk per MiB, read ahead within the file only
SRC=$T/src
for r in $(seq 1 "$R"); do
	mkdir -p "$SRC/p$r"
	for i in $(seq 1 "$FILES"); do head -c $((FILE_MIB * MIB)) /dev/urandom >"$SRC/p$r/f$i.bin"; done
done
read_dir() { local f; for f in $(cd "$SRC" && ls "$2"/*); do TIERCACHE_SOCKET=$T/n$1/sock "$TC_BIN/tierctl" cat "ds/$f" >/dev/null || return 1; done; }
sched() { # sched FIELD PIDS...: sum of that schedstat field over every thread (ns)
	local f=$1 p
	shift
	for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done | awk -v f="$f" '{s += $f} END {printf "%.0f", s}'
}
idle() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
tc_redis_start >/dev/null || exit 1
tc_cluster_key
tc_countfs_start "$SRC" >/dev/null || exit 1
for i in $(seq 1 $N); do
	tc_node_config "$i" hot=512M warm=none chunk=1M cluster.lease=10s
	# SEG=SIZE: daemon.segment_threshold (chunks up to SIZE packed into segments: no file per chunk)
	[ -n "${SEG:-}" ] && sed -i "s/^\[daemon\]$/[daemon]\nsegment_threshold = $SEG/" "$T/n$i/tiercache.conf"
	# RA=N: daemon.readahead_chunks (chunks read ahead of a reader within a file; 4 by default)
	[ -n "${RA:-}" ] && sed -i "s/^\[daemon\]$/[daemon]\nreadahead_chunks = $RA/" "$T/n$i/tiercache.conf"
	# PF=N: daemon.prefetch_inflight (prefetches in flight over the daemon; 8 by default)
	[ -n "${PF:-}" ] && sed -i "s/^\[daemon\]$/[daemon]\nprefetch_inflight = $PF/" "$T/n$i/tiercache.conf"
	[ -n "${STAGES:-}" ] && [ "$i" = 1 ] && sed -i "s/^log_level = .*/log_level = debug/" "$T/n$i/tiercache.conf"
	tc_node_start "$i" >/dev/null || exit 1
done
for i in $(seq 1 $N); do wait_for 30 "[ \"\$(tc_node_json $i 'sum(1 for m in s[\"cluster_members\"] if m[\"state\"] == \"up\")' 2>/dev/null)\" = $N ]" || exit 1; done
for r in $(seq 1 "$R"); do read_dir 2 "p$r" & a=$!; read_dir 3 "p$r" & b=$!; read_dir 4 "p$r"; wait $a $b; done
quiet() { local i; for i in "$@"; do wait_for 30 "[ \"\$(tc_node_json $i 's[\"daemon\"][\"fills_inflight\"] + s[\"daemon\"][\"sync_pending_chunks\"]')\" = 0 ]" || exit 1; done; }
quiet $(seq 1 $N)
"$TC_BIN/tcp_floor" --write "$T/n1" "$SRC"/p*/* >/dev/null # recycled guest pages (see cluster.sh)
TB=$((FILES * FILE_MIB * MIB))
P1=$(tc_node_pid 1)
PS="$(tc_node_pid 2) $(tc_node_pid 3) $(tc_node_pid 4)"
for r in $(seq 1 "$R"); do
	# recycled guest pages for every measurement (see cluster.sh): the
	# copies kept by the last round took pages
	"$TC_BIN/tcp_floor" --write "$T/n1" "$SRC/p$r"/* "$SRC/p$r"/* >/dev/null
	l1=$("$TC_BIN/tcp_floor" --write "$T/n1" "$SRC/p$r"/*)
	lf=$("$TC_BIN/tcp_floor" --fill "$T/n1" "$SRC/p$r"/*)
	lf4=$("$TC_BIN/tcp_floor" --streams 4 --fill "$T/n1" "$SRC/p$r"/*)
	ls1=$("$TC_BIN/tcp_floor" --sync --write "$T/n1" "$SRC/p$r"/*)
	perf_pid=
	if [ "$r" = 1 ] && [ -n "${PERF:-}" ]; then
		perf record -q -a -g -F 4000 -o "$PERF" >/dev/null 2>&1 &
		perf_pid=$!
		sleep 1
	elif [ "$r" = 1 ] && [ -n "${SCHED:-}" ]; then
		perf record -q -a -e sched:sched_switch -e sched:sched_wakeup -o "$SCHED" >/dev/null 2>&1 &
		perf_pid=$!
		sleep 1
		echo "sched_pids node1 $P1 senders $PS"
	fi
	[ -n "${STAGES:-}" ] && { mkdir -p "$STAGES"; lines0=$(wc -l <"$T/n1/daemon.log"); }
	c0=$(sched 1 $P1); w0=$(sched 2 $P1); s0=$(sched 1 $PS); i0=$(idle); m0=$(awk '{print $1}' /proc/"$P1"/task/"$P1"/schedstat)
	t0=$(date +%s.%N)
	out=$(TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/epoch_reader" --cpu --epochs 1 --threads "${THREADS:-1}" "ds/p$r") || echo "read failed"
	t1=$(date +%s.%N)
	c1=$(sched 1 $P1); w1=$(sched 2 $P1); s1=$(sched 1 $PS); i1=$(idle); m1=$(awk '{print $1}' /proc/"$P1"/task/"$P1"/schedstat)
	[ -n "$perf_pid" ] && { kill -INT "$perf_pid"; wait "$perf_pid"; }
	[ -n "${STAGES:-}" ] && tail -n +$((lines0 + 1)) "$T/n1/daemon.log" | grep -E 'op=(peer_got|peer_fill_done|cold_fill_done)' >"$STAGES/stages-$r.log"
	[ -n "$perf_pid" ] && echo "sched_window $t0 $t1" # CLOCK_REALTIME; perf uses its own clock
	rcpu=$(echo "$out" | awk '/^cpu_ns / {print $2}')
	l2=$("$TC_BIN/tcp_floor" --write "$T/n1" "$SRC/p$r"/*)
	quiet 1
	c2=$(sched 1 $P1)
	# a local read of the same bytes: node 1 now holds them all (the
	# whole path's CPU per GB is compared with it, as in cluster.sh)
	a0=$(sched 1 $P1 $PS)
	lt0=$(date +%s.%N)
	lout=$(TIERCACHE_SOCKET=$T/n1/sock "$TC_BIN/epoch_reader" --cpu --epochs 1 --threads "${THREADS:-1}" "ds/p$r") || echo "local read failed"
	lt1=$(date +%s.%N)
	a1=$(sched 1 $P1 $PS)
	lrc=$(echo "$lout" | awk '/^cpu_ns / {print $2}')
	awk -v c0="$c0" -v c1="$c1" -v c2="$c2" -v w0="$w0" -v w1="$w1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" \
		-v b=$TB -v l1="$(echo "$l1" | awk '{print $3}')" -v l2="$(echo "$l2" | awk '{print $3}')" \
		-v lf="$(echo "$lf" | awk '{print $3}')" -v lf4="$(echo "$lf4" | awk '{print $3}')" -v lf4c="$(echo "$lf4" | awk '{print $5}')" -v lwc="$(echo "$l1" | awk '{print $5}')" -v lfc="$(echo "$lf" | awk '{print $5}')" \
		-v lsc="$(echo "$ls1" | awk '{print $5, $7, $9}')" \
		-v rc="$rcpu" -v i0="$i0" -v i1="$i1" -v a0="$a0" -v a1="$a1" -v lrc="$lrc" -v lt0="$lt0" -v lt1="$lt1" -v m0="$m0" -v m1="$m1" 'BEGIN {
		split(i0, a, " "); split(i1, z, " ")
		g = b / 1e9; p = b / (t1 - t0) / 1e6
		printf "round peer_MBps %.0f link_write %.0f %.0f link_fill %.0f link_fill4 %.0f ratio_write %.2f ratio_fill %.2f ratio_fill4 %.2f ", p, l1, l2, lf, lf4, p / ((l1 + l2) / 2), p / lf, p / lf4
		printf "node1_s_per_gb %.3f (with sync %.3f) senders %.3f reader %.3f link_write_cpu %.3f link_fill_cpu %.3f link_fill4_cpu %.3f ", (c1 - c0) / 1e9 / g, (c2 - c0) / 1e9 / g, (s1 - s0) / 1e9 / g, rc / 1e9 / g, lwc, lfc, lf4c
		printf "idle %.2f node1_runq_wait_s %.3f wall_s %.3f ", (z[1] - a[1]) / (z[2] - a[2]), (w1 - w0) / 1e9, t1 - t0
		whole = ((c2 - c0) + (s1 - s0) + rc) / 1e9 / g; loc = ((a1 - a0) + lrc) / 1e9 / g
		printf "whole_s_per_gb %.3f local_s_per_gb %.3f whole_ratio_local %.2f local_MBps %.0f node1_loop_s_per_gb %.3f ", whole, loc, whole / loc, b / (lt1 - lt0) / 1e6, (m1 - m0) / 1e9 / g
		split(lsc, f, " "); floor = f[1] + loc
		printf "floor_sync_s_per_gb %.3f send %.3f recv %.3f floor_s_per_gb %.3f floor_ratio_local %.2f whole_ratio_floor %.2f\n", f[1], f[2], f[3], floor, floor / loc, whole / floor
	}' | tee -a "$T/rounds"
done
# medians over the rounds of the fields that judge the goals
awk '{for (i = 1; i < NF; i++) if ($i ~ /^(peer_MBps|ratio_write|node1_s_per_gb|whole_s_per_gb|local_s_per_gb|whole_ratio_local|floor_sync_s_per_gb|floor_s_per_gb|floor_ratio_local|whole_ratio_floor)$/) v[$i] = v[$i] " " $(i + 1)}
	END {printf "median"; n = split("peer_MBps ratio_write node1_s_per_gb whole_s_per_gb local_s_per_gb whole_ratio_local floor_sync_s_per_gb floor_s_per_gb floor_ratio_local whole_ratio_floor", k, " ")
		for (j = 1; j <= n; j++) { m = split(v[k[j]], x, " ")
			for (a = 2; a <= m; a++) for (c = a; c > 1 && x[c - 1] + 0 > x[c] + 0; c--) { t = x[c]; x[c] = x[c - 1]; x[c - 1] = t }
			printf " %s %s", k[j], m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2 }
		print ""}' "$T/rounds"
tc_node_json 1 "'peer_fills %d prefetch issued %d late %d stalls %d errors %d dir_ahead %d hits %d evicted_unused %d' % (s['counters']['peer_fills'], s['prefetch']['issued'], s['prefetch']['late'], s['prefetch']['stalls'], s['prefetch']['errors'], s['prefetch']['dir_ahead'], s['prefetch']['hits'], s['prefetch']['evicted_unused'])"
# the cold store read once (1x: nodes 2-4's fills; node 1 reads from its peers)
echo "cold_bytes $(tc_cold_bytes) source_bytes $((R * FILES * FILE_MIB * MIB))"
