"""tiercache.torch against a live daemon (run by t_python_torch.sh): a
DataLoader with 2 fork workers reads every sample over 2 epochs through
tiercache.torch.Dataset with PlanSampler, and gets exactly the source bytes;
the same with DistributedSampler (world size 2 simulated by two samplers);
a sub-directory Dataset (plans by path); pickling; per-worker connections.
Plans are advice: asserted registered only when the loaded libtiercache has
the plan calls, else asserted to warn once and let training go on.

  py_torch.py COLD DATASET
Prints one "ok: ..." or "FAIL: ..." line per check.
"""
import collections
import os
import pickle
import warnings

import torch
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, SequentialSampler

import tiercache
from tiercache.torch import Dataset, PlanSampler

from py_common import check, finish, sha, source_bytes, source_digests, source_files, start

COLD, DS = start(600, "COLD DATASET")
HAS_PLAN = tiercache.plan_supported()
print("plan support in the loaded library: %s" % HAS_PLAN)


class Indexed(Dataset):
    """Items carry their index, a digest, and whether this process reads
    through its own connection."""

    def __getitem__(self, i):
        data = super().__getitem__(i)
        own = self._pid == os.getpid() and self._client is not None
        return i, sha(data), len(data), os.getpid(), own


def collate(batch):
    return batch


rels = source_files(COLD)
want = source_digests(COLD, rels)

ds = Indexed(DS)
check(ds.paths == [DS + "/" + r for r in rels], "Dataset file list: every file, sorted by path bytes (%d)" % len(rels))
check(all(ds[k][1] == want[k] for k in (0, len(ds) // 2, len(ds) - 1)), "Dataset items equal the source in the main process")
main_pid = os.getpid()


def run_epochs(loader, sampler, epochs, expect, label):
    """Read epochs through loader; every index in expect (a Counter per
    epoch) read exactly as often as expected, with the source bytes."""
    bad = 0
    workers = []
    own = True
    for epoch in range(epochs):
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        seen = collections.Counter()
        workers.append(set())
        for batch in loader:
            for i, digest, n, pid, own_conn in batch:
                seen[i] += 1
                workers[-1].add(pid)
                own = own and own_conn
                if digest != want[i]:
                    bad += 1
                    print("  %s epoch %d: %s differs" % (label, epoch, rels[i]))
        check(seen == expect(epoch) and bad == 0,
              "%s epoch %d: %d samples read, all exact" % (label, epoch, sum(seen.values())))
    check(all(main_pid not in w and len(w) == 2 for w in workers) and own,
          "%s: each epoch read in 2 worker processes, each through its own connection (%s)"
          % (label, [len(w) for w in workers]))


def plan_outcome(samplers, caught, label, iters):
    """iters: how many times each sampler was iterated (a list, or one int)."""
    if isinstance(iters, int):
        iters = [iters] * len(samplers)
    if HAS_PLAN:
        check(all(s.plans_registered == n and s.last_error is None for s, n in zip(samplers, iters)),
              "%s: a plan registered once per epoch (%s, %s)"
              % (label, [s.plans_registered for s in samplers], [s.last_error for s in samplers]))
    else:
        warned = [w for w in caught if "could not register the read plan" in str(w.message)]
        check(len(warned) == len(samplers) and all(s.plans_registered == 0 and s.last_error is not None
                                                   for s in samplers),
              "%s: without plan support, one warning per sampler and training went on (%d warnings)"
              % (label, len(warned)))


# 1. shuffled, 2 workers, 2 epochs, plan sampler over RandomSampler
every = collections.Counter(range(len(rels)))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ps = PlanSampler(RandomSampler(ds), ds, job="py-torch")
    check(ps.rank_world() == (0, 1), "plain sampler: rank 0 of 1")
    loader = DataLoader(ds, batch_size=7, sampler=ps, num_workers=2, collate_fn=collate)
    run_epochs(loader, ps, 2, lambda e: every, "RandomSampler+PlanSampler")
plan_outcome([ps], caught, "RandomSampler+PlanSampler", 2)

# 2. DistributedSampler, world size 2 simulated by two samplers
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    inner = [DistributedSampler(ds, num_replicas=2, rank=r, shuffle=True, seed=3) for r in (0, 1)]
    pss = [PlanSampler(s, ds, job="py-torch-ddp") for s in inner]
    check([p.rank_world() for p in pss] == [(0, 2), (1, 2)], "rank/world_size from the wrapped DistributedSampler")
    pss[0].set_epoch(5)
    check(inner[0].epoch == 5 and list(pss[0]) == list(inner[0]), "PlanSampler yields the DistributedSampler's order, set_epoch forwarded")
    pad = collections.Counter()
    per_rank = []
    for r in (0, 1):
        pss[r].set_epoch(1)
        per_rank.append(collections.Counter(iter(inner[r])))
    check(sum(per_rank, collections.Counter()).keys() == every.keys(), "the two ranks cover every sample")
    for r in (0, 1):
        expect = {}
        for e in range(2):
            inner[r].set_epoch(e)
            expect[e] = collections.Counter(iter(inner[r]))
        loader = DataLoader(ds, batch_size=5, sampler=pss[r], num_workers=2, collate_fn=collate)
        run_epochs(loader, pss[r], 2, lambda e, x=expect: x[e], "DistributedSampler rank %d" % r)
plan_outcome(pss, caught, "DistributedSampler", [3, 2])  # rank 0: + the order check

# 3. a sub-directory: plans by path; a batch sampler wrapped; a transform
sub = Dataset(DS + "/train/cat", transform=lambda b: (len(b), sha(b)))
subrels = [r for r in rels if r.startswith("train/cat/")]
check(sub.paths == [DS + "/" + r for r in subrels] and sub.plan_items([1, 0]) == [subrels[1], subrels[0]],
      "sub-directory Dataset: its files; plan items are paths relative to the dataset")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    bs = PlanSampler(torch.utils.data.BatchSampler(SequentialSampler(sub), 4, False), sub, job=77)
    loader = DataLoader(sub, batch_sampler=bs, num_workers=2, collate_fn=collate)
    got = [x for batch in loader for x in batch]
    check(got == [(len(b), sha(b)) for b in (source_bytes(COLD, r) for r in subrels)],
          "sub-directory Dataset with a transform and a wrapped BatchSampler: exact bytes, in order")
plan_outcome([bs], caught, "BatchSampler over a sub-directory", 1)

# 4. pickling drops the connection; the copy opens its own
copy = pickle.loads(pickle.dumps(ds))
check(copy._client is None and copy[3][1] == want[3] and copy._client is not ds._client,
      "a pickled Dataset reconnects and reads")

# 5. a failing plan never stops training: a sampler whose dataset name is wrong
class Wrong(Indexed):
    pass


w = Wrong(DS)
w.dataset = "no-such-dataset"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    pw = PlanSampler(SequentialSampler(w), w, job="x")
    order = list(pw)
    order2 = list(pw)
check(order == order2 == list(range(len(w))) and pw.last_error is not None and len(caught) == 1,
      "plan registration failing: order unchanged, warned once (%s)" % (pw.last_error,))
# 6. torch.distributed, when initialised, gives the rank and world size
import tempfile  # noqa: E402
import torch.distributed as dist  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp, "store"), rank=0, world_size=1)
    pd = PlanSampler(DistributedSampler(ds, num_replicas=2, rank=1), ds, job="dist")
    explicit = PlanSampler(SequentialSampler(ds), ds, job="dist", rank=1, world_size=4)
    check(pd.rank_world() == (0, 1) and explicit.rank_world() == (1, 4),
          "rank/world_size: torch.distributed's when initialised, explicit arguments first")
    dist.destroy_process_group()
finish()
