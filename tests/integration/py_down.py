"""The Python binding when tiercached goes away (run by t_python.sh).

  py_down.py DATASET READY_FIFO GO_FIFO
Connects and reads while the daemon runs, says "ready" on READY_FIFO, waits
for a line on GO_FIFO (sent once the daemon has stopped), then checks that
every call fails with a clear OSError instead of hanging or crashing.
Expects TIERCACHE_RECONNECT_TIMEOUT=0. Prints "ok: ..." / "FAIL: ..." lines.
"""
import errno
import signal
import sys

import tiercache

signal.alarm(120)
DS, READY, GO = sys.argv[1], sys.argv[2], sys.argv[3]
failures = 0


def check(cond, what):
    global failures
    print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failures += 1


def error_of(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return e
    return None


tc = tiercache.Client()
f = tc.open(DS + "/one.bin")
check(len(f.read()) == 1, "read while the daemon runs")
f.close()
with open(READY, "w") as r:
    r.write("ready\n")
with open(GO) as g:
    g.readline()

conn_errnos = (errno.ENOENT, errno.ECONNREFUSED, errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN)
e = error_of(tiercache.Client)
check(isinstance(e, tiercache.Error) and e.errno in (errno.ENOENT, errno.ECONNREFUSED),
      "new Client with the daemon down: %r" % (e,))
check(e is not None and ("tiercached" in str(e) or "No such file" in str(e)),
      "the message says what is wrong: %s" % (e,))
e = error_of(tc.stat, DS + "/one.bin")
check(isinstance(e, tiercache.Error) and e.errno in conn_errnos, "stat on a Client whose daemon stopped: %r" % (e,))
e = error_of(tc.open, DS + "/multi.bin")
check(isinstance(e, tiercache.Error) and e.errno in conn_errnos, "open on a Client whose daemon stopped: %r" % (e,))
e = error_of(tc.listdir, DS)
check(isinstance(e, tiercache.Error) and e.errno in conn_errnos, "listdir on a Client whose daemon stopped: %r" % (e,))
tc.close()
sys.exit(1 if failures else 0)
