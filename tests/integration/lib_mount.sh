# Mount helpers for the tiercache-mount tests (sourced after lib.sh).
PY=/usr/bin/python3
MOUNT_BIN=$TC_BIN/tiercache-mount
MNT_DIRS=()
MNT_PIDS=()

# Unmount everything we mounted and stop our mount processes, even when a
# check failed half-way; then lib.sh's cleanup stops the daemon.
tcm_cleanup() {
	local d p
	for d in "${MNT_DIRS[@]}"; do
		mountpoint -q "$d" 2>/dev/null && fusermount3 -u -z "$d" 2>/dev/null
	done
	for p in "${MNT_PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	tc_cleanup
}
trap tcm_cleanup EXIT

# tcm_mount MOUNTPOINT ARGS... : tiercache-mount -f ARGS MOUNTPOINT in the
# background; sets MPID once the mount answers.
tcm_mount() {
	local mp=$1
	shift
	mkdir -p "$mp"
	MNT_DIRS+=("$mp")
	env --default-signal=INT "$MOUNT_BIN" -f "$@" "$mp" >>"$T/mount.log" 2>&1 &
	MPID=$!
	MNT_PIDS+=("$MPID")
	for _ in $(seq 1 200); do
		mountpoint -q "$mp" && return 0
		kill -0 "$MPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "tiercache-mount did not mount $mp; log:"
	cat "$T/mount.log"
	return 1
}

# tcm_check_bad_value OPT=VALUE HINT HELP: -o OPT=VALUE is refused before
# mounting (exit 2) with a message containing HINT, and --help shows HELP.
tcm_check_bad_value() {
	local ov=$1 hint=$2 help=$3
	mkdir -p "$T/mnt_bad"
	"$MOUNT_BIN" -o "$ov" ds "$T/mnt_bad" >"$T/bad.out" 2>&1
	check "-o $ov: exit 2" [ $? = 2 ]
	check "-o $ov: says what to use" grep -q "$hint" "$T/bad.out"
	check "--help documents ${help%%=*}" bash -c "'$MOUNT_BIN' --help | grep -qF '$help'"
}
