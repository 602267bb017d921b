"""PyTorch DataLoader (4 workers, batch 64) over tiercache.torch.Dataset
(__getitems__: one OPEN_MANY per batch), and the same with a PlanSampler
(the epoch's order registered as the job's plan: the workers' batches
open from what is handed ahead, with no OPEN_MANY), against the same
loader over the same files read locally; warm; medians of RUNS epochs, samples/s, ratio,
and the CPU each sample cost: the loader's processes (main and workers:
RUSAGE_CHILDREN counts the workers once an epoch has joined them) and the
daemon's (DAEMON_PID: its /proc stat), which a loaded machine moves far
less than it moves samples/s.

  torch_loader.py DATASET LOCALDIR [RUNS [DAEMON_PID]]
"""
import os
import resource
import statistics
import sys
import time

import torch  # noqa: F401
from torch.utils.data import DataLoader, RandomSampler
from torch.utils.data import Dataset as TorchDataset

from tiercache.torch import Dataset

try:
    from tiercache.torch import PlanSampler
except ImportError:  # an older package (BENCH_PYTHONPATH)
    PlanSampler = None


class Local(TorchDataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return f.read()


def lengths(batch):
    return sum(len(b) for b in batch)


def cpu_self_children():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def cpu_of(pid):
    """CPU seconds of process pid (0 when unknown)."""
    if not pid:
        return 0.0
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def epoch(ds, daemon_pid=0, sampler=None):
    """(samples/s, loader CPU us/sample, daemon CPU us/sample) of one epoch
    (sampler: a PlanSampler, else a shuffle)."""
    loader = DataLoader(ds, batch_size=64, shuffle=sampler is None, sampler=sampler,
                        num_workers=4, collate_fn=lengths, persistent_workers=False)
    c0, d0 = cpu_self_children(), cpu_of(daemon_pid)
    t0 = time.monotonic()
    for _ in loader:
        pass
    dt = time.monotonic() - t0
    n = len(ds)
    return n / dt, (cpu_self_children() - c0) / n * 1e6, (cpu_of(daemon_pid) - d0) / n * 1e6


def main():
    ds_name, local_dir = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    dpid = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    tc = Dataset(ds_name)
    pre = len(ds_name)
    local = Local([local_dir + p[pre:] for p in tc.paths])
    # planned: its own Dataset (the sampler tags its connections with the job)
    tcp = Dataset(ds_name) if PlanSampler else None
    sp = PlanSampler(RandomSampler(tcp), tcp, job="bench-torch-loader") if tcp else None
    epoch(tc)  # warm: resident and in the page cache
    epoch(local)
    e_local, e_tc, e_plan = [], [], []
    for _ in range(runs):
        e_local.append(epoch(local))
        e_tc.append(epoch(tc, dpid))
        if sp:
            e_plan.append(epoch(tcp, dpid, sp))
    r_local, r_tc = [e[0] for e in e_local], [e[0] for e in e_tc]
    ml, mt = statistics.median(r_local), statistics.median(r_tc)
    # each pair ran back to back: the spread of their ratios shows how much
    # the load of the machine moved the result
    pairs = sorted(t / l for l, t in zip(r_local, r_tc))
    print("%d samples, DataLoader 4 workers batch 64, medians of %d epochs" % (len(tc), runs))
    print("local files             %9.0f samples/s" % ml)
    print("tiercache.torch.Dataset %9.0f samples/s  ratio %.2f (goal >= 0.90: %s)"
          % (mt, mt / ml, "met" if mt / ml >= 0.9 else "not met"))
    print("ratio of each pair of epochs: median %.2f, range %.2f-%.2f"
          % (statistics.median(pairs), pairs[0], pairs[-1]))
    cl = statistics.median(e[1] for e in e_local)
    # the daemon's CPU comes in clock ticks (10 ms: 5 us a sample of a
    # 2000-sample epoch): its mean over the epochs, not a median of ticks
    ct, cd = statistics.median(e[1] for e in e_tc), statistics.mean(e[2] for e in e_tc)
    print("cpu/sample: local loader %.1f us; tiercache loader %.1f us + daemon %s"
          % (cl, ct, "%.1f us (ratio %.2f)" % (cd, cl / (ct + cd)) if dpid else "not measured"))
    if not e_plan:
        print("with PlanSampler: skipped (the package has no PlanSampler)")
        return
    mp = statistics.median(e[0] for e in e_plan)
    pp = sorted(p[0] / l for l, p in zip(r_local, e_plan))
    print("with PlanSampler        %9.0f samples/s  ratio %.2f; pairs median %.2f, range %.2f-%.2f"
          % (mp, mp / ml, statistics.median(pp), pp[0], pp[-1]))
    cp, cdp = statistics.median(e[1] for e in e_plan), statistics.mean(e[2] for e in e_plan)
    print("cpu/sample with PlanSampler: loader %.1f us + daemon %s"
          % (cp, "%.1f us (ratio %.2f)" % (cdp, cl / (cp + cdp)) if dpid else "not measured"))


if __name__ == "__main__":
    main()
