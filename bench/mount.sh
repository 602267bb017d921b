#!/usr/bin/env bash
# bench/mount.sh BUILD_DIR: tiercache-mount against the same files on local
# disk, measured in the same run, medians of 3 runs (the machine is shared
# and noisy). Benchmarks report; they do not fail.
#
#   seq      sequential 1 MiB read()s of four 256 MiB files, one reader
#   seq8k    the same with 8 KiB read()s (a program reading in small pieces:
#            -o direct_io=auto gives it the page cache after its first file)
#   small    open + read + close of 4000 files of 100 KB, 4 reader processes,
#            by a path list (as from a CSV: lookups included)
#
# Each run measures, in this order:
#   first pass   tiercached restarted and the mount remounted, so the
#                mount's kernel page cache is empty and every byte goes
#                through FUSE and libtiercache; the data is resident in the
#                cache's hot tier (a fill pass ran before the runs), and the
#                tier files and the local files are in the OS page cache
#                alike ("warm storage").
#   second pass  the same reads again: small files from the mount's kernel
#                page cache (FOPEN_KEEP_CACHE) or passed through; large
#                files with direct I/O again (from the tier files' page
#                cache), against local files in the page cache.
#   hits         only the mount remounted (tiercached keeps running, so
#                its chunks are checked already: a first pass after a
#                daemon restart also pays the check of every chunk), 100 KB
#                files: no plan, then with a plan (the job's order,
#                registered by another process as a sampler would) and
#                -o job=JOB: the planned opens cost no OPEN round trip.
#                Compared with the floor's lookup+open+release rate, the
#                goals of issue 17 (>= 0.8 without a plan, >= 0.95 with).
#   -o immutable first and second pass, remounted with -o immutable.
#   -o direct_io=off  seq first and second pass through the mount's page
#                cache (the default reads large files with direct I/O).
#   floor        bench/fuse_floor, a minimal FUSE file system answering
#                the same tree from memory (no daemon, zeros for data):
#                empty files with opens (lookup + open + release per file),
#                empty files without (lookup only), the 100 KB files
#                (lookup + open + read + release: zeros copied from
#                memory, as a FUSE file system that has the bytes in
#                memory would at best), and the large files
#                with direct I/O; what the FUSE requests alone cost here,
#                a ceiling for any FUSE file system on this machine.
#   disk-cold    tier files and local files dropped from the OS page cache
#                (posix_fadvise DONTNEED per file, checked with fincore),
#                daemon restarted, remounted: both sides read from disk.
# QUICK=1 measures only the default first and second pass, the hits and
# local (for iterating on one change); SMALL=1 only the 100 KB files (no
# large files made or read: the quickest check of the small-file rate);
# RUNS=N sets the number of runs (default 3);
# MOUNT_OPTS=OPT[,OPT] adds mount options to every mount (for example
# passthrough=off to compare with the path through the mount).
# Goals from the issue: seq first pass >= 0.8 of local, small first pass
# >= 0.4 of local; the second pass is reported against local.
set -uo pipefail
O=${1:-build/default}
cd "$(dirname "$0")/.." || exit 1
. bench/lib_daemon.sh
B=$(mktemp -d "${TMPDIR:-/tmp}/tcmbench.XXXXXX")
M=$B/mnt
export TIERCACHE_SOCKET=$B/sock
DPID=
MPID=
RUNS=${RUNS:-3}
QUICK=${QUICK:-0}
SMALL=${SMALL:-0}
[ "$SMALL" = 1 ] && QUICK=1
TCPLAN=$O/tests/tcplan # registers a plan as the job's sampler would
PJOB=17                # the job of the planned runs

cleanup() {
	mountpoint -q "$M" 2>/dev/null && fusermount3 -u -z "$M" 2>/dev/null
	[ -n "${F:-}" ] && mountpoint -q "$F" 2>/dev/null && fusermount3 -u -z "$F" 2>/dev/null
	[ -n "$MPID" ] && kill -TERM "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$B"
}
trap cleanup EXIT

if [ ! -x "$O/bin/tiercache-mount" ] || [ ! -x "$O/bin/fuse_floor" ] || [ ! -e /dev/fuse ]; then
	echo "bench/mount.sh: needs $O/bin/tiercache-mount, $O/bin/fuse_floor and /dev/fuse; skipped"
	exit 0
fi

# The reader: a few lines of C so that both sides pay the same, small,
# per-call cost (a shell or Python loop would hide the difference).
cat >"$B/rd.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static char buf[1 << 20];
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
static long long read_file(const char *p, size_t bs)
{
	int fd = open(p, O_RDONLY);
	long long n = 0;
	ssize_t r;
	if (fd < 0) {
		perror(p);
		exit(1);
	}
	while ((r = read(fd, buf, bs)) > 0)
		n += r;
	if (r < 0) {
		perror(p);
		exit(1);
	}
	close(fd);
	return n;
}
/* rd seq|seq8k FILE...: prints MB/s.  rd small NPROC LIST: prints files/s. */
int main(int argc, char **argv)
{
	if (argc >= 3 && (!strcmp(argv[1], "seq") || !strcmp(argv[1], "seq8k"))) {
		size_t bs = argv[1][3] ? 8192 : sizeof(buf);
		long long n = 0;
		double t0 = now();
		for (int i = 2; i < argc; i++)
			n += read_file(argv[i], bs);
		printf("%.1f\n", n / 1e6 / (now() - t0));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "small")) {
		int np = atoi(argv[2]), bad = 0;
		char **v = NULL, line[4096];
		size_t nv = 0, cap = 0;
		FILE *f = fopen(argv[3], "r");
		if (!f || np < 1)
			return 2;
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			if (nv == cap && !(v = realloc(v, (cap = cap ? cap * 2 : 1024) * sizeof(*v))))
				return 1;
			v[nv++] = strdup(line);
		}
		fclose(f);
		double t0 = now();
		for (int c = 0; c < np; c++)
			if (fork() == 0) {
				for (size_t i = (size_t)c; i < nv; i += (size_t)np)
					read_file(v[i], 128 * 1024);
				_exit(0);
			}
		for (int c = 0, st; c < np; c++)
			if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad = 1;
		printf("%.0f\n", nv / (now() - t0));
		return bad;
	}
	return 2;
}
EOF
cc -O2 -o "$B/rd" "$B/rd.c" || exit 1
RD=$B/rd

mkdir -p "$B/cold/big" "$M"
if [ "$SMALL" = 1 ]; then
	echo "generating 4000 files of 100 KB ..."
else
	echo "generating 1 GiB of large files and 4000 files of 100 KB ..."
	for i in 1 2 3 4; do head -c $((256 * 1048576)) /dev/urandom >"$B/cold/big/big$i.bin"; done
fi
for d in $(seq -w 1 20); do
	mkdir -p "$B/cold/small/d$d"
	for i in $(seq -w 1 200); do head -c 102400 /dev/urandom >"$B/cold/small/d$d/f$i.jpg"; done
done
sync
shopt -s nullglob
BIG_L=("$B"/cold/big/*.bin)
shopt -u nullglob
BIG_M=("${BIG_L[@]/#$B\/cold/$M}")
(cd "$B/cold" && find small -type f | sort) >"$B/list"
sed "s|^|$B/cold/|" "$B/list" >"$B/list.local"
sed "s|^|$M/|" "$B/list" >"$B/list.mount"
# the FUSE floor (bench/fuse_floor) shows the same tree from memory
F=$B/fmnt
mkdir -p "$F"
(cd "$B/cold" && find . -type f -printf '%s %P\n') >"$B/floor.list"
sed "s|^|$F/|" "$B/list" >"$B/list.floor"
BIG_F=("${BIG_L[@]/#$B\/cold/$F}")

hot_conf 4G
# the plan outlives the process that registered it (the sampler's)
sed -i '/^\[daemon\]/a plan_grace = 1h' "$B/tc.conf"

daemon_start() {
	"$O/bin/tiercached" -c "$B/tc.conf" 2>>"$B/daemon.log" &
	DPID=$!
	for _ in $(seq 1 200); do "$O/bin/tierctl" status >/dev/null 2>&1 && return 0; sleep 0.05; done
	echo "tiercached did not start"
	cat "$B/daemon.log"
	exit 1
}
daemon_stop() {
	kill -TERM "$DPID"
	wait "$DPID"
	DPID=
}
fuse_up() { # fuse_up MOUNTPOINT COMMAND...: start a FUSE server, MPID = its pid
	local mnt=$1
	shift
	"$@" 2>>"$B/mount.log" &
	MPID=$!
	for _ in $(seq 1 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
	echo "$(basename "$1") did not mount"
	cat "$B/mount.log"
	exit 1
}
fuse_down() { # fuse_down MOUNTPOINT
	fusermount3 -u "$1"
	wait "$MPID"
	MPID=
}
mount_up() { # mount_up [-o OPTS]   (plus $MOUNT_OPTS, e.g. passthrough=off)
	fuse_up "$M" "$O/bin/tiercache-mount" -f ${MOUNT_OPTS:+-o "$MOUNT_OPTS"} "$@" bench "$M"
}
mount_down() { fuse_down "$M"; }
floor_up() { fuse_up "$F" "$O/bin/fuse_floor" "$@" "$B/floor.list" "$F"; } # [--empty] [--no-open] [--direct]
floor_down() { fuse_down "$F"; }
# Drop files from the OS page cache (clean pages only: the data was synced).
drop() { # drop DIR...
	find "$@" -type f -print0 | /usr/bin/env python3 -c '
import os, sys
for p in sys.stdin.buffer.read().split(b"\0"):
    if p:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)'
}
resident() { fincore --bytes --noheadings --output RES "$1" 2>/dev/null || echo "?"; }

daemon_start
mount_up
t0=$(date +%s.%N)
{ [ "$SMALL" = 1 ] || "$RD" seq "${BIG_M[@]}" >/dev/null; } && "$RD" small 4 "$B/list.mount" >/dev/null || exit 1
echo "fill pass (cold store -> hot tier through the mount): $(echo "$(date +%s.%N) - $t0" | bc) s"
mount_down
[ "$SMALL" = 1 ] || "$RD" seq "${BIG_L[@]}" >/dev/null # local files into the page cache

declare -A R C
TCK=$(getconf CLK_TCK)
pcpu() { # pcpu PID: CPU ms the process used so far (0 without one)
	if [ -n "$1" ] && [ -r "/proc/$1/stat" ]; then
		awk -v t="$TCK" '{print int(($14 + $15) * 1000 / t)}' "/proc/$1/stat"
	else
		echo 0
	fi
}
# run KEY RD-ARGS...: one measurement. R[KEY] gets the reader's rate, C[KEY]
# the CPU it cost in ms: the reader's own plus tiercache-mount's and
# tiercached's meanwhile (0 for local reads), and apart: CR[KEY] the
# reader's, CS[KEY] the FUSE server's (tiercache-mount or fuse_floor),
# CD[KEY] tiercached's. On a shared machine wall-clock rates move with the
# other work; CPU per pass does much less.
declare -A CR CS CD
run() {
	local k=$1 m0 d0 u s r m d
	shift
	m0=$(pcpu "$MPID")
	d0=$(pcpu "$DPID")
	{ TIMEFORMAT='%3U %3S'; time "$RD" "$@" >"$B/rate"; } 2>"$B/time" || exit 1
	read -r u s <"$B/time"
	r=$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%d", (u + s) * 1000}')
	m=$(($(pcpu "$MPID") - m0))
	d=$(($(pcpu "$DPID") - d0))
	R[$k]="${R[$k]:-} $(cat "$B/rate")"
	C[$k]="${C[$k]:-} $((r + m + d))"
	CR[$k]="${CR[$k]:-} $r"
	CS[$k]="${CS[$k]:-} $m"
	CD[$k]="${CD[$k]:-} $d"
}
for run in $(seq 1 "$RUNS"); do
	# first and second pass, default options
	daemon_stop
	daemon_start
	mount_up
	[ "$SMALL" = 1 ] || run seq1_mount seq "${BIG_M[@]}"
	run small1_mount small 4 "$B/list.mount"
	[ "$SMALL" = 1 ] || run seq2_mount seq "${BIG_M[@]}"
	run small2_mount small 4 "$B/list.mount"
	mount_down
	# hits: the daemon keeps running (its chunks are checked), the
	# mount's page cache is empty; no plan, then a plan and -o job
	mount_up
	run smallh_mount small 4 "$B/list.mount"
	mount_down
	if [ -x "$TCPLAN" ]; then
		"$TCPLAN" set bench "$PJOB" 0 1 "$run" <"$B/list" >"$B/plan.out" 2>&1 ||
			{ echo "registering the plan failed:"; cat "$B/plan.out"; exit 1; }
		mount_up -o job="$PJOB"
		run smallp_mount small 4 "$B/list.mount"
		mount_down
	fi
	# the same hits with -o immutable: no OPEN / RELEASE requests (the
	# kernel is told "no open support"), reads through a handle per node
	mount_up -o immutable
	run smallhi_mount small 4 "$B/list.mount"
	# a re-read: from the kernel page cache, no FUSE request at all
	run small2i_mount small 4 "$B/list.mount"
	mount_down
	if [ -x "$TCPLAN" ]; then
		mount_up -o immutable,job="$PJOB"
		run smallpi_mount small 4 "$B/list.mount"
		mount_down
	fi
	[ "$SMALL" = 1 ] || run seq_local seq "${BIG_L[@]}"
	run small_local small 4 "$B/list.local"
	[ "$QUICK" = 1 ] || run seq8k_local seq8k "${BIG_L[@]}"
	# the floor: what the FUSE requests alone cost (no daemon, no data)
	floor_up --empty
	run small_floor_open small 4 "$B/list.floor"
	floor_down
	floor_up --empty --no-open
	run small_floor_lookup small 4 "$B/list.floor"
	floor_down
	# the same with the files' sizes: a READ each, zeros from memory
	floor_up
	run small_floor_data small 4 "$B/list.floor"
	floor_down
	# ... and without opens (as -o immutable): LOOKUP + READ per file
	floor_up --no-open
	run small_floor_data_noopen small 4 "$B/list.floor"
	floor_down
	if [ "$SMALL" != 1 ]; then
		floor_up --direct
		run seq_floor seq "${BIG_F[@]}"
		floor_down
	fi
	if [ "$QUICK" = 1 ]; then
		echo "run $run done"
		continue
	fi
	# 8 KiB reads, a fresh mount (its page cache empty)
	mount_up
	run seq8k_mount seq8k "${BIG_M[@]}"
	mount_down
	# large files through the mount's page cache
	mount_up -o direct_io=off
	run seq1_pc seq "${BIG_M[@]}"
	run seq2_pc seq "${BIG_M[@]}"
	mount_down
	# -o immutable
	mount_up -o immutable
	run seq1_imm seq "${BIG_M[@]}"
	run small1_imm small 4 "$B/list.mount"
	run small2_imm small 4 "$B/list.mount"
	mount_down
	# disk-cold: nothing of either side in the OS page cache
	daemon_stop
	sync
	drop "$B/hot" "$B/cold"
	[ "$run" = 1 ] && echo "after dropping: $(resident "${BIG_L[0]}") bytes of a local file and" \
		"$(resident "$(find "$B/hot" -type f -size +1M | head -1)") of a tier file resident"
	daemon_start
	mount_up
	run seqc_mount seq "${BIG_M[@]}"
	run smallc_mount small 4 "$B/list.mount"
	mount_down
	drop "$B/cold"
	run seqc_local seq "${BIG_L[@]}"
	run smallc_local small 4 "$B/list.local"
	"$RD" seq "${BIG_L[@]}" >/dev/null # warm again for the next run
	echo "run $run done"
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
row() { # row LABEL UNIT LOCALKEY MOUNTKEY GOAL
	local l m
	[ -n "${R[$3]:-}" ] && [ -n "${R[$4]:-}" ] || return 0 # not measured (QUICK=1)
	l=$(echo "${R[$3]}" | median)
	m=$(echo "${R[$4]}" | median)
	awk -v label="$1" -v unit="$2" -v l="$l" -v m="$m" -v goal="$5" 'BEGIN {
		r = m / l
		g = goal == "-" ? "" : sprintf("goal >= %s: %s", goal, r >= goal ? "met" : "NOT met")
		printf "%-44s %10.0f %10.0f %-7s %5.2f  %s\n", label, l, m, unit, r, g
	}'
}
echo
echo "tiercache-mount vs local disk, medians of $RUNS runs (raw runs below)"
printf '%-44s %10s %10s %-7s %5s\n' "" local mount unit ratio
row "seq 1 MiB reads, first pass" MB/s seq_local seq1_mount 0.8
row "100 KB files x4 readers, first pass" files/s small_local small1_mount 0.4
row "seq 1 MiB reads, second pass" MB/s seq_local seq2_mount -
row "seq 8 KiB reads, first pass" MB/s seq8k_local seq8k_mount -
row "-o direct_io=off: seq, first pass" MB/s seq_local seq1_pc -
row "-o direct_io=off: seq, second pass" MB/s seq_local seq2_pc -
row "100 KB files x4, second pass (page cache)" files/s small_local small2_mount -
row "100 KB files x4, hits (remounted), no plan" files/s small_local smallh_mount -
row "100 KB files x4, hits, plan + -o job" files/s small_local smallp_mount -
row "-o immutable: 100 KB x4, hits, no plan" files/s small_local smallhi_mount -
row "-o immutable: 100 KB x4, hits, plan + job" files/s small_local smallpi_mount -
row "-o immutable: 100 KB x4, re-read (page cache)" files/s small_local small2i_mount -
row "-o immutable: seq, first pass" MB/s seq_local seq1_imm -
row "-o immutable: 100 KB files x4, first pass" files/s small_local small1_imm -
row "-o immutable: 100 KB files x4, second pass" files/s small_local small2_imm -
row "disk-cold: seq 1 MiB reads" MB/s seqc_local seqc_mount -
row "disk-cold: 100 KB files x4" files/s smallc_local smallc_mount -
echo
echo "the FUSE floor (bench/fuse_floor: the same tree answered from memory by a minimal"
echo "FUSE file system, no daemon; a ceiling for any FUSE file system on this machine)"
printf '%-44s %10s %10s %-7s %5s\n' "" local floor unit ratio
row "floor: seq 1 MiB direct reads (zeros)" MB/s seq_local seq_floor -
row "floor: lookup+open+release, empty files x4" files/s small_local small_floor_open -
row "floor: lookup only (no open), empty files" files/s small_local small_floor_lookup -
row "floor: lookup+open+read+release, 100 KB x4" files/s small_local small_floor_data -
row "floor: lookup+read (no open), 100 KB x4" files/s small_local small_floor_data_noopen -
printf '%-44s %10s %10s %-7s %5s\n' "" floor mount unit ratio
row "mount vs floor: seq first pass" MB/s seq_floor seq1_mount -
row "mount vs floor (with opens): 100 KB first" files/s small_floor_open small1_mount -
row "mount vs floor: 100 KB hits, no plan" files/s small_floor_open smallh_mount 0.8
row "mount vs floor: 100 KB hits, plan + -o job" files/s small_floor_open smallp_mount 0.95
row "mount vs floor with 100 KB reads: hits" files/s small_floor_data smallh_mount -
row "mount vs floor with 100 KB reads: plan" files/s small_floor_data smallp_mount -
row "mount vs floor: -o immutable hits, no plan" files/s small_floor_open smallhi_mount 0.8
row "mount vs floor: -o immutable hits, plan" files/s small_floor_open smallpi_mount 0.95
row "vs floor with 100 KB reads: immutable hits" files/s small_floor_data smallhi_mount -
row "vs floor with 100 KB reads: immutable plan" files/s small_floor_data smallpi_mount -
row "vs floor lookup+read, no open: immutable hits" files/s small_floor_data_noopen smallhi_mount -
row "mount vs floor: -o immutable re-read" files/s small_floor_open small2i_mount 0.8
echo
echo "CPU per pass (reader + tiercache-mount + tiercached; local: the reader), medians"
printf '%-44s %10s %10s %-7s %5s\n' "" local mount unit ratio
cpu_row() { # cpu_row LABEL LOCALKEY MOUNTKEY: ratio = local CPU / mount CPU
	[ -n "${C[$2]:-}" ] && [ -n "${C[$3]:-}" ] || return 0
	awk -v label="$1" -v l="$(echo "${C[$2]}" | median)" -v m="$(echo "${C[$3]}" | median)" \
		'BEGIN { printf "%-44s %10d %10d %-7s %5.2f\n", label, l, m, "ms", m ? l / m : 0 }'
}
cpu_row "floor: seq 1 GiB direct" seq_local seq_floor
cpu_row "floor: 4000 empty files, lookup+open+release" small_local small_floor_open
cpu_row "seq 1 GiB, first pass" seq_local seq1_mount
cpu_row "4000 x 100 KB files x4, first pass" small_local small1_mount
cpu_row "seq 1 GiB, second pass" seq_local seq2_mount
cpu_row "-o direct_io=off: seq 1 GiB, first pass" seq_local seq1_pc
cpu_row "4000 x 100 KB files x4, second pass" small_local small2_mount
cpu_row "-o immutable: 100 KB files, first pass" small_local small1_imm
cpu_row "-o immutable: 100 KB files, second pass" small_local small2_imm
echo
echo "CPU per file (us, medians): reader / FUSE server (tiercache-mount or fuse_floor) / tiercached"
perfile() { # perfile KEY: "reader / server / daemon" in us per file of the 4000
	[ -n "${CR[$1]:-}" ] || return 0
	awk -v r="$(echo "${CR[$1]}" | median)" -v m="$(echo "${CS[$1]}" | median)" \
		-v d="$(echo "${CD[$1]}" | median)" -v n="$(wc -l <"$B/list")" \
		'BEGIN { printf "%.1f / %.1f / %.1f", r * 1000 / n, m * 1000 / n, d * 1000 / n }'
}
for k in small_local small_floor_open small_floor_data small_floor_data_noopen small1_mount smallh_mount smallp_mount smallhi_mount smallpi_mount small2_mount small2i_mount; do
	[ -n "${CR[$k]:-}" ] && printf '  %-24s %s\n' "$k" "$(perfile "$k")"
done
echo
for k in $(echo "${!R[@]}" | tr ' ' '\n' | sort); do printf '  %-14s %s   cpu ms %s\n' "$k" "${R[$k]}" "${C[$k]}"; done
