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
