# Helpers for tests that look at tier files when small chunks are items of
# segment files (segment_threshold; docs/architecture.md,
# "Segments"). Sourced after lib.sh.

# seg_flip TIERDIR SRC OFF LEN [AT]: invert the byte AT (default LEN/2)
# of every copy of SRC's bytes [OFF, OFF+LEN) found in TIERDIR's segment
# files: the live item and any dead copy an earlier eviction left behind,
# so the live one is surely hit. Prints the segments changed; fails if no
# copy was found.
seg_flip() {
	python3 - "$@" <<'PY'
import glob, os, sys
tier, src, off, ln = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
at = int(sys.argv[5]) if len(sys.argv) > 5 else ln // 2
with open(src, "rb") as f:
    f.seek(off)
    item = f.read(ln)
found = 0
for seg in sorted(glob.glob(os.path.join(tier, "segments", "seg-*"))):
    data = open(seg, "rb").read()
    pos = data.find(item)
    changed = False
    while pos >= 0:
        with open(seg, "r+b") as f:
            f.seek(pos + at)
            b = f.read(1)
            f.seek(pos + at)
            f.write(bytes([b[0] ^ 0xFF]))
        found += 1
        changed = True
        pos = data.find(item, pos + ln)
    if changed:
        print(seg)
sys.exit(0 if found else 1)
PY
}


# tier_disk_matches TIERDIR USED ITEMS: the bytes the tier's files hold on
# disk equal USED (the daemon's used_bytes) to within a block per item and
# per segment file. A chunk file counts its size; a segment file its data,
# not its holes: the padding between its items (each starts on a 4 KiB
# boundary) and the blocks of dead items given back (punched). The slack is
# each item's last block, counted as data but not in used_bytes.
tier_disk_matches() {
	python3 - "$@" <<'PY'
import os, sys
d, used, items = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
total = nseg = 0
for root, _, names in os.walk(os.path.join(d, "chunks")):
    for n in names:
        total += os.lstat(os.path.join(root, n)).st_size
segdir = os.path.join(d, "segments")
for n in (os.listdir(segdir) if os.path.isdir(segdir) else []):
    if not n.startswith("seg-"):
        continue
    nseg += 1
    fd = os.open(os.path.join(segdir, n), os.O_RDONLY)
    end, off = os.fstat(fd).st_size, 0
    while off < end:
        try:
            s = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            break  # no data past off
        e = os.lseek(fd, s, os.SEEK_HOLE)
        total += e - s
        off = e
    os.close(fd)
ok = used - 4096 * nseg <= total <= used + 4096 * (items + nseg)
if not ok:
    print(f"  {d}: {total} bytes on disk, used_bytes {used}, {items} items, {nseg} segments",
          file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

# tier_disk_ok NAME INDEX: tier_disk_matches for the tier directory $T/NAME
# against the running daemon's status of tier INDEX.
tier_disk_ok() {
	tier_disk_matches "$T/$1" "$(tc_json "s['tiers'][$2]['used_bytes']")" "$(tc_json "s['tiers'][$2]['chunks']")"
}
