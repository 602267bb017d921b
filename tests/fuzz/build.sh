#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz/fuzz_*.c: the codec, the connection
# code on a socketpair, the config loader, the persisted manifest) with clang
# -fsanitize=fuzzer,address,undefined and run each for a bounded number of
# inputs. Fails when clang is not installed.
#
#   tests/fuzz/build.sh              build + run every target, 200000 runs each
#                                    (fewer for slow targets: runs_for below)
#   FUZZ_RUNS=1000000 tests/fuzz/build.sh fuzz_proto
#   FUZZ_TIME=300 tests/fuzz/build.sh    each target for 300 s instead of a
#                                    count (make fuzz: FUZZ_TIME, default 300)
#   FUZZ_BUILD_ONLY=1 tests/fuzz/build.sh
#
# Binaries go to $FUZZ_OUT (default build/fuzz). Each run starts from the
# seeds written below plus tests/fuzz/corpus/NAME/ if it exists; new inputs
# found go to a scratch directory that is removed afterwards, so a run
# leaves the tree as it was. A crash leaves crash-* in $FUZZ_OUT and fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz: clang not found (scripts/install-deps installs clang and libclang-rt-14-dev)"
	exit 1
fi

out=${FUZZ_OUT:-build/fuzz}
mkdir -p "$out"
cflags=(-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
	-D_GNU_SOURCE -Iinclude -Icommon -Wall -Wextra -Werror)

# What each target links besides itself.
sources_for() {
	case "$1" in
	fuzz_proto) echo common/proto.c ;;
	fuzz_proto_job) echo common/proto_job.c common/proto.c ;;
	# the daemon's transport, as built in the daemon (its layer's include
	# paths: net, conf, util), with an output queue small enough that
	# inputs of a few KiB reach backpressure
	fuzz_server) echo cached/net/server.c cached/net/sock_path.c cached/util/log.c cached/util/loop.c common/proto.c ;;
	# the PLAN_SET decoder and the stager, as handlers_plan.c runs them,
	# against a real manifest
	fuzz_plan_stage)
		echo cached/api/plan_frame.c cached/plan/plan_stage.c cached/store/manifest.c \
			cached/util/log.c common/proto.c
		;;
	# the config loader as the daemon links it: the key table, the value
	# parsers, reload's diff, policy specs (which ask the policy registry)
	fuzz_config)
		echo cached/conf/*.c cached/util/log.c policy/*.c common/proto.c
		;;
	# the persisted manifest record (store layer: sees cold, conf, util)
	fuzz_manifest) echo cached/store/manifest.c cached/util/log.c common/proto.c ;;
	# the peer protocol's codec and handshake proofs (daemon-only: libcrypto)
	fuzz_peer) echo common/peer_proto.c common/peer_auth.c common/proto.c ;;
	*) echo "fuzz: no source list for $1 in $0" >&2; return 1 ;;
	esac
}

# Flags and libraries a target needs besides cflags.
flags_for() {
	case "$1" in
	fuzz_plan_stage)
		echo -Icached/api -Icached/plan -Icached/store -Icached/cold -Icached/conf -Icached/util
		;;
	fuzz_server)
		echo -Icached/net -Icached/conf -Icached/util -Ipolicy -DSERVER_OUTQ_MAX=16384 -DSERVER_OUTQ_FDS=4 -DSERVER_WAIT_MAX=4 \
			"$(pkg-config --libs libevent)"
		;;
	fuzz_config) echo -Icached/conf -Icached/util -Ipolicy "$(pkg-config --libs inih)" -lm ;;
	fuzz_manifest) echo -Icached/store -Icached/cold -Icached/conf -Icached/util -Ipolicy ;;
	fuzz_peer) echo -lcrypto ;;
	esac
}

# Inputs per run: $FUZZ_RUNS if set (make fuzz sets it for every target),
# else 200000, or less for a target whose inputs cost more, so that each
# stays well under a minute in `make check` on a small machine.
runs_for() {
	if [ -n "${FUZZ_RUNS:-}" ]; then
		echo "$FUZZ_RUNS"
		return
	fi
	case "$1" in
	# every input is a whole config_load (a 1 MiB read buffer, a memfd
	# written and read twice): about 4000 inputs/s under ASan
	fuzz_config) echo 100000 ;;
	*) echo 200000 ;;
	esac
}

# Seed inputs: a few well-formed things for the fuzzer to mutate.
write_seeds() {
	local dir=$1 name=$2
	case "$name" in
	fuzz_proto)
		# record set: 1 section "s", object, 1 record, field "k" u64 5
		printf '\x01\x00\x00\x00\x01\x00\x00\x00s\x01\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00k\x01\x05\x00\x00\x00\x00\x00\x00\x00' >"$dir/recset"
		# record set: array of two records, a str and a bool field
		printf '\x01\x00\x00\x00\x01\x00\x00\x00t\x02\x02\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00n\x03\x03\x00\x00\x00hot\x01\x00\x00\x00\x01\x00\x00\x00b\x04\x01' >"$dir/recset-array"
		# a whole frame: header (STATUS reply, len 4) + empty record set
		printf 'TC\x02\x0a\x04\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$dir/frame"
		# getter program: 3 ops (u32, str, u64) over a payload
		printf '\x03\x02\x07\x03\x05\x00\x00\x00\x02\x00\x00\x00ab\x01\x02\x03\x04\x05\x06\x07\x08' >"$dir/getters"
		;;
	fuzz_proto_job)
		# tag job 0x5eed rank 3; untag
		printf '\x01\xed\x5e\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00' >"$dir/tag"
		printf '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$dir/untag"
		;;
	fuzz_plan_stage)
		# records: u8 control (connection, 0x4 disconnect, 0x8 refresh),
		# u16 len, a PLAN_SET payload: str "ds", u64 job, u32 rank,
		# u32 world_size, u32 epoch, u8 flags, u8 kind, u32 n, entries
		local head='\x02\x00\x00\x00ds\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00'
		# one frame, two indices
		printf "\x00\x30\x00${head}\x00\x02\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00" >"$dir/indices"
		# a staged sequence of paths: MORE, then CONT|MORE, then CONT
		{
			printf "\x00\x25\x00${head}\x02\x01\x01\x00\x00\x00\x01\x00\x00\x00a"
			printf "\x00\x29\x00${head}\x06\x01\x01\x00\x00\x00\x05\x00\x00\x00b/d/e"
			printf "\x00\x25\x00${head}\x04\x01\x01\x00\x00\x00\x01\x00\x00\x00z"
		} >"$dir/staged"
		# staged on one connection, refreshed, then continued; another
		# connection's sequence cut by its disconnect
		{
			printf "\x00\x25\x00${head}\x02\x01\x01\x00\x00\x00\x01\x00\x00\x00a"
			printf "\x05\x25\x00${head}\x02\x01\x01\x00\x00\x00\x01\x00\x00\x00z"
			printf "\x08\x25\x00${head}\x04\x01\x01\x00\x00\x00\x01\x00\x00\x00z"
		} >"$dir/refresh"
		;;
	fuzz_server)
		# control byte, then frames: header magic "TC" version 1, op,
		# len u32, id u32, aux u16, status u16 (include/tiercache/protocol.h)
		local hello='TC\x02\x01\x04\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00'
		printf "\x00$hello" >"$dir/hello"
		# the same, sent one byte at a time
		printf "\x01$hello" >"$dir/hello-bytewise"
		# wrong magic
		printf '\x00XX\x01\x01\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00' >"$dir/bad-magic"
		# a length past TC_FRAME_MAX (1 MiB + 1)
		printf '\x00TC\x02\x01\x01\x00\x10\x00\x01\x00\x00\x00\x00\x00\x00\x00' >"$dir/too-long"
		# several frames in one buffer: every answer kind (op 0..6), then
		# a frame cut short
		{
			printf '\x00'
			for op in 0 1 2 3 4 5 6 7 8 9 10 11 12 13; do
				printf "TC\\x01\\x$(printf %02x $op)\\x02\\x00\\x00\\x00\\x$(printf %02x $op)\\x00\\x00\\x00\\x00\\x00\\x00\\x00ab"
			done
			printf 'TC\x02\x01\x10\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00abc'
		} >"$dir/pipeline"
		# large replies with lazy draining (control 0x40): backpressure;
		# the same, then the server stopped with replies held (0xc0)
		{
			printf '\x44'
			for i in $(seq 1 40); do
				printf 'TC\x02\x04\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00'
			done
		} >"$dir/backpressure"
		{
			printf '\xc4'
			for i in $(seq 1 40); do
				printf 'TC\x02\x06\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00'
			done
		} >"$dir/held-at-stop"
		;;
	fuzz_config)
		# the demo's config, the reference with every key uncommented
		# (comments dropped: they are most of its bytes), and small ones
		cp conf/demo.conf "$dir/demo.conf"
		sed -E 's/^#(\[|[a-z_]+ = )/\1/' conf/tiercache.conf | grep -Ev '^[[:space:]]*(#|$)' \
			>"$dir/reference-all-keys.conf"
		printf '[tier hot]\npath = /t/hot\ncapacity = 1G\n' >"$dir/minimal.conf"
		printf '[daemon]\nsocket = s.sock\nstate_dir = st\nmetrics_listen = [::1]:9464\nidle_timeout = off\nscrub_rate = 0\n[tier hot]\npath = ./a/../h\ncapacity = 1.5G\nhigh_water = 95%%\nlow_water = 10\n[tier warm]\npath = w/\ncapacity = 3T\n[dataset d]\npath = /c\nchunk_size = 1M\npolicy = lru\nrevalidate_after = 250ms\nserve_stale_on_error = yes\naccess = source\nallow_users = 0, root\n[dataset r]\nbackend = rados\npool = p\nlayout = striper\n' >"$dir/relative-units.conf"
		printf '[tier hot]\npath = /t\ncapacity = 12Q\nlow_water = 90\nhigh_water = 80\n[dataset x]\npath = /t/x\nbogus = 1\n' >"$dir/errors.conf"
		printf '[tier hot]\npath = /t\ncapacity = 1G\n[cluster]\nname = c\nredis = unix:/r.sock\npeer_listen = [fd00::1]:7\nkey_file = /k\nheartbeat = 100ms\nlease = 300ms\n' >"$dir/cluster.conf"
		;;
	fuzz_peer)
		# control byte (bit 0: the client's AUTH gets the right proof),
		# then frames: header "TP", version 1, op, len u32, id u32, aux
		# u32, payload (common/peer_proto.h), little-endian
		local z8='\x00\x00\x00\x00\x00\x00\x00\x00'
		local nonce="$z8$z8$z8$z8"
		# HELLO: version 1, str "train", str "node-a", nonce
		local hello="TP\\x01\\x01\\x37\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x05\\x00\\x00\\x00train\\x06\\x00\\x00\\x00node-a$nonce"
		local auth="TP\\x01\\x03\\x20\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00$nonce"
		# GET: "ds", "a/b", size 16, mtime 0, version 7, chunk_size
		# 4096, idx 0, len 16, flags 0
		local get="TP\\x01\\x05\\x35\\x00\\x00\\x00\\x03\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x00\\x00ds\\x03\\x00\\x00\\x00a/b\\x10\\x00\\x00\\x00\\x00\\x00\\x00\\x00$z8\\x07\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x10\\x00\\x00\\x00\\x00\\x00\\x00\\x10\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
		# DATA: size 4, mtime 0, version 7, checksum, len 4, where 1, "abcd"
		local data="TP\\x01\\x06\\x29\\x00\\x00\\x00\\x03\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x04\\x00\\x00\\x00\\x00\\x00\\x00\\x00$z8\\x07\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x11\\x22\\x33\\x44\\x55\\x66\\x77\\x88\\x04\\x00\\x00\\x00\\x01abcd"
		# ERROR: aux ENOENT, str "nope"
		local error='TP\x01\x07\x08\x00\x00\x00\x03\x00\x00\x00\x02\x00\x00\x00\x04\x00\x00\x00nope'
		printf "\\x01$hello$auth$get$get" >"$dir/honest-session"
		printf "\\x00$hello$auth$get" >"$dir/forged-auth"
		printf "\\x00$data$error" >"$dir/replies"
		printf "\\x01$get" >"$dir/get-before-hello"
		# a client-protocol header on the peer port
		printf '\x01TC\x02\x01\x04\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00' >"$dir/client-frame"
		;;
	fuzz_manifest)
		# records: u8 format 1, u64 count, count x {u32 length, path,
		# u64 size, i64 mtime_ns, u64 version}, little-endian
		local ent_a='\x05\x00\x00\x00a/b/c\x10\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08\x00\x00\x00\x00\x00\x00\x00\x00'
		local ent_b='\x03\x00\x00\x00a/d\x00\x00\x40\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x07\x00\x00\x00\x00\x00\x00\x00'
		local ent_c='\x01\x00\x00\x00z\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
		printf '\x01\x00\x00\x00\x00\x00\x00\x00\x00' >"$dir/empty"
		printf "\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00$ent_a" >"$dir/one"
		printf "\\x01\\x03\\x00\\x00\\x00\\x00\\x00\\x00\\x00$ent_c$ent_b$ent_a" >"$dir/three-unsorted"
		printf "\\x01\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00$ent_a$ent_a" >"$dir/twice"
		;;
	esac
}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for src in tests/fuzz/fuzz_*.c; do
		targets+=("$(basename "$src" .c)")
	done
fi

for name in "${targets[@]}"; do
	src=tests/fuzz/$name.c
	[ -f "$src" ] || { echo "fuzz: no $src" >&2; exit 2; }
	# shellcheck disable=SC2046
	clang "${cflags[@]}" $(flags_for "$name") "$src" $(sources_for "$name") -o "$out/$name" \
		$(flags_for "$name")
	echo "fuzz: built $out/$name"
	[ -n "${FUZZ_BUILD_ONLY:-}" ] && continue

	scratch=$(mktemp -d)
	seeds=$(mktemp -d)
	trap 'rm -rf "$scratch" "$seeds"' EXIT
	write_seeds "$seeds" "$name"
	dirs=("$scratch" "$seeds")
	[ -d "tests/fuzz/corpus/$name" ] && dirs+=("tests/fuzz/corpus/$name")
	limit=()
	if [ -n "${FUZZ_TIME:-}" ]; then
		limit=(-runs=-1 -max_total_time="$FUZZ_TIME")
		echo "fuzz: running $name for $FUZZ_TIME s"
	else
		# a fixed seed: the bounded run in `make check` is the same every
		# time, so a failure there can be run again; `make fuzz` explores
		runs=$(runs_for "$name")
		limit=(-runs="$runs" -seed="${FUZZ_SEED:-1}")
		echo "fuzz: running $name for $runs inputs (seed ${FUZZ_SEED:-1})"
	fi
	"$out/$name" "${limit[@]}" -max_len=4096 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$out/" "${dirs[@]}"
	rm -rf "$scratch" "$seeds"
	trap - EXIT
done
echo "fuzz: all targets passed"
