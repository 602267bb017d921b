"""The Python binding when tiercached goes away (run by t_python.sh).

  py_down.py DATASET READY_FIFO GO_FIFO
Connects and reads while the daemon runs, says "ready" on READY_FIFO, waits
for a line on GO_FIFO (sent once the daemon has stopped), then checks that
every call fails with a clear OSError instead of hanging or crashing.
Expects TIERCACHE_RECONNECT_TIMEOUT=0. Prints "ok: ..." / "FAIL: ..." lines.
"""
import errno

import tiercache

from py_common import check, finish, raises, start

DS, READY, GO = start(120, "DATASET READY_FIFO GO_FIFO")

tc = tiercache.Client()
f = tc.open(DS + "/one.bin")
check(len(f.read()) == 1, "read while the daemon runs")
f.close()
with open(READY, "w") as r:
    r.write("ready\n")
with open(GO) as g:
    g.readline()

conn_errnos = (errno.ENOENT, errno.ECONNREFUSED, errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN)
e = raises(OSError, tiercache.Client)
check(isinstance(e, tiercache.Error) and e.errno in (errno.ENOENT, errno.ECONNREFUSED),
      "new Client with the daemon down: %r" % (e,))
check(e is not None and ("tiercached" in str(e) or "No such file" in str(e)),
      "the message says what is wrong: %s" % (e,))
e = raises(OSError, tc.stat, DS + "/one.bin")
check(isinstance(e, tiercache.Error) and e.errno in conn_errnos, "stat on a Client whose daemon stopped: %r" % (e,))
e = raises(OSError, tc.open, DS + "/multi.bin")
check(isinstance(e, tiercache.Error) and e.errno in conn_errnos, "open on a Client whose daemon stopped: %r" % (e,))
e = raises(OSError, tc.listdir, DS)
check(isinstance(e, tiercache.Error) and e.errno in conn_errnos, "listdir on a Client whose daemon stopped: %r" % (e,))
tc.close()
finish()
