# The plan prefetcher and a chunk that does not fit: hot's disk has less
# free than a 2 MiB chunk at the head of a plan's window (86 files of 100 KB
# read before fill it), but room for the 12 small files behind it. Without
# a warm tier the large chunk waits (prefetch.room_waits counts it) and the
# small ones behind it are loaded all the same, then read as hits; with a
# warm tier that has room, the large chunk is loaded onto warm and read as a
# warm hit. Every byte read is compared with the source. (Before the fix
# the window stopped at the large chunk, loaded nothing, and the small
# files, read before the large one, missed.)
. "$(dirname "$0")/lib.sh"

TP=$TC_TESTS/tcplan
mkdir -p "$T/cold/fill" "$T/cold/p"
for i in $(seq -w 0 85); do head -c 102400 /dev/urandom >"$T/cold/fill/f$i.bin"; done
head -c $((2 * 1048576)) /dev/urandom >"$T/cold/p/big.bin"
for i in $(seq -w 0 11); do head -c 102400 /dev/urandom >"$T/cold/p/s$i.bin"; done
ls "$T/cold/fill" | sed 's|^|fill/|' >"$T/fillers"
{ echo p/big.bin; ls "$T/cold/p" | grep '^s' | sed 's|^|p/|'; } >"$T/order"
# read the small files first: a window that stopped at the large chunk
# would not have reached them by then, whatever the timing
{ tail -n +2 "$T/order"; echo p/big.bin; } >"$T/reads"

js() { tc_json "$1"; }
ctr() { js "s['counters']['$1']"; }
pf() { js "s['prefetch']['$1']"; }
hot() { js "[t for t in s['tiers'] if t['name'] == 'hot'][0]['$1']"; }

# run WARM: a daemon with hot 10M (budget 90%: 9M) and warm WARM; fill hot
# with the 86 files, register the plan, let the prefetcher do what it can,
# then read the plan. Sets H (hot hits), W (warm hits), M (misses) of the
# 13 reads, RW (prefetch.room_waits).
run() {
	rm -rf "$T/hot" "$T/warm" "$T/state"
	tc_config 10M "$1" 2M "policy = lru"
	sed -i 's/^high_water = 90$/high_water = 95/; s/^low_water = 70$/low_water = 90/' "$T/tc.conf"
	sed -i 's/^workers = 4$/workers = 4\nplan_grace = 1h\nreadahead_chunks = 0\nreadahead_files = 0/' \
		"$T/tc.conf"
	tc_start || exit 1
	check "[$1] the 86 filler files read whole: bytes equal the source" \
		"$TP" read ds "$T/cold" <"$T/fillers"
	"$TP" settle
	# free for new bytes as the daemon counts it: its segment spare (the
	# size of one segment, 1/16 of the tier, while it holds segments and
	# does not punch dead items' blocks) is not
	local free
	free=$(js "[t['effective_capacity_bytes'] - t['used_bytes'] - t['reserved_bytes'] -
		(0 if t['segment_punch'] else
		 min(t['segment_bytes_live'] + t['segment_bytes_dead'], t['effective_capacity_bytes'] // 16))
		for t in s['tiers'] if t['name'] == 'hot'][0]")
	check "[$1] hot's disk has less free than the 2 MiB chunk, more than the small files ($free bytes)" \
		test "$free" -lt $((2 * 1048576)) -a "$free" -gt $((12 * 102400))
	local i0
	i0=$(pf issued)
	check "[$1] plan registered" "$TP" set ds 7 0 1 1 <"$T/order"
	wait_for 20 "[ \$(( \$(pf issued) - $i0 )) -ge ${2} ] && [ \$(pf inflight) = 0 ]"
	"$TP" settle
	check "[$1] the prefetcher loaded $2 chunks of the window (got $(($(pf issued) - i0)))" \
		test $(($(pf issued) - i0)) -ge "$2"
	local h0 w0 m0
	h0=$(ctr hits_hot) w0=$(ctr hits_warm) m0=$(ctr misses)
	check "[$1] the plan's 13 files read (the large one last): bytes equal the source" \
		"$TP" read ds "$T/cold" <"$T/reads"
	H=$(($(ctr hits_hot) - h0)) W=$(($(ctr hits_warm) - w0)) M=$(($(ctr misses) - m0))
	RW=$(pf room_waits)
	echo "  [$1] hot hits $H, warm hits $W, misses $M; prefetch: room_waits $(pf room_waits)," \
		"passed $(pf passed), stalls $(pf stalls), reclaims $(pf reclaims)"
	tc_stop || fail "[$1] daemon exited with an error"
}

# no warm tier: the large chunk waits, the small ones pass it
run none 12
check "no warm: the 12 small files behind the large chunk were hits (hot $H, misses $M)" \
	test "$H $W $M" = "12 0 1"
check "no warm: the large chunk's wait for room was counted once (room_waits $RW)" test "$RW" = 1
# warm with room: every chunk of the window is loaded, the large one on warm
run 16M 13
check "warm with room: the 12 small files hit hot, the large chunk warm (hot $H, warm $W, misses $M)" \
	test "$H $W $M" = "12 1 0"
finish
