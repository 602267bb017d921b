"""Loading libtiercache with ctypes and declaring its C signatures.

The library is found, in order: $TIERCACHE_LIBRARY (a path), a copy next to
this package, the library directory recorded by ``make install`` (in
_install.py), the dynamic loader's search (ctypes.util.find_library), and
finally the plain soname. Loading is deferred to the first Client so that
``import tiercache`` works on a machine without the library.

The plan calls (tiercache_plan_*) are looked up when first called, not at
load: a library built before plans existed still serves reads.
"""

import ctypes
import os
import threading

SONAME = "libtiercache.so.0"
LIBRARY_ENV = "TIERCACHE_LIBRARY"

TIERCACHE_FILE = 1
TIERCACHE_DIR = 2
PLAN_APPEND = 0x1
OWNER_NONE = 0xFFFFFFFF  # TIERCACHE_OWNER_NONE: no owner reported
PLAN_JOB = 0x2  # the whole job's order; rank r reads entries i % world_size == r


class LibraryNotFoundError(ImportError):
    """libtiercache could not be loaded: the message lists where we looked."""


class c_stat(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("size", ctypes.c_uint64),
        ("mtime_ns", ctypes.c_int64),
        ("chunk_size", ctypes.c_uint32),
        ("mode", ctypes.c_uint32),
        ("uid", ctypes.c_uint32),
        ("gid", ctypes.c_uint32),
    ]


class c_dirent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("size", ctypes.c_uint64),
        ("mtime_ns", ctypes.c_int64),
        ("name", ctypes.c_char * 256),
        ("mode", ctypes.c_uint32),
        ("uid", ctypes.c_uint32),
        ("gid", ctypes.c_uint32),
    ]


class c_plan(ctypes.Structure):
    _fields_ = [
        ("job", ctypes.c_uint64),
        ("rank", ctypes.c_uint32),
        ("world_size", ctypes.c_uint32),
        ("epoch", ctypes.c_uint32),
    ]


_P = ctypes.c_void_p
_SIGNATURES = {
    "tiercache_connect": (_P, [ctypes.c_char_p]),
    "tiercache_disconnect": (None, [_P]),
    "tiercache_open": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int]),
    "tiercache_pread": (ctypes.c_ssize_t, [_P, ctypes.c_int, _P, ctypes.c_size_t, ctypes.c_uint64]),
    "tiercache_fstat": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(c_stat)]),
    "tiercache_close": (ctypes.c_int, [_P, ctypes.c_int]),
    "tiercache_stat": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(c_stat)]),
    "tiercache_opendir": (_P, [_P, ctypes.c_char_p]),
    "tiercache_readdir": (ctypes.POINTER(c_dirent), [_P]),
    "tiercache_closedir": (ctypes.c_int, [_P]),
    "tiercache_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "tiercache_last_error": (ctypes.c_char_p, []),
}

_LAZY_SIGNATURES = {
    "tiercache_plan_paths": (
        ctypes.c_int,
        [_P, ctypes.c_char_p, ctypes.POINTER(c_plan), ctypes.POINTER(ctypes.c_char_p),
         ctypes.c_size_t, ctypes.c_uint],
    ),
    "tiercache_plan_indices": (
        ctypes.c_int,
        [_P, ctypes.c_char_p, ctypes.POINTER(c_plan), ctypes.POINTER(ctypes.c_uint64),
         ctypes.c_size_t, ctypes.c_uint],
    ),
    "tiercache_plan_cancel": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint32]),
    "tiercache_set_job": (ctypes.c_int, [_P, ctypes.c_uint64, ctypes.c_uint32]),
    "tiercache_set_ahead_stride": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]),
    "tiercache_clear_job": (ctypes.c_int, [_P]),
    "tiercache_ping": (ctypes.c_int, [_P]),
    "tiercache_set_wait": (ctypes.c_int, [_P, ctypes.c_uint]),
    "tiercache_open_many": (
        ctypes.c_int,
        [_P, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.POINTER(ctypes.c_int),
         ctypes.POINTER(ctypes.c_int), ctypes.c_int],
    ),
    "tiercache_close_many": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_int), ctypes.c_size_t]),
}
RANK_ANY = 0xFFFFFFFF

_lock = threading.Lock()
_lib = None


def _candidates():
    """Where to look, as (description, path-or-name) pairs, in order."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        # an explicit choice is the only candidate: a typo must not
        # silently load some other copy
        return [(LIBRARY_ENV, env)]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [("next to the package", os.path.join(here, SONAME))]
    try:
        from . import _install  # written by `make install`
        out.append(("install prefix", os.path.join(_install.LIBDIR, SONAME)))
    except ImportError:
        pass
    import ctypes.util  # here: it costs half of `import tiercache` (8 ms)
    found = ctypes.util.find_library("tiercache")
    if found:
        out.append(("ctypes.util.find_library", found))
    out.append(("dynamic loader", SONAME))
    return out


def _declare(lib, name, sig):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = sig
    return fn


def load():
    """The loaded library (loaded once per process, thread-safe)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        lib = None
        for what, where in _candidates():
            if os.sep in where and not os.path.exists(where):
                tried.append("%s (%s: no such file)" % (where, what))
                continue
            try:
                lib = ctypes.CDLL(where, use_errno=True)
                break
            except OSError as e:
                tried.append("%s (%s: %s)" % (where, what, e))
        if lib is None:
            raise LibraryNotFoundError(
                "cannot load libtiercache; tried: %s. Set %s to the path of %s "
                "(for a source tree: build/default/lib/%s) or install tiercache "
                "(make install)" % ("; ".join(tried), LIBRARY_ENV, SONAME, SONAME))
        try:
            for name, sig in _SIGNATURES.items():
                _declare(lib, name, sig)
        except AttributeError as e:
            raise LibraryNotFoundError("%s is not a usable libtiercache: %s" % (where, e)) from None
        _lib = lib
        return _lib


_lazy_fns = {}


def lazy(name):
    """The C function `name` declared with its signature, or None when this
    libtiercache does not have it (plans before the daemon supports them).
    Declared once per process: setting argtypes costs more than a call."""
    try:
        return _lazy_fns[name]
    except KeyError:
        pass
    lib = load()
    try:
        fn = _declare(lib, name, _LAZY_SIGNATURES[name])
    except AttributeError:
        fn = None
    _lazy_fns[name] = fn
    return fn
