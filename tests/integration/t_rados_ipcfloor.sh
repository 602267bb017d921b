# The IPC floor of bench/rados_small.sh (bench/rados_direct --serve / --via,
# bench/lib_ipcfloor.c): a server process reads pieces of RADOS objects
# into a segment file per connection and passes the segment's descriptor;
# readers pread the pieces from it. For each server form (aio, inline,
# sync), 1 and 3 readers, pieces smaller than the objects and a capacity
# small enough that every connection punches its oldest bytes: every piece
# the reader preads has the checksum of what the server read, and the sum
# of all pieces' checksums equals the one computed from the source files.
# The server survives malformed requests (bad magic, lengths out of
# bounds) and leaves no segment file behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_rados.sh"
PP="${RD_PREFIX}ipc/"
SPID=
ipc_stop() {
	if [ -n "$SPID" ]; then
		kill -TERM "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		SPID=
	fi
}
trap 'ipc_stop; rd_cleanup; tc_cleanup' EXIT

CHUNK=65536
mkdir -p "$T/src" "$T/segs"
python3 - "$T/src" <<'PY'
import os, random, sys
r = random.Random(29)
for i in range(36):
    with open(os.path.join(sys.argv[1], "f%02d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(1, 200) * 1024 + r.randint(0, 1023)))
PY
for f in "$T"/src/*; do
	rd_rados put "$PP$(basename "$f")" "$f" || { fail "rados put $f"; finish; }
done
# the sum of the FNV-1a 64 checksums of every CHUNK-byte piece of every file
want=$(python3 - "$T/src" "$CHUNK" <<'PY'
import os, sys
d, chunk = sys.argv[1], int(sys.argv[2])
total = 0
for name in sorted(os.listdir(d)):
    b = open(os.path.join(d, name), "rb").read()
    for o in range(0, len(b), chunk):
        h = 0xcbf29ce484222325
        for c in b[o:o + chunk]:
            h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
        total = (total + h) & 0xffffffffffffffff
print("%016x" % total)
PY
)

rd() { "$TC_BIN/rados_direct" --conf "$CEPH_CONF" --pool "$CEPH_POOL" "$@"; }

# reader N: two repetitions through the server, capacity 2 pieces per
# stream; prints the sums, one per line
reader() {
	rd --prefix "$PP" --chunk $CHUNK --streams "$1" --reps 2 --via "$T/ipc.sock" --verify \
		--segment $(($1 * 2 * CHUNK)) >"$T/reader.out" 2>&1 || { cat "$T/reader.out"; return 1; }
	grep -o 'sum [0-9a-f]*' "$T/reader.out" | cut -d' ' -f2
}

for mode in aio inline sync; do
	rm -f "$T/ipc.sock"
	# the binary itself in the background (not the rd function: its
	# subshell's pid would be killed and the server left running)
	"$TC_BIN/rados_direct" --conf "$CEPH_CONF" --pool "$CEPH_POOL" --chunk $CHUNK \
		--serve "$T/ipc.sock" --through "$T/segs" --serve-mode $mode >>"$T/server.log" 2>&1 &
	SPID=$!
	wait_until 30 test -S "$T/ipc.sock"
	for n in 1 3; do
		sums=$(reader $n)
		check "$mode, $n reader(s): every piece's bytes equal the source (2 repetitions)" \
			[ "$sums" = "$want"$'\n'"$want" ]
	done
	# malformed requests: bad magic, a length over the server's chunk, an
	# object name over the bound; the server drops them and keeps serving
	python3 - "$T/ipc.sock" "$CHUNK" <<'PY'
import socket, struct, sys
path, chunk = sys.argv[1], int(sys.argv[2])
magic = 0x74636970
for hdr in (struct.pack("<IIIIQQ", 0xdeadbeef, 0, 100, 3, 0, 0) + b"abc",
            struct.pack("<IIIIQQ", magic, 0, chunk + 1, 3, 0, 0) + b"abc",
            struct.pack("<IIIIQQ", magic, 0, 100, 5000, 0, 0) + b"x" * 1100,
            struct.pack("<IIIIQQ", magic, 0, 0, 3, 0, 0) + b"abc"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    try:
        s.sendall(hdr)
        s.settimeout(10)
        assert s.recv(64) == b"", "the server answered a malformed request"
    except ConnectionResetError:
        pass
    s.close()
# a missing object: an error reply, and the connection stays usable
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
s.settimeout(30)
s.sendall(struct.pack("<IIIIQQ", magic, 0, 100, 7, 0, 0) + b"missing")
status = struct.unpack("<iIQQ", s.recv(24))[0]
assert status < 0, status
PY
	check "$mode: malformed requests are dropped, a missing object is an error reply" [ $? = 0 ]
	check "$mode: the server still serves" [ "$(reader 1)" = "$want"$'\n'"$want" ]
	check "$mode: the server is alive" kill -0 "$SPID"
	spid=$SPID
	ipc_stop
	check "$mode: the server has exited" sh -c "! kill -0 $spid 2>/dev/null"
done
check "no segment file is left in the server's directory" [ -z "$(ls -A "$T/segs")" ]
check "no sanitizer report from the server or the readers" \
	sh -c "! grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' '$T/server.log' '$T/reader.out'"
finish
