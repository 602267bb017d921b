"""OPEN_AHEAD's stride on the wire (t_open_ahead_many.sh): malformed
strides (index past workers, 0 workers, a batch past the bound, a partial
triple) get EBADMSG and count as bad frames, a good one is answered.

usage: py_ahead_stride.py SOCKET JOB"""
import errno
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tc_wire as w  # noqa: E402

OP_CONN_JOB, OP_OPEN_AHEAD = 25, 28


def frame(s):
    msg, anc, _, _ = s.recvmsg(16, socket.CMSG_SPACE(64 * 4))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            for fd in struct.unpack("%di" % (len(data) // 4), data[: len(data) // 4 * 4]):
                os.close(fd)
    rest = w.recv_exact(s, 16 - len(msg)) if len(msg) < 16 else b""
    _, _, _, length, _, aux = struct.unpack("<HBBIII", msg + rest)
    return aux, w.recv_exact(s, length) if length else b""


def main():
    sock, job = sys.argv[1], int(sys.argv[2])
    s = w.connect(sock)
    s.sendall(w.hello())
    frame(s)
    s.sendall(w.hdr(OP_CONN_JOB, 13, 2) + struct.pack("<BQI", 1, job, 0xFFFFFFFF))
    if frame(s)[0]:
        print("FAIL: CONN_JOB")
        return 1
    bad = 0
    cases = [("index past workers", struct.pack("<III", 8, 4, 4), errno.EBADMSG),
             ("0 workers", struct.pack("<III", 8, 0, 0), errno.EBADMSG),
             ("a batch past 65536", struct.pack("<III", 65537, 2, 0), errno.EBADMSG),
             ("a partial stride", struct.pack("<II", 8, 4), errno.EBADMSG),
             ("a good stride", struct.pack("<III", 8, 4, 1), 0)]
    for i, (what, tail, want) in enumerate(cases):
        body = struct.pack("<II", 4, 0) + tail
        s.sendall(w.hdr(OP_OPEN_AHEAD, len(body), 10 + i) + body)
        aux, _ = frame(s)
        ok = aux == want
        bad += not ok
        print("%s: %s: %s" % ("ok" if ok else "FAIL", what, "EBADMSG" if aux == errno.EBADMSG else aux))
    return 1 if bad else 0


sys.exit(main())
