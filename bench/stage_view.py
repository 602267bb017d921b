#!/usr/bin/env python3
"""Stage times of the peer fills of one read (bench/cluster_xfer.sh STAGES=DIR).

    stage_view.py DIR/stages-ROUND.log

Node 1 logs (log_level debug), per peer reply, when the request was sent,
its first byte and its last (op=peer_got), and per peer fill when the miss
started it, when the reply was in and when the fill was published
(op=peer_fill_done). Printed: the median and 90th percentile of each stage
(queued before the send, first byte, body, the worker's check + write +
publish), how many requests were in flight per peer when each ended, and
over the read: the time-weighted mean of peer fills in flight and the share
of time with none in flight (a gap the pipeline did not cover). With the
worker's own times in the log (session 17: work_ns, work_end_ns) the
worker stage is split into pick-up, work and the wait for the loop; and
per file: the share of the read the reader was blocked on a fill it asked
for itself (peer or cold), and how often that chunk landed after one of
its read-ahead siblings (with an upper bound of what landing first would
save). None of it depends on how busy the machine is as much as
throughput does.
"""
import re
import sys
from collections import defaultdict

KV = re.compile(r"(\w+)=(\S+)")


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0.0


def main():
    got, done, cold = {}, {}, {}
    for line in open(sys.argv[1]):
        kv = dict(KV.findall(line))
        if kv.get("op") == "peer_got":
            got[kv["key"]] = kv
        elif kv.get("op") == "peer_fill_done":
            done[kv["key"]] = kv
        elif kv.get("op") == "cold_fill_done":
            cold[kv["key"]] = kv
    st = defaultdict(list)
    depth = []
    spans = []
    for k, d in done.items():
        s, r, e = int(d["start_ns"]), int(d["reply_ns"]), int(d["done_ns"])
        g = got.get(k)
        if g:
            sent, first, end = int(g["sent_ns"]), int(g["first_ns"]), int(g["end_ns"])
            st["queued_before_send"].append((sent - s) / 1e3)
            st["first_byte"].append((first - sent) / 1e3)
            st["body"].append((end - first) / 1e3)
            depth.append(int(g["busy"]) + int(g["queued"]))
        st["worker_write_publish"].append((e - r) / 1e3)
        if "work_ns" in d:
            w0, w1 = int(d["work_ns"]), int(d["work_end_ns"])
            st["  worker_pickup"].append((w0 - r) / 1e3)
            st["  worker_work"].append((w1 - w0) / 1e3)
            st["  worker_to_loop"].append((e - w1) / 1e3)
        st["whole_fill"].append((e - s) / 1e3)
        spans.append((s, e, d.get("prefetch") == "1"))
    if not spans:
        sys.exit("no peer fills in %s" % sys.argv[1])
    print("peer_fills %d" % len(spans))
    for name in ("queued_before_send", "first_byte", "body", "worker_write_publish", "  worker_pickup",
                 "  worker_work", "  worker_to_loop", "whole_fill"):
        v = st[name]
        if not v:
            continue
        print("%-22s median_us %8.0f p90_us %8.0f" % (name, pct(v, 0.5), pct(v, 0.9)))
    if depth:
        print("requests to that peer in flight or queued as each ended: median %d max %d" %
              (pct(depth, 0.5), max(depth)))
    ev = sorted([(s, 1) for s, e, p in spans] + [(e, -1) for s, e, p in spans])
    t0, t1 = ev[0][0], ev[-1][0]
    n, last, area, zero = 0, t0, 0.0, 0.0
    for t, d in ev:
        area += n * (t - last)
        if n == 0:
            zero += t - last
        n += d
        last = t
    span = t1 - t0
    print("fills in flight, time-weighted mean %.2f; none in flight %.2f of %.3f s" %
          (area / span, zero / span, span / 1e9))
    print("of the fills: %d started by a read (the reader waited), %d read ahead" %
          (sum(1 for s in spans if not s[2]), sum(1 for s in spans if s[2])))
    per_file(done, cold)


def per_file(done, cold):
    """The reader's own misses (peer or cold) per file, against the read."""
    fills = [(int(d["start_ns"]), int(d["done_ns"]), d.get("prefetch") == "1", d.get("path"))
             for d in list(done.values()) + list(cold.values())]
    if not fills or fills[0][3] is None:
        return
    span = max(f[1] for f in fills) - min(f[0] for f in fills)  # peer and cold fills
    miss = sorted((s, e) for s, e, p, _ in fills if not p)
    blocked, cs, ce = 0, None, None
    for s, e in miss:  # the union of the misses' spans
        if cs is None or s > ce:
            blocked += (ce - cs) if cs is not None else 0
            cs, ce = s, e
        else:
            ce = max(ce, e)
    blocked += (ce - cs) if cs is not None else 0
    print("the reader was blocked on its own misses %.2f of the read (%d misses, %d of them cold)" %
          (blocked / span, len(miss), sum(1 for d in cold.values() if d.get("prefetch") != "1")))
    byfile = defaultdict(list)
    for f in fills:
        byfile[f[3]].append(f)
    late, save, files = 0, 0, 0
    for fs in byfile.values():
        m = [f for f in fs if not f[2]]
        ahead = [f[1] for f in fs if f[2]]
        if not m or not ahead:
            continue
        files += 1
        first_miss = min(m)
        if first_miss[1] > min(ahead):
            late += 1
            save += first_miss[1] - min(ahead)
    print("files with a miss and read-ahead: %d; the miss landed after a read-ahead sibling in %d "
          "(landing first would save at most %.2f of the read)" % (files, late, save / span))


if __name__ == "__main__":
    main()
