# Helpers for the Python binding's tests (sourced after lib.sh): the package
# from the source tree, the library from the build under test, and
# py_checks, which turns a Python test script's "ok: ..."/"FAIL: ..." lines
# into checks.
PY=/usr/bin/python3
TC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PYTHONPATH=$TC_SRC/client/python
TIERCACHE_LIBRARY=$(cd "$O/lib" && pwd)/libtiercache.so.0
export TIERCACHE_LIBRARY
# an ASan-built library must have its runtime loaded first; Python itself
# is not instrumented and its allocations are not ours to leak-check
PY_ENV=()
if [ "$(basename "$O")" = address ]; then
	PY_ENV=(env "LD_PRELOAD=$(cc -print-file-name=libasan.so)" "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
fi

# py_checks NAME SCRIPT ARGS...: run SCRIPT; every "ok: X" / "FAIL: X" line
# becomes a check, other lines are shown; the script must also exit 0.
py_checks() {
	local name=$1
	shift
	"${PY_ENV[@]}" "$PY" "$@" >"$T/$name.out" 2>&1
	local rc=$?
	local l
	while IFS= read -r l; do
		case $l in
		"ok: "*) ok "${l#ok: }" ;;
		"FAIL: "*) fail "${l#FAIL: }" ;;
		*) echo "$l" ;;
		esac
	done <"$T/$name.out"
	check "$name: script exited 0 (got $rc)" [ "$rc" = 0 ]
}
