# Segments keep readers apart (docs/security.md): a client handed a
# segment's descriptor can read every byte of that segment, so items of
# different datasets never share one (each dataset's allow_users then
# covers every byte a descriptor reaches), and a dataset with
# `access = source` (per-file permissions) keeps a file per chunk. Checked
# on the tier files: no segment holds bytes of two datasets, no segment
# holds any byte of the access = source dataset, and every byte read
# through the cache equals the source.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/cold" "$T/cold2" "$T/cold3"
python3 - "$T" <<'PY'
import os, random, sys
r = random.Random(5)
for d, n in (("cold", 30), ("cold2", 30), ("cold3", 10)):
    for i in range(n):
        with open(os.path.join(sys.argv[1], d, "f%02d.bin" % i), "wb") as f:
            f.write(os.urandom(r.randint(20, 200) * 1024))
PY
TC_DAEMON_CONF=$'segment_threshold = 512K\nsync_delay = 100ms' tc_config 64M 64M 1M
cat >>"$T/tc.conf" <<EOF2
[dataset ds2]
backend = posix
path = $T/cold2
chunk_size = 1M
[dataset src]
backend = posix
path = $T/cold3
chunk_size = 1M
access = source
EOF2
tc_start || exit 1
# interleave the datasets' misses so that one shared segment would mix them
for i in $(seq -w 0 29); do
	"$TC_TESTS/tcverify" file "ds/f$i.bin" "$T/cold/f$i.bin" >/dev/null || fail "ds/f$i.bin differs"
	"$TC_TESTS/tcverify" file "ds2/f$i.bin" "$T/cold2/f$i.bin" >/dev/null || fail "ds2/f$i.bin differs"
	[ "$i" -lt 10 ] && { "$TC_TESTS/tcverify" file "src/f$i.bin" "$T/cold3/f$i.bin" >/dev/null || fail "src/f$i.bin differs"; }
done
check "every byte of the three datasets equals the source" [ "$TC_FAILS" = 0 ]
wait_for 20 '[ "$(tc_json "s[\"daemon\"][\"sync_pending_chunks\"]" 2>/dev/null || echo 1)" = 0 ]' || true
# which datasets' bytes each segment file holds
python3 - "$T" >"$T/owners.out" <<'PY'
import glob, os, sys
t = sys.argv[1]
probes = {}
for d in ("cold", "cold2", "cold3"):
    for p in glob.glob(os.path.join(t, d, "*.bin")):
        probes[p] = (d, open(p, "rb").read(4096))
for seg in sorted(glob.glob(os.path.join(t, "hot", "segments", "seg-*")) +
                  glob.glob(os.path.join(t, "warm", "segments", "seg-*"))):
    data = open(seg, "rb").read()
    owners = sorted({d for p, (d, pr) in probes.items() if data.find(pr) >= 0})
    print(os.path.basename(seg), ",".join(owners) or "-")
PY
cat "$T/owners.out"
check "segments were used" [ "$(grep -c 'cold' "$T/owners.out")" -gt 0 ]
check "both socket-access datasets have items in segments" \
	bash -c "grep -q ' cold$' '$T/owners.out' && grep -q ' cold2$' '$T/owners.out'"
check "no segment holds bytes of two datasets" bash -c "! grep -q ',' '$T/owners.out'"
check "no segment holds a byte of the access = source dataset" bash -c "! grep -q 'cold3' '$T/owners.out'"
check "the access = source dataset's chunks are files of their own" \
	[ "$(find "$T/hot/chunks" "$T/warm/chunks" -name '*.chunk' | wc -l)" -ge 10 ]
tc_stop
# after a restart, new items still go to their own dataset's segment
tc_start || exit 1
check "after restart: every byte of ds2 equals the source" "$TC_TESTS/tcverify" tree ds2 "$T/cold2" 1
check "after restart: every byte of ds equals the source" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
tc_stop
finish
