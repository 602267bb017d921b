"""PyTorch DataLoader (4 workers, batch 64) over tiercache.torch.Dataset
(__getitems__: one OPEN_MANY per batch) against the same loader over the
same files read locally; warm; medians of RUNS epochs, samples/s, ratio.

  torch_loader.py DATASET LOCALDIR [RUNS]
"""
import os
import statistics
import sys
import time

import torch  # noqa: F401
from torch.utils.data import DataLoader
from torch.utils.data import Dataset as TorchDataset

from tiercache.torch import Dataset


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


def epoch(ds):
    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=4, collate_fn=lengths,
                        persistent_workers=False)
    t0 = time.monotonic()
    n = 0
    for _ in loader:
        pass
    n = len(ds)
    return n / (time.monotonic() - t0)


def main():
    ds_name, local_dir = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    tc = Dataset(ds_name)
    pre = len(ds_name)
    local = Local([local_dir + p[pre:] for p in tc.paths])
    epoch(tc)  # warm: resident and in the page cache
    epoch(local)
    r_local, r_tc = [], []
    for _ in range(runs):
        r_local.append(epoch(local))
        r_tc.append(epoch(tc))
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


if __name__ == "__main__":
    main()
