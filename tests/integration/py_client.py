"""The tiercache Python binding against a live daemon (run by t_python.sh):
every file of the cold tree read through Client.open() in several ways and
compared with the source, listdir/stat/walk/files against os.*, errors,
threads, fork, and plans (bound lazily: asserted to work only when the
loaded libtiercache has them).

  py_client.py COLD DATASET CHUNK
Prints one "ok: ..." or "FAIL: ..." line per check.
"""
import array
import errno
import io
import os
import threading

import tiercache

from py_common import check, finish, raises, source_bytes, source_files, start

COLD, DS, CHUNK = start(300, "COLD DATASET CHUNK")
CHUNK = int(CHUNK)


def src(rel):
    return source_bytes(COLD, rel)


tc = tiercache.Client()
rels = source_files(COLD)

# ---- reading ----
bad = [r for r in rels if tc.open(DS + "/" + r).read() != src(r)]
check(not bad, "read() of all %d files equals the source%s" % (len(rels), " (bad: %s)" % bad if bad else ""))

bad = []
for r in rels:
    want = src(r)
    with tc.open(DS + "/" + r) as f:
        got = bytearray()
        piece = bytearray(100003)  # odd size: pieces straddle chunk boundaries
        mv = memoryview(piece)
        while True:
            n = f.readinto(mv)
            if n == 0:
                break
            got += mv[:n]
        if got != want or f.tell() != len(want):
            bad.append(r)
check(not bad, "readinto(memoryview) loop equals the source for every file")

want = src("multi.bin")
with tc.open(DS + "/multi.bin") as f:
    check(f.readable() and f.seekable() and not f.writable(), "readable, seekable, not writable")
    check(f.size == len(want) and f.stat().st_size == len(want) and f.chunk_size == CHUNK,
          "File.size and chunk_size from fstat")
    ok = True
    for off in (0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 7, len(want) - 1, len(want), len(want) + 10):
        for n in (0, 1, 7, CHUNK + 3):
            if f.pread(n, off) != want[off:off + n]:
                ok = False
                print("  pread(%d, %d) differs" % (n, off))
    check(ok, "pread at chunk boundaries and past EOF")
    check(f.tell() == 0, "pread does not move the position")
    buf = bytearray(CHUNK + 10)
    check(f.preadinto(memoryview(buf)[5:], CHUNK - 3) == CHUNK + 5 and buf[5:] == want[CHUNK - 3:2 * CHUNK + 2],
          "preadinto a memoryview slice lands the bytes in the caller's buffer")
    check(f.seek(CHUNK - 2) == CHUNK - 2 and f.read(4) == want[CHUNK - 2:CHUNK + 2], "seek SET + read across a chunk")
    check(f.seek(10, io.SEEK_CUR) == CHUNK + 12 and f.read(3) == want[CHUNK + 12:CHUNK + 15], "seek CUR")
    check(f.seek(-5, io.SEEK_END) == len(want) - 5 and f.read() == want[-5:], "seek END + read to EOF")
    check(f.read(10) == b"" and f.read() == b"", "read at EOF returns b''")
    check(f.seek(len(want) + 100) == len(want) + 100 and f.read(1) == b"", "seek past EOF then read gives b''")
    e = raises(OSError, f.seek, -1)
    check(e is not None and e.errno == errno.EINVAL, "seek before the start: OSError EINVAL")
    a = array.array("I", bytes(4 * 1000))
    f.seek(CHUNK - 100)
    check(f.readinto(a) == 4000 and a.tobytes() == want[CHUNK - 100:CHUNK + 3900],
          "readinto a non-byte buffer (array of uint32) fills its bytes")
    check(raises(TypeError, f.readinto, b"immutable") is not None, "readinto bytes: TypeError")
    f.seek(0)
    check(f.read(0) == b"" and f.tell() == 0, "read(0)")
check(f.closed and raises(ValueError, f.read) is not None, "context manager closes; read after close: ValueError")

with io.BufferedReader(tc.open(DS + "/with space/a file.txt")) as f:
    check(f.readline() == b"hello tiercache\n", "io.BufferedReader readline over a File (name with spaces)")
with tc.open(DS + "/empty.bin") as f:
    check(f.read() == b"" and f.size == 0, "empty file reads b''")
with io.TextIOWrapper(io.BufferedReader(tc.open(DS + "/with space/a file.txt")), encoding="utf-8") as f:
    check(f.read() == "hello tiercache\n", "io.TextIOWrapper over a File")

# ---- listing ----
def norm_walk(it, strip):
    return sorted((d[strip:], sorted(ds), sorted(fs)) for d, ds, fs in it)


check(sorted(tc.listdir(DS)) == sorted(os.listdir(COLD)), "listdir(dataset root) equals os.listdir")
check(sorted(tc.listdir(DS + "/sub")) == sorted(os.listdir(COLD + "/sub")), "listdir(subdir)")
ents = {e.name: e for e in tc.scandir(DS + "/sub")}
check(ents["deeper"].is_dir() and ents["s3.dat"].is_file() and ents["s3.dat"].stat().st_size == 3 * 977
      and ents["s3.dat"].path == DS + "/sub/s3.dat", "scandir entries: type, size, path")
check(norm_walk(tc.walk(DS), len(DS)) == norm_walk(os.walk(COLD), len(COLD)), "walk(dataset) equals os.walk")
bottom = [d for d, _, _ in tc.walk(DS, topdown=False)]
check(bottom.index(DS + "/sub/deeper") < bottom.index(DS + "/sub") < bottom.index(DS),
      "walk(topdown=False) yields children first")
pruned = []
for d, dirs, _ in tc.walk(DS):
    pruned.append(d)
    if d == DS:
        dirs[:] = [x for x in dirs if x != "sub"]
check(DS + "/sub" not in pruned and DS + "/sub/deeper" not in pruned, "walk: pruning dirnames skips subtrees")
check(tc.files(DS) == [DS + "/" + r for r in rels], "files(dataset) is every file, sorted by path bytes")
errs = []
check(list(tc.walk(DS + "/nope", onerror=errs.append)) == [] and len(errs) == 1
      and isinstance(errs[0], FileNotFoundError), "walk of a missing dir calls onerror")

st, ost = tc.stat(DS + "/multi.bin"), os.stat(COLD + "/multi.bin")
check(st.is_file() and st.st_size == ost.st_size and st.st_mtime_ns == ost.st_mtime_ns
      and st.chunk_size == CHUNK, "stat(file): size, mtime_ns, chunk size equal the source")
check(tc.stat(DS).is_dir() and tc.stat(DS + "/sub").is_dir(), "stat(dataset), stat(dir): directories")

# ---- errors ----
e = raises(FileNotFoundError, tc.open, DS + "/no/such.bin", errno_=errno.ENOENT)
check(e is not None and isinstance(e, tiercache.Error) and e.detail and e.filename == DS + "/no/such.bin",
      "missing file: FileNotFoundError + tiercache.Error, with detail and filename (%s)" % e)
e = raises(FileNotFoundError, tc.stat, "nodataset/x", errno_=errno.ENOENT)
check(e is not None and e.detail, "missing dataset: FileNotFoundError with detail (%s)" % e)
e = raises(OSError, tc.open, DS + "/../etc/passwd", errno_=errno.EINVAL)
check(e is not None and isinstance(e, tiercache.Error), "'..' in a path: EINVAL (%s)" % e)
check(raises(OSError, tc.open, DS + "//multi.bin", errno_=errno.EINVAL) is not None, "empty component: EINVAL")
check(raises(OSError, tc.open, DS + "/" + "x" * 5000, errno_=errno.ENAMETOOLONG) is not None,
      "path too long: ENAMETOOLONG")
check(raises(IsADirectoryError, tc.open, DS + "/sub") is not None, "open a directory: IsADirectoryError")
check(raises(NotADirectoryError, tc.listdir, DS + "/multi.bin") is not None
      or raises(OSError, tc.listdir, DS + "/multi.bin") is not None, "listdir of a file: OSError")
e = raises(OSError, tc.open, DS + "/multi.bin", "wb", errno_=errno.EROFS)
check(e is not None, "open for writing: EROFS (%s)" % e)
check(raises(OSError, tc.open, DS + "/a\0b", errno_=errno.EINVAL) is not None, "NUL in a path: EINVAL")
check(raises(TypeError, tc.open, 42) is not None, "a path that is not str/bytes: TypeError")

import pickle  # noqa: E402
with tc.open(DS + "/one.bin") as f:
    check(raises(TypeError, pickle.dumps, tc) is not None and raises(TypeError, pickle.dumps, f) is not None,
          "a Client or File cannot be pickled (it would dangle in another process)")

# ---- threads share one client ----
results = {}


def reader(r):
    with tc.open(DS + "/" + r) as f:
        results[r] = f.read()


threads = [threading.Thread(target=reader, args=(r,)) for r in rels]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(all(results[r] == src(r) for r in rels), "%d threads on one Client read the exact bytes" % len(rels))

# ---- fork: an inherited Client and File keep working in the child ----
f = tc.open(DS + "/multi.bin")
head = f.read(10)
pid = os.fork()
if pid == 0:
    ok = (f.read(CHUNK) == want[10:CHUNK + 10] and tc.open(DS + "/sub/s7.dat").read() == src("sub/s7.dat")
          and tc.listdir(DS + "/sub/deeper") == ["big.dat"])
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
check(os.waitstatus_to_exitcode(status) == 0, "forked child reads through the inherited Client and File")
check(f.read() == want[10:] and head == want[:10], "parent's File unaffected by the child")
f.close()

# ---- plans: lazily bound ----
has = tiercache.plan_supported()
print("plan support in the loaded library: %s" % has)
if has:
    try:
        tc.plan(DS, range(len(rels)), job="py-test", epoch=0)
        tc.plan(DS, ["multi.bin", "sub/s1.dat"], job="py-test", append=True)
        tc.plan(DS, [3, 1, 2], job=12345, rank=1, world_size=2)
        tc.cancel_plan(DS, 12345, rank=1)
        tc.cancel_plan(DS, "py-test")
        check(True, "plan by indices, by paths (append), cancel")
    except OSError as e:
        check(False, "plan calls work: %s" % e)
    check(raises(FileNotFoundError, tc.plan, DS, ["no/such/file"], job=1) is not None,
          "plan with a path not in the dataset: FileNotFoundError")
    check(raises(FileNotFoundError, tc.cancel_plan, DS, 999) is not None, "cancel of no plan: FileNotFoundError")
else:
    e = raises(OSError, tc.plan, DS, [0, 1], job="py-test", errno_=errno.ENOSYS)
    check(e is not None and "tiercache_plan_indices" in e.detail, "plan without library support: ENOSYS naming the call")
    check(raises(OSError, tc.cancel_plan, DS, 1, errno_=errno.ENOSYS) is not None, "cancel_plan: ENOSYS")
check(raises(ValueError, tc.plan, DS, [0, -1], job=1) is not None, "negative plan index: ValueError")
check(raises(ValueError, tc.plan, DS, [0], job=1, rank=2, world_size=2) is not None, "rank >= world_size: ValueError")
check(tiercache.job_id("a") == tiercache.job_id(b"a") != tiercache.job_id("b") and tiercache.job_id(7) == 7,
      "job ids: names hash the same in every process")

tc.close()
check(raises(ValueError, tc.listdir, DS) is not None, "closed Client: ValueError")
finish()
