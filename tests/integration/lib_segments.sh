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

# seg_disk_bytes TIERDIR: bytes of the tier's chunk files and segment files
# (what the daemon counts in the tier's used_bytes: a segment's dead bytes
# stay there until the whole segment is reclaimed)
seg_disk_bytes() {
	find "$1/chunks" "$1/segments" -type f -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}'
}
