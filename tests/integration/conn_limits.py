"""Raw-socket clients for t_conn_limits.sh (the transport's limits, #16
items 5, 7, 9). Each subcommand prints "ok: ..." / "FAIL: ..." lines (the
shell turns them into checks) and exits 1 on any failure.

  conn_limits.py emfile SOCK PID N         out of descriptors: no spin, clients turned away
  conn_limits.py chunkflood SOCK PID PATH TCVERIFY COLD
                                           pipelined CHUNKs never read: descriptors bounded
  conn_limits.py listdir SOCK DIR N PID    20 pipelined big LISTDIRs read slowly: all answered
  conn_limits.py hold SOCK N OUT FLAG      open N connections, HELLO on each, report, hold
                                           them until FLAG is gone, report which were closed
  conn_limits.py handle SOCK PATH OUT FLAG one connection holding an open handle
  conn_limits.py metricsflood PORT PID N CAP  N idle TCP connections to the metrics port
"""
import errno
import os
import socket
import struct
import subprocess
import sys
import time

from tc_wire import (OP_CHUNK, OP_HELLO, OP_LISTDIR, OP_OPEN, Checks, connect, cpu_ticks,
                     err_text, hdr, hello, nfds, recv_exact, recv_frame, s_str)

check = Checks()


def open_handle(s, path, rid=1):
    p = s_str(path.encode())
    s.sendall(hdr(OP_OPEN, len(p), rid) + p)
    r = recv_frame(s)
    if r is None or r[2] != 0:
        return None
    return struct.unpack("<Q", r[3][:8])[0]


def cmd_emfile(path, pid, n):
    """Hold connections past the daemon's descriptor limit."""
    n = int(n)
    socks, backlog_full = [], 0
    for _ in range(n):
        for attempt in range(20):
            try:
                socks.append(connect(path, 5))
                break
            except BlockingIOError:
                time.sleep(0.05)  # the listen backlog is full while accepts pause
        else:
            backlog_full += 1
    time.sleep(1.0)

    def classify():
        live, refused, hangup, msgs = [], 0, 0, set()
        for s in socks:
            s.setblocking(False)
            try:
                h = s.recv(16)
            except BlockingIOError:
                live.append(s)
                continue
            except OSError:
                hangup += 1
                continue
            finally:
                s.setblocking(True)
            if not h:
                hangup += 1
                continue
            s.settimeout(2)
            aux = struct.unpack("<HBBIII", h)[5] if len(h) == 16 else -1
            try:
                body = recv_exact(s, struct.unpack("<I", h[4:8])[0]) or b""
            except OSError:
                body = b""
            if aux == errno.EMFILE:
                refused += 1
                msgs.add(err_text(body))
            else:
                hangup += 1
        return live, refused, hangup, msgs

    live, refused, hangup, msgs = classify()
    print("connections: %d live, %d told EMFILE, %d hung up, %d found the backlog full"
          % (len(live), refused, hangup, backlog_full))
    check(len(live) > 0 and len(live) < n, "some connections served, not all (%d of %d)" % (len(live), n))
    check(refused + hangup == len(socks) - len(live), "every other connection was turned away (none left hanging)")
    check(refused > 0 and any("out of file descriptors" in m for m in msgs),
          "turned-away clients are told the daemon is out of descriptors (%s)" % sorted(msgs)[:1])
    # the limit stays hit for 3 s, with a new client every 100 ms: the
    # daemon must not spin
    t0 = cpu_ticks(pid)
    end = time.time() + 3
    extra_refused = 0
    while time.time() < end:
        try:
            s = connect(path, 2)
            s.settimeout(2)
            r = recv_frame(s)
            if r is None or r[2] == errno.EMFILE:
                extra_refused += 1
            s.close()
        except OSError:
            extra_refused += 1
        time.sleep(0.1)
    used = (cpu_ticks(pid) - t0) / os.sysconf("SC_CLK_TCK")
    print("daemon CPU over 3 s at the limit: %.2f s" % used)
    check(used < 1.0, "daemon CPU over 3 s at the descriptor limit < 1 s (%.2f s): no spin" % used)
    check(extra_refused > 10, "clients arriving at the limit are turned away, not left hanging (%d)" % extra_refused)
    # the live ones are really served
    s = live[0]
    s.sendall(hello(5))
    r = recv_frame(s)
    check(r is not None and r[1] == 5 and r[2] == 0, "a connection accepted before the limit is still served")
    for s in socks:
        s.close()


def cmd_chunkflood(path, pid, rel, tcverify, cold):
    base = nfds(pid)
    s = connect(path)
    h = open_handle(s, rel)
    check(h is not None, "OPEN of a resident file")
    # thousands of CHUNK requests, never reading a reply
    one = hdr(OP_CHUNK, 12, 9) + struct.pack("<QI", h, 0)
    s.setblocking(False)
    sent, stalled_since = 0, None
    deadline = time.time() + 20
    while sent < 20000 and time.time() < deadline:
        try:
            s.send(one * 100)
            sent += 100
            stalled_since = None
        except BlockingIOError:
            if stalled_since is None:
                stalled_since = time.time()
            elif time.time() - stalled_since > 2:
                break
            time.sleep(0.01)
    time.sleep(0.5)
    peak = nfds(pid)
    print("pipelined %d CHUNKs; daemon descriptors %d before, %d now" % (sent, base, peak))
    check(sent >= 1000, "thousands of CHUNK requests pipelined (%d)" % sent)
    check(peak < base + 64 + 24, "daemon descriptors stay under base + SERVER_OUTQ_FDS + margin (%d < %d)" % (peak, base + 88))
    # another client is served meanwhile, bytes equal to the source
    bad = []
    for f in sorted(os.listdir(cold)):
        r = subprocess.run([tcverify, "file", "ds/" + f, os.path.join(cold, f)], capture_output=True, timeout=60)
        if r.returncode != 0:
            bad.append(f)
    check(not bad, "another client reads every file meanwhile, bytes equal to the source%s" % (" (bad: %s)" % bad if bad else ""))
    s.close()
    deadline = time.time() + 10
    while nfds(pid) > base + 2 and time.time() < deadline:
        time.sleep(0.1)
    check(nfds(pid) <= base + 2, "descriptors back to the baseline after the flooder closed (%d)" % nfds(pid))


def rss(pid):
    with open("/proc/%s/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1]) * 1024
    return 0


def cmd_listdir(path, d, n, pid):
    n = int(n)
    rss0 = rss(pid)
    peak = rss0
    s = connect(path, 30)
    p = s_str(d.encode()) + struct.pack("<I", 0)
    s.sendall(b"".join(hdr(OP_LISTDIR, len(p), i + 1) + p for i in range(20)))
    got, total = [], 0
    s.settimeout(15)
    try:
        while len(got) < 20:
            h = recv_exact(s, 16)
            if h is None:
                break
            _, _, op, length, rid, aux = struct.unpack("<HBBIII", h)
            body = b""
            while len(body) < length:  # a slow reader: 64 KiB at a time
                c = s.recv(min(65536, length - len(body)))
                if not c:
                    break
                body += c
                peak = max(peak, rss(pid))
                time.sleep(0.002)
            total += 16 + len(body)
            cnt = struct.unpack("<I", body[4:8])[0] if aux == 0 and len(body) >= 8 else -1
            got.append((rid, aux, cnt))
    except socket.timeout:
        print("timed out waiting for reply %d" % (len(got) + 1))
    print("replies: %d, %d bytes; daemon RSS grew by %.1f MiB at most" % (len(got), total, (peak - rss0) / 2**20))
    check(peak - rss0 < 16 << 20, "the daemon queued no more than about SERVER_OUTQ_MAX for them (RSS +%.1f MiB < 16 MiB)" % ((peak - rss0) / 2**20))
    check(total > 8 << 20, "the replies exceed SERVER_OUTQ_MAX (8 MiB) in total (%d bytes)" % total)
    check(len(got) == 20, "all 20 pipelined LISTDIRs answered (%d)" % len(got))
    check([g[0] for g in got] == list(range(1, 21)), "in order")
    counts = set(g[2] for g in got)
    check(all(g[1] == 0 for g in got) and len(counts) == 1 and min(counts) > n // 2,
          "each is the same full page of the %d entries (%s)" % (n, sorted(counts)))


def cmd_hold(path, n, out, flag):
    n = int(n)
    socks, lines = [], []
    for i in range(n):
        try:
            s = connect(path, 5)
            try:
                s.sendall(hello(i + 1))
            except OSError:
                pass  # refused: the daemon hung up already; its reason is still to read
            r = recv_frame(s)
        except OSError as e:
            lines.append("conn %d: error %s" % (i + 1, e))
            continue
        if r is None:
            lines.append("conn %d: eof" % (i + 1))
        elif r[2] == 0:
            lines.append("conn %d: served" % (i + 1))
            socks.append(s)
        else:
            lines.append("conn %d: refused %s %s" % (i + 1, errno.errorcode.get(r[2], r[2]), err_text(r[3])))
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(out + ".tmp", out)
    while os.path.exists(flag):
        time.sleep(0.1)
    closed = 0
    for s in socks:
        s.settimeout(1)
        try:
            closed += s.recv(1) == b""
        except socket.timeout:
            pass
        except OSError:
            closed += 1
    with open(out + ".end.tmp", "w") as f:
        f.write("closed %d of %d\n" % (closed, len(socks)))
    os.rename(out + ".end.tmp", out + ".end")


def cmd_handle(path, rel, out, flag):
    s = connect(path)
    h = open_handle(s, rel)
    open(out, "w").write("open %s\n" % ("ok" if h is not None else "failed"))
    while os.path.exists(flag):
        time.sleep(0.1)
    try:
        s.sendall(hdr(OP_CHUNK, 12, 3) + struct.pack("<QI", h, 0))
        r = recv_frame(s)
        res = "chunk ok" if r is not None and r[2] == 0 else "chunk failed %r" % (r,)
    except OSError as e:
        res = "chunk failed %s" % e
    open(out + ".end", "w").write(res + "\n")


def cmd_metricsflood(port, pid, n, cap):
    port, n, cap = int(port), int(n), int(cap)
    base = nfds(pid)
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    time.sleep(1.0)
    now = nfds(pid)
    print("metrics: %d idle connections; daemon descriptors %d before, %d with them" % (n, base, now))
    check(now <= base + cap + 4, "daemon descriptors bounded by metrics_max_clients (%d <= %d)" % (now, base + cap + 4))
    # a slow request (one byte a second) is cut off as well
    slow = socket.socket()
    slow.settimeout(15)
    deadline = time.time() + 15
    # wait for a free slot: the idle ones go within a few seconds
    cut_at = None
    while time.time() < deadline:
        try:
            slow = socket.create_connection(("127.0.0.1", port), timeout=2)
            slow.sendall(b"G")
            time.sleep(0.3)
            slow.sendall(b"E")
            break
        except OSError:
            time.sleep(0.5)
    t0 = time.time()
    try:
        for c in b"T /metrics HTTP/1.1\r\nHost: x\r\n":
            slow.sendall(bytes([c]))
            time.sleep(1)
    except OSError:
        cut_at = time.time() - t0
    check(cut_at is not None and cut_at < 10,
          "a request sent one byte a second is cut off (after %s s)" % (None if cut_at is None else round(cut_at, 1)))
    # every idle connection was closed by the daemon
    closed = 0
    for s in socks:
        s.settimeout(10)
        try:
            closed += s.recv(1) == b""
        except socket.timeout:
            pass
        except OSError:
            closed += 1
    check(closed == n, "every idle metrics connection was closed by the daemon (%d of %d)" % (closed, n))
    for s in socks:
        s.close()


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
    sys.exit(1 if check.failed() else 0)
