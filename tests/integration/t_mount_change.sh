# tiercache-mount when a dataset's source changes (daemon revalidate_after
# = 0s): a new open reads the new version at once, even on a mount with long
# attribute timeouts, and the kernel's size follows; a handle opened before
# keeps reading the old version; the kernel page cache is kept across opens
# of one version and dropped for a new one; stat shows the new version after
# attr_timeout, with -o immutable too; a new file appears after `tierctl refresh`, a removed one is
# ENOENT.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

tc_config 64M 64M 256K "revalidate_after = 0s"
mkdir -p "$T/cold"
head -c 700000 /dev/urandom >"$T/cold/f.bin"
head -c 5000 /dev/urandom >"$T/cold/gone.bin"
tc_start || exit 1
S=$T/mnt_short
tcm_mount "$S" -o attr_timeout=1,entry_timeout=1,negative_timeout=0 ds || exit 1
L=$T/mnt_long
tcm_mount "$L" ds || exit 1
I=$T/mnt_imm
tcm_mount "$I" -o immutable,attr_timeout=1,entry_timeout=1 ds || exit 1

cat >"$T/change.py" <<'EOF'
import errno, os, signal, subprocess, sys, time
signal.alarm(120)
S, L, C, TIERCTL, I = sys.argv[1:6]

def check(what, cond):
    print(('ok: ' if cond else 'FAIL: ') + what, flush=True)

def rd(p):
    with open(p, 'rb') as f:
        return f.read()

mtime = [os.stat(C + '/f.bin').st_mtime]

def change(name, data):
    # a new version: new bytes and a clearly newer mtime
    with open(C + '/' + name, 'wb') as f:
        f.write(data)
    mtime[0] += 60
    os.utime(C + '/' + name, (mtime[0], mtime[0]))

def resident(p):
    # fincore opens the file too: an open of the current version
    out = subprocess.run(['fincore', '--bytes', '--noheadings', '--output', 'RES', p],
                         capture_output=True, text=True).stdout.strip()
    return int(out or -1)

v1 = rd(C + '/f.bin')
check('v1 through the short-timeout mount', rd(S + '/f.bin') == v1)
check('v1 through the long-timeout mount', rd(L + '/f.bin') == v1)
r = resident(L + '/f.bin')
check('page cache kept across opens of one version (%d of %d bytes resident)' % (r, len(v1)),
      r >= len(v1))
check('rd(S + "/gone.bin") reads', len(rd(S + '/gone.bin')) == 5000)

fd1 = os.open(S + '/f.bin', os.O_RDONLY)
check('old handle reads v1', os.pread(fd1, len(v1), 0) == v1)
v2 = os.urandom(len(v1))
change('f.bin', v2)
check('same size, new bytes: a new open reads v2', rd(S + '/f.bin') == v2)
check('a handle opened before keeps reading v1', os.pread(fd1, len(v1), 0) == v1)
check('... and the new open still reads v2', rd(S + '/f.bin') == v2)
os.close(fd1)
check('after the old handle closed: v2', rd(S + '/f.bin') == v2)
check('long-timeout mount: a new open reads v2', rd(L + '/f.bin') == v2)

v3 = os.urandom(900000)
change('f.bin', v3)
r = resident(L + '/f.bin')
check('page cache of the old version dropped at the open of a new one (%d resident)' % r, r == 0)
check('grown file, long-timeout mount: a new open reads all of v3', rd(L + '/f.bin') == v3)
check('grown file: the kernel size follows at once', os.stat(L + '/f.bin').st_size == len(v3))
v4 = os.urandom(300000)
change('f.bin', v4)
check('shrunk file, long-timeout mount: reads exactly v4', rd(L + '/f.bin') == v4)
check('shrunk file: the kernel size follows at once', os.stat(L + '/f.bin').st_size == len(v4))

v5 = os.urandom(333333)
change('f.bin', v5)
time.sleep(1.5)
st = os.stat(S + '/f.bin')
check('without an open, stat shows the new size after attr_timeout', st.st_size == len(v5))
check('... and the new mtime', int(st.st_mtime) == int(mtime[0]))
check('... and reads v5', rd(S + '/f.bin') == v5)

check('immutable mount reads the current version', rd(I + '/f.bin') == v5)
v6 = os.urandom(444444)
change('f.bin', v6)
time.sleep(1.5)
check('immutable mount: a new version is read after attr_timeout', rd(I + '/f.bin') == v6)
check('immutable mount: and its size', os.stat(I + '/f.bin').st_size == len(v6))

data = os.urandom(12345)
with open(C + '/new.bin', 'wb') as f:
    f.write(data)
check('new file: unknown before refresh', not os.path.exists(S + '/new.bin'))
subprocess.run([TIERCTL, 'refresh', 'ds'], check=True, capture_output=True)
check('new file: listed after refresh', 'new.bin' in os.listdir(S))
check('new file: readable after refresh', rd(S + '/new.bin') == data)

os.unlink(C + '/gone.bin')
try:
    rd(S + '/gone.bin')
    e = 'OK'
except OSError as x:
    e = errno.errorcode.get(x.errno, str(x.errno))
check('removed file: ENOENT (got %s)' % e, e == 'ENOENT')
EOF
"$PY" "$T/change.py" "$S" "$L" "$T/cold" "$TC_BIN/tierctl" "$I" >"$T/change.out" 2>&1
cat "$T/change.out"
TC_CHECKS=$((TC_CHECKS + $(grep -c '^ok: \|^FAIL: ' "$T/change.out")))
TC_FAILS=$((TC_FAILS + $(grep -c '^FAIL: ' "$T/change.out")))
check "the change script ran to the end" grep -q 'removed file' "$T/change.out"
check "mount log has no errors" bash -c "! grep -q 'level=error' '$T/mount.log'"
finish
