# The Python binding (client/python, ctypes over libtiercache) against the
# real daemon: every read path compared with the source, listdir/stat/walk,
# errors, threads, fork, plans (lazily bound), the library search, and a
# daemon that goes away.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_python.sh"

tc_config 64M none 256K
tc_gen_tree "$T/cold" 262144
tc_start || exit 1
py_checks client "$(dirname "$0")/py_client.py" "$T/cold" ds 262144

# the library search: an explicit TIERCACHE_LIBRARY that does not exist is
# an error naming it and the fix; importing works without the library
"${PY_ENV[@]}" env TIERCACHE_LIBRARY=$T/nope.so "$PY" -c '
import tiercache
try:
    tiercache.Client()
except tiercache.LibraryNotFoundError as e:
    print(e)
' >"$T/nolib.out" 2>&1
check "missing library: LibraryNotFoundError naming the path and TIERCACHE_LIBRARY" \
	grep -q "$T/nope.so.*TIERCACHE_LIBRARY" "$T/nolib.out"
# a copy next to the package is found without TIERCACHE_LIBRARY
mkdir -p "$T/pkg"
cp -r "$TC_SRC/client/python/tiercache" "$T/pkg/"
cp "$TIERCACHE_LIBRARY" "$T/pkg/tiercache/"
"${PY_ENV[@]}" env -u TIERCACHE_LIBRARY PYTHONPATH="$T/pkg" "$PY" -c '
import tiercache, tiercache._lib as l
tc = tiercache.Client()
print(l.load()._name, tc.open("ds/one.bin").read() == open("'"$T"'/cold/one.bin", "rb").read())
' >"$T/nextto.out" 2>&1
check "library next to the package is found and reads" grep -q "^$T/pkg/tiercache/libtiercache.so.0 True" "$T/nextto.out"

# make install puts the package in PREFIX's site-packages, and the installed
# package finds the library in PREFIX/lib without TIERCACHE_LIBRARY
san=$(basename "$O")
[ "$san" = default ] && san=
check "make install into a staging root" make -s -C "$TC_SRC" install SANITIZER="$san" DESTDIR="$T/root" \
	PREFIX=/usr/local >"$T/install.log" 2>&1
site=$("$PY" -c 'import sys; print("lib/python%d.%d/dist-packages" % sys.version_info[:2])')
check "package installed under PREFIX/$site" [ -f "$T/root/usr/local/$site/tiercache/torch.py" ]
check "installed _install.py records PREFIX/lib" grep -qx 'LIBDIR = "/usr/local/lib"' "$T/root/usr/local/$site/tiercache/_install.py"
check "make install-python PREFIX=..." make -s -C "$TC_SRC" install-python PREFIX="$T/prefix" >>"$T/install.log" 2>&1
cp "$TIERCACHE_LIBRARY" "$T/prefix/lib/"
"${PY_ENV[@]}" env -u TIERCACHE_LIBRARY PYTHONPATH="$T/prefix/$site" "$PY" -c '
import tiercache, tiercache._lib as l
tc = tiercache.Client()
print(tiercache.__file__, l.load()._name, tc.open("ds/multi.bin").read() == open("'"$T"'/cold/multi.bin", "rb").read())
' >"$T/installed.out" 2>&1
check "installed package finds PREFIX/lib/libtiercache.so.0 and reads" \
	grep -q "^$T/prefix/$site/tiercache/__init__.py $T/prefix/lib/libtiercache.so.0 True" "$T/installed.out"

# the daemon goes away under a connected client
mkfifo "$T/ready" "$T/go"
# opened read-write: neither side blocks in open() if the other one died
exec 3<>"$T/ready" 4<>"$T/go"
TIERCACHE_RECONNECT_TIMEOUT=0 "${PY_ENV[@]}" "$PY" "$(dirname "$0")/py_down.py" ds "$T/ready" "$T/go" >"$T/down.out" 2>&1 &
down_pid=$!
check "py_down.py connected and read" read -r -t 120 -u 3 _
check "daemon stops cleanly" tc_stop
echo go >&4
wait "$down_pid"
down_rc=$?
exec 3>&- 4>&-
py_report down "$down_rc"
finish
