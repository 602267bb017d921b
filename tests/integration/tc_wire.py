"""The raw wire protocol for tests that must send frames no library would
(floods, pipelines, bad input): header, strings, frames in and out, and
what /proc says about the daemon. Imported by conn_limits.py, py_flood.py,
py_session_mem.py and the open-ahead scripts (include/tiercache/protocol.h
is the reference)."""
import os
import socket
import struct

MAGIC, VERSION = 0x4354, 2
OP_HELLO, OP_OPEN, OP_CHUNK, OP_READ, OP_LISTDIR, OP_PLAN_SET = 1, 2, 3, 4, 8, 14


class Checks:
    """ok:/FAIL: lines; failed() for the exit status."""

    def __init__(self):
        self.fails = 0

    def __call__(self, cond, what):
        print(("ok: " if cond else "FAIL: ") + what, flush=True)
        if not cond:
            self.fails += 1

    def failed(self):
        return self.fails > 0


def hdr(op, length, rid=1, aux=0):
    return struct.pack("<HBBIII", MAGIC, VERSION, op, length, rid, aux)


def s_str(b):
    return struct.pack("<I", len(b)) + b


def hello(rid=1):
    return hdr(OP_HELLO, 4, rid) + struct.pack("<I", VERSION)


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            return None
        buf += c
    return buf


def recv_frame_n(s):
    """(op, id, aux, payload, descriptors received) or None at EOF; the
    descriptors that ride along (up to a reply's 64) are closed."""
    fds = []
    msg, anc, _, _ = s.recvmsg(16, socket.CMSG_SPACE(64 * 4))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds += list(struct.unpack("%di" % (len(data) // 4), data[: len(data) // 4 * 4]))
    for fd in fds:
        os.close(fd)
    if not msg:
        return None
    rest = recv_exact(s, 16 - len(msg)) if len(msg) < 16 else b""
    if rest is None:
        return None
    _, _, op, length, rid, aux = struct.unpack("<HBBIII", msg + rest)
    payload = recv_exact(s, length) if length else b""
    if payload is None:
        return None
    return op, rid, aux, payload, len(fds)


def recv_frame(s):
    """(op, id, aux, payload) or None at EOF; descriptors that ride along
    are closed."""
    f = recv_frame_n(s)
    return f[:4] if f else None


def err_text(payload):
    if len(payload) < 4:
        return ""
    n = struct.unpack("<I", payload[:4])[0]
    return payload[4 : 4 + n].decode(errors="replace")


def rss_bytes(pid):
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS for pid %s" % pid)


def nfds(pid):
    return len(os.listdir("/proc/%s/fd" % pid))


def cpu_ticks(pid):
    with open("/proc/%s/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime
