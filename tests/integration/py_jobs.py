"""Job tags from Python against a live daemon (run by t_python_jobs.sh):
Client(job=...), set_job / clear_job / ping and their bad input; then a
DataLoader with 2 fork workers reading one epoch through PlanSampler while
another job's plan expects the same files in the same order (registered
later, so untagged reads that tie go to it). Untagged (tag_reads=False)
the other job's plan takes the reads; tagged, the sampler's job gets every
one and the other job none: the tag follows the Dataset into the workers.
Every sample is compared with the source bytes.

  py_jobs.py COLD DATASET TIERCTL
Prints one "ok: ..." or "FAIL: ..." line per check.
"""
import json
import subprocess

from torch.utils.data import DataLoader, SequentialSampler

import tiercache
from tiercache.torch import Dataset, PlanSampler

from py_common import check, finish, raises, sha, source_digests, source_files, start

COLD, DS, TIERCTL = start(600, "COLD DATASET TIERCTL")


def plan(job):
    s = json.loads(subprocess.check_output([TIERCTL, "status", "--json"]))
    for p in s["plans"]:
        if p["job"] == tiercache.job_id(job):
            return p
    return None


# ---- the calls ----
c = tiercache.Client(job="py-a", rank=0)
c.ping()
c.clear_job()
c.set_job("py-a")  # any rank
check(True, "Client(job=, rank=), ping, clear_job, set_job(any rank) succeed")
check(raises(ValueError, c.set_job, "py-a", rank=2**32 - 1) is not None,
      "rank 2**32-1 (reserved for any rank) is refused")
check(raises(ValueError, c.set_job, -1) is not None, "a negative job id is refused")
c.close()

# ---- two jobs, one DataLoader ----
rels = source_files(COLD)
want = source_digests(COLD, rels)


class Digest(Dataset):
    def __getitem__(self, i):
        return i, sha(super().__getitem__(i))


other = tiercache.Client()


class ThenOther(PlanSampler):
    """Registers the other job's plan (same order) right after its own,
    before the first index is handed out: the newer plan wins ties."""

    def _register(self, order):
        super()._register(order)
        other.plan(DS, list(range(len(rels))), job=self.other_job)


def epoch(job, other_job, tag):
    ds = Digest(DS)
    sampler = ThenOther(SequentialSampler(ds), ds, job=job, tag_reads=tag)
    sampler.other_job = other_job
    loader = DataLoader(ds, sampler=sampler, batch_size=4, num_workers=2,
                        multiprocessing_context="fork", collate_fn=lambda b: b)
    bad = seen = 0
    for batch in loader:
        for i, digest in batch:
            seen += 1
            bad += digest != want[i]
    check(seen == len(rels) and bad == 0,
          "%s: %d samples through 2 fork workers, all equal the source" % (job, seen))
    check(sampler.plans_registered == 1 and sampler.last_error is None,
          "%s: the sampler registered its plan" % job)
    return plan(job), plan(other_job)


mine, theirs = epoch("untagged-1", "untagged-2", False)
check(mine is not None and theirs is not None and theirs["read"] > 0 and mine["read"] < mine["chunks"],
      "untagged: the other job's plan took reads (%s of %s; ours %s)"
      % (theirs and theirs["read"], theirs and theirs["chunks"], mine and mine["read"]))

mine, theirs = epoch("tagged-1", "tagged-2", True)
check(mine is not None and mine["read"] == mine["chunks"] and mine["position"] == mine["chunks"],
      "tagged: every read went to the sampler's job (%s of %s, position %s)"
      % (mine and mine["read"], mine and mine["chunks"], mine and mine["position"]))
check(theirs is not None and theirs["read"] == 0 and theirs["position"] == 0,
      "tagged: the other job's plan did not move (read %s, position %s)"
      % (theirs and theirs["read"], theirs and theirs["position"]))
finish()
