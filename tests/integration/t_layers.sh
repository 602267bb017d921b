# The daemon's layers (docs/architecture.md) hold: every quoted include in
# cached/ names a header of the file's own folder or of a folder below it,
# no include reaches out with a path ("../x.h", "cache/x.h"), only the root
# includes its header (daemon.h), policy/ includes only itself, client/
# only include/, common/ and itself. The Makefile's per-folder include paths
# make such an include fail to compile; this reads the sources themselves,
# so that neither a quoted relative path nor a Makefile edit can get round
# the rule. Tier counters are written only by store/tier.h. It also proves the compiler enforces it: a forbidden include
# compiled with the folder's real flags must fail.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1

# top to bottom; a folder may include its own headers and those after it
order=(api admin cluster plan cache store cold conf net util)
below() { # below FOLDER: the folders FOLDER may include from (itself first)
	case "$1" in
	util) echo "util" ;;
	conf) echo "conf util" ;;
	net) echo "net conf util" ;;
	cold) echo "cold conf util" ;;
	store) echo "store cold conf util" ;;
	cache) echo "cache store cold conf util" ;;
	plan) echo "plan cache store cold conf util" ;;
	cluster) echo "cluster plan cache store cold conf net util" ;;
	admin) echo "admin cluster plan cache store cold conf net util" ;;
	api) echo "api admin cluster plan cache store cold conf net util" ;;
	esac
}
# where each header lives (a name must be unique across the daemon)
declare -A home
dups=
while read -r h; do
	n=$(basename "$h")
	[ -n "${home[$n]:-}" ] && dups="$dups $n"
	home[$n]=$(dirname "$h")
done < <(find cached -name '*.h' | sort)
check "every daemon header name is unique across folders${dups:+ (twice:$dups)}" [ -z "$dups" ]

bad=
for f in $(find cached -mindepth 2 -name '*.[ch]' | sort); do
	dir=$(dirname "$f")
	folder=${dir#cached/}
	allowed=$(below "$folder")
	if [ -z "$allowed" ]; then
		bad="$bad\n$f: folder $folder is not a known layer"
		continue
	fi
	while read -r inc; do
		[ -f "include/$inc" ] && continue # the public headers (tiercache/protocol.h)
		case "$inc" in
		*/*) bad="$bad\n$f: includes \"$inc\" by path"; continue ;;
		esac
		[ -f "common/$inc" ] || [ -f "policy/$inc" ] && continue
		h=${home[$inc]:-}
		if [ -z "$h" ]; then
			bad="$bad\n$f: \"$inc\" is no header of the daemon, common/, policy/ or include/"
			continue
		fi
		if [ "$h" = cached ]; then
			bad="$bad\n$f: includes the root's header $inc"
			continue
		fi
		ok_here=
		for a in $allowed; do [ "$h" = "cached/$a" ] && ok_here=1; done
		[ -n "$ok_here" ] || bad="$bad\n$f: includes $inc from ${h#cached/} (a layer above ${folder}, or beside it)"
	done < <(sed -n 's/^#include "\(.*\)".*/\1/p' "$f")
done
[ -z "$bad" ] || printf 'layer violations:%b\n' "$bad"
check "no file under cached/ includes upwards, by path, or the root's header" [ -z "$bad" ]

pol=$(grep -hn '^#include "' policy/*.c policy/*.h | sed -n 's/.*#include "\(.*\)".*/\1/p' | sort -u |
	while read -r inc; do [ -f "policy/$inc" ] || echo "$inc"; done)
check "policy/ includes only itself${pol:+ (not: $pol)}" [ -z "$pol" ]
cli=$(find client -name '*.[ch]' -exec sed -n 's/^#include "\(.*\)".*/\1/p' {} + | sort -u |
	while read -r inc; do
		[ -f "include/$inc" ] || [ -f "common/$inc" ] || [ -n "$(find client -name "$(basename "$inc")")" ] || echo "$inc"
	done)
check "client/ includes only include/, common/ and itself${cli:+ (not: $cli)}" [ -z "$cli" ]

# A tier's accounting changes only through store/tier.h's calls (one per
# event), so that used, reserved and held bytes cannot drift apart.
acct=$(grep -nE '(tiers\[[^]]*\]\.|(\b|->)(t|tr|hot|warm|tier)->)(used|reserved|held_dead|chunks|read_bytes|capacity|high_bytes|low_bytes)[[:space:]]*([-+]?=[^=]|\+\+|--)' \
	$(find cached -name '*.c' ! -path cached/store/tier.c) || true)
[ -z "$acct" ] || printf 'tier counters written outside tier.h:\n%s\n' "$acct"
check "tier accounting changes only through store/tier.h" [ -z "$acct" ]

# The compiler refuses an upward include: compile a file in cache/ that
# includes plan/'s header with cache/'s own flags (printed by make).
flags=$(make -s -n -B O="$O" "$O/obj/cached/cache/chunk.o" 2>/dev/null | grep -- ' -c ' | head -1 |
	sed -e 's/ -c .*//' -e 's/-MMD -MP//')
probe=$T/layer_probe.c # outside the tree: a quoted include finds nothing beside it
printf '#include "plans.h"\nint zz_layer_probe(void);\nint zz_layer_probe(void) { return 0; }\n' >"$probe"
if [ -n "$flags" ] && ! $flags -c "$probe" -o "$T/probe.o" 2>"$T/probe.err"; then
	ok "an include of plan/ from cache/ does not compile"
	check "... because the header is not on cache/'s include path" grep -q 'plans.h' "$T/probe.err"
else
	fail "an include of plan/ from cache/ compiled (flags: ${flags:-none found})"
fi
finish
