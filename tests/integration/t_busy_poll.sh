# The short busy polls of a hit's round trip (net/busy_poll.c in the daemon,
# TIERCACHE_POLL_US in the library): every byte still equals the source with
# polling on, off and at its maximum; an idle daemon does not keep polling
# (its CPU stays near zero while no client sends anything); bad settings are
# refused (the daemon's log names the variable) and the defaults are used.
. "$(dirname "$0")/lib.sh"
CS=262144
tc_config 64M 128M 256K
tc_gen_tree "$T/cold" $CS

daemon_cpu_ticks() { # utime + stime of the daemon, in clock ticks
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$TC_PID/stat"
}

tc_start || exit 1
check "default polls: first pass bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 1
check "default polls: second pass (hits) bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 2
check "library polling off: bytes match" env TIERCACHE_POLL_US=0 "$TC_TESTS/tcverify" tree ds "$T/cold" 3
check "library polling at its maximum: bytes match" env TIERCACHE_POLL_US=1000 "$TC_TESTS/tcverify" tree ds "$T/cold" 4
# (the library's message goes to the program's log hook, like the other
# variables'; tcverify installs none)
check "a bad TIERCACHE_POLL_US still reads (default used)" env TIERCACHE_POLL_US=lots "$TC_TESTS/tcverify" tree ds "$T/cold" 5

hz=$(getconf CLK_TCK)
t0=$(daemon_cpu_ticks)
sleep 2
t1=$(daemon_cpu_ticks)
echo "idle daemon: $((t1 - t0)) ticks of CPU in 2 s (CLK_TCK $hz)"
check "an idle daemon does not poll (< 0.2 s CPU in 2 s idle after requests)" [ $((t1 - t0)) -lt $((hz / 5)) ]
check "clean stop" tc_stop

TIERCACHE_DAEMON_POLL_US=0 tc_start || exit 1
check "daemon polling off: bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 6
check "daemon polling off: clean stop" tc_stop

TIERCACHE_DAEMON_POLL_US=1000 tc_start || exit 1
check "daemon polling at its maximum: bytes match" "$TC_TESTS/tcverify" tree ds "$T/cold" 7
t0=$(daemon_cpu_ticks)
sleep 2
t1=$(daemon_cpu_ticks)
check "daemon polling at its maximum: idle CPU stays low" [ $((t1 - t0)) -lt $((hz / 5)) ]
check "daemon polling at its maximum: clean stop" tc_stop

TIERCACHE_DAEMON_POLL_US=forever tc_start || exit 1
check "a bad TIERCACHE_DAEMON_POLL_US still serves" "$TC_TESTS/tcverify" tree ds "$T/cold" 8
check "a bad TIERCACHE_DAEMON_POLL_US is named in the log" \
	grep -q "TIERCACHE_DAEMON_POLL_US=forever is not 0..1000 microseconds" "$T/daemon.log"
finish
