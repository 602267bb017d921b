"""What one connection can make the daemon keep, measured in the daemon's
RSS (run by t_session_memory.sh).

  py_session_mem.py SOCKET PID LONGPATH SHORTPATH

PLAN_SET frames staged without end, and handles opened without end, on
raw connections. Prints "ok: ..." / "FAIL: ..." and a "measure:" line each.
"""
import errno
import os
import socket
import struct
import sys

SOCK, PID, LONG, SHORT = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
from tc_wire import MAGIC, OP_HELLO, OP_OPEN, OP_PLAN_SET, VERSION, Checks, rss_bytes, s_str

PLAN_MORE, PLAN_CONT, PLAN_INDICES = 0x2, 0x4, 2
MIB = 1 << 20
SCALE = int(os.environ.get("TC_MEM_SCALE", "1"))  # lib.sh: 3 under ASan
check = Checks()


def rss():
    return rss_bytes(PID)


class Raw:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(60)
        self.s.connect(SOCK)
        self.rid = 0
        self.f = self.s.makefile("rb")
        self.send(OP_HELLO, struct.pack("<I", VERSION))
        assert self.recv()[0] == 0

    def send(self, op, payload, aux=0):
        self.rid += 1
        self.s.sendall(struct.pack("<HBBIII", MAGIC, VERSION, op, len(payload), self.rid, aux) + payload)

    def recv(self):
        h = self.f.read(16)
        _, _, op, length, rid, aux = struct.unpack("<HBBIII", h)
        body = self.f.read(length)
        return aux, body

    def close(self):
        self.f.close()
        self.s.close()


def plan_frame(job, flags, n):
    hdr = s_str(b"ds") + struct.pack("<QIIIBBI", job, 0, 1, 0, flags, PLAN_INDICES, n)
    return hdr + b"\0" * (8 * n)  # n x index 0: the file with the long path


N = (1 * MIB - 64) // 8  # entries in a full frame
FRAMES = 16


def stage(conn, job, frames, bound):
    """Stage frames full frames; stop early (False) once RSS grew past bound."""
    base = rss()
    for i in range(frames):
        conn.send(OP_PLAN_SET, plan_frame(job, PLAN_MORE | (PLAN_CONT if i else 0), N))
        err, body = conn.recv()
        if err:
            print("  frame %d: errno %d %s" % (i, err, body[4:].decode()))
            return False, rss() - base
        if rss() - base > bound:
            return False, rss() - base
    return True, rss() - base


# ---- handles ----
def open_many(conn, path, n):
    """Pipelined OPENs, in batches; returns (opened, first error, message)."""
    p = s_str(path.encode())
    opened, first, msg = 0, 0, ""
    left = n
    while left:
        k = min(left, 512)
        for _ in range(k):
            conn.send(OP_OPEN, p)
        for _ in range(k):
            err, body = conn.recv()
            if err == 0:
                opened += 1
            elif not first:
                first, msg = err, body[4:].decode()
        left -= k
    return opened, first, msg


# both connections stay open while measured: each grows on fresh memory
d = Raw()
base = rss()
opened, err, msg = open_many(d, "ds/" + LONG, 17000)
grew = rss() - base
print("measure: %d handles of a %d-byte path on one connection grew RSS by %.1f MiB" % (opened, len(LONG), grew / MIB))
check(err == errno.EMFILE and opened < 16384, "long paths reach the 4 MiB bound first (%d handles, then EMFILE)" % opened)
check(grew < 8 * SCALE * MIB, "... and cost less than %d MiB (%.1f MiB)" % (8 * SCALE, grew / MIB))
c = Raw()
base = rss()
opened, err, msg = open_many(c, "ds/" + SHORT, 17000)
grew = rss() - base
print("measure: %d handles of a short path on one connection grew RSS by %.1f MiB" % (opened, grew / MIB))
check(opened == 16384 and err == errno.EMFILE, "one connection opens 16384 handles, then EMFILE (%d, %d)" % (opened, err))
check("close files you are done with" in msg, "... with a message that says what to do: %r" % msg)
check(grew < 6 * SCALE * MIB, "16384 handles cost less than %d MiB (%.1f MiB)" % (6 * SCALE, grew / MIB))
c.close()
d.close()

# ---- plan staging ----
a = Raw()
base = rss()
done, grew = stage(a, 1, FRAMES, 48 * SCALE * MIB)
print("measure: staging %d frames (%d entries, %d MiB received) grew the daemon's RSS by %.1f MiB"
      % (FRAMES, FRAMES * N, FRAMES * N * 8 // MIB, grew / MIB))
check(done, "%d MiB of staged PLAN_SET frames are accepted" % (FRAMES * N * 8 // MIB))
check(grew < 24 * SCALE * MIB, "... and cost the daemon less than %d MiB (%.1f MiB)" % (24 * SCALE, grew / MIB))
# registrations in progress per connection are bounded
ok = True
for job in range(2, 2 + 7):
    a.send(OP_PLAN_SET, plan_frame(job, PLAN_MORE, 1))
    ok = ok and a.recv()[0] == 0
a.send(OP_PLAN_SET, plan_frame(99, PLAN_MORE, 1))
err, body = a.recv()
check(ok and err == errno.EBUSY, "a 9th registration in progress on one connection: EBUSY (got %d %s)"
      % (err, body[4:].decode()))
peak = rss()
a.close()
# staging goes with the connection: staging the same again ends near the
# first peak, not one more stage above it
b = Raw()
done, grew2 = stage(b, 1, FRAMES, 48 * SCALE * MIB)
again = rss() - peak
print("measure: the same staging on a new connection after the first closed: RSS %+.1f MiB from the first peak"
      % (again / MIB))
check(done and again < grew / 2, "staged frames are freed at disconnect (%+.1f MiB from the first peak)" % (again / MIB))
# an abandoned sequence is dropped by a new one (not CONT) on the same key
b.send(OP_PLAN_SET, plan_frame(1, 0, 1))
err, body = b.recv()
check(err == 0, "a new registration replaces the abandoned staged one (got %d)" % err)
b.close()


sys.exit(1 if check.failed() else 0)
