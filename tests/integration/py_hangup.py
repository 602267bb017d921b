"""A client that hangs up without reading (t_hangup_frames.sh): it takes
handles ahead of job JOB's plan (OPEN_AHEAD), then, while the daemon is
stopped (SIGSTOP, so that every frame is in the socket before the daemon
reads any of them), sends a request that wants a reply, 200 RELEASE frames
without reply (more bytes than the daemon's first read buffer), a CLOSE
without reply of every handle (the client used the files), a last request,
and closes its socket; then the daemon continues (SIGCONT).

MODE eof: the client read every reply before: the daemon sees its reply
fail (EPIPE) and then the end of the stream.
MODE reset: a reply is left unread in the client's socket when it closes:
the daemon's socket gets ECONNRESET.
MODE garbage: a frame with a bad header comes after the first half of the
CLOSEs: those before it count, the connection closes at once at it, the
CLOSEs after it do not run (their handles are counted unused).

Prints "handed N" then "sent". usage: py_hangup.py SOCKET JOB PID MODE"""
import os
import select
import signal
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tc_wire as w  # noqa: E402

OP_RELEASE, OP_CLOSE, OP_STAT, OP_CONN_JOB, OP_OPEN_AHEAD = 5, 6, 7, 25, 28
F_NOREPLY = 0x1


def frame(s):
    """(aux, payload); descriptors that ride along are closed."""
    return w.recv_frame_n(s)[2:4]


def ahead_handles(p):
    """The handles of an OPEN_AHEAD reply's records."""
    count = struct.unpack_from("<I", p, 9)[0]
    at, out = 13, []
    for _ in range(count):
        n = struct.unpack_from("<I", p, at)[0]
        at += 4 + n + 4  # path, fresh_ms
        hid, _size, _mtime, _cs, has = struct.unpack_from("<QQqIB", p, at)
        at += 29
        if has:
            at += 4 + 8 + 4 + 8 + 1  # chunk record
        out.append(hid)
    return out


def main():
    sock, job, pid, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    s = w.connect(sock)
    s.sendall(w.hello())
    frame(s)
    s.sendall(w.hdr(OP_CONN_JOB, 13, 2) + struct.pack("<BQI", 1, job, 0xFFFFFFFF))
    aux, p = frame(s)
    if aux:
        print("FAIL: CONN_JOB: " + w.err_text(p))
        return 1
    handles = []
    for i in range(8):
        s.sendall(w.hdr(OP_OPEN_AHEAD, 8, 3 + i) + struct.pack("<II", 64, 0))
        aux, p = frame(s)
        if aux:
            print("FAIL: OPEN_AHEAD: " + w.err_text(p))
            return 1
        got = ahead_handles(p)
        if not got:
            break
        handles += got
    print("handed %d" % len(handles), flush=True)
    if mode == "reset":
        # a reply the client never reads: closing with it unread resets
        s.sendall(w.hello(40))
        select.select([s], [], [], 30)
    blob = w.hello(50)  # wants a reply: the daemon's send fails
    for i in range(200):
        blob += w.hdr(OP_RELEASE, 12, 100 + i, F_NOREPLY) + struct.pack("<QI", 0, 0)
    half = len(handles) // 2
    for i, hid in enumerate(handles):
        if mode == "garbage" and i == half:
            blob += b"\xde\xad" + b"\x00" * 14
        blob += w.hdr(OP_CLOSE, 8, 1000 + i, F_NOREPLY) + struct.pack("<Q", hid)
    path = b"ds/nothing"
    blob += w.hdr(OP_STAT, 4 + len(path), 5000) + w.s_str(path)
    os.kill(pid, signal.SIGSTOP)
    try:
        s.sendall(blob)
        s.close()
    finally:
        os.kill(pid, signal.SIGCONT)
    print("sent", flush=True)
    return 0


sys.exit(main())
