"""OPEN_AHEAD's stride on the wire (t_open_ahead_many.sh): malformed
strides (index past workers, 0 workers, a batch past the bound, a partial
triple) get EBADMSG and count as bad frames, a good one is answered.

usage: py_ahead_stride.py SOCKET JOB"""
import errno
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tc_wire as w  # noqa: E402

OP_CONN_JOB, OP_OPEN_AHEAD = 25, 28


def frame(s):
    return w.recv_frame_n(s)[2:4]


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
