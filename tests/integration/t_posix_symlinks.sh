# A posix dataset follows no symlink (issue #16, item 3), with openat2 and
# where it is missing. A listed file swapped for a symlink to a root-only
# file outside the dataset, and a listed directory swapped for a symlink to
# a directory outside, are refused (ELOOP, with a message naming the path),
# never served, to root or to `nobody`; the other files still read and
# match. Run twice: as is (openat2) and under seccomp_exec, a seccomp filter
# that fails openat2 with ENOSYS, as old kernels and strict container
# profiles do, so the daemon takes its component-by-component fallback.
. "$(dirname "$0")/lib.sh"
TC=$TC_BIN/tierctl
chmod 0711 "$T" # nobody reaches the socket (mode 0666 below)
TC_DAEMON_CONF="socket_mode = 0666"

run_case() { # run_case LABEL
	local label=$1
	rm -rf "$T/cold" "$T/outside" "$T/hot" "$T/warm" "$T/state"
	mkdir -p "$T/cold/dir" "$T/cold/keep" "$T/outside/dir"
	head -c 200000 /dev/urandom >"$T/cold/secret.bin"
	head -c 200000 /dev/urandom >"$T/cold/dir/b.bin"
	head -c 200000 /dev/urandom >"$T/cold/keep/ok.bin"
	head -c 100000 /dev/urandom >"$T/cold/ok.bin"
	# the outside: a root-only file, and a directory with a b.bin of its own
	printf 'ROOT ONLY SECRET %0200000d' 0 >"$T/outside/secret"
	chmod 0600 "$T/outside/secret"
	printf 'OUTSIDE DIR FILE %0200000d' 0 >"$T/outside/dir/b.bin"
	: >"$T/daemon.log"
	TC_WRAP=$WRAP tc_start || return 1
	# listed as regular files, not read yet: then swapped
	rm "$T/cold/secret.bin" && ln -s "$T/outside/secret" "$T/cold/secret.bin"
	rm -r "$T/cold/dir" && ln -s "$T/outside/dir" "$T/cold/dir"
	for who in root nobody; do
		local as=()
		[ "$who" = nobody ] && as=(runuser -u nobody --)
		out=$("${as[@]}" "$TC" cat ds/secret.bin 2>"$T/err")
		rc=$?
		echo "$label $who secret.bin: rc=$rc $(cat "$T/err")"
		check "$label: file swapped for a symlink out: refused ($who)" [ "$rc" -ne 0 ]
		check "$label: never the outside bytes ($who)" bash -c "! echo \"\$1\" | grep -q 'ROOT ONLY'" _ "$out"
		check "$label: the message says symlink ($who)" grep -q 'ds/secret.bin: the source path is a symbolic link' "$T/err"
		out=$("${as[@]}" "$TC" cat ds/dir/b.bin 2>"$T/err")
		rc=$?
		echo "$label $who dir/b.bin: rc=$rc $(cat "$T/err")"
		check "$label: directory swapped for a symlink out: refused ($who)" [ "$rc" -ne 0 ]
		check "$label: never the outside directory's bytes ($who)" bash -c "! echo \"\$1\" | grep -q 'OUTSIDE DIR'" _ "$out"
	done
	check "$label: ELOOP for the file" "$TC_TESTS/tcverify" errno ds/secret.bin ELOOP
	check "$label: ELOOP for the directory" "$TC_TESTS/tcverify" errno ds/dir/b.bin ELOOP
	check "$label: other files read and match" "$TC_TESTS/tcverify" file ds/ok.bin "$T/cold/ok.bin"
	check "$label: nested files read and match" "$TC_TESTS/tcverify" file ds/keep/ok.bin "$T/cold/keep/ok.bin"
	check "$label: nobody reads a normal file" runuser -u nobody -- "$TC" cat ds/ok.bin >/dev/null
	tc_stop
}

tc_config 64M 64M 256K "revalidate_after = 0s"
WRAP=
run_case openat2
check "openat2: no fallback taken" bash -c "! grep -q 'openat2 is not available' '$T/daemon.log'"
WRAP=$TC_TESTS/seccomp_exec
if "$WRAP" true; then
	run_case fallback
	check "fallback: the daemon says it took it" grep -q 'openat2 is not available (ENOSYS)' "$T/daemon.log"
else
	fail "seccomp_exec cannot install its filter here"
fi
check "the cold backend contract holds without openat2" bash -c "'$TC_TESTS/seccomp_exec' '$TC_TESTS/test_cold_contract' posix >'$T/contract.log' 2>&1 || { tail -30 '$T/contract.log'; false; }"
finish
