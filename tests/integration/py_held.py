"""Held-bytes caps against a live daemon (run by t_held_limits.sh).

  py_held.py SOCKET COLD DATASET CHUNK PHASE

Raw protocol holders (one connection each) open files and keep every chunk
descriptor they are given, and the Python binding reads through the
library, which gives back chunks on ENOBUFS. Prints "ok: ..." / "FAIL: ..."
lines. Phases: "hold" (the caps), "after" (a new connection may hold again),
"lib" (the library's give-back and retry).
"""
import errno
import os
import socket
import struct
import sys

SOCK, COLD, DS, CHUNK, PHASE = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
MAGIC, VERSION = 0x4354, 2
OP_HELLO, OP_OPEN, OP_CHUNK, OP_CLOSE = 1, 2, 3, 6
WANT_CHUNK0 = 0x2
fails = 0


def check(cond, what):
    global fails
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails += 1


class Raw:
    """One connection speaking the protocol; keeps every fd it receives."""

    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(20)
        self.s.connect(SOCK)
        self.fds = []
        self.rid = 0
        op, err, _ = self.call(OP_HELLO, struct.pack("<I", VERSION))
        assert err == 0

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            data, anc, _, _ = self.s.recvmsg(n - len(buf), socket.CMSG_SPACE(4 * 4))
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    cdata = cdata[: len(cdata) - len(cdata) % 4]
                    self.fds.extend(struct.unpack("<%di" % (len(cdata) // 4), cdata))
            if not data:
                raise EOFError
            buf += data
        return buf

    def call(self, op, payload, aux=0):
        self.rid += 1
        self.s.sendall(struct.pack("<HBBIII", MAGIC, VERSION, op, len(payload), self.rid, aux) + payload)
        _, _, rop, length, rid, raux = struct.unpack("<HBBIII", self.recv_exact(16))
        body = self.recv_exact(length) if length else b""
        return rop, raux, body

    def open(self, rel):
        p = (DS + "/" + rel).encode()
        _, err, body = self.call(OP_OPEN, struct.pack("<I", len(p)) + p, WANT_CHUNK0)
        if err:
            raise OSError(err, body[4:].decode())
        return struct.unpack_from("<Q", body)[0], body[28] == 1

    def chunk(self, h, idx):
        """(errno, message)"""
        n = len(self.fds)
        _, err, body = self.call(OP_CHUNK, struct.pack("<QI", h, idx))
        return err, (body[4:].decode() if err else ""), len(self.fds) - n

    def hold_file(self, rel):
        """Open rel and hold its chunk 0: (errno, message)."""
        h, had = self.open(rel)
        self.last = h
        if had:
            return 0, ""
        err, msg, _ = self.chunk(h, 0)
        return err, msg

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.s.close()


def src(rel):
    with open(os.path.join(COLD, rel), "rb") as f:
        return f.read()


files = ["f%02d.bin" % i for i in range(40)]
MIB = 1 << 20

if PHASE == "hold":
    # connection A: 64M of 4M chunks, then the per-client cap
    a = Raw()
    got = [a.hold_file(files[0])]
    h0 = a.last
    got += [a.hold_file(files[i]) for i in range(1, 16)]
    check(all(e == 0 for e, _ in got), "A holds 16 chunks (64M = max_held_per_client): %s" %
          [e for e, _ in got if e])
    err, msg = a.hold_file(files[16])
    check(err == errno.ENOBUFS, "A's 17th chunk is refused with ENOBUFS (got %s)" % errno.errorcode.get(err, err))
    check("max_held_per_client" in msg and "release" in msg,
          "... with a message naming max_held_per_client and what to do: %r" % msg)
    # the same chunk again on the same handle is not new bytes: handed out
    err, msg, nfd = a.chunk(h0, 0)
    check(err == 0 and nfd == 1, "A may take a chunk it already holds once more (got %s %r)" % (err, msg))
    # connection B of the same uid: 96M - 64M = 32M left for the uid
    b = Raw()
    got = [b.hold_file(files[20 + i]) for i in range(8)]
    check(all(e == 0 for e, _ in got), "B (same uid) holds 8 chunks (the uid at 96M = max_held_per_user)")
    err, msg = b.hold_file(files[28])
    check(err == errno.ENOBUFS, "B's 9th chunk is refused with ENOBUFS (got %s)" % errno.errorcode.get(err, err))
    check("max_held_per_user" in msg and "uid %d" % os.getuid() in msg,
          "... with a message naming max_held_per_user and the uid: %r" % msg)
    # the held fds are the chunks' bytes
    bad = [i for i in range(8) if os.pread(b.fds[i], CHUNK, 0) != src(files[20 + i])[:CHUNK]]
    check(not bad, "the held descriptors read as the source")
    # hold until the shell has run the reader and said so (stdin closes)
    print("holding", flush=True)
    sys.stdin.read()
    a.close()
    b.close()
elif PHASE == "after":
    c = Raw()
    got = [c.hold_file(files[i]) for i in range(16)]
    check(all(e == 0 for e, _ in got), "after the holders left, a new connection of the uid holds 64M again")
    c.close()
elif PHASE == "lib":
    import tiercache
    tc = tiercache.Client()
    # 24 open files of one chunk each, all kept open: past 16 the daemon
    # refuses, and the library gives back the other files' chunks
    fs = [tc.open(DS + "/" + files[i]) for i in range(24)]
    bad = [files[i] for i in range(24) if fs[i].read() != src(files[i])]
    check(not bad, "24 files kept open through the library read as the source (bad: %s)" % bad)
    # again, in another order: the chunks given back are fetched again
    bad = [files[i] for i in reversed(range(24)) if fs[i].pread(CHUNK, 0) != src(files[i])]
    check(not bad, "... and again in reverse order")
    for f in fs:
        f.close()
    # a holder of the whole uid cap: the library has nothing to give back
    a = Raw()
    b = Raw()
    for i in range(16):
        a.hold_file(files[i])
    for i in range(8):
        b.hold_file(files[16 + i])
    f = tc.open(DS + "/" + files[30])
    try:
        f.read()
        check(False, "a read past the uid's cap fails")
    except OSError as e:
        check(e.errno == errno.ENOBUFS, "a read past the uid's cap fails with ENOBUFS (got %s)" % e)
        check("max_held_per_user" in str(e), "... and the caller sees the daemon's message: %s" % e)
    f.close()
    a.close()
    b.close()
    f = tc.open(DS + "/" + files[30])
    check(f.read() == src(files[30]), "once the holders are gone the same read succeeds")
    f.close()
sys.exit(1 if fails else 0)
