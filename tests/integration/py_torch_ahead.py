"""A planned DataLoader's batches opened from what was handed ahead (run by
t_python_torch.sh): tiercache.torch.Dataset with PlanSampler, batch 8, 3
fork workers, 2 epochs; each worker tells the daemon which batches it reads
(tiercache_set_ahead_stride), so it is handed only those files and its
batches (__getitems__ -> read_many -> tiercache_open_many) need no
OPEN_MANY. The shell counts the frames; here every epoch must read each
sample the sampler drew, with the source bytes.

  py_torch_ahead.py COLD DATASET SAMPLER

SAMPLER: "shuffle" (each file once per epoch) or "replace" (drawn with
replacement: files repeat within an epoch, the stride counts samples).
"""
import collections
import os
import warnings

from torch.utils.data import DataLoader, RandomSampler, Sampler

from tiercache.torch import Dataset, PlanSampler

from py_common import check, finish, sha, source_digests, source_files, start

COLD, DS, KIND = start(600, "COLD DATASET SAMPLER")
warnings.simplefilter("ignore", UserWarning)
rels = source_files(COLD)
digest = dict(zip(rels, source_digests(COLD, rels)))


class Recorded(Sampler):
    """The wrapped sampler's order, kept per epoch to compare with."""

    def __init__(self, inner):
        self.inner = inner
        self.orders = []

    def __len__(self):
        return len(self.inner)

    def __iter__(self):
        order = list(iter(self.inner))
        self.orders.append(order)
        return iter(order)


def digests(batch):
    return [sha(b) for b in batch]


ds = Dataset(DS)
check([p[len(DS) + 1:] for p in ds.paths] == rels, "the Dataset lists the source's files")
rec = Recorded(RandomSampler(ds, replacement=KIND == "replace"))
ps = PlanSampler(rec, ds, job="py-torch-ahead-" + KIND)
loader = DataLoader(ds, batch_size=8, sampler=ps, num_workers=3, collate_fn=digests)
for epoch in range(2):
    got = collections.Counter()
    for batch in loader:
        got.update(batch)
    want = collections.Counter(digest[rels[i]] for i in rec.orders[-1])
    check(got == want, "epoch %d: every sample drawn, equal to the source (%d)" % (epoch, sum(got.values())))
    # what the shell may expect of this epoch: DataLoader deals batch b to
    # worker b % 3; a worker is handed each of its samples unless the file
    # is empty (in no plan) or it already holds that file's handle (one out
    # per file and connection): a file's first sample in a worker is sure
    # to be handed; a batch holding any other may send an OPEN_MANY
    order = rec.orders[-1]
    seen = [set() for _ in range(3)]
    sure = 0
    loose = 0
    for b in range(0, len(order), 8):
        w = seen[(b // 8) % 3]
        batch_loose = False
        for i in order[b:b + 8]:
            if os.path.getsize(os.path.join(COLD, rels[i])) == 0 or i in w:
                batch_loose = True
            else:
                sure += 1
            w.add(i)
        loose += batch_loose
    print("samples sure to be handed: %d" % sure)
    print("batches that may open by OPEN_MANY: %d" % loose)
    if KIND == "replace":
        order = rec.orders[-1]
        check(len(set(order)) < len(order), "epoch %d: the draw repeats files (%d distinct of %d)"
              % (epoch, len(set(order)), len(order)))
check(ps.plans_registered == 2, "a plan registered per epoch (%d)" % ps.plans_registered)
finish()
