# Open-ahead over RADOS under lru's default placement, demote=flat (issue
# 17, the mount's epoch in which the listing is due for a stat): an open
# whose version is past revalidate_after starts its chunk's read beside
# the stat (prefetch_open_ahead). That read stands for the open's own miss
# and must be placed as the miss would be: with flat, on hot while hot has
# room, then where the one LRU's next victim is (warm), so that each file
# is written once. Before, it always landed on hot and every one past
# hot's room made the mover copy hot's victim to warm (one demotion per
# miss: 3,681-3,791 in the bench's epoch 3 against 484-717 in the others).
# (a) one pass of 160 small files (16 MiB; hot 4M + warm 12M),
#     revalidate_after = 0s (every open checks the source): the opens ran
#     ahead, fills landed on both tiers, (almost) nothing was demoted,
#     nothing served unkept while a tier had room, every byte equals the
#     pool's;
# (b) the newest files of the pass again: hits from both tiers;
# (c) an object rewritten in the pool: the next read sees the new version
#     (what the revalidation is for), whether it was resident (a stat) or
#     not (its open-ahead read fails ESTALE, then the stat finds the new
#     version).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
TP=$TC_TESTS/tcplan
ctr() { tc_json "s['counters']['$1']"; }
pf() { tc_json "s['prefetch']['$1']"; }
pol() { "$TC_BIN/tierctl" policy show rp --json | python3 -c "import json,sys; p=json.load(sys.stdin)['policies'][0]; print($1)"; }
settled() { [ "$(tc_json "s['daemon']['moves_inflight'] + s['daemon']['fills_inflight']")" = 0 ]; }
read_list() { "$TP" read rp "$T/src" <"$1" >"$T/read.out" 2>&1 || { cat "$T/read.out"; return 1; }; }

tc_config 4M 12M 1M
P="${RD_PREFIX}of/"
rd_dataset rp "$P" plain 1M
tc_flat_files "$T/src"

tc_start || exit 1
check "import uploads the 160 files" [ "$(rd_import "$T/src" rp)" = "160 0 0" ]
check "lru's default placement, demote=flat, is in force" [ "$(pol "p['demote'], p['demote_flat']")" = "True True" ]

# (a) one pass, every open due for a stat
oa0=$(pf open_ahead) d0=$(ctr demotions) ev0=$(ctr evictions) rr0=$(ctr revalidations_by_read)
check "(a) one pass over a/: every byte equals the pool's" read_list "$T/pass"
wait_for 30 settled
oa=$(($(pf open_ahead) - oa0)) d=$(($(ctr demotions) - d0)) ev=$(($(ctr evictions) - ev0))
rr=$(($(ctr revalidations_by_read) - rr0))
fh=$(pol "p['fills_hot']") fw=$(pol "p['fills_warm']") lost=$(ctr served_unkept_with_room)
echo "(a) open_ahead $oa revalidations_by_read $rr evictions $ev demotions $d fills hot $fh warm $fw served_unkept_with_room $lost"
check "(a) the opens' reads ran beside their stats (open_ahead $oa >= 100)" [ "$oa" -ge 100 ]
check "(a) their revalidations were answered by those reads, no stat of their own ($rr >= 100)" \
	[ "$rr" -ge 100 ]
check "(a) misses evicted (evictions $ev > 25)" [ "$ev" -gt 25 ]
check "(a) the open-ahead fills followed the placement: both tiers (hot $fh, warm $fw)" \
	[ "$fh" -gt 10 -a "$fw" -gt 40 ]
check "(a) (almost) nothing demoted: each file written once (demotions $d <= 4)" [ "$d" -le 4 ]
check "(a) nothing served unkept while a tier had room" [ "$lost" = 0 ]

# (b) the newest 40 of the pass, newest first
hh0=$(ctr hits_hot) hw0=$(ctr hits_warm)
check "(b) the newest files again: every byte equals the pool's" read_list "$T/newest"
hh=$(($(ctr hits_hot) - hh0)) hw=$(($(ctr hits_warm) - hw0))
echo "(b) hits hot $hh warm $hw"
check "(b) hits from hot ($hh > 0) and from warm ($hw > 0)" [ "$hh" -gt 0 -a "$hw" -gt 0 ]
check "(b) nearly every one a hit ($hh + $hw >= 36)" [ "$((hh + hw))" -ge 36 ]

# (c) a resident file rewritten in the pool: read at its new version
f=$(head -n 1 "$T/newest")
head -c 77777 /dev/urandom >"$T/src/$f"
rd_rados put "${P}$f" "$T/src/$f"
echo "$f" >"$T/one"
check "(c) $f rewritten in the pool: read at its new version, bytes equal" read_list "$T/one"
check "(c) tierctl cat gives the new bytes too" \
	bash -c "'$TC_BIN/tierctl' cat 'rp/$f' | cmp - '$T/src/$f'"
# ... and one evicted long ago (the first of the pass): its open's read
# ahead asserts the old version and fails (ESTALE); the revalidation then
# asks the stat, which finds the new version
g=$(head -n 1 "$T/pass")
head -c 88888 /dev/urandom >"$T/src/$g"
rd_rados put "${P}$g" "$T/src/$g"
echo "$g" >"$T/two"
s0=$(ctr stale_reads)
check "(c) $g (not resident) rewritten in the pool: read at its new version, bytes equal" read_list "$T/two"
check "(c) ... its read ahead of the old version failed as stale ($(($(ctr stale_reads) - s0)) >= 1)" \
	[ "$(($(ctr stale_reads) - s0))" -ge 1 ]
check "no checksum errors" [ "$(ctr checksum_errors)" = 0 ]
finish
