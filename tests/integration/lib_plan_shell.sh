# Helpers for tests that drive `tcplan shell` (tests/integration/tcplan.c)
# through FIFOs: a long-lived client whose connections outlive daemon
# restarts. Sourced after lib.sh.

# shell_start NAME IN_FD OUT_FD: start a shell; commands go to IN_FD, its
# replies come from OUT_FD
shell_start() {
	mkfifo "$T/$1.in" "$T/$1.out"
	"$TC_TESTS/tcplan" shell ds "$T/cold" <"$T/$1.in" >"$T/$1.out" 2>>"$T/$1.err" &
	eval "exec $2>\"\$T/\$1.in\" $3<\"\$T/\$1.out\""
}

# say IN_FD OUT_FD COMMAND: send a command, wait for its reply line; true
# if the reply starts with "ok" (the reply is in $T/reply)
say() {
	echo "$3" >&"$1"
	local r
	IFS= read -r r <&"$2" || r="(the shell exited)"
	echo "$r" >"$T/reply"
	case $r in
	ok*) return 0 ;;
	*)
		echo "  $3 -> $r"
		return 1
		;;
	esac
}
