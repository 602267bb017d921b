"""Raw-protocol clients for t_read_memory.sh and t_checksums.sh (no library:
they do what a hostile or broken client would).

  py_flood.py SOCKET readflood DATASET/PATH PID SECONDS
      one connection pipelines streamed READs of 16 MiB each (clamped by the
      daemon) for SECONDS and never reads a reply; prints the daemon's peak
      VmRSS in KiB seen meanwhile ("peak_rss_kib N"), then hangs up.
  py_flood.py SOCKET hangup DATASET/PATH PID ROUNDS
      ROUNDS times: 8 connections each pipeline 2,000 READs, read a few KiB
      of the first reply, hang up. Prints the peak VmRSS.
  py_flood.py SOCKET report DATASET/PATH IDX N
      asks for chunk IDX N times with TC_F_CHUNK_RECHECK (a client claiming
      a bad chunk); prints "replies_ok N".
"""
import os
import socket
import struct
import sys
import threading
import time

from tc_wire import OP_CHUNK, OP_HELLO, OP_OPEN, OP_READ, VERSION, hdr, recv_exact, recv_frame, rss_bytes, s_str

F_CHUNK_RECHECK = 0x4


def connect(sock):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    s.sendall(hdr(OP_HELLO, 4, 1) + struct.pack("<I", VERSION))
    r = recv_frame(s)
    assert r and r[2] == 0, "HELLO failed"
    return s


def open_handle(s, path):
    p = s_str(path.encode())
    s.sendall(hdr(OP_OPEN, len(p), 2) + p)
    r = recv_frame(s)
    assert r and r[2] == 0, "OPEN failed: %r" % (r,)
    return struct.unpack_from("<Q", r[3])[0]


def rss_kib(pid):
    return rss_bytes(pid) // 1024


def read_frames(handle, n, first_id=100):
    one = struct.pack("<QQI", handle, 0, 16 << 20)
    return b"".join(hdr(OP_READ, len(one), first_id + i) + one for i in range(n))


class Peak:
    """The daemon's peak VmRSS, sampled every 20 ms in a thread."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.02)

    def end(self):
        self.stop = True
        self.t.join()
        return self.peak


def readflood(sock, path, pid, seconds):
    peak = Peak(pid)
    s = connect(sock)
    h = open_handle(s, path)
    s.setblocking(False)
    blob = read_frames(h, 29000)  # about 1 MiB of READ frames
    sent, end = 0, time.time() + seconds
    while time.time() < end:
        try:
            n = s.send(blob[sent % len(blob):])
            sent += n
        except BlockingIOError:
            time.sleep(0.05)
    print("sent_bytes %d" % sent)
    print("peak_rss_kib %d" % peak.end())
    s.close()


def hangup(sock, path, pid, rounds):
    peak = Peak(pid)
    for _ in range(rounds):
        conns = []
        for _ in range(8):
            s = connect(sock)
            h = open_handle(s, path)
            s.setblocking(False)
            try:
                s.send(read_frames(h, 2000))
            except BlockingIOError:
                pass
            conns.append(s)
        time.sleep(0.2)
        for s in conns:
            s.setblocking(True)
            s.settimeout(10)
            try:
                recv_exact(s, 4096)
            except OSError:
                pass
            s.close()
    time.sleep(0.5)
    print("peak_rss_kib %d" % peak.end())


def report(sock, path, idx, n):
    s = connect(sock)
    h = open_handle(s, path)
    ok = 0
    for i in range(n):
        p = struct.pack("<QI", h, idx)
        s.sendall(hdr(OP_CHUNK, len(p), 1000 + i, F_CHUNK_RECHECK) + p)
        r = recv_frame(s)
        if r and r[2] == 0:
            ok += 1
    print("replies_ok %d" % ok)
    s.close()


def main():
    sock, what = sys.argv[1], sys.argv[2]
    if what == "readflood":
        readflood(sock, sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    elif what == "hangup":
        hangup(sock, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif what == "report":
        report(sock, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit("unknown mode " + what)


if __name__ == "__main__":
    main()
