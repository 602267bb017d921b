"""Shared by the Python integration test scripts (py_*.py; each is run by
py_checks in lib_python.sh, which puts client/python on PYTHONPATH and
turns every "ok: ..." / "FAIL: ..." line into a check).

  from py_common import check, finish, ...
  COLD, DS = start(600, "COLD DATASET")

start() sets a time limit and takes the script's arguments; check() prints
one line per check and counts failures; finish() exits 1 if any check
failed. The source tree's files, bytes and digests come from source_files(),
source_bytes() and source_digests(), in the order the binding lists them
(sorted by path bytes), so samples can be compared with the source.
"""
import hashlib
import os
import signal
import sys

failures = 0


def start(seconds, usage):
    """Abort the script after seconds (a hung daemon call fails the test
    instead of hanging it) and return its arguments, as many as usage names;
    a wrong count prints the usage and exits 2."""
    signal.alarm(seconds)
    names = usage.split()
    if len(sys.argv) - 1 != len(names):
        sys.stderr.write("usage: %s %s (got %d arguments)\n" % (os.path.basename(sys.argv[0]), usage,
                                                               len(sys.argv) - 1))
        sys.exit(2)
    return sys.argv[1:]


def check(cond, what):
    """One "ok: what" or "FAIL: what" line; a failure is counted."""
    global failures
    print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failures += 1


def finish():
    """Exit 1 if any check failed, else 0."""
    sys.exit(1 if failures else 0)


def raises(exc, fn, *args, errno_=None, **kw):
    """The exception fn raised if it is an exc (with errno_), else None
    (saying what happened instead)."""
    try:
        fn(*args, **kw)
    except exc as e:
        if errno_ is None or e.errno == errno_:
            return e
        print("  got errno %s: %r" % (e.errno, e))
        return None
    except BaseException as e:
        print("  got %r" % (e,))
        return None
    print("  no exception")
    return None


def source_files(cold):
    """Every file below cold, relative to it, sorted by path bytes (the
    order of Client.files() and Dataset.paths)."""
    out = []
    for d, _, names in os.walk(cold):
        for n in names:
            out.append(os.path.relpath(os.path.join(d, n), cold))
    return sorted(out, key=os.fsencode)


def source_bytes(cold, rel):
    """The bytes of cold/rel."""
    with open(os.path.join(cold, rel), "rb") as f:
        return f.read()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def source_digests(cold, rels):
    """sha() of each of rels' source bytes, in the same order."""
    return [sha(source_bytes(cold, r)) for r in rels]
