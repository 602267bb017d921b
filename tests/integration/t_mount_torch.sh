# A PyTorch DataLoader with worker processes over an ImageFolder-style tree
# on tiercache-mount reads every sample correctly (Debian's python3-torch,
# /usr/bin/python3), two epochs in shuffled order; and numpy memory-maps a
# file on the mount.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mount.sh"

tc_need_torch

# ImageFolder layout (tc_imagefolder): one directory per class, one nested
tc_config 64M 128M 256K
tc_imagefolder "$T/cold" 40 10
"$PY" -c "import numpy as np; np.save('$T/cold/arr.npy', np.arange(3 * 262144, dtype=np.int64))"
tc_start || exit 1
M=$T/mnt
tcm_mount "$M" ds || exit 1

cat >"$T/loader.py" <<'EOF'
import hashlib, os, signal, sys
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

signal.alarm(300)
root, src = sys.argv[1], sys.argv[2]

class Folder(Dataset):
    """ImageFolder's layout rules: classes are the sorted subdirectories,
    samples every file below each, in sorted order."""
    def __init__(self, top):
        self.classes = sorted(e.name for e in os.scandir(top) if e.is_dir())
        self.samples = []
        for i, c in enumerate(self.classes):
            for d, dirs, files in sorted(os.walk(os.path.join(top, c))):
                dirs.sort()
                for f in sorted(files):
                    self.samples.append((os.path.relpath(os.path.join(d, f), top), i))
        self.top = top
    def __len__(self):
        return len(self.samples)
    def __getitem__(self, k):
        rel, label = self.samples[k]
        with open(os.path.join(self.top, rel), 'rb') as f:
            raw = f.read()
        t = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
        return k, label, len(raw), hashlib.sha256(t.numpy().tobytes()).hexdigest()

mnt = Folder(os.path.join(root, 'train'))
ref = Folder(os.path.join(src, 'train'))
bad = 0
if mnt.samples != ref.samples or mnt.classes != ref.classes:
    print('FAIL: class/sample lists differ')
    bad += 1
want = {}
for k, (rel, label) in enumerate(ref.samples):
    with open(os.path.join(ref.top, rel), 'rb') as f:
        want[k] = hashlib.sha256(f.read()).hexdigest()
for epoch in range(2):
    seen = 0
    loader = DataLoader(mnt, batch_size=8, shuffle=True, num_workers=2,
                        persistent_workers=False)
    for ks, labels, lens, digests in loader:
        for k, label, n, d in zip(ks.tolist(), labels.tolist(), lens.tolist(), digests):
            seen += 1
            if d != want[k] or label != ref.samples[k][1]:
                bad += 1
                print('FAIL: epoch %d sample %s' % (epoch, ref.samples[k][0]))
    print('%s: epoch %d: %d of %d samples read, %d wrong' %
          ('ok' if seen == len(ref) and bad == 0 else 'FAIL', epoch, seen, len(ref), bad))
a = np.load(os.path.join(root, 'arr.npy'), mmap_mode='r')
ok = bool((a == np.arange(3 * 262144, dtype=np.int64)).all())
print('%s: numpy memory-map of a file on the mount' % ('ok' if ok else 'FAIL'))
sys.exit(0 if bad == 0 and ok else 1)
EOF
"$PY" "$T/loader.py" "$M" "$T/cold" >"$T/loader.out" 2>&1
rc=$?
cat "$T/loader.out"
check "DataLoader (2 workers, 2 shuffled epochs) read every sample correctly" [ $rc = 0 ]
check "both epochs reported" [ "$(grep -c '^ok: epoch' "$T/loader.out")" = 2 ]
check "numpy mmap checked" grep -q '^ok: numpy' "$T/loader.out"
check "mount log has no errors" bash -c "! grep -q 'level=error' '$T/mount.log'"
finish
