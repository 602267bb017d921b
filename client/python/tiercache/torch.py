"""PyTorch integration: a map-style Dataset over a tiercache dataset's files
and PlanSampler, which tells tiercached each epoch's read order.

Importing this module imports torch; ``import tiercache`` alone does not.

    from tiercache.torch import Dataset, PlanSampler
    ds = Dataset("imagenet/train", transform=decode)
    sampler = PlanSampler(DistributedSampler(ds), ds, job="resnet50-run7")
    loader = DataLoader(ds, sampler=sampler, num_workers=8)
    for epoch in range(90):
        sampler.set_epoch(epoch)      # forwarded to the DistributedSampler
        for batch in loader: ...

Processes: the Dataset opens its connection lazily and again in every
process that uses it (DataLoader workers, fork or spawn), so no connection
or file crosses a fork from Python's side; the connection is not pickled.
The sampler runs in the main process and registers the plan on the
Dataset's connection there, which must stay open while the job reads (a plan
ends when its connection has been gone for the daemon's grace period).
While it hands out an epoch's indices the sampler pings the daemon about
once a second: after a daemon restart that re-registers the plan, which
then resumes where the job is.

Job tags: the sampler tags the Dataset with its (job, rank), so every
connection the Dataset opens (in the main process and in each worker)
carries the tag and its reads advance only this job's plan: two jobs whose
plans overlap on one dataset do not move each other's positions.
"""

import logging
import os
import time
import warnings

try:
    import torch.utils.data as _tud
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError("tiercache.torch needs PyTorch (Debian: apt-get install python3-torch): %s" % e) from e

from .client import Client

log = logging.getLogger("tiercache.torch")

_U32_MASK = (1 << 32) - 1


class Dataset(_tud.Dataset):
    """The files under root ("DATASET" or "DATASET/DIR"), one item per file.

    Items are the file's bytes, or transform(bytes) when transform is given.
    The file list (self.paths, "DATASET/PATH" strings) is read once, at
    construction, sorted by path bytes: for a whole dataset, item i is the
    file at plan index i. socket: as for tiercache.Client. job, rank: tag
    every connection the Dataset opens (see tag()).
    """

    def __init__(self, root, transform=None, socket=None, job=None, rank=None):
        root = os.fsdecode(root).strip("/")
        if not root:
            raise ValueError('root must be "DATASET" or "DATASET/DIR", not empty')
        self.root = root
        self.dataset = root.split("/", 1)[0]
        self.transform = transform
        self.socket = socket
        self._client = None
        self._pid = None
        self.job = job
        self.rank = rank
        self.paths = self.client.files(root)

    @property
    def client(self):
        """This process's connection (a new one in a forked or spawned worker),
        tagged with the Dataset's job if it has one."""
        if self._client is None or self._pid != os.getpid():
            self._client = Client(self.socket)
            self._pid = os.getpid()
            self._apply_tag()
        return self._client

    def tag(self, job, rank=None):
        """Tag this process's connection and every one the Dataset opens
        later (DataLoader workers) with (job, rank): their reads then advance
        only that job's plans (rank None: any rank of the job). Advice like
        plans: a daemon without job tags logs at debug level and reads go on
        untagged."""
        self.job, self.rank = job, rank
        if self._client is not None and self._pid == os.getpid():
            self._apply_tag()

    def _apply_tag(self):
        if self.job is None:
            return
        try:
            self._client.set_job(self.job, self.rank)
        except Exception as e:  # advice only
            log.debug("job=%r rank=%r: reads not tagged: %s", self.job, self.rank, e)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_client"] = None
        state["_pid"] = None
        return state

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with self.client.open(self.paths[i]) as f:
            data = f.readall()
        return self.transform(data) if self.transform is not None else data

    def __getitems__(self, indices):
        """The items of a whole batch (PyTorch's DataLoader calls this with
        a batch's indices when the Dataset has it): the same items as
        __getitem__ gives one by one, with the batch's files opened in one
        round trip per 64 (Client.read_many). A file that fails raises its
        error, as __getitem__ would. A subclass that overrides __getitem__
        but not __getitems__ gets its own __getitem__ per item (its items
        stay what it made them)."""
        cls = type(self)
        if cls.__getitem__ is not Dataset.__getitem__ and cls.__getitems__ is Dataset.__getitems__:
            return [self[i] for i in indices]
        if self.job is not None:
            self._stride(len(indices))
        data = self.client.read_many([self.paths[i] for i in indices])
        if self.transform is None:
            return data
        return [self.transform(d) for d in data]

    def _stride(self, n):
        """In a DataLoader worker of a tagged Dataset, tell open-ahead which
        batches this worker reads: DataLoader gives batch b to worker
        b % num_workers, so the worker is handed only the plan's files of
        its own batches. Set from the first batch (the last one of an epoch
        may be shorter). Advice: a library or daemon without it is ignored."""
        if getattr(self, "_stride_pid", None) == os.getpid() or n < 1:
            return
        self._stride_pid = os.getpid()
        info = _tud.get_worker_info()
        if info is None or info.num_workers < 2:
            return
        try:
            self.client.set_ahead_stride(n, info.num_workers, info.id)
        except Exception as e:  # advice only
            log.debug("job=%r: open-ahead stride not set: %s", self.job, e)

    def relpath(self, i):
        """Item i's path relative to the dataset ("train/0001.tar")."""
        return self.paths[i].split("/", 1)[1]

    def plan_items(self, indices):
        """The plan entries for these item indices: the indices themselves
        when the Dataset covers the whole dataset, else relative paths."""
        if self.root == self.dataset:
            n = len(self.paths)
            for i in indices:
                if not -n <= i < n:
                    raise IndexError("sampler index %d out of range for %d files" % (i, n))
            return [i % n for i in indices]
        return [self.relpath(i) for i in indices]


def _flatten(order):
    """Sample indices of a sampler's output (a batch sampler yields lists)."""
    out = []
    for x in order:
        if isinstance(x, (list, tuple)):
            out.extend(int(i) for i in x)
        else:
            out.append(int(x))
    return out


class PlanSampler(_tud.Sampler):
    """Wraps a sampler: each __iter__ draws the wrapped sampler's order for
    the epoch, registers it with tiercached as (job, rank)'s plan, and yields
    it unchanged. set_epoch() is forwarded, so DistributedSampler works as
    usual. A batch sampler may be wrapped too (pass it as batch_sampler=).

    rank/world_size: given, else torch.distributed's when initialised, else
    the wrapped sampler's rank/num_replicas (DistributedSampler), else 0/1.
    job: an int or a name every rank agrees on. client: the connection that
    registers (default: the Dataset's in this process). tag_reads: tag the
    Dataset's connections with (job, rank) (Dataset.tag), so this job's
    reads advance only its own plan.

    A plan is advice: when registering fails (an older daemon or library,
    the daemon busy, ...) the sampler warns once, logs later failures at
    debug level on the "tiercache.torch" logger, and training goes on.
    last_error holds the latest failure (None after a success) and
    plans_registered counts successes.
    """

    def __init__(self, sampler, dataset, job, rank=None, world_size=None, append=False,
                 client=None, tag_reads=True):
        self.sampler = sampler
        self.dataset = dataset
        self.job = job
        self.rank = rank
        self.world_size = world_size
        self.append = append
        self.client = client
        self.last_error = None
        self.plans_registered = 0
        self._warned = False
        self._epoch = None
        self._iters = 0
        self._pinged = 0.0
        if tag_reads and hasattr(dataset, "tag"):
            dataset.tag(job, self.rank_world()[0])

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        self._epoch = epoch
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def epoch(self):
        """The epoch number the next plan is registered with."""
        if self._epoch is not None:
            return self._epoch
        e = getattr(self.sampler, "epoch", None)
        return e if isinstance(e, int) else self._iters

    def rank_world(self):
        """(rank, world_size) the plan is registered for."""
        if self.rank is not None or self.world_size is not None:
            return (self.rank or 0, self.world_size or 1)
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                return dist.get_rank(), dist.get_world_size()
        except ImportError:  # pragma: no cover
            pass
        r = getattr(self.sampler, "rank", None)
        w = getattr(self.sampler, "num_replicas", None)
        if isinstance(r, int) and isinstance(w, int):
            return r, w
        return 0, 1

    def __iter__(self):
        # a generator: nothing is drawn or registered until the first item
        # is asked for (a multi-worker DataLoader calls iter() on a batch
        # sampler twice per epoch and drops the first iterator unused)
        order = list(iter(self.sampler))
        self._register(order)
        self._iters += 1
        for x in order:
            yield x
            now = time.monotonic()
            if now - self._pinged >= 1.0:
                self._pinged = now
                self._ping()

    def _ping(self):
        """Reconnect if the daemon restarted: the library then registers the
        plan again and the daemon resumes it where the job is."""
        try:
            client = self.client if self.client is not None else self.dataset.client
            client.ping()
        except Exception as e:  # advice only
            log.debug("job=%r ping failed: %s", self.job, e)

    def _register(self, order):
        rank, world = self.rank_world()
        try:
            items = self.dataset.plan_items(_flatten(order))
            client = self.client if self.client is not None else self.dataset.client
            client.plan(self.dataset.dataset, items, job=self.job, rank=rank, world_size=world,
                        epoch=self.epoch() & _U32_MASK, append=self.append)
        except Exception as e:  # advice only: never stop training for it
            self.last_error = e
            if not self._warned:
                self._warned = True
                warnings.warn("tiercache: could not register the read plan of job %r rank %d "
                              "on %s (reads work, without prefetch): %s"
                              % (self.job, rank, self.dataset.dataset, e), RuntimeWarning,
                              stacklevel=3)
            else:
                log.debug("job=%r rank=%d dataset=%s plan not registered: %s", self.job, rank,
                          self.dataset.dataset, e)
            return
        self.last_error = None
        self.plans_registered += 1
