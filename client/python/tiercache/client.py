"""tiercache.Client: datasets through the node's tiercached, from Python.

A thin layer over libtiercache with ctypes. Paths are "DATASET/PATH" as in
the C API (str, bytes or os.PathLike). Every failure is an OSError subclass
(FileNotFoundError, PermissionError, ... as the errno says) that is also a
tiercache.Error, with .errno, .filename and .detail (the daemon's detail,
tiercache_last_error()).

Threads: a Client may be shared by threads; the C calls release the GIL.
fork(): libtiercache gives a child that uses an inherited Client its own
connection and re-opens its files by path; this module keeps no other
per-process state (no locks, no cached descriptors), so a Client and its
open files keep working in DataLoader workers.
"""

import array
import collections
import ctypes
import errno
import io
import operator
import os
import stat as statmod

from . import _lib

_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1


class Error(OSError):
    """Base of every error raised by tiercache; .detail is the daemon's text."""

    detail = ""


_error_classes = {}


def _error_class(err):
    """Error combined with the OSError subclass Python picks for err, so that
    `except FileNotFoundError` and `except tiercache.Error` both work."""
    cls = _error_classes.get(err)
    if cls is None:
        builtin = type(OSError(err, ""))
        if builtin is OSError:
            cls = Error
        else:
            cls = type(builtin.__name__, (Error, builtin), {"__module__": __name__})
        _error_classes[err] = cls
    return cls


def make_error(err, message, path=None, detail=""):
    """An Error for errno err: message, then the detail in parentheses."""
    text = "%s (%s)" % (message, detail) if detail else message
    e = _error_class(err)(err, text) if path is None else _error_class(err)(err, text, path)
    e.detail = detail
    return e


def _fail(path=None):
    """The error of the libtiercache call that just failed on this thread."""
    lib = _lib.load()
    err = ctypes.get_errno() or errno.EIO
    detail = (lib.tiercache_last_error() or b"").decode("utf-8", "replace")
    message = (lib.tiercache_strerror(err) or b"").decode("utf-8", "replace")
    return make_error(err, message, None if path is None else os.fsdecode(path), detail)


def _path(path):
    """path as the C API wants it (bytes); TypeError for anything else."""
    p = os.fsencode(path)
    if b"\0" in p:
        raise make_error(errno.EINVAL, "Invalid argument", os.fsdecode(path),
                         "a path cannot contain a NUL byte")
    return p


def job_id(job):
    """A plan's 64-bit job id: an int as is, a str or bytes hashed (blake2b),
    so every process of a job derives the same id from the job's name."""
    if isinstance(job, str):
        job = job.encode("utf-8")
    if isinstance(job, (bytes, bytearray)):
        import hashlib  # only for names: 2 ms of every import otherwise
        return int.from_bytes(hashlib.blake2b(bytes(job), digest_size=8).digest(), "big")
    j = operator.index(job)
    if not 0 <= j <= _U64_MAX:
        raise ValueError("job id %d is not in 0..2**64-1 (or pass a name: str)" % j)
    return j


def plan_supported():
    """True when the loaded libtiercache has the plan calls."""
    return _lib.lazy("tiercache_plan_indices") is not None


class StatResult(collections.namedtuple("StatResult", "type size mtime_ns chunk_size mode uid gid",
                                        defaults=(None, None, None))):
    """What tiercache knows of a file or directory, with os.stat_result-like
    names (st_size, st_mtime, st_mtime_ns, st_mode, st_uid, st_gid) for code
    that expects them.

    mode: the permission bits (07777) the daemon reports: the source's for a
    dataset with access = source on a local cold directory, else 0o444 (files)
    or 0o555 (directories). uid, gid: the source's owner, or None when the
    daemon reports none ("whoever reads": st_uid / st_gid are then this
    process's, as tiercache-mount shows the mounter)."""

    __slots__ = ()

    @property
    def st_size(self):
        return self.size

    @property
    def st_mtime_ns(self):
        return self.mtime_ns

    @property
    def st_mtime(self):
        return self.mtime_ns / 1e9

    @property
    def st_mode(self):
        if self.type == _lib.TIERCACHE_DIR:
            return statmod.S_IFDIR | (0o555 if self.mode is None else self.mode)
        return statmod.S_IFREG | (0o444 if self.mode is None else self.mode)

    @property
    def st_uid(self):
        return os.getuid() if self.uid is None else self.uid

    @property
    def st_gid(self):
        return os.getgid() if self.gid is None else self.gid

    @property
    def st_blksize(self):
        return self.chunk_size

    def is_dir(self):
        return self.type == _lib.TIERCACHE_DIR

    def is_file(self):
        return self.type == _lib.TIERCACHE_FILE


def _owner(v):
    return None if v == _lib.OWNER_NONE else v


def _stat_result(c, chunk_size):
    """A StatResult from a c_stat or c_dirent."""
    return StatResult(c.type, c.size, c.mtime_ns, chunk_size, c.mode & 0o7777,
                      _owner(c.uid), _owner(c.gid))


class DirEntry:
    """One entry of Client.scandir(), like os.DirEntry: name, path, is_dir(),
    is_file(), stat() (the listing's data: no extra request)."""

    __slots__ = ("name", "path", "_st")

    def __init__(self, name, path, st):
        self.name, self.path, self._st = name, path, st

    def is_dir(self):
        return self._st.is_dir()

    def is_file(self):
        return self._st.is_file()

    def stat(self):
        return self._st

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return "<tiercache.DirEntry %r>" % self.name


class File(io.RawIOBase):
    """A read-only binary file of a dataset (Client.open()).

    Unbuffered: every read is one libtiercache pread at the file's position,
    straight into the caller's buffer (readinto) with no intermediate copy.
    pread(n, off) reads at an offset without moving the position. Wrap in
    io.BufferedReader for many tiny reads.
    """

    def __init__(self, client, path, handle, size, mtime_ns, chunk_size):
        super().__init__()
        self._client = client
        self._h = handle
        self._pos = 0
        self.name = path
        self.mode = "rb"
        self.size = size
        self.mtime_ns = mtime_ns
        self.chunk_size = chunk_size

    def __repr__(self):
        return "<tiercache.File name=%r size=%d%s>" % (
            self.name, self.size, " closed" if self.closed else "")

    def __reduce__(self):
        raise TypeError("a tiercache.File cannot be pickled: open it again in the other process")

    def readable(self):
        self._checkClosed()
        return True

    def seekable(self):
        self._checkClosed()
        return True

    def writable(self):
        self._checkClosed()
        return False

    def tell(self):
        self._checkClosed()
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        self._checkClosed()
        offset = operator.index(offset)
        if whence == io.SEEK_SET:
            base = 0
        elif whence == io.SEEK_CUR:
            base = self._pos
        elif whence == io.SEEK_END:
            base = self.size
        else:
            raise ValueError("whence must be io.SEEK_SET, io.SEEK_CUR or io.SEEK_END, not %r" % (whence,))
        if base + offset < 0:
            raise make_error(errno.EINVAL, "Invalid argument", self.name,
                             "seek to %d, before the start of the file" % (base + offset))
        self._pos = base + offset
        return self._pos

    def _tc(self):
        self._checkClosed()
        tc = self._client._tc
        if tc is None:
            raise ValueError("I/O on a file of a closed tiercache.Client")
        return tc

    def _pread_into(self, mv, off):
        """Read len(mv) bytes at off into the writable byte memoryview mv."""
        n = len(mv)
        if n == 0:
            return 0
        tc = self._tc()
        dst = (ctypes.c_char * n).from_buffer(mv)
        r = _lib.load().tiercache_pread(tc, self._h, dst, n, off)
        if r < 0:
            raise _fail(self.name)
        return r

    @staticmethod
    def _bytes_view(b):
        mv = memoryview(b)
        if mv.readonly:
            raise TypeError("readinto() needs a writable buffer, not %s" % type(b).__name__)
        return mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv

    def readinto(self, b):
        """Fill b (any writable contiguous buffer: bytearray, memoryview,
        numpy array, ...) from the position; returns the count (0 at EOF)."""
        mv = self._bytes_view(b)
        r = self._pread_into(mv, self._pos)
        self._pos += r
        return r

    def preadinto(self, b, offset):
        """readinto at offset, without moving the position."""
        if offset < 0:
            raise ValueError("negative offset %d" % offset)
        return self._pread_into(self._bytes_view(b), offset)

    def pread(self, n, offset):
        """Up to n bytes at offset (fewer only at EOF), position unchanged."""
        if n < 0 or offset < 0:
            raise ValueError("pread(n=%d, offset=%d): both must be >= 0" % (n, offset))
        n = max(0, min(n, self.size - offset))
        if n == 0:
            return b""
        if _new_bytes is not None:
            # read straight into a new bytes object: one pass over the
            # data, where bytearray + bytes() would touch it three times
            data = _new_bytes(None, n)
            r = _lib.load().tiercache_pread(self._tc(), self._h, _bytes_data(data), n, offset)
            if r < 0:
                raise _fail(self.name)
            return data if r == n else data[:r]
        buf = bytearray(n)
        r = self._pread_into(memoryview(buf), offset)
        del buf[r:]
        return bytes(buf)

    def read(self, size=-1):
        self._checkClosed()
        if size is None or size < 0:
            return self.readall()
        data = self.pread(size, self._pos)
        self._pos += len(data)
        return data

    def readall(self):
        self._checkClosed()
        return self.read(max(0, self.size - self._pos))

    def stat(self):
        return StatResult(_lib.TIERCACHE_FILE, self.size, self.mtime_ns, self.chunk_size)

    def close(self):
        if not self.closed:
            tc = self._client._tc
            try:
                if tc is not None:
                    _lib.load().tiercache_close(tc, self._h)
            finally:
                super().close()


class Client:
    """A connection to tiercached.

    socket: the daemon's socket path; None means $TIERCACHE_SOCKET, else
    /run/tiercache/tiercached.sock. Connecting fails at once (ConnectionRefused
    or FileNotFoundError) when no daemon listens.

    job, rank: tag the connection's reads (set_job): they then advance only
    that job's plans (that rank's, unless rank is None).

    load_timeout: seconds an open, stat or listing waits for a dataset still
    doing its first listing (set_wait); None: $TIERCACHE_LOAD_TIMEOUT, else
    600.
    """

    def __init__(self, socket=None, job=None, rank=None, load_timeout=None):
        self._tc = None
        lib = _lib.load()
        tc = lib.tiercache_connect(None if socket is None else _path(socket))
        if not tc:
            where = socket if socket is not None else os.environ.get(
                "TIERCACHE_SOCKET", "/run/tiercache/tiercached.sock")
            raise _fail(where)
        self._tc = tc
        self.socket = socket
        try:
            if job is not None:
                self.set_job(job, rank)
            if load_timeout is not None:
                self.set_wait(load_timeout)
        except BaseException:
            self.close()
            raise

    def __reduce__(self):
        # the connection is a pointer in this process: a copy elsewhere
        # would be a dangling one
        raise TypeError("a tiercache.Client cannot be pickled: create one in each process "
                        "(tiercache.torch.Dataset does)")

    def _check(self):
        if self._tc is None:
            raise ValueError("operation on a closed tiercache.Client")
        return self._tc

    def close(self):
        """Disconnect. Files opened from this client stop working."""
        tc, self._tc = self._tc, None
        if tc is not None:
            _lib.load().tiercache_disconnect(tc)

    @property
    def closed(self):
        return self._tc is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def open(self, path, mode="rb"):
        """Open "DATASET/PATH" for reading; returns a tiercache.File."""
        if mode not in ("rb", "br", "r"):
            raise make_error(errno.EROFS, "Read-only: tiercache serves datasets for reading only",
                             os.fsdecode(path), 'mode %r; open with mode "rb"' % (mode,))
        tc = self._check()
        lib = _lib.load()
        p = _path(path)
        h = lib.tiercache_open(tc, p, 0)
        if h < 0:
            raise _fail(path)
        st = _lib.c_stat()
        if lib.tiercache_fstat(tc, h, ctypes.byref(st)) < 0:
            e = _fail(path)
            lib.tiercache_close(tc, h)
            raise e
        return File(self, os.fsdecode(p), h, st.size, st.mtime_ns, st.chunk_size)

    def _open_many(self, paths):
        """(encoded paths, handles, errnos) of one tiercache_open_many call."""
        tc = self._check()
        enc = [_path(p) for p in paths]
        n = len(enc)
        if n == 0:
            return enc, [], []
        fn = _lib.lazy("tiercache_open_many")
        if fn is None:
            raise make_error(errno.ENOSYS, "Function not implemented", None,
                             "the loaded libtiercache has no tiercache_open_many")
        hs = (ctypes.c_int * n)()
        errs = (ctypes.c_int * n)()
        if fn(tc, (ctypes.c_char_p * n)(*enc), n, hs, errs, 0) < 0:
            raise _fail()
        return enc, list(hs), list(errs)

    def open_many(self, paths):
        """Open many "DATASET/PATH" files with one round trip per 64 of them
        (tiercache_open_many). Returns a list in the order of paths: a
        tiercache.File for each file opened, and for each one that could not
        be, its error (a tiercache.Error, the OSError subclass its errno
        names: FileNotFoundError, PermissionError, ...), returned, not
        raised. Raises only if nothing could be asked (daemon unreachable,
        bad arguments). Close the Files you get (or use them in a with)."""
        enc, hs, errs = self._open_many(paths)
        lib = _lib.load()
        tc = self._tc
        out = []
        for p, h, err in zip(enc, hs, errs):
            name = os.fsdecode(p)
            if h < 0:
                out.append(make_error(err, os.strerror(err), name))
                continue
            st = _lib.c_stat()
            if lib.tiercache_fstat(tc, h, ctypes.byref(st)) < 0:
                out.append(_fail(p))
                lib.tiercache_close(tc, h)
                continue
            out.append(File(self, name, h, st.size, st.mtime_ns, st.chunk_size))
        return out

    def read_many(self, paths, errors="raise"):
        """The whole bytes of each "DATASET/PATH", opened with one round trip
        per 64 files (open_many) and read through the descriptors that came
        with the reply. Returns a list of bytes in the order of paths.
        errors="raise" (the default): if any file fails, raise the error of
        the first that did (its .filename is the path), after closing every
        file; errors="return": that file's entry is its error instead (a
        tiercache.Error, not raised)."""
        if errors not in ("raise", "return"):
            raise ValueError('errors must be "raise" or "return", not %r' % (errors,))
        # no File objects on this path: per file one fstat and one pread
        # straight into a new bytes object, and one send closes the batch
        enc, hs, errs = self._open_many(paths)
        lib = _lib.load()
        st = _lib.c_stat()
        stp = ctypes.byref(st)
        out = []
        try:
            for p, h, err in zip(enc, hs, errs):
                if h < 0:
                    out.append(make_error(err, os.strerror(err), os.fsdecode(p)))
                    continue
                tc = self._tc  # another thread may have closed the client
                if tc is None:
                    raise ValueError("I/O on a file of a closed tiercache.Client")
                out.append(_read_whole(lib, tc, h, p, st, stp))
        finally:
            _close_handles(lib, self._tc, [h for h in hs if h >= 0])
        if errors == "raise":
            for x in out:
                if isinstance(x, Exception):
                    raise x
        return out

    def stat(self, path):
        """StatResult of "DATASET/PATH" ("DATASET" alone: its root directory)."""
        tc = self._check()
        st = _lib.c_stat()
        if _lib.load().tiercache_stat(tc, _path(path), ctypes.byref(st)) < 0:
            raise _fail(path)
        return _stat_result(st, st.chunk_size)

    def scandir(self, path):
        """The entries of directory "DATASET[/DIR]" as a list of DirEntry,
        in the daemon's order."""
        tc = self._check()
        lib = _lib.load()
        p = _path(path)
        d = lib.tiercache_opendir(tc, p)
        if not d:
            raise _fail(path)
        top = os.fsdecode(p).rstrip("/")
        out = []
        try:
            while True:
                ctypes.set_errno(0)
                ent = lib.tiercache_readdir(d)
                if not ent:
                    if ctypes.get_errno():
                        raise _fail(path)
                    break
                e = ent.contents
                name = os.fsdecode(e.name)
                out.append(DirEntry(name, top + "/" + name, _stat_result(e, 0)))
        finally:
            lib.tiercache_closedir(d)
        return out

    def listdir(self, path):
        """Names in directory "DATASET[/DIR]"."""
        return [e.name for e in self.scandir(path)]

    def walk(self, top, topdown=True, onerror=None):
        """Like os.walk: (dirpath, dirnames, filenames) for every directory
        under "DATASET[/DIR]", dirpath in "DATASET/DIR" form. With topdown,
        pruning dirnames in place skips those subtrees."""
        top = os.fsdecode(top).rstrip("/")
        try:
            entries = self.scandir(top)
        except OSError as e:
            if onerror is not None:
                onerror(e)
            return
        dirs = [e.name for e in entries if e.is_dir()]
        files = [e.name for e in entries if not e.is_dir()]
        if topdown:
            yield top, dirs, files
        for name in dirs:
            yield from self.walk(top + "/" + name, topdown, onerror)
        if not topdown:
            yield top, dirs, files

    def files(self, top):
        """Every file under "DATASET[/DIR]" as "DATASET/PATH", sorted by path
        bytes: for a whole dataset, position i is the file's plan index."""
        out = []
        for d, _, names in self.walk(top, onerror=_raise):
            out.extend(d + "/" + n for n in names)
        out.sort(key=os.fsencode)
        return out

    def plan(self, dataset, items, job, rank=0, world_size=1, epoch=0, append=False,
             whole_job=False):
        """Register the order in which (job, rank) will read dataset's files:
        items are either paths relative to the dataset ("train/0001.tar") or
        indices into the dataset's sorted file list (Client.files(dataset)).
        Replaces the rank's plan, or extends it with append=True.
        whole_job=True: items are the whole job's sample order, registered
        once by any rank; rank r reads items i with i % world_size == r (as
        torch's DistributedSampler); append=True extends it (entry
        numbers go on from its end). job: an int
        id, or a name (str) hashed to one. Raises Error(ENOSYS) when the
        loaded libtiercache has no plan support."""
        tc = self._check()
        items = list(items)
        ds = _path(dataset)
        p = _lib.c_plan(job_id(job), _u32("rank", rank), _u32("world_size", world_size),
                        _u32("epoch", epoch))
        if not 0 <= p.rank < p.world_size:
            raise ValueError("rank %d is not in 0..world_size-1 (world_size %d)" % (p.rank, p.world_size))
        flags = (_lib.PLAN_APPEND if append else 0) | (_lib.PLAN_JOB if whole_job else 0)
        if items and not hasattr(items[0], "__index__"):
            name = "tiercache_plan_paths"
            enc = [_path(x) for x in items]
            arr = (ctypes.c_char_p * len(enc))(*enc)
        else:
            name = "tiercache_plan_indices"
            try:
                a = array.array("Q", (operator.index(x) for x in items))
            except (OverflowError, TypeError) as e:
                raise ValueError("plan items must be all paths or all indices >= 0: %s" % e) from None
            arr = (ctypes.c_uint64 * len(a)).from_buffer(a) if a else None
        fn = _lib.lazy(name)
        if fn is None:
            raise make_error(errno.ENOSYS, "Function not implemented", os.fsdecode(ds),
                             "this libtiercache has no %s: install a tiercache with plan "
                             "support" % name)
        if fn(tc, ds, ctypes.byref(p), arr, len(items), flags) < 0:
            raise _fail(dataset)

    def _lazy(self, name):
        fn = _lib.lazy(name)
        if fn is None:
            raise make_error(errno.ENOSYS, "Function not implemented", None,
                             "this libtiercache has no %s: install a newer tiercache" % name)
        return fn

    def set_job(self, job, rank=None):
        """Tag this connection's reads with a job: from now on they advance
        only that job's plans, and only rank's plan unless rank is None (any
        rank). Two jobs whose plans overlap then do not move each other's
        positions. The tag follows the connection across daemon restarts and
        into forked children. job: an int id or a name, as for plan()."""
        tc = self._check()
        r = _lib.RANK_ANY if rank is None else _u32("rank", rank)
        if r == _lib.RANK_ANY and rank is not None:
            raise ValueError("rank %d is reserved (any rank): pass rank=None" % rank)
        if self._lazy("tiercache_set_job")(tc, job_id(job), r) < 0:
            raise _fail(None)

    def set_ahead_stride(self, batch, workers, index):
        """This connection is one of `workers` readers of its job's plan that
        take its files `batch` at a time in turn (a DataLoader's workers):
        the daemon hands it ahead only the files of its own batches
        (tiercache_set_ahead_stride). workers=1: every file."""
        if self._lazy("tiercache_set_ahead_stride")(
                self._check(), _u32("batch", batch), _u32("workers", workers),
                _u32("index", index)) < 0:
            raise _fail(None)

    def set_wait(self, seconds):
        """How long an open, stat or listing of a dataset still doing its
        first listing (a daemon that has just started lists RADOS pools in
        the background) waits for it: 0 fails at once (OSError EIO, the
        detail saying it is loading), at most 65535. The default is
        $TIERCACHE_LOAD_TIMEOUT, else 600 s. A call that waited in vain raises
        TimeoutError (ETIMEDOUT)."""
        s = operator.index(seconds)
        if not 0 <= s <= 65535:
            raise ValueError("wait of %d s is not in 0..65535" % s)
        if self._lazy("tiercache_set_wait")(self._check(), s) < 0:
            raise _fail(None)

    def clear_job(self):
        """Remove the job tag: reads advance every plan that expects them."""
        if self._lazy("tiercache_clear_job")(self._check()) < 0:
            raise _fail(None)

    def ping(self):
        """A cheap round trip to the daemon. If it restarted, this reconnects,
        which re-registers the plans this connection registered and re-sends
        its job tag (a process that only plans while others read calls it now
        and then; PlanSampler does)."""
        if self._lazy("tiercache_ping")(self._check()) < 0:
            raise _fail(None)

    def cancel_plan(self, dataset, job, rank=0):
        """Drop (job, rank)'s plan on dataset (FileNotFoundError if none)."""
        tc = self._check()
        fn = _lib.lazy("tiercache_plan_cancel")
        if fn is None:
            raise make_error(errno.ENOSYS, "Function not implemented", os.fsdecode(dataset),
                             "this libtiercache has no tiercache_plan_cancel: install a "
                             "tiercache with plan support")
        if fn(tc, _path(dataset), job_id(job), _u32("rank", rank)) < 0:
            raise _fail(dataset)


def _bytes_api():
    """CPython's PyBytes_FromStringAndSize(NULL, n) and PyBytes_AsString, to
    fill a new bytes object in place before anyone else can see it; (None,
    None) on other Pythons."""
    try:
        api = ctypes.pythonapi
        new, data = api.PyBytes_FromStringAndSize, api.PyBytes_AsString
    except (AttributeError, OSError):
        return None, None
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_char_p, ctypes.c_ssize_t]
    data.restype, data.argtypes = ctypes.c_void_p, [ctypes.py_object]
    return new, data


_new_bytes, _bytes_data = _bytes_api()


def _read_whole(lib, tc, h, p, st, stp):
    """All of open handle h's bytes (path p), or the error (returned, not
    raised): what File.readall() gives at position 0."""
    if lib.tiercache_fstat(tc, h, stp) < 0:
        return _fail(p)
    n = st.size
    if n == 0:
        return b""
    if _new_bytes is not None:
        data = _new_bytes(None, n)
        r = lib.tiercache_pread(tc, h, _bytes_data(data), n, 0)
    else:
        data = bytearray(n)
        r = lib.tiercache_pread(tc, h, (ctypes.c_char * n).from_buffer(data), n, 0)
    if r < 0:
        return _fail(p)
    if _new_bytes is None:
        del data[r:]
        return bytes(data)
    return data if r == n else data[:r]


def _close_handles(lib, tc, hs):
    """Close handles hs of connection tc, in one send when the library has
    tiercache_close_many."""
    if not hs or tc is None:
        return
    fn = _lib.lazy("tiercache_close_many")
    if fn is not None:
        fn(tc, (ctypes.c_int * len(hs))(*hs), len(hs))
        return
    for h in hs:
        lib.tiercache_close(tc, h)


def _u32(what, v):
    v = operator.index(v)
    if not 0 <= v <= _U32_MAX:
        raise ValueError("%s %d is not in 0..2**32-1" % (what, v))
    return v


def _raise(e):
    raise e
