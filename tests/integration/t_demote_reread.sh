#!/bin/bash
# Placement demote=reread (issue #17, "demotion copies only what is worth
# keeping"): with `policy = lru demote=reread`, a hot victim goes to warm
# only if it was read again since it was filled or moved in.
# (a) a one-pass read of a set larger than hot (every miss evicts): no
#     demotion at all, hot victims are dropped, every byte equals the source;
# (b) a subset read twice, then pushed out of hot by other reads: it is
#     demoted, read again from warm, every byte equals the source;
# (c) `tierctl policy set ds lru demote=1`: the same one-pass read now
#     demotes (what reread saves); back to demote=reread through tierctl;
#     a bad value is refused with the accepted values named;
# (d) tiercache-sim takes it as --placement demote=reread.
. "$(dirname "$0")/lib.sh"

KiB=1024
TCTL="$TC_BIN/tierctl"
ctr() { tc_json "s['counters']['$1']"; }
pol() { "$TCTL" policy show ds --json | python3 -c "import json,sys; p=json.load(sys.stdin)['policies'][0]; print($1)"; }
settled() { [ "$(tc_json "s['daemon']['moves_inflight'] + s['daemon']['fills_inflight']")" = 0 ]; }
# read the paths in file $1, each whole once, every byte compared
read_list() { "$TC_TESTS/tcplan" read ds "$T/cold" <"$1" >"$T/read.out" 2>&1 || { cat "$T/read.out"; return 1; }; }

# 240 files of 60-140 KiB (about 24 MiB), one chunk each; hot 6M, warm 32M
mkdir -p "$T/cold/a" "$T/cold/b"
python3 - "$T/cold" <<'PY'
import os, random, sys
r = random.Random(17)
for d, n in (("a", 160), ("b", 80)):
    for i in range(n):
        with open(os.path.join(sys.argv[1], d, "f%03d.bin" % i), "wb") as f:
            f.write(os.urandom(r.randint(60, 140) * 1024))
PY
(cd "$T/cold" && find a -type f | sort) | python3 -c \
	"import random,sys; l=sys.stdin.read().split(); random.Random(1).shuffle(l); print('\n'.join(l))" >"$T/pass_a"
(cd "$T/cold" && find b -type f | sort) >"$T/pass_b"
head -n 20 "$T/pass_a" >"$T/subset"

tc_config 6M 32M 1M "policy = lru demote=reread"
tc_start || exit 1
check "config: demote=reread is in force" [ "$(pol "p['demote'], p['demote_reread']")" = "True True" ]

# (a) one pass, every miss past the first few MiB evicts
check "(a) one pass over a/: every byte equals the source" read_list "$T/pass_a"
wait_for 30 settled
ev=$(ctr evictions) d=$(ctr demotions) un=$(pol "p['dropped_unread']")
echo "(a) evictions $ev demotions $d dropped_unread $un"
check "(a) hot evicted (evictions $ev > 50)" [ "$ev" -gt 50 ]
check "(a) nothing read once was demoted (demotions $d)" [ "$d" = 0 ]
check "(a) placement dropped the unread victims (dropped_unread $un > 50)" [ "$un" -gt 50 ]
check "(a) tierctl policy show counts them" bash -c "'$TCTL' policy show ds | grep -q '($un not read again)'"
check "(a) warm holds nothing" [ "$(tc_json "s['tiers'][1]['chunks']")" = 0 ]

# (b) the subset twice (the second read is a hit for those still in hot,
# a miss refilling hot for the others; a third makes every one a hit),
# then b/ pushes it all out of hot
check "(b) the subset, first read" read_list "$T/subset"
check "(b) the subset, second read" read_list "$T/subset"
check "(b) the subset, third read" read_list "$T/subset"
check "(b) one pass over b/: every byte equals the source" read_list "$T/pass_b"
wait_for 30 settled
d=$(ctr demotions)
echo "(b) demotions $d"
check "(b) the re-read subset was demoted (demotions $d >= 15)" [ "$d" -ge 15 ]
check "(b) ... and only what was re-read (demotions $d <= 20)" [ "$d" -le 20 ]
hw0=$(ctr hits_warm)
check "(b) the subset again: every byte equals the source" read_list "$T/subset"
hw=$(($(ctr hits_warm) - hw0))
check "(b) ... served from warm ($hw warm hits >= 15)" [ "$hw" -ge 15 ]
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]

# (c) demote=1 through tierctl: the same kind of one-pass read demotes
check "(c) tierctl policy set ds lru demote=1" bash -c "'$TCTL' policy set ds lru demote=1 >/dev/null"
check "(c) demote=1 in force" [ "$(pol "p['demote'], p['demote_reread'], p['demote_flat']")" = "True False False" ]
d0=$(ctr demotions)
check "(c) one pass over a/ again: every byte equals the source" read_list "$T/pass_a"
wait_for 30 settled
d=$(($(ctr demotions) - d0))
# how many depends on the load: fills that find hot full while the mover's
# copies trail make their room by dropping (147 on a quiet machine, 50 in
# a loaded CI run); with demote=reread the same pass demotes none
check "(c) with demote=1 the one-pass read demotes ($d > 10)" [ "$d" -gt 10 ]
check "(c) tierctl policy set ds lru demote=reread" bash -c "'$TCTL' policy set ds lru demote=reread >/dev/null"
check "(c) tierctl policy show says demote=reread" bash -c "'$TCTL' policy show ds | grep -q 'placement  demote=reread promote=1'"
check "(c) demote=reread in force again" [ "$(pol "p['demote_reread'], p['placement_tunables']")" = "True demote=reread" ]
"$TCTL" policy set ds lru demote=sometimes >"$T/out" 2>"$T/err"
rc=$?
check "(c) a bad value is refused, naming the accepted ones (rc $rc: $(cat "$T/err"))" \
	bash -c "[ $rc = 1 ] && grep -qF 'placement: demote: \"sometimes\" is not 0, 1, reread or flat' '$T/err'"
check "(c) ... and the old setting stays" [ "$(pol "p['demote_reread']")" = "True" ]
check "graceful stop" tc_stop

# (d) tiercache-sim runs the same placement code: --placement demote=reread
# on a zipf trace demotes far less than demote=1 (only what hot saw read
# again), but not nothing
sim() { "$TC_BIN/tiercache-sim" --gen zipf --objects 2000 --epoch-count 3 --hot 10% --warm 20% \
	--policy lru --no-opt --json "$@" | python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["demoted"], r["hits"])'; }
read -r d1 h1 < <(sim --placement demote=1)
read -r dr hr < <(sim --placement demote=reread)
echo "(d) sim zipf: demote=1 demoted $d1 hits $h1; reread demoted $dr hits $hr"
check "(d) sim: reread demotes less than half of demote=1 ($dr vs $d1)" [ "$((dr * 2))" -lt "$d1" ]
check "(d) sim: reread still demotes what is read again ($dr > 0)" [ "$dr" -gt 0 ]
"$TC_BIN/tiercache-sim" --gen zipf --objects 100 --hot 10% --policy lru --placement demote=often >"$T/out" 2>"$T/err"
rc=$?
check "(d) sim: a bad value is refused (rc $rc: $(cat "$T/err"))" \
	bash -c "[ $rc != 0 ] && grep -qF 'placement: demote: \"often\" is not 0, 1, reread or flat' '$T/err'"
finish
