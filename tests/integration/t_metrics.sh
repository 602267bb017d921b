# The Prometheus endpoint (daemon.metrics_listen): scrape it with python's
# urllib, parse the text format strictly, and check that the numbers move
# as reads happen (misses and cold bytes on first reads, hits after, the
# latency histograms count them) and agree with `tierctl status`.
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
# a free loopback port, chosen by the kernel
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tc_config 64M 128M 256K
sed -i "s/^\[daemon\]$/[daemon]\nmetrics_listen = 127.0.0.1:$PORT\nreadahead_chunks = 0/" "$T/tc.conf"
mkdir -p "$T/cold"
for i in 1 2 3 4; do head -c $((700000 + i)) /dev/urandom >"$T/cold/f$i.bin"; done
tc_start || exit 1

cat >"$T/scrape.py" <<'PY'
"""scrape.py URL OUT.json: GET the endpoint, parse the Prometheus text
format strictly (HELP/TYPE before samples, names and labels well formed,
histogram buckets cumulative and ending in +Inf == _count), write
{"name{labels}": value} as JSON. Exit 1 with a message on any violation."""
import json, re, sys, urllib.request
url, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(url, timeout=10) as r:
    assert r.status == 200, r.status
    ctype = r.headers["Content-Type"]
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    text = r.read().decode()
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
sample_re = re.compile(r"^(%s)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\]|\\\\.)*\",?)*)\})? (\S+)$" % NAME)
types, helps, values = {}, {}, {}
hist = {}
for line in text.split("\n"):
    if not line:
        continue
    if line.startswith("# HELP "):
        n = line.split(" ")[2]
        assert n not in helps, "HELP twice for " + n
        helps[n] = True
        continue
    if line.startswith("# TYPE "):
        _, _, n, t = line.split(" ")
        assert t in ("counter", "gauge", "histogram"), line
        assert n not in types, "TYPE twice for " + n
        assert n in helps, "TYPE before HELP for " + n
        types[n] = t
        continue
    m = sample_re.match(line)
    assert m, "bad sample line: %r" % line
    name, labels, v = m.group(1), m.group(3) or "", m.group(4)
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    fam = base if types.get(base) == "histogram" else name
    assert fam in types, "sample before its TYPE: " + line
    if types[fam] == "counter":
        assert name.endswith("_total"), "counter without _total: " + name
    val = float(v)
    key = name + ("{" + labels + "}" if labels else "")
    assert key not in values, "duplicate sample " + key
    values[key] = val
    if types[fam] == "histogram" and name.endswith("_bucket"):
        other = re.sub(r',?le="[^"]*"', "", labels)
        le = re.search(r'le="([^"]*)"', labels).group(1)
        hist.setdefault((base, other), []).append((le, val))
for (base, other), buckets in hist.items():
    counts = [c for _, c in buckets]
    assert counts == sorted(counts), "buckets not cumulative: %s %s" % (base, other)
    assert buckets[-1][0] == "+Inf", "last bucket is not +Inf"
    bounds = [float(le) for le, _ in buckets[:-1]]
    assert bounds == sorted(bounds) and len(set(bounds)) == len(bounds)
    ck = base + "_count" + ("{" + other + "}" if other else "")
    assert values[ck] == buckets[-1][1], "+Inf bucket != _count for " + ck
json.dump(values, open(out, "w"), indent=0, sort_keys=True)
PY
URL=http://127.0.0.1:$PORT/metrics
m() { python3 -c "import json,sys; print(int(json.load(open('$1')).get(sys.argv[1], -1)))" "$2"; }
check "first scrape parses" python3 "$T/scrape.py" "$URL" "$T/m0.json"
check "hits start at 0" [ "$(m "$T/m0.json" 'tiercache_hits_total{tier="hot"}')" = 0 ]
check "hot capacity exported" [ "$(m "$T/m0.json" 'tiercache_tier_capacity_bytes{tier="hot"}')" = $((64 * 1024 * 1024)) ]
check "warm capacity exported" [ "$(m "$T/m0.json" 'tiercache_tier_capacity_bytes{tier="warm"}')" = $((128 * 1024 * 1024)) ]
check "build_info" [ "$(m "$T/m0.json" 'tiercache_build_info{version="0.1.0"}')" = 1 ]

for i in 1 2 3; do "$TC" cat ds/f$i.bin | cmp -s - "$T/cold/f$i.bin" || fail "first read f$i"; done
check "after first reads" python3 "$T/scrape.py" "$URL" "$T/m1.json"
# 700001..700003 bytes in 256K chunks: 3 chunks per file
check "misses moved: 9 chunks" [ "$(m "$T/m1.json" tiercache_misses_total)" = 9 ]
check "dataset misses: 9" [ "$(m "$T/m1.json" 'tiercache_dataset_misses_total{dataset="ds"}')" = 9 ]
check "cold bytes = the files' bytes" [ "$(m "$T/m1.json" tiercache_cold_read_bytes_total)" = $((700001 + 700002 + 700003)) ]
check "fill latency counted 9" [ "$(m "$T/m1.json" tiercache_cold_read_duration_seconds_count)" = 9 ]
check "miss latency counted 9" [ "$(m "$T/m1.json" 'tiercache_chunk_request_duration_seconds_count{result="miss"}')" = 9 ]
check "hot used = resident bytes" [ "$(m "$T/m1.json" 'tiercache_tier_used_bytes{tier="hot"}')" = \
	"$(m "$T/m1.json" 'tiercache_dataset_resident_bytes{dataset="ds",tier="hot"}')" ]
# the finished fills' buffers are kept for the next fills (cache/fill_buf.h:
# at most 16 and 32 MiB); every chunk here is in the 256 KiB size class
spare=$(m "$T/m1.json" tiercache_fill_buffers_spare)
check "spare fill buffers kept: at least 1 (got $spare)" [ "$spare" -ge 1 ]
check "spare fill buffers: at most 16 (got $spare)" [ "$spare" -le 16 ]
check "spare fill buffer bytes: 256 KiB each" [ "$(m "$T/m1.json" tiercache_fill_buffer_spare_bytes)" = $((spare * 262144)) ]
check "spare fill buffer bytes: at most 32 MiB" [ "$(m "$T/m1.json" tiercache_fill_buffer_spare_bytes)" -le $((32 << 20)) ]

for i in 1 2 3; do "$TC" cat ds/f$i.bin | cmp -s - "$T/cold/f$i.bin" || fail "second read f$i"; done
check "after second reads" python3 "$T/scrape.py" "$URL" "$T/m2.json"
check "hot hits moved: 9" [ "$(m "$T/m2.json" 'tiercache_hits_total{tier="hot"}')" = 9 ]
check "misses unchanged" [ "$(m "$T/m2.json" tiercache_misses_total)" = 9 ]
# chunk 0 of a resident file comes with the OPEN reply, not a CHUNK request
check "hit latency counted the 6 CHUNK hits" [ "$(m "$T/m2.json" 'tiercache_chunk_request_duration_seconds_count{result="hit"}')" = 6 ]
check "served bytes grew by the files' bytes" [ $(( $(m "$T/m2.json" tiercache_served_bytes_total) - $(m "$T/m1.json" tiercache_served_bytes_total) )) = $((700001 + 700002 + 700003)) ]
check "hits agree with tierctl status" [ "$("$TC" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["hits_hot"])')" = 9 ]
# nothing filled since m2 (all hits): status shows the same spares
"$TC" status --json >"$T/status.json"
check "status daemon.fill_buffers_spare = the metric" [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemon"]["fill_buffers_spare"])' "$T/status.json")" = "$(m "$T/m2.json" tiercache_fill_buffers_spare)" ]
check "status daemon.fill_buffer_spare_bytes = the metric" [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemon"]["fill_buffer_spare_bytes"])' "$T/status.json")" = "$(m "$T/m2.json" tiercache_fill_buffer_spare_bytes)" ]
check "tierctl status (text) shows the spares" bash -c "'$TC' status | grep -q 'fill_buffer_spare_bytes'"
check "errors by kind present" [ "$(m "$T/m2.json" 'tiercache_errors_total{kind="cold_read"}')" = 0 ]

# a plan: its prefetch shows in the prefetch counters, its reads as prefetch hits
check "no plans yet" [ "$(m "$T/m2.json" tiercache_plans)" = 0 ]
echo f4.bin | "$TC_TESTS/tcplan" set ds 9 0 1 0 >"$T/plan.out" 2>&1
check "plan of f4.bin registered" grep -qx "registered 1" "$T/plan.out"
check "prefetch settles" "$TC_TESTS/tcplan" settle
check "after the plan" python3 "$T/scrape.py" "$URL" "$T/m3.json"
check "one plan" [ "$(m "$T/m3.json" tiercache_plans)" = 1 ]
check "plan prefetch bytes = f4's bytes" [ "$(m "$T/m3.json" 'tiercache_prefetch_bytes_total{source="plan"}')" = 700004 ]
check "no readahead (off here)" [ "$(m "$T/m3.json" 'tiercache_prefetch_bytes_total{source="readahead"}')" = 0 ]
check "prefetch is not a miss" [ "$(m "$T/m3.json" tiercache_misses_total)" = 9 ]
echo f4.bin | "$TC_TESTS/tcplan" read ds "$T/cold" >"$T/read.out" 2>&1
check "f4.bin read through the plan: exact bytes" [ $? = 0 ]
check "after reading f4" python3 "$T/scrape.py" "$URL" "$T/m4.json"
check "its 3 chunks are prefetch hits" [ "$(m "$T/m4.json" tiercache_prefetch_hits_total)" = 3 ]
check "and no miss" [ "$(m "$T/m4.json" tiercache_misses_total)" = 9 ]

code() { python3 - "$1" "${2:-GET}" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], method=sys.argv[2])
try:
    print(urllib.request.urlopen(req, timeout=10).status)
except urllib.error.HTTPError as e:
    print(e.code)
PY
}
check "other paths: 404" [ "$(code "http://127.0.0.1:$PORT/")" = 404 ]
check "/metricsx: 404" [ "$(code "http://127.0.0.1:$PORT/metricsx")" = 404 ]
check "POST /metrics: 405" [ "$(code "$URL" POST)" = 405 ]
check "query string allowed" [ "$(code "$URL?x=1")" = 200 ]
check "still serving after bad requests" bash -c "'$TC' cat ds/f1.bin | cmp -s - '$T/cold/f1.bin'"
tc_stop || fail "clean stop"

# a port in use: the daemon refuses to start and says why
python3 -c '
import socket, sys, time, os
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").close()
while os.path.exists(sys.argv[2]): time.sleep(0.05)
' "$PORT" "$T/busy" &
bpid=$!
for _ in $(seq 1 100); do [ -f "$T/busy" ] && break; sleep 0.05; done
"$TC_BIN/tiercached" -c "$T/tc.conf" >"$T/busy.log" 2>&1
check "port in use: exit 1" [ $? -eq 1 ]
check "port in use: clear message" grep -q "cannot listen for metrics on 127.0.0.1:$PORT: .*(daemon.metrics_listen)" "$T/busy.log"
rm -f "$T/busy"
wait $bpid
finish
