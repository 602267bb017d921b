"""A planned DataLoader's batches opened from what was handed ahead (run by
t_python_torch.sh): tiercache.torch.Dataset with PlanSampler, batch 8, 3
fork workers, 2 epochs; each worker tells the daemon which batches it reads
(tiercache_set_ahead_stride), so it is handed only those files and its
batches (__getitems__ -> read_many -> tiercache_open_many) need no
OPEN_MANY. The shell counts the frames; here every epoch must read every
sample exactly once with the source bytes.

  py_torch_ahead.py COLD DATASET
"""
import collections
import warnings

from torch.utils.data import DataLoader, RandomSampler

from tiercache.torch import Dataset, PlanSampler

from py_common import check, finish, sha, source_digests, source_files, start

COLD, DS = start(600, "COLD DATASET")
warnings.simplefilter("ignore", UserWarning)
rels = source_files(COLD)
want = collections.Counter(source_digests(COLD, rels))


def digests(batch):
    return [sha(b) for b in batch]


ds = Dataset(DS)
ps = PlanSampler(RandomSampler(ds), ds, job="py-torch-ahead")
loader = DataLoader(ds, batch_size=8, sampler=ps, num_workers=3, collate_fn=digests)
for epoch in range(2):
    got = collections.Counter()
    for batch in loader:
        got.update(batch)
    check(got == want, "epoch %d: every sample once, equal to the source (%d)" % (epoch, sum(got.values())))
check(ps.plans_registered == 2, "a plan registered per epoch (%d)" % ps.plans_registered)
finish()
