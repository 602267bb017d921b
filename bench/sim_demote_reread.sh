#!/bin/bash
# Hit ratios with placement demote=1 against demote=flat and demote=reread
# (issue #17), by tiercache-sim on generated traces: hot:warm = 1:2 as in
# the daemon's configs (hot smaller than warm), total cache 30/45/60 % of
# the data set, 100 KB-ish objects. Prints one row per (trace, cache,
# policy): hit % and demotions (warm writes by demotion) for the three
# settings, and the hits hot / warm served (% of reads) for 1 and flat.
#   bash bench/sim_demote_reread.sh build/default [OBJECTS] [EPOCHS]
set -u
SIM=${1:-build/default}/bin/tiercache-sim
N=${2:-20000}
E=${3:-5}
[ -x "$SIM" ] || { echo "no $SIM: build first (make -j2 all)" >&2; exit 1; }
run() { # run TRACE-ARGS... -- HOT% WARM% POLICY DEMOTE: prints hit% demoted hot/warm%
	local args=() h w p d
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	h=$2 w=$3 p=$4 d=$5
	"$SIM" "${args[@]}" --objects "$N" --epoch-count "$E" --size uniform:61440:143360 \
		--hot "$h%" --warm "$w%" --policy "$p" --placement "demote=$d" --no-opt --json |
		python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; a=r["accesses"] or 1; print("%.2f %d %.1f/%.1f" % (100*r["hit_ratio"], r["demoted"], 100*r["hot_hits"]/a, 100*r["warm_hits"]/a))'
}
printf '%-22s %6s %-4s %8s %8s %8s %9s %9s %9s %11s %11s\n' trace cache policy \
	"hit%(1)" "hit%(fl)" "hit%(rr)" "dem(1)" "dem(fl)" "dem(rr)" "h/w%(1)" "h/w%(fl)"
for tr in "shuffle" "zipf --alpha 0.9" "zipf --alpha 0.7" "ddp --ranks 4 --rank 0" "multijob --jobs 2"; do
	for c in 30 45 60; do
		h=$((c / 3)) w=$((c - c / 3))
		for p in lru arc; do
			read -r h1 d1 t1 < <(run --gen $tr -- $h $w $p 1)
			read -r hf df tf < <(run --gen $tr -- $h $w $p flat)
			read -r h2 d2 t2 < <(run --gen $tr -- $h $w $p reread)
			printf '%-22s %5s%% %-4s %8s %8s %8s %9s %9s %9s %11s %11s\n' "$tr" "$c" "$p" \
				"$h1" "$hf" "$h2" "$d1" "$df" "$d2" "$t1" "$tf"
		done
	done
done
