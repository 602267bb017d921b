#!/usr/bin/env bash
# Stop a cluster started by start-ceph.sh and remove its directory.
# Finds the daemons by their pid files only, and signals a pid only if it is
# still a Ceph daemon running with this directory's ceph.conf (a recycled pid
# belongs to someone else). Nothing is left running.
#
# usage: stop-ceph.sh DIR
set -uo pipefail
DIR=${1:?usage: stop-ceph.sh DIR}
[ -d "$DIR" ] || exit 0
DIR=$(cd "$DIR" && pwd)

ours() {
	[ -r "/proc/$1/cmdline" ] &&
		tr '\0' ' ' <"/proc/$1/cmdline" | grep -qE "(^|/)ceph-(mon|osd|mgr) (.* )?-c $DIR/ceph.conf( |$)"
}

pids=()
for f in "$DIR"/run/*.pid; do
	[ -f "$f" ] || continue
	pid=$(cat "$f" 2>/dev/null) || continue
	[[ "$pid" =~ ^[0-9]+$ ]] || continue
	if ours "$pid"; then
		# SIGKILL on purpose: the cluster is thrown away and a clean stop
		# of a memstore OSD saves everything it holds first (slow)
		kill -KILL "$pid" 2>/dev/null && pids+=("$pid")
	fi
done
for _ in $(seq 1 100); do
	alive=0
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && alive=1
	done
	[ "$alive" = 0 ] && break
	sleep 0.1
done
rm -rf "$DIR"
