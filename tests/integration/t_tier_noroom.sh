# A miss that finds no room on any tier (issue #16 item 8, the fill side):
# every byte of the only tier held open by clients. The read is served
# unkept (a sealed in-memory file) instead of failing, with the source's
# bytes, and nothing is kept.
. "$(dirname "$0")/lib.sh"

MiB=1048576
mkdir -p "$T/cold"
for i in 1 2 3 4 5 6 7 8; do head -c $MiB /dev/urandom >"$T/cold/h$i.bin"; done
for i in 1 2 3 4 5; do head -c $MiB /dev/urandom >"$T/cold/n$i.bin"; done
TC_DAEMON_CONF="readahead_chunks = 0" tc_config 4M none 1M
tc_start || exit 1

pids=
for i in 1 2 3 4 5 6 7 8; do
	"$TC_TESTS/tcverify" hold "ds/h$i.bin" 30 >"$T/hold$i.out" 2>&1 &
	pids="$pids $!"
done
held() { [ "$(grep -l holding "$T"/hold*.out 2>/dev/null | wc -l)" = 8 ]; }
for _ in $(seq 1 100); do held && break; sleep 0.1; done
check "8 clients hold 8 MiB of chunks (the hot tier has 4)" held
hot() { tc_json "[t for t in s['tiers'] if t['name'] == 'hot'][0]['$1']"; }
check "hot has no room left" [ "$(hot used_bytes)" -ge $((4 * MiB - MiB + 1)) ]
before=$(tc_json "s['counters']['served_unkept']")
bad=0
for i in 1 2 3 4 5; do
	"$TC_TESTS/tcverify" file "ds/n$i.bin" "$T/cold/n$i.bin" >/dev/null 2>>"$T/verify.err" || bad=$((bad + 1))
done
check "5 new reads with every tier held: all served, bytes equal ($bad failed)" [ "$bad" = 0 ]
check "... served unkept" [ "$(tc_json "s['counters']['served_unkept']")" -ge $((before + 5)) ]
no_enospc() { ! grep -q "no room anywhere" "$T/daemon.log"; }
check "... no fill failed for want of room" no_enospc
check "tier accounting within capacity" [ $(( $(hot used_bytes) + $(hot reserved_bytes) )) -le $((4 * MiB)) ]
for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
finish
