# A client that hangs up without reading its replies (server.c,
# conn_drain): a program that closes its files (CLOSE, no reply) and
# exits. The frames it sent before the end still count, also those the
# daemon had not read from the socket yet: every CLOSE of a handle handed
# ahead is counted used (ahead_used, the plan's position), nothing stays
# held. Frames that want a reply are dropped, not run. A frame with a bad
# header after good ones still closes the connection at once (the frames
# after it do not run) and the daemon serves others. The raw client is
# py_hangup.py; the daemon is stopped (SIGSTOP) while it sends and hangs
# up, so that every frame waits in the socket first.
. "$(dirname "$0")/lib.sh"

TP=$TC_TESTS/tcplan
mkdir -p "$T/cold/t"
for i in $(seq -w 0 39); do head -c $((1000 + RANDOM % 3000)) /dev/urandom >"$T/cold/t/t$i.bin"; done
( cd "$T/cold" && find t -type f | sort ) >"$T/files"
TC_DAEMON_CONF=$'plan_grace = 1h\nmax_held_per_client = 64M'
tc_config 64M none 256K
tc_start || exit 1

ctr() { tc_json "s['counters']['$1']"; }
dmn() { tc_json "s['daemon']['$1']"; }
plan() { tc_json "[p for p in s['plans'] if p['job'] == $1][0]['$2']"; }

check "warm the 40 files (untagged reads): bytes equal the source" "$TP" read ds "$T/cold" <"$T/files"

# one client per mode; each takes the 40 files of its job's plan ahead
n=0
for mode in eof reset garbage; do
	n=$((n + 1))
	job=$((30 + n))
	check "$mode: register job $job's plan of the 40 files" "$TP" set ds $job 0 1 0 <"$T/files"
	u0=$(ctr ahead_used)
	un0=$(ctr ahead_unused)
	c0=$(ctr frames_close)
	r0=$(ctr hangup_frames_run)
	d0=$(ctr hangup_frames_dropped)
	b0=$(ctr bad_frames)
	python3 "$(dirname "$0")/py_hangup.py" "$T/sock" $job "$TC_PID" $mode >"$T/p$mode" 2>&1
	cat "$T/p$mode"
	check "$mode: the client was handed the 40 files ahead and hung up" \
		test "$(head -1 "$T/p$mode") $(tail -1 "$T/p$mode")" = "handed 40 sent"
	wait_for 20 'test "$(dmn ahead_out)" = 0'
	check "$mode: nothing is held once the client is gone" \
		test "$(dmn ahead_out) $(dmn ahead_out_bytes) $(dmn held_bytes) $(dmn clients)" = "0 0 0 1"
	used=$(($(ctr ahead_used) - u0))
	unused=$(($(ctr ahead_unused) - un0))
	closes=$(($(ctr frames_close) - c0))
	run=$(($(ctr hangup_frames_run) - r0))
	dropped=$(($(ctr hangup_frames_dropped) - d0))
	bad=$(($(ctr bad_frames) - b0))
	echo "  used $used unused $unused closes $closes run $run dropped $dropped bad $bad"
	if [ $mode = garbage ]; then
		check "garbage: the 20 CLOSEs before the bad frame counted used, the 20 after it did not run" \
			test "$used $unused $closes" = "20 20 20"
		check "garbage: the bad frame was counted and nothing after it ran (20 CLOSEs, 200 RELEASEs run)" \
			test "$bad $run $dropped" = "1 220 0"
		check "garbage: job $job's plan moved by the 20 used files" test "$(plan $job position)" = 20
	else
		check "$mode: every one of the 40 CLOSEs counted: used, none unused" \
			test "$used $unused $closes" = "40 0 40"
		check "$mode: the 200 RELEASEs and 40 CLOSEs ran, the last request (STAT) was dropped" \
			test "$run $dropped $bad" = "240 1 0"
		check "$mode: job $job's plan moved by the 40 used files" test "$(plan $job position)" = 40
	fi
done

check "the daemon still serves others: bytes equal the source" "$TP" read ds "$T/cold" <"$T/files"
check "no daemon error in its log" bash -c "! grep -E 'level=(error|crit)' '$T/daemon.log'"

finish
