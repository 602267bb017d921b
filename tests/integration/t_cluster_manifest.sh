# One listing per cluster: three daemons with [cluster] on one counted cold
# directory (tccountfs counts directory listings). The first node lists the
# source and publishes the manifest through Redis; the others load it and
# list nothing; every node serves every file with the source's bytes and
# lists the same tree. A corrupted piece in Redis: a node that is not the
# manifest's home waits for a good generation, then lists itself (counted,
# logged). A refresh on any node after a file was added lists once and
# publishes a new generation that the others pick up, including a node that
# had listed itself. Redis down at start: every node lists the source itself
# and serves correctly; when Redis returns, a refresh on one node publishes
# and the others take it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_cluster.sh"
N=3
SRC=$T/src
for a in a b c; do
	for b in 1 2 3 4; do
		mkdir -p "$SRC/$a/d$b/e"
		for i in $(seq 1 6); do
			head -c $((100 + (RANDOM % 3000))) /dev/urandom >"$SRC/$a/d$b/f$i.bin"
		done
		head -c 777 /dev/urandom >"$SRC/$a/d$b/e/deep.bin"
	done
done

tc_redis_start || exit 1
tc_cluster_key
tc_countfs_start "$SRC" || exit 1

# mf I EXPR: EXPR over node I's cluster_manifests record of ds (as m)
mf() {
	tc_node_json "$1" "[m for m in s['cluster_manifests'] if m['dataset'] == 'ds'][0]$2" 2>/dev/null
}
# loaded I: node I has a manifest (not loading) and the dataset is available
loaded() {
	local o
	o=$(mf "$1" "['origin']")
	[ -n "$o" ] && [ "$o" != loading ] && [ "$o" != none ] &&
		[ "$(tc_node_json "$1" "[d for d in s['datasets'] if d['name'] == 'ds'][0]['available']")" = True ]
}
cl() { tc_node_json "$1" "s['cluster']['$2']"; }

# tree I: every file node I lists (tierctl ls, recursively), sorted
tree() {
	TIERCACHE_SOCKET=$T/n$1/sock python3 - "$TC_BIN/tierctl" <<'EOF'
import subprocess, sys
def walk(d):
    out = subprocess.run([sys.argv[1], "ls", "-l", "ds" + ("/" + d if d else "")], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    for line in out:
        kind, name = line[0], line.split()[-1]
        if kind == "d":
            walk((d + "/" if d else "") + name)
        else:
            print((d + "/" if d else "") + name)
walk("")
EOF
}
src_tree() { (cd "$SRC" && find . -type f | sed 's|^\./||' | sort); }

# same_tree I: node I lists exactly the source's files, and reads each one
# with the source's bytes
same_tree() {
	local i=$1 f bad=0
	[ "$(tree "$i" | sort)" = "$(src_tree)" ] || { echo "node $i lists another tree than the source"; diff <(tree "$i" | sort) <(src_tree) | head; return 1; }
	for f in $(src_tree); do
		TIERCACHE_SOCKET=$T/n$i/sock "$TC_BIN/tierctl" cat "ds/$f" | cmp -s - "$SRC/$f" || {
			echo "node $i: ds/$f differs from the source"
			bad=1
		}
	done
	return $bad
}

for i in $(seq 1 $N); do tc_node_config "$i" hot=64M warm=none chunk=1M; done

# ---- node 1 alone lists and publishes ----
tc_node_start 1 || exit 1
check "node 1 loads the manifest" wait_for 30 "loaded 1"
check "node 1 listed it as the manifest's home" [ "$(mf 1 "['origin']")" = listed ]
check "node 1 published a generation" wait_for 20 "[ \"\$(cl 1 manifests_published)\" = 1 ]"
root1=$(tc_cold_readdirs_root)
dirs1=$(tc_cold_readdirs)
echo "one listing: $dirs1 directory listings ($root1 of the root)"
check "node 1 listed the source once" [ "$root1" = 1 ]
check "the meta is in Redis" [ "$(tc_redis_cli HGET 'tc:{tctest}:mf:ds' gen)" = 1 ]

# ---- the others load it from Redis and list nothing ----
tc_node_start 2 || exit 1
tc_node_start 3 || exit 1
for i in 2 3; do
	check "node $i loads the manifest" wait_for 30 "loaded $i"
	check "node $i loaded generation 1 from Redis" [ "$(mf $i "['origin']") $(mf $i "['generation']")" = "redis 1" ]
	check "node $i counts it (manifests_loaded 1)" [ "$(cl $i manifests_loaded)" = 1 ]
done
check "no listing of the source beyond node 1's ($dirs1)" [ "$(tc_cold_readdirs)" = "$dirs1" ]
for i in $(seq 1 $N); do
	check "node $i lists the source's tree and reads its bytes" same_tree "$i"
done
check "still no other listing after every node read every file" [ "$(tc_cold_readdirs)" = "$dirs1" ]

# the manifest's home now (over 3 members), and one node that is not
home=
other=()
for i in $(seq 1 $N); do
	if [ "$(mf "$i" "['home']")" = True ]; then home=$home$i; else other+=("$i"); fi
done
check "exactly one node is the manifest's home (${home:-none})" [ "${#home}" = 1 ]

# ---- a corrupted piece: a node that is not home lists itself ----
victim=${other[0]}
tc_node_stop "$victim"
check "a piece of generation 1 is changed in Redis" \
	[ "$(tc_redis_cli SETRANGE 'tc:{tctest}:mf:ds:1:0' 20 XXXXXXXXXXXX)" -gt 0 ]
root_before=$(tc_cold_readdirs_root)
tc_node_start "$victim" || exit 1
check "node $victim loads a manifest despite the bad piece" wait_for 30 "loaded $victim"
check "node $victim listed the source itself" [ "$(mf "$victim" "['origin']")" = listed_fallback ]
check "node $victim's reason names the bad generation" \
	bash -c "[[ \"\$1\" == *'generation 1 bad'* ]]" _ "$(mf "$victim" "['reason']")"
check "node $victim counts the fallback" [ "$(cl "$victim" manifest_fallbacks)" = 1 ]
check "node $victim logged the bad generation" grep -q 'op=manifest_share gen=1 err=' "$T/n$victim/daemon.log"
check "one more listing of the root (node $victim's)" [ "$(tc_cold_readdirs_root)" = $((root_before + 1)) ]
check "node $victim lists the source's tree and reads its bytes" same_tree "$victim"

# ---- a refresh on any node lists once and publishes; the others take it ----
# (on node ${other[1]}, neither the home nor the node that listed itself)
asker=${other[1]}
echo added >"$SRC/b/d2/e/added.txt"
root_before=$(tc_cold_readdirs_root)
check "refresh on node $asker (not the home)" env TIERCACHE_SOCKET="$T/n$asker/sock" "$TC_BIN/tierctl" refresh ds
check "node $asker published generation 2" wait_for 20 "[ \"\$(tc_redis_cli HGET 'tc:{tctest}:mf:ds' gen)\" = 2 ]"
check "the refresh listed the root once" [ "$(tc_cold_readdirs_root)" = $((root_before + 1)) ]
check "node $asker sees the added file" \
	bash -c "TIERCACHE_SOCKET=$T/n$asker/sock '$TC_BIN/tierctl' cat ds/b/d2/e/added.txt | cmp -s - '$SRC/b/d2/e/added.txt'"
check "the home (node $home) picks generation 2 up on its heartbeat" wait_for 20 "[ \"\$(mf $home \"['generation']\")\" = 2 ]"
check "node $home sees the added file" \
	bash -c "TIERCACHE_SOCKET=$T/n$home/sock '$TC_BIN/tierctl' cat ds/b/d2/e/added.txt | cmp -s - '$SRC/b/d2/e/added.txt'"
# node $victim listed itself while generation 1 was current: it follows the
# generations after that one, so it takes generation 2 too
check "node $victim (listed itself) picks generation 2 up" \
	wait_for 20 "[ \"\$(mf $victim \"['origin']\") \$(mf $victim \"['generation']\")\" = 'redis 2' ]"
check "node $victim sees the added file" \
	bash -c "TIERCACHE_SOCKET=$T/n$victim/sock '$TC_BIN/tierctl' cat ds/b/d2/e/added.txt | cmp -s - '$SRC/b/d2/e/added.txt'"
check "no other listing of the root" [ "$(tc_cold_readdirs_root)" = $((root_before + 1)) ]
# a refresh there lists again and publishes generation 3, which the others take
check "node $victim refreshes" env TIERCACHE_SOCKET="$T/n$victim/sock" "$TC_BIN/tierctl" refresh ds
check "node $victim published generation 3 (one more listing)" \
	[ "$(mf "$victim" "['origin']") $(mf "$victim" "['generation']") $(tc_cold_readdirs_root)" = "listed 3 $((root_before + 2))" ]
for i in $home $asker; do
	check "node $i picks generation 3 up" wait_for 20 "[ \"\$(mf $i \"['generation']\")\" = 3 ]"
done
for i in $(seq 1 $N); do
	check "node $i lists the new tree and reads its bytes" same_tree "$i"
done

# ---- Redis down at start: each node lists itself ----
for i in $(seq 1 $N); do
	check "node $i stops cleanly" tc_node_stop "$i"
done
tc_redis_kill
echo again >"$SRC/c/d4/late.txt"
root_before=$(tc_cold_readdirs_root)
for i in $(seq 1 $N); do tc_node_start "$i" || exit 1; done
for i in $(seq 1 $N); do
	check "node $i loads without Redis" wait_for 30 "loaded $i"
	check "node $i listed the source itself: Redis unreachable" \
		[ "$(mf "$i" "['origin']") $(mf "$i" "['reason']")" = "listed_fallback Redis unreachable" ]
	check "node $i lists the source's tree and reads its bytes" same_tree "$i"
done
check "each node listed the root once" [ "$(tc_cold_readdirs_root)" = $((root_before + N)) ]
# Redis comes back (empty): a refresh on node 1 publishes, and the nodes
# that listed themselves take that generation instead of keeping theirs
tc_redis_start >/dev/null || exit 1
for i in $(seq 1 $N); do
	check "node $i sees Redis again" wait_for 30 "[ \"\$(tc_node_json $i \"s['cluster']['redis']\")\" = up ]"
done
echo fresh >"$SRC/c/d4/fresh.txt"
check "refresh on node 1 after Redis returned" env TIERCACHE_SOCKET="$T/n1/sock" "$TC_BIN/tierctl" refresh ds
g=$(tc_redis_cli HGET 'tc:{tctest}:mf:ds' gen)
check "node 1 published a generation ($g)" [ -n "$g" ]
for i in $(seq 2 $N); do
	check "node $i (listed itself) takes generation $g" \
		wait_for 20 "[ \"\$(mf $i \"['origin']\") \$(mf $i \"['generation']\")\" = 'redis $g' ]"
	check "node $i lists the new tree and reads its bytes" same_tree "$i"
done
tcc_finish
