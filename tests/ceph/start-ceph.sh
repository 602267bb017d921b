#!/usr/bin/env bash
# Start a throwaway single-node Ceph cluster for tiercache's tests: one mon,
# one memstore OSD, cephx on, no mgr, everything under one directory and
# listening on 127.0.0.1 only. No systemd. Stop it with stop-ceph.sh DIR.
#
# usage: start-ceph.sh DIR        (DIR must be missing or empty)
# env:   CEPH_POOL=name           pool to create (default tiercache)
#        CEPH_PG=n                PGs of the pool (default 8)
#        CEPH_STORE_BYTES=n       memstore capacity (default 2 GiB; the OSD's
#                                 RSS is about 2x what is stored)
#        CEPH_AUTH=cephx|none     (default cephx)
# result: DIR/ceph.conf, DIR/ceph.client.admin.keyring, DIR/ceph-env.sh
#         (exports CEPH_CONF, CEPH_POOL, CEPH_DIR), pid files DIR/run/*.pid
#         (the only way stop-ceph.sh finds what to kill). Prints DIR/ceph.conf.
#
# The OSD can be stopped (SIGTERM, by its pid file) and started again with
# `ceph-osd -c DIR/ceph.conf -i 0`: "osd fast shutdown = false" makes memstore
# save its contents on a clean stop, so the data survives the restart.
set -euo pipefail
# A CEPH_KEYRING / CEPH_ARGS left in the environment overrides the daemons'
# own keyrings and breaks cephx between them.
unset CEPH_CONF CEPH_KEYRING CEPH_ARGS

DIR=${1:?usage: start-ceph.sh DIR}
POOL=${CEPH_POOL:-tiercache}
PG=${CEPH_PG:-8}
STORE_BYTES=${CEPH_STORE_BYTES:-$((2 * 1024 * 1024 * 1024))}
AUTH=${CEPH_AUTH:-cephx}
T0=$EPOCHREALTIME

log() { awk -v a="$T0" -v b="$EPOCHREALTIME" -v m="$*" 'BEGIN{printf "[start-ceph %5.2fs] %s\n", b-a, m}' >&2; }
die() {
	log "ERROR: $*"
	for f in "$DIR"/log/*.log "$DIR"/log/*.stderr; do
		[ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}

for b in ceph-mon ceph-osd ceph ceph-authtool monmaptool uuidgen python3 rados; do
	command -v "$b" >/dev/null ||
		{ echo "start-ceph: missing $b (scripts/install-deps installs it)" >&2; exit 1; }
done
if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
	echo "start-ceph: $DIR is not empty (stop-ceph.sh $DIR first)" >&2
	exit 1
fi
mkdir -p "$DIR"/{run,log,mon.a,osd.0,tmp}
DIR=$(cd "$DIR" && pwd)
CONF=$DIR/ceph.conf

# The mon needs a fixed port in the monmap: ask the kernel for a free one.
MON_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
FSID=$(uuidgen)

if [ "$AUTH" = cephx ]; then
	AUTH_MODE=cephx
else
	AUTH_MODE=none
fi

cat >"$CONF" <<EOF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_PORT
public network = 127.0.0.1/32
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = $AUTH_MODE
auth service required = $AUTH_MODE
auth client required = $AUTH_MODE
keyring = $DIR/ceph.\$name.keyring
run dir = $DIR/run
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
crash dir = $DIR/tmp
log to stderr = false
err to stderr = false
log to syslog = false
mon cluster log file = $DIR/log/cluster.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd pool default pg num = $PG
osd pool default pgp num = $PG
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
auth allow insecure global id reclaim = false
mon max pg per osd = 1000
# every map change (osd boot, pool create) otherwise waits about a second
paxos propose interval = 0.05
paxos min wait = 0.01

[client]
# many test clients share the name client.admin: one socket path would clash
admin socket =

[mon]
mon data = $DIR/\$name
admin socket = $DIR/run/\$name.asok
mon initial members = a
mon data avail warn = 1
mon data avail crit = 0
mgr initial modules =

[osd]
osd data = $DIR/\$name
admin socket = $DIR/run/\$name.asok
osd objectstore = memstore
memstore device bytes = $STORE_BYTES
memstore page set = false
# a clean stop (SIGTERM) must unmount memstore, which saves it to osd data,
# so that the fault tests can restart the OSD with its objects
osd fast shutdown = false
osd crush update on start = true
osd max object name len = 460
osd max object namespace len = 64
osd op num shards = 2
osd op num threads per shard = 1
EOF

if [ "$AUTH_MODE" = cephx ]; then
	ceph-authtool --create-keyring "$DIR/ceph.mon.a.keyring" --gen-key -n mon. \
		--cap mon 'allow *' >/dev/null
	ceph-authtool --create-keyring "$DIR/ceph.client.admin.keyring" --gen-key -n client.admin \
		--cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
	ceph-authtool --create-keyring "$DIR/ceph.osd.0.keyring" --gen-key -n osd.0 \
		--cap mon 'allow profile osd' --cap mgr 'allow profile osd' --cap osd 'allow *' >/dev/null
	for k in client.admin osd.0; do
		ceph-authtool "$DIR/ceph.mon.a.keyring" --import-keyring "$DIR/ceph.$k.keyring" >/dev/null
	done
	chmod 600 "$DIR"/*.keyring
else
	: >"$DIR/ceph.client.admin.keyring"
fi

monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$DIR/tmp/monmap" >/dev/null
MKFS_ARGS=()
[ "$AUTH_MODE" = cephx ] && MKFS_ARGS=(--keyring "$DIR/ceph.mon.a.keyring")
ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/tmp/monmap" "${MKFS_ARGS[@]}" \
	>"$DIR/log/mon.a.mkfs.log" 2>&1 || die "ceph-mon --mkfs failed"
# daemonizes and writes run/mon.a.pid
ceph-mon -c "$CONF" -i a 2>>"$DIR/log/mon.a.stderr" || die "ceph-mon did not start"

C=(timeout 20 ceph -c "$CONF" --connect-timeout 10)
for i in $(seq 1 100); do
	"${C[@]}" mon stat >/dev/null 2>&1 && break
	[ "$i" = 100 ] && die "the mon did not answer"
	sleep 0.2
done
log "mon up on 127.0.0.1:$MON_PORT"

OSD_UUID=$(uuidgen)
OSD_ID=$("${C[@]}" osd new "$OSD_UUID" 0 2>>"$DIR/log/osd.0.stderr") || die "ceph osd new failed"
[ "$OSD_ID" = 0 ] || die "unexpected osd id $OSD_ID"
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$OSD_UUID" >"$DIR/log/osd.0.mkfs.log" 2>&1 ||
	die "ceph-osd --mkfs failed"
# daemonizes and writes run/osd.0.pid
ceph-osd -c "$CONF" -i 0 2>>"$DIR/log/osd.0.stderr" || die "ceph-osd did not start"

for i in $(seq 1 150); do
	"${C[@]}" osd dump 2>/dev/null | grep -q '^osd.0 up' && break
	[ "$i" = 150 ] && die "osd.0 did not come up"
	sleep 0.2
done
log "osd.0 up"

"${C[@]}" osd pool create "$POOL" "$PG" "$PG" replicated >/dev/null 2>&1 ||
	die "pool create failed"
"${C[@]}" osd pool application enable "$POOL" rados >/dev/null 2>&1 || true

# usable = a write round-trips (it blocks until the PGs are active)
echo probe >"$DIR/tmp/probe"
for i in $(seq 1 60); do
	timeout 10 rados -c "$CONF" -p "$POOL" put __probe__ "$DIR/tmp/probe" 2>/dev/null && break
	[ "$i" = 60 ] && die "pool $POOL is not writable"
	sleep 0.5
done
timeout 10 rados -c "$CONF" -p "$POOL" rm __probe__ || true
log "pool $POOL writable"

cat >"$DIR/ceph-env.sh" <<EOF
export CEPH_CONF=$CONF
export CEPH_POOL=$POOL
export CEPH_DIR=$DIR
EOF
echo "$CONF"
