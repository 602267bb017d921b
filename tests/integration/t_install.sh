# make install into a staging root, then build a small program against the
# installed headers and library with pkg-config (shared and static), run it
# against a live daemon, and compare what it reads with the source.
. "$(dirname "$0")/lib.sh"
san=$(basename "$O")
[ "$san" = default ] && san=
ROOT=$T/root
check "make install into a staging root" make -s -C "${TIERCACHE_SRCDIR:-.}" install SANITIZER="$san" DESTDIR="$ROOT" PREFIX=/usr/local >"$T/install.log" 2>&1
for f in bin/tiercached bin/tierctl lib/libtiercache.so.0 lib/libtiercache.a include/tiercache.h \
	include/tiercache/protocol.h lib/pkgconfig/tiercache.pc; do
	check "installed $f" [ -e "$ROOT/usr/local/$f" ]
done
check "default config installed" [ -f "$ROOT/etc/tiercache/tiercache.conf" ]
for u in tiercached.service tiercache-lifecycle.service tiercache-lifecycle.timer; do
	check "installed unit $u" [ -f "$ROOT/usr/local/lib/systemd/system/$u" ]
done
check "units carry the install prefix" grep -qx "ExecStart=/usr/local/bin/tiercached -c /etc/tiercache/tiercache.conf" \
	"$ROOT/usr/local/lib/systemd/system/tiercached.service"
check "no placeholder left in the units" bash -c "! grep -q @ '$ROOT/usr/local/lib/systemd/system/'*"
check "docs installed" [ -f "$ROOT/usr/local/share/doc/tiercache/operations.md" ]
echo "# the admin's edit" >>"$ROOT/etc/tiercache/tiercache.conf"
check "make install again" make -s -C "${TIERCACHE_SRCDIR:-.}" install SANITIZER="$san" DESTDIR="$ROOT" PREFIX=/usr/local >>"$T/install.log" 2>&1
check "an existing config is not overwritten" grep -qx "# the admin's edit" "$ROOT/etc/tiercache/tiercache.conf"
ROOT2=$T/root2
check "make install PREFIX=/usr SYSCONFDIR=/etc" make -s -C "${TIERCACHE_SRCDIR:-.}" install SANITIZER="$san" DESTDIR="$ROOT2" PREFIX=/usr >"$T/install2.log" 2>&1
check "PREFIX=/usr: units in /usr/lib/systemd/system" [ -f "$ROOT2/usr/lib/systemd/system/tiercached.service" ]
check "PREFIX=/usr: binaries in /usr/bin" [ -x "$ROOT2/usr/bin/tiercached" ]

# systemd-analyze verify checks that the Exec binaries exist on this host, so
# verify an install whose PREFIX is real (no DESTDIR). It needs no running
# systemd. Unknown keys only print a warning: require empty output too.
PFX=$T/pfx
check "make install PREFIX=$PFX (for verify)" make -s -C "${TIERCACHE_SRCDIR:-.}" install SANITIZER="$san" PREFIX="$PFX" SYSCONFDIR="$PFX/etc" >"$T/install3.log" 2>&1
if command -v systemd-analyze >/dev/null; then
	(cd "$PFX/lib/systemd/system" && systemd-analyze verify ./tiercached.service \
		./tiercache-lifecycle.service ./tiercache-lifecycle.timer) >"$T/verify.out" 2>&1
	check "systemd-analyze verify passes on the units" [ $? -eq 0 ]
	check "systemd-analyze verify has nothing to say" [ ! -s "$T/verify.out" ]
	[ -s "$T/verify.out" ] && cat "$T/verify.out"
	# and it does catch a mistake, so the two checks above mean something
	sed 's/^NoNewPrivileges=/NoNewPrivilegez=/' "$PFX/lib/systemd/system/tiercached.service" >"$T/bad.service"
	(cd "$PFX/lib/systemd/system" && systemd-analyze verify "$T/bad.service") >"$T/verify_bad.out" 2>&1
	check "systemd-analyze verify reports a misspelt key" grep -q "Unknown key 'NoNewPrivilegez'" "$T/verify_bad.out"
else
	fail "systemd-analyze missing (scripts/install-deps installs the systemd package)"
fi
svc=$PFX/lib/systemd/system/tiercached.service
for line in Type=notify 'ExecReload=/bin/kill -HUP $MAINPID' RuntimeDirectory=tiercache StateDirectory=tiercache \
	ConfigurationDirectory=tiercache NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes; do
	check "tiercached.service: $line" grep -qxF "$line" "$svc"
done
check "lifecycle timer is persistent" grep -qx "Persistent=true" "$PFX/lib/systemd/system/tiercache-lifecycle.timer"
check "lifecycle service is a oneshot of tierctl lifecycle run" grep -qx "ExecStart=$PFX/bin/tierctl lifecycle run" \
	"$PFX/lib/systemd/system/tiercache-lifecycle.service"

cat >"$T/reader.c" <<'C'
#include <stdio.h>
#include <tiercache.h>
int main(int argc, char **argv)
{
	static char buf[1 << 20];
	struct tiercache *tc = tiercache_connect(NULL);
	if (!tc) { fprintf(stderr, "connect: %s\n", tiercache_strerror(0)); return 1; }
	int h = tiercache_open(tc, argv[1], 0);
	if (h < 0) return 1;
	uint64_t off = 0;
	ssize_t n;
	while ((n = tiercache_pread(tc, h, buf, sizeof(buf), off)) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		off += (uint64_t)n;
	}
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
	return n < 0 || argc != 2;
}
C
export PKG_CONFIG_PATH=$ROOT/usr/local/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT
SAN_FLAGS=
[ "$san" = address ] && SAN_FLAGS=-fsanitize=address
[ "$san" = undefined ] && SAN_FLAGS=-fsanitize=undefined
check "pkg-config knows tiercache" pkg-config --exists tiercache
check "compile + link (shared) with pkg-config flags" \
	cc $SAN_FLAGS -o "$T/reader" "$T/reader.c" $(pkg-config --cflags --libs tiercache)
check "compile + link (static) with pkg-config --static" \
	cc $SAN_FLAGS -o "$T/reader_static" "$T/reader.c" $(pkg-config --cflags tiercache) \
	"$ROOT/usr/local/lib/libtiercache.a" $(pkg-config --libs-only-other --libs-only-l --static tiercache | sed 's/-ltiercache//')

tc_config 64M none 256K
mkdir -p "$T/cold"
head -c 700001 /dev/urandom >"$T/cold/f.bin"
tc_start || exit 1
LD_LIBRARY_PATH=$ROOT/usr/local/lib "$T/reader" ds/f.bin >"$T/out.bin"
check "shared build reads the exact bytes" cmp "$T/out.bin" "$T/cold/f.bin"
"$T/reader_static" ds/f.bin >"$T/out2.bin"
check "static build reads the exact bytes" cmp "$T/out2.bin" "$T/cold/f.bin"
finish
