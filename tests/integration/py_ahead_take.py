"""A client that takes descriptors ahead and never opens them
(t_open_ahead.sh): tag the connection with JOB, ask OPEN_AHEAD for up to
64 records until the daemon hands no more, print "handed N", then hold the
connection (and the handles) until HOLDFILE exists.

usage: py_ahead_take.py SOCKET JOB HOLDFILE"""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tc_wire as w  # noqa: E402

OP_CONN_JOB, OP_OPEN_AHEAD = 25, 28


def frame(s):
    """(aux, payload, descriptors received)"""
    return w.recv_frame_n(s)[2:5]


def main():
    sock, job, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = w.connect(sock)
    s.sendall(w.hello())
    frame(s)
    s.sendall(w.hdr(OP_CONN_JOB, 13, 2) + struct.pack("<BQI", 1, job, 0xFFFFFFFF))
    aux, p, _ = frame(s)
    if aux:
        print("FAIL: CONN_JOB: " + w.err_text(p))
        return 1
    total = fds = 0
    for i in range(64):
        s.sendall(w.hdr(OP_OPEN_AHEAD, 8, 3 + i) + struct.pack("<II", 64, 0))
        aux, p, n = frame(s)
        if aux:
            print("FAIL: OPEN_AHEAD: " + w.err_text(p))
            return 1
        count = struct.unpack("<I", p[9:13])[0]
        if count and not total:
            # the first record: str "dataset/path", u32 fresh_ms, ...
            plen = struct.unpack("<I", p[13:17])[0]
            print("first fresh_ms %d" % struct.unpack("<I", p[17 + plen:21 + plen])[0], flush=True)
        total += count
        fds += n
        if not count:
            break
    print("handed %d descriptors %d" % (total, fds), flush=True)
    end = time.time() + 60
    while not os.path.exists(hold) and time.time() < end:
        time.sleep(0.02)
    return 0


sys.exit(main())
