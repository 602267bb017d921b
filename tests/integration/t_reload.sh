# tierctl config show and tierctl reload / SIGHUP against the real daemon:
# a bad file changes nothing; tier limits, log level, datasets added,
# removed and changed apply live, and so do a dataset's lifecycle keys and
# the [daemon] defaults it inherits (lifecycle uses them); restart keys are
# reported and keep their running values; a source key replaces a dataset.
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
tc_config 64M 128M 256K
mkdir -p "$T/cold" "$T/cold2"
for i in 1 2 3 4 5 6; do head -c $((1024 * 1024 + i * 777)) /dev/urandom >"$T/cold/f$i.bin"; done
head -c 300001 /dev/urandom >"$T/cold2/g.bin"
cp "$T/tc.conf" "$T/orig.conf"
tc_start || exit 1

# poll CMD... until it succeeds (a state reached, not a time waited)
until_ok() {
	for _ in $(seq 1 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
	return 1
}
show() { "$TC" config show; }
jget() { # jget PYEXPR: evaluate on `status --json` as s
	"$TC" status --json | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

show >"$T/show1"
check "config show names the file" grep -q "^# $T/tc.conf" "$T/show1"
check "config show: hot capacity" grep -qx "capacity = 64M" "$T/show1"
check "config show: a default is marked" grep -qx "max_clients = 1024  # default" "$T/show1"
check "config show: a set value equal to the default is marked too" grep -qx "workers = 4  # default" "$T/show1"
check "config show: socket_mode default" grep -qx "socket_mode = 0660  # default" "$T/show1"
check "config show: dataset section" grep -qx "\[dataset ds\]" "$T/show1"
check "config show: rados-only keys left out of a posix dataset" bash -c "! grep -q '^pool = ' '$T/show1'"
check "config show --json parses, one record per key" python3 -c "
import json,sys
j=json.load(open('/dev/stdin'))
c=j['config']
assert all(set(r)=={'section','key','value','default'} for r in c), c[0]
assert {'section':'tier hot','key':'capacity','value':'64M','default':False} in c
" < <("$TC" config show --json)

for i in 1 2 3; do "$TC" cat ds/f$i.bin >"$T/out"; cmp -s "$T/out" "$T/cold/f$i.bin" || fail "read f$i before reload"; done

# ---- a bad file: rejected with its messages, nothing changes
sed -e 's/^capacity = 64M/capacity = 12Q/' -e 's/^log_level = .*/log_level = debug/' "$T/orig.conf" >"$T/tc.conf"
echo "bogus_key = 1" >>"$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "bad config: reload exits 1" [ $? -eq 1 ]
check "bad config: the size message" grep -q 'hot.capacity: "12Q" is not a size (use 64G, 512M, ...)' "$T/r.err"
check "bad config: the unknown key message" grep -q "dataset.ds.bogus_key: unknown key" "$T/r.err"
check "bad config: says the running one stays" grep -q "the running config stays" "$T/r.err"
check "bad config: EINVAL" grep -q "Invalid argument" "$T/r.err"
show >"$T/show2"
check "bad config: running config unchanged" cmp -s "$T/show1" "$T/show2"
"$TC" cat ds/f1.bin >"$T/out"
check "bad config: still serving the same bytes" cmp -s "$T/out" "$T/cold/f1.bin"
check "bad config: reload_failures counted" [ "$("$TC" config show --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["file"]["reload_failures"])')" = 1 ]
sed -e 's/^workers = 4/workers = 4\nprefetch_small_inflight = 0/' "$T/orig.conf" >"$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "bad prefetch_small_inflight: reload exits 1" [ $? -eq 1 ]
check "bad prefetch_small_inflight: says the range" \
	grep -q 'daemon.prefetch_small_inflight: "0" is out of range (use 1..1024)' "$T/r.err"
check "bad prefetch_small_inflight: running config unchanged" bash -c "'$TC' config show | cmp -s - '$T/show1'"

# ---- a good file: shrink hot, debug log, add ds2, change
# ds's revalidate_after, start-only keys reported
used0=$(jget "[t['used_bytes'] for t in s['tiers'] if t['name']=='hot'][0]")
check "hot holds the reads (> 3M)" [ "$used0" -gt $((3 * 1024 * 1024)) ]
sed -e '0,/^capacity = 64M/s//capacity = 2M/' -e 's/^log_level = .*/log_level = debug/' \
	-e 's/^workers = 4/workers = 8\nprefetch_small_inflight = 4/' "$T/orig.conf" >"$T/tc.conf"
{
	echo "revalidate_after = 1m"
	echo "[dataset ds2]"
	echo "path = $T/cold2"
	echo "chunk_size = 128K"
	echo "policy = arc"
} >>"$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "good config: reload exits 0" [ $? -eq 0 ]
check "report: hot applied" grep -qx "applied: hot.capacity = 2M (was 64M)" "$T/r.out"
check "report: log level" grep -qx "applied: daemon.log_level = debug (was info)" "$T/r.out"
check "report: prefetch_small_inflight" grep -qx "applied: daemon.prefetch_small_inflight = 4 (was 32)" "$T/r.out"
check "report: revalidate_after" grep -qx "applied: dataset.ds.revalidate_after = 1m (was 5s)" "$T/r.out"
check "report: ds2 added" grep -qx "added: dataset.ds2" "$T/r.out"
check "report: workers needs a restart" grep -qx "needs a restart: daemon.workers (running 4, file 8)" "$T/r.out"
show >"$T/show3"
check "show: hot capacity now 2M" grep -qx "capacity = 2M" "$T/show3"
check "show: workers keeps the running value" grep -qx "workers = 4  # default" "$T/show3"
check "show: prefetch_small_inflight now 4" grep -qx "prefetch_small_inflight = 4" "$T/show3"
check "show: ds2 present" grep -qx "\[dataset ds2\]" "$T/show3"
"$TC" config show dataset ds2 >"$T/show_ds2"
check "show one section: only [dataset ds2]" [ "$(grep -c '^\[' "$T/show_ds2")" = 1 ]
check "show one section: its keys" grep -qx "chunk_size = 128K" "$T/show_ds2"
check "show one section (quoted form)" bash -c "'$TC' config show 'tier hot' | grep -qx 'capacity = 2M'"
"$TC" config show dataset nope >/dev/null 2>"$T/r.err"
check "show an unknown section: ENOENT, says which" grep -q 'no section \[dataset nope\] in the running config' "$T/r.err"
hot_used() { [ "$(jget "[t['used_bytes'] for t in s['tiers'] if t['name']=='hot'][0]")" -le $((2 * 1024 * 1024 * 90 / 100)) ]; }
check "the mover brings hot under its new high watermark" until_ok hot_used
check "ds2 serves its bytes" until_ok "$TC" cat ds2/g.bin
"$TC" cat ds2/g.bin >"$T/out"
check "ds2: exact bytes" cmp -s "$T/out" "$T/cold2/g.bin"
for i in 1 2 3 4 5 6; do "$TC" cat ds/f$i.bin >"$T/out"; cmp -s "$T/out" "$T/cold/f$i.bin" || fail "read f$i after shrinking"; done
ok "ds: exact bytes after shrinking hot"

# ---- policy of a dataset, then remove ds (its chunks go) and add it back
cp "$T/tc.conf" "$T/good.conf"
sed -i -e 's/^policy = arc/policy = lru/' "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "policy change applied" grep -qx "applied: dataset.ds2.policy = lru (was arc)" "$T/r.out"
check "status shows the new policy" [ "$(jget "[d['policy'] for d in s['datasets'] if d['name']=='ds2'][0]")" = lru ]
python3 - "$T/tc.conf" <<'PY'
import sys, re
p = sys.argv[1]; t = open(p).read()
# drop the [dataset ds] section
t = re.sub(r"\[dataset ds\]\n(?:[^\[].*\n)*", "", t)
open(p, "w").write(t)
PY
"$TC" pin ds/f4.bin >"$T/pin.out" 2>&1
printf 'f1.bin\nf2.bin\n' | "$TC_TESTS/tcplan" set ds 7 0 1 0 >"$T/plan.out" 2>&1
check "a plan of ds registered before the removal" grep -qx "registered 2" "$T/plan.out"
check "ds/f4.bin pinned before the removal" [ "$(jget "[d['pinned_bytes'] for d in s['datasets'] if d['name']=='ds'][0]")" -gt 0 ]
res_before=$(jget "sum(d['resident_hot_bytes']+d['resident_warm_bytes'] for d in s['datasets'] if d['name']=='ds')")
check "ds has resident chunks before removal" [ "$res_before" -gt 0 ]
# a client holds a handle of ds across the removal
cat >"$T/holder.py" <<'PY'
import os, socket, struct, sys, time
sock, t = sys.argv[1], sys.argv[2]
def frame(op, payload, rid):
    return struct.pack("<HBBIII", 0x4354, 2, op, len(payload), rid, 0) + payload
def recv(s):
    b = b""
    while len(b) < 16:
        b += s.recv(16 - len(b))
    _, _, op, n, rid, aux = struct.unpack("<HBBIII", b)
    p = b""
    while len(p) < n:
        p += s.recv(n - len(p))
    return aux, p
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
path = b"ds/f5.bin"
s.sendall(frame(2, struct.pack("<I", len(path)) + path, 1))
aux, p = recv(s)
assert aux == 0, aux
h = struct.unpack_from("<Q", p)[0]
open(t + "/opened", "w").close()
while not os.path.exists(t + "/go"):
    time.sleep(0.02)
s.sendall(frame(3, struct.pack("<QI", h, 1), 2))
aux, p = recv(s)
n = struct.unpack_from("<I", p)[0] if aux else 0
open(t + "/holder.out", "w").write("%d %s\n" % (aux, p[4:4 + n].decode()))
PY
python3 "$T/holder.py" "$T/sock" "$T" &
hpid=$!
check "a client opened ds/f5.bin" until_ok test -f "$T/opened"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
touch "$T/go"
wait $hpid
check "the open handle gets ESTALE after the removal" grep -q "^116 dataset ds was removed from the daemon's config" "$T/holder.out"
check "report: ds removed" grep -qx "removed: dataset.ds (cached chunks dropped)" "$T/r.out"
check "status: ds gone" [ "$(jget "len([d for d in s['datasets'] if d['name']=='ds'])")" = 0 ]
"$TC" cat ds/f1.bin >/dev/null 2>"$T/r.err"
check "reading a removed dataset fails clearly" grep -q 'no dataset' "$T/r.err"
check "its plan ended with it" [ "$(jget "len(s.get('plans', []))")" = 0 ]
check "its chunks left the tiers' chunk counts" [ "$(jget "sum(t['chunks'] for t in s['tiers'])")" -le 3 ]
cp "$T/good.conf" "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "ds added back" grep -qx "added: dataset.ds" "$T/r.out"
check "ds serves again" until_ok "$TC" cat ds/f2.bin
"$TC" cat ds/f2.bin >"$T/out"
check "ds added back: exact bytes" cmp -s "$T/out" "$T/cold/f2.bin"
check "ds added back: its old pin went with the removal" [ "$(jget "[d['pinned_bytes'] for d in s['datasets'] if d['name']=='ds'][0]")" = 0 ]
"$TC" unpin ds/f4.bin >"$T/unpin.out" 2>&1
check "ds added back: nothing left to unpin" grep -q "nothing is pinned" "$T/unpin.out"
# a changed source setting replaces the dataset
sed -i -e 's/^chunk_size = 128K/chunk_size = 64K/' "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "chunk_size change replaces ds2, naming the key" \
	grep -qx "replaced: dataset.ds2 (chunk_size: 128K -> 64K; cached chunks dropped)" "$T/r.out"
check "ds2 after replace: exact bytes" until_ok bash -c "'$TC' cat ds2/g.bin | cmp -s - '$T/cold2/g.bin'"
check "ds2 after replace: new chunk size" [ "$(jget "[d['chunk_size'] for d in s['datasets'] if d['name']=='ds2'][0]")" = 65536 ]

# ---- every live key reaches what runs: a dataset's lifecycle keys and a
# [daemon] default the datasets inherit; what lifecycle uses is what the
# daemon reports for its run (tierctl lifecycle run --dry-run)
thr() { # thr NAME: "demote_after_s evict_after_s" the lifecycle uses for NAME
	"$TC" lifecycle run --dry-run --json |
		python3 -c "import json,sys; d=[d for d in json.load(sys.stdin)['datasets'] if d['name']=='$1'][0]; print(d['demote_after_s'], d['evict_after_s'])"
}
lc_would() { # lc_would AS_OF: chunks of ds a lifecycle run at AS_OF would demote or drop
	"$TC" lifecycle run --dry-run --dataset ds --as-of "$1" --json |
		python3 -c "import json,sys; r=json.load(sys.stdin)['result']; print(r['moved_chunks'] + r['dropped_chunks'])"
}
sed -i -e 's/^workers = 8/workers = 4/' "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "the file as it runs: no changes" [ "$(cat "$T/r.out")" = "no changes" ]
for i in 1 2 3; do "$TC" cat ds/f$i.bin >/dev/null; done
check "lifecycle before: ds never demotes or drops" [ "$(thr ds)" = "0 0" ]
check "lifecycle before: nothing to do for ds in 3h" [ "$(lc_would +3h)" = 0 ]

sed -i -e '/^revalidate_after = 1m/a demote_after = 1h' "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "demote_after: reported" grep -qx "applied: dataset.ds.demote_after = 1h (was off)" "$T/r.out"
check "demote_after: the only change" [ "$(wc -l <"$T/r.out")" = 1 ]
check "demote_after: config show" bash -c "'$TC' config show dataset ds | grep -qx 'demote_after = 1h'"
check "demote_after: lifecycle uses it" [ "$(thr ds)" = "3600 0" ]
check "demote_after: ds would demote in 3h" [ "$(lc_would +3h)" -gt 0 ]
check "demote_after: not in 30m" [ "$(lc_would +30m)" = 0 ]

sed -i -e '/^demote_after = 1h/a evict_after = 2h' "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "evict_after: reported" grep -qx "applied: dataset.ds.evict_after = 2h (was off)" "$T/r.out"
check "evict_after: config show" bash -c "'$TC' config show dataset ds | grep -qx 'evict_after = 2h'"
check "evict_after: lifecycle uses it" [ "$(thr ds)" = "3600 7200" ]

sed -i -e '/^workers = 4/a demote_after = 4h' "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "[daemon] default: reported" \
	grep -qx "applied: daemon.demote_after = 4h (was off, in datasets that do not set their own)" "$T/r.out"
check "[daemon] default: reaches ds2, which inherits it" grep -qx "applied: dataset.ds2.demote_after = 4h (was off)" "$T/r.out"
check "[daemon] default: not ds, which sets its own" bash -c "! grep -q 'dataset.ds.demote_after' '$T/r.out'"
check "[daemon] default: config show of ds2" bash -c "'$TC' config show dataset ds2 | grep -qx 'demote_after = 4h'"
check "[daemon] default: lifecycle of ds2 uses it" [ "$(thr ds2)" = "14400 0" ]
check "[daemon] default: ds keeps its own" [ "$(thr ds)" = "3600 7200" ]

# restart keys: reported, the running value stays and is what config show prints
sed -i -e '/^workers = 4/a socket_mode = 0666' -e "s|^path = $T/hot\$|path = $T/hot2|" "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "socket_mode needs a restart" grep -qx "needs a restart: daemon.socket_mode (running 0660, file 0666)" "$T/r.out"
check "hot.path needs a restart" grep -qx "needs a restart: hot.path (running \"$T/hot\", file \"$T/hot2\")" "$T/r.out"
check "restart keys: nothing else changed" [ "$(wc -l <"$T/r.out")" = 2 ]
show >"$T/show4"
check "show: socket_mode keeps the running value" grep -qx "socket_mode = 0660  # default" "$T/show4"
check "show: hot.path keeps the running value" grep -qx "path = $T/hot" "$T/show4"
check "the socket file keeps its mode" [ "$(stat -c %a "$T/sock")" = 660 ]
sed -i -e '/^socket_mode = 0666/d' -e "s|^path = $T/hot2\$|path = $T/hot|" "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "restart keys back as they run: no changes" [ "$(cat "$T/r.out")" = "no changes" ]

# a source key replaces the dataset; the live keys changed with it are named
sed -i -e 's/^chunk_size = 64K/chunk_size = 128K/' -e 's/^policy = arc/policy = lru/' "$T/tc.conf"
"$TC" reload >"$T/r.out" 2>"$T/r.err"
check "source change: ds2 replaced, every changed key named" \
	grep -qx "replaced: dataset.ds2 (chunk_size: 64K -> 128K, policy: arc -> lru; cached chunks dropped)" "$T/r.out"
check "source change: the new ds2 has the new settings" \
	[ "$(jget "[(d['chunk_size'], d['policy']) for d in s['datasets'] if d['name']=='ds2'][0]")" = "(131072, 'lru')" ]
check "source change: the new ds2 keeps the inherited default" [ "$(thr ds2)" = "14400 0" ]
check "source change: ds2 serves its bytes" until_ok bash -c "'$TC' cat ds2/g.bin | cmp -s - '$T/cold2/g.bin'"

# ---- SIGHUP: same path; a bad file is logged and changes nothing
sed -i -e 's/^log_level = .*/log_level = info/' "$T/tc.conf"
kill -HUP "$TC_PID"
check "SIGHUP applies the file" until_ok bash -c "'$TC' config show | grep -qx 'log_level = info  # default'"
echo "[tier cold]" >>"$T/tc.conf"
kill -HUP "$TC_PID"
check "SIGHUP with a bad file: logged" until_ok grep -q 'op=reload err=.*unknown tier' "$T/daemon.log"
check "SIGHUP with a bad file: logged as rejected" grep -q 'op=reload result=rejected' "$T/daemon.log"
check "SIGHUP with a bad file: still serving" bash -c "'$TC' cat ds/f3.bin | cmp -s - '$T/cold/f3.bin'"

# ---- restart: the removed-and-re-added dataset and ds2 come back consistent
tc_stop || fail "clean stop after reloads"
sed -i '$d' "$T/tc.conf"
tc_start || exit 1
check "after restart: ds exact bytes" bash -c "'$TC' cat ds/f4.bin | cmp -s - '$T/cold/f4.bin'"
check "after restart: ds2 exact bytes" bash -c "'$TC' cat ds2/g.bin | cmp -s - '$T/cold2/g.bin'"
finish
