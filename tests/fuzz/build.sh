#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz/fuzz_*.c: the codec, the connection
# code on a socketpair) with clang
# -fsanitize=fuzzer,address,undefined and run each for a bounded number of
# inputs. Fails when clang is not installed.
#
#   tests/fuzz/build.sh              build + run every target, 200000 runs each
#   FUZZ_RUNS=1000000 tests/fuzz/build.sh fuzz_proto
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
runs=${FUZZ_RUNS:-200000}
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
	*) echo "fuzz: no source list for $1 in $0" >&2; return 1 ;;
	esac
}

# Flags and libraries a target needs besides cflags.
flags_for() {
	case "$1" in
	fuzz_server)
		echo -Icached/net -Icached/conf -Icached/util -Ipolicy -DSERVER_OUTQ_MAX=16384 -DSERVER_OUTQ_FDS=4 -DSERVER_WAIT_MAX=4 \
			"$(pkg-config --libs libevent)"
		;;
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
		printf 'TC\x01\x0a\x04\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$dir/frame"
		# getter program: 3 ops (u32, str, u64) over a payload
		printf '\x03\x02\x07\x03\x05\x00\x00\x00\x02\x00\x00\x00ab\x01\x02\x03\x04\x05\x06\x07\x08' >"$dir/getters"
		;;
	fuzz_proto_job)
		# tag job 0x5eed rank 3; untag
		printf '\x01\xed\x5e\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00' >"$dir/tag"
		printf '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$dir/untag"
		;;
	fuzz_server)
		# control byte, then frames: header magic "TC" version 1, op,
		# len u32, id u32, aux u16, status u16 (include/tiercache/protocol.h)
		local hello='TC\x01\x01\x04\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00'
		printf "\x00$hello" >"$dir/hello"
		# the same, sent one byte at a time
		printf "\x01$hello" >"$dir/hello-bytewise"
		# wrong magic
		printf '\x00XX\x01\x01\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00' >"$dir/bad-magic"
		# a length past TC_FRAME_MAX (1 MiB + 1)
		printf '\x00TC\x01\x01\x01\x00\x10\x00\x01\x00\x00\x00\x00\x00\x00\x00' >"$dir/too-long"
		# several frames in one buffer: every answer kind (op 0..6), then
		# a frame cut short
		{
			printf '\x00'
			for op in 0 1 2 3 4 5 6 7 8 9 10 11 12 13; do
				printf "TC\\x01\\x$(printf %02x $op)\\x02\\x00\\x00\\x00\\x$(printf %02x $op)\\x00\\x00\\x00\\x00\\x00\\x00\\x00ab"
			done
			printf 'TC\x01\x01\x10\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00abc'
		} >"$dir/pipeline"
		# large replies with lazy draining (control 0x40): backpressure;
		# the same, then the server stopped with replies held (0xc0)
		{
			printf '\x44'
			for i in $(seq 1 40); do
				printf 'TC\x01\x04\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00'
			done
		} >"$dir/backpressure"
		{
			printf '\xc4'
			for i in $(seq 1 40); do
				printf 'TC\x01\x06\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00'
			done
		} >"$dir/held-at-stop"
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
	echo "fuzz: running $name for $runs inputs"
	"$out/$name" -runs="$runs" -max_len=4096 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$out/" "${dirs[@]}"
	rm -rf "$scratch" "$seeds"
	trap - EXIT
done
echo "fuzz: all targets passed"
