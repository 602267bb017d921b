#!/usr/bin/env python3
"""Off-CPU view of one peer read (bench/cluster_xfer.sh SCHED=FILE).

    sched_view.py PERF_DATA NODE1_PID SENDER_PID...

Reads the scheduler's switches and wakeups (perf script) over the read,
from the reader's (epoch_reader) first event to its last, and prints:
- per CPU, the share of the read it was idle;
- per thread group (node 1's loop thread, its other threads, the senders,
  the reader, kernel threads, anything else), the share of the read on a
  CPU, runnable but waiting for one, and asleep;
- the share of the read when no thread of the path (node 1, the senders,
  the reader) was on a CPU or runnable: the whole path waited on something
  else (a timer, the disk, a kernel thread) -- a bubble;
- the share when exactly one thread of the path was running or runnable
  (the stages did not overlap) and which group that was.
"""
import subprocess
import sys
from collections import defaultdict


def events(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm,pid,tid,cpu,time,event,trace"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        # comm  pid/tid [cpu] time: event: trace
        try:
            head, ev, trace = line.split(": ", 2)
        except ValueError:
            continue
        parts = head.split()
        t = float(parts[-1])
        cpu = int(parts[-2].strip("[]"))
        pid, tid = parts[-3].split("/")
        comm = " ".join(parts[:-3])
        kv = {}
        for tok in trace.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                kv[k] = v
        yield comm, int(pid), int(tid), cpu, t, ev.strip(), kv


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: sched_view.py PERF_DATA NODE1_PID SENDER_PID...")
    data, node1, senders = sys.argv[1], int(sys.argv[2]), {int(p) for p in sys.argv[3:]}
    evs = list(events(data))
    tgid = {}
    comm_of = {}
    for comm, pid, tid, *_ in evs:
        tgid[tid] = pid
        comm_of[tid] = comm
    rd = [t for comm, pid, tid, cpu, t, ev, kv in evs if comm.startswith("epoch_reader")]
    if not rd:
        sys.exit("no epoch_reader events in %s" % data)
    t0, t1 = min(rd), max(rd)
    span = t1 - t0

    def group(tid):
        if tid == 0:
            return "idle"
        p = tgid.get(tid, -1)
        c = comm_of.get(tid, "")
        if tid == node1:
            return "node1_loop"
        if p == node1:
            return "node1_other"
        if p in senders:
            return "senders"
        if c.startswith("epoch_reader"):
            return "reader"
        if c.startswith(("kworker", "jbd2", "ksoftirq", "rcu", "migration", "kswapd")):
            return "kernel:" + c.split("/")[0]
        return "other"

    path = {"node1_loop", "node1_other", "senders", "reader"}
    running = {}           # cpu -> (tid, since)
    ready = {}             # tid -> since: woken or preempted, not on a CPU
    on_cpu = defaultdict(float)
    waiting = defaultdict(float)
    waits = defaultdict(int)      # times it waited for a CPU (woken or preempted)
    cpu_idle = defaultdict(float)
    overlap = defaultdict(float)  # number of path threads active -> s
    solo = defaultdict(float)     # the one active group when only one -> s
    seen = set()
    last = t0

    def clip(a, b):
        return max(0.0, min(b, t1) - max(a, t0))

    def advance(t):
        nonlocal last
        if t <= last:
            return
        act = [tid for tid, _ in running.values() if group(tid) in path] + \
              [tid for tid in ready if group(tid) in path]
        overlap[min(len(act), 3)] += t - last
        if len(act) == 1:
            solo[group(act[0])] += t - last
        last = t

    for comm, pid, tid, cpu, t, ev, kv in evs:
        if t > t1:
            break
        if t >= t0:
            advance(t)
        if ev == "sched:sched_wakeup":
            w = int(kv.get("pid", "0"))
            if w and w not in ready and all(r[0] != w for r in running.values()):
                ready[w] = t
        elif ev == "sched:sched_switch":
            prev = int(kv.get("prev_pid", "0"))
            nxt = int(kv.get("next_pid", "0"))
            was = running.get(cpu)
            if was:
                if was[0]:
                    on_cpu[was[0]] += clip(was[1], t)
                    seen.add(was[0])
                else:
                    cpu_idle[cpu] += clip(was[1], t)
            else:
                cpu_idle.setdefault(cpu, 0.0)
            if prev and kv.get("prev_state", "S").startswith("R"):
                ready[prev] = t
            elif prev:
                ready.pop(prev, None)  # a wakeup seen while it still ran
            if nxt in ready:
                since = ready.pop(nxt)
                waiting[nxt] += clip(since, t)
                if since >= t0:
                    waits[nxt] += 1
                seen.add(nxt)
            running[cpu] = (nxt, t)
    advance(t1)
    for cpu, (tid, since) in running.items():
        if tid:
            on_cpu[tid] += clip(since, t1)
        else:
            cpu_idle[cpu] += clip(since, t1)
    for tid, since in ready.items():
        waiting[tid] += clip(since, t1)
    acc = defaultdict(lambda: defaultdict(float))
    nthreads = defaultdict(set)
    for tid in set(on_cpu) | set(waiting):
        g = group(tid)
        acc[g]["on_cpu"] += on_cpu[tid]
        acc[g]["runnable"] += waiting[tid]
        acc[g]["waits"] += waits[tid]
        if on_cpu[tid] or waiting[tid]:
            nthreads[g].add(tid)
    print("window_s %.3f" % span)
    for cpu in sorted(cpu_idle):
        print("cpu%d_idle %.2f" % (cpu, cpu_idle[cpu] / span))
    for g in sorted(acc):
        if g == "idle":
            continue
        a = acc[g]
        print("%-14s threads %2d on_cpu %.2f runnable %.2f (thread-seconds / window); "
              "waits for a CPU %d, mean %.0f us" %
              (g, len(nthreads[g]), a["on_cpu"] / span, a["runnable"] / span, a["waits"],
               1e6 * a["runnable"] / a["waits"] if a["waits"] else 0))
    print("path threads active (on a CPU or runnable): none %.2f one %.2f two %.2f three+ %.2f" %
          (overlap[0] / span, overlap[1] / span, overlap[2] / span, overlap[3] / span))
    print("only one active, which: " + " ".join("%s %.2f" % (g, s / span) for g, s in sorted(solo.items())))


if __name__ == "__main__":
    main()
