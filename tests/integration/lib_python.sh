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

# py_report NAME RC: the output of a Python test script ($T/NAME.out) that
# exited with RC: every "ok: X" / "FAIL: X" line becomes a check, other lines
# are shown; the script must also have exited 0.
py_report() {
	local l
	while IFS= read -r l; do
		case $l in
		"ok: "*) ok "${l#ok: }" ;;
		"FAIL: "*) fail "${l#FAIL: }" ;;
		*) echo "$l" ;;
		esac
	done <"$T/$1.out"
	check "$1: script exited 0 (got $2)" [ "$2" = 0 ]
}

# py_checks NAME SCRIPT ARGS...: run SCRIPT (py_common.py next to it is
# importable) and report it with py_report.
py_checks() {
	local name=$1
	shift
	"${PY_ENV[@]}" "$PY" "$@" >"$T/$name.out" 2>&1
	py_report "$name" $?
}
