"""Batched opens from Python against a live daemon (run by
t_python_getitems.sh): Client.open_many / read_many with a mix of good and
failing paths, and tiercache.torch.Dataset.__getitems__ through a
DataLoader (2 fork workers, batch_size 64): every sample equals the source
file and __getitems__ is what the loader called, in every worker.

  py_getitems.py COLD DATASET STATUS_CMD
Prints one "ok: ..." or "FAIL: ..." line per check.
"""
import json
import os
import subprocess

import torch  # noqa: F401  (the DataLoader below)
from torch.utils.data import DataLoader, RandomSampler

import tiercache
from tiercache.torch import Dataset

from py_common import check, finish, sha, source_bytes, source_digests, source_files, start

COLD, DS, TIERCTL = start(300, "COLD DATASET TIERCTL")


def status():
    out = subprocess.run([TIERCTL, "status", "--json"], check=True, capture_output=True).stdout
    return json.loads(out)


def frames():
    return status()["counters"]["open_many_frames"]


rels = source_files(COLD)
want = source_digests(COLD, rels)
c = tiercache.Client()

# ---- open_many / read_many ----
paths = [DS + "/" + r for r in rels[:5]] + [DS + "/no/such", DS, DS + "/" + rels[0]]
got = c.open_many(paths)
check(len(got) == len(paths), "open_many: one entry per path")
check(all(isinstance(f, tiercache.File) for f in got[:5]) and isinstance(got[7], tiercache.File),
      "open_many: Files for the files that exist")
check(isinstance(got[5], FileNotFoundError) and isinstance(got[5], tiercache.Error)
      and got[5].filename == DS + "/no/such", "open_many: FileNotFoundError (a tiercache.Error) for a missing file")
check(isinstance(got[6], IsADirectoryError), "open_many: IsADirectoryError for the dataset root")
check(all(sha(f.read()) == want[k] for k, f in enumerate(got[:5])), "open_many: each File reads the source bytes")
for f in got:
    if isinstance(f, tiercache.File):
        f.close()

s0 = status()
n0 = s0["counters"]["open_many_frames"]
data = c.read_many([DS + "/" + r for r in rels[:64]])
check([sha(d) for d in data] == want[:64], "read_many: 64 files, every byte equal to the source")
s1 = status()
check(s1["counters"]["open_many_frames"] == n0 + 1, "read_many: 64 files in one OPEN_MANY frame")
# the 64 CLOSE frames went in one send (tiercache_close_many): the daemon
# saw every one and holds nothing for this connection any more
check(s1["counters"]["frames_close"] - s0["counters"]["frames_close"] == 64
      and s1["daemon"]["held_bytes"] == 0,
      "read_many: every file closed at the daemon (64 CLOSE frames), nothing held")
mixed = c.read_many([DS + "/" + rels[0], DS + "/missing"], errors="return")
check(sha(mixed[0]) == want[0] and isinstance(mixed[1], FileNotFoundError),
      "read_many(errors=\"return\"): bytes, and the error in place of the missing file")
try:
    c.read_many([DS + "/" + rels[0], DS + "/missing"])
    check(False, "read_many: a missing file raises")
except FileNotFoundError as e:
    check(e.filename == DS + "/missing", "read_many: a missing file raises FileNotFoundError naming it")
check(c.read_many([]) == [], "read_many of nothing: []")


# ---- __getitems__ through a DataLoader ----
class Counted(Dataset):
    """Items carry their index and digest; __getitems__ counts its calls."""

    def __getitems__(self, indices):
        data = super().__getitems__(indices)
        return [(i, sha(d), os.getpid(), "batch") for i, d in zip(indices, data)]

    def __getitem__(self, i):
        return (i, sha(super().__getitem__(i)), os.getpid(), "single")


def collate(batch):
    return batch


ds = Counted(DS)
check(ds.__getitems__([0, 1]) == [(0, want[0], os.getpid(), "batch"), (1, want[1], os.getpid(), "batch")],
      "__getitems__ in the main process: the items of __getitem__")
plain = Dataset(DS)
check(plain.__getitems__([3, 0, 3]) == [plain[3], plain[0], plain[3]], "__getitems__ equals __getitem__ item by item")
n0 = frames()
loader = DataLoader(ds, batch_size=64, sampler=RandomSampler(ds), num_workers=2, collate_fn=collate)
seen, bad, pids, kinds = [], 0, set(), set()
for batch in loader:
    for i, digest, pid, kind in batch:
        seen.append(i)
        bad += digest != want[i]
        pids.add(pid)
        kinds.add(kind)
check(sorted(seen) == list(range(len(rels))), "DataLoader: every index once (%d samples)" % len(seen))
check(bad == 0, "DataLoader: every sample equals its source file")
check(kinds == {"batch"}, "DataLoader called __getitems__ for every batch")
check(len(pids) == 2 and os.getpid() not in pids, "DataLoader: read in 2 worker processes")


class Labelled(Dataset):
    """Overrides only __getitem__: its items must stay its own."""

    def __getitem__(self, i):
        return ("label", i, sha(super().__getitem__(i)))


lab = Labelled(DS)
check(lab.__getitems__([2, 5]) == [("label", 2, want[2]), ("label", 5, want[5])],
      "a subclass overriding only __getitem__ keeps its items in batches")
nb = (len(rels) + 63) // 64
check(frames() - n0 == nb, "DataLoader: one OPEN_MANY frame per batch (%d batches, %d frames)" % (nb, frames() - n0))
finish()
