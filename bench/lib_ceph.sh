# Shared by the Ceph benches (bench/rados.sh, bench/rados_small.sh), sourced
# from the repository root after $B is set.
#
# bench_ceph_start NAME MB: a throwaway single-node cluster under $B/ceph
# (tests/ceph/start-ceph.sh) sized for MB MiB of data (memstore keeps
# everything in RAM, at about twice the bytes stored), its environment
# sourced. A cluster that does not start ends the bench with its log and
# status 0 (benchmarks report; they do not fail the build).
bench_ceph_start() {
	export CEPH_STORE_BYTES=${CEPH_STORE_BYTES:-$(((2 * $2 + 1024) * 1048576))}
	if ! tests/ceph/start-ceph.sh "$B/ceph" >/dev/null 2>"$B/start-ceph.log"; then
		echo "$1: the Ceph cluster did not start:"
		cat "$B/start-ceph.log"
		exit 0
	fi
	# shellcheck disable=SC1091
	. "$B/ceph/ceph-env.sh"
}

# bench_ceph_pin NAME: with BENCH_PIN=1, every daemon of this bench's
# cluster (mon, osd: the pids in its run/*.pid files whose command line
# names its ceph.conf) pinned to CPU 0 (all threads) and this shell, so
# everything it starts after, to CPU 1. Sets PINNED=1 when all of it took;
# says what did not.
bench_ceph_pin() {
	PINNED=
	[ "${BENCH_PIN:-}" = 1 ] || return 0
	if ! command -v taskset >/dev/null; then
		echo "$1: BENCH_PIN=1 ignored: taskset is not installed (util-linux); running unpinned"
		return 0
	fi
	if ! taskset -c 0,1 true 2>/dev/null; then
		echo "$1: BENCH_PIN=1 ignored: CPUs 0 and 1 are not both usable here; running unpinned"
		return 0
	fi
	PINNED=1
	local f p
	for f in "$CEPH_DIR"/run/*.pid; do
		p=$(cat "$f" 2>/dev/null)
		if [ -z "$p" ] || ! tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$CEPH_CONF"; then
			echo "$1: BENCH_PIN=1: $f names no running daemon of this cluster; not pinned"
			PINNED=
			continue
		fi
		taskset -a -p -c 0 "$p" >/dev/null ||
			{ echo "$1: BENCH_PIN=1: cannot pin $(basename "$f" .pid) (pid $p) to CPU 0"; PINNED=; }
	done
	taskset -p -c 1 $$ >/dev/null || { echo "$1: BENCH_PIN=1: cannot pin the node side to CPU 1"; PINNED=; }
	[ -n "$PINNED" ] || echo "$1: BENCH_PIN=1: pinning incomplete (see above); numbers are not a clean split"
}
