#!/usr/bin/env bash
# Run one command against a fresh throwaway Ceph cluster.
#
# usage: run-test.sh COMMAND [ARGS...]
# Starts a cluster (start-ceph.sh) in a new temp directory, exports
# CEPH_CONF, CEPH_POOL and CEPH_DIR to the command, runs it, and always stops
# the cluster and removes the directory (also on failure or ^C). Exits with
# the command's exit code (or 1 if the cluster did not start).
# env: the start-ceph.sh variables (CEPH_POOL, CEPH_STORE_BYTES, ...).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: run-test.sh COMMAND [ARGS...]" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/tiercache-ceph.XXXXXX") || exit 1

cleanup() { "$HERE/stop-ceph.sh" "$DIR"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! "$HERE/start-ceph.sh" "$DIR" >/dev/null; then
	echo "run-test: the Ceph cluster did not start" >&2
	exit 1
fi
# shellcheck disable=SC1091
. "$DIR/ceph-env.sh"
"$@"
rc=$?
exit $rc
