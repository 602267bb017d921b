"""Send malformed frames to tiercached over its Unix socket and check the
answers. Usage: python3 frames.py SOCKET. Exit 0 if every case behaved."""
import errno
import socket
import struct
import sys

SOCK = sys.argv[1]
MAGIC, VERSION = 0x4354, 2
fails = 0


def hdr(op, length, rid=1, aux=0, magic=MAGIC, version=VERSION):
    return struct.pack("<HBBIII", magic, version, op, length, rid, aux)


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(SOCK)
    return s


def recv_frame(s):
    """Return (op, id, aux, payload) or None at EOF."""
    buf = b""
    while len(buf) < 16:
        chunk = s.recv(16 - len(buf))
        if not chunk:
            return None
        buf += chunk
    magic, ver, op, length, rid, aux = struct.unpack("<HBBIII", buf)
    payload = b""
    while len(payload) < length:
        chunk = s.recv(length - len(payload))
        if not chunk:
            return None
        payload += chunk
    return op, rid, aux, payload


def check(name, cond):
    global fails
    print(("ok: " if cond else "FAIL: ") + name)
    if not cond:
        fails += 1


def hello(s, rid=7):
    s.sendall(hdr(1, 4, rid) + struct.pack("<I", VERSION))
    r = recv_frame(s)
    return r is not None and r[1] == rid and r[2] == 0


def s_str(b):
    return struct.pack("<I", len(b)) + b


# 1. garbage header: error reply (EPROTO) then hang up
s = conn()
s.sendall(b"\xde\xad\xbe\xef" * 4)
r = recv_frame(s)
check("garbage header gets EPROTO", r is not None and r[2] == errno.EPROTO)
check("... and the connection is closed", recv_frame(s) is None)

# 2. oversized frame: EMSGSIZE then hang up
s = conn()
s.sendall(hdr(2, 0x7FFFFFFF))
r = recv_frame(s)
check("oversized frame gets EMSGSIZE", r is not None and r[2] == errno.EMSGSIZE)
check("... and the connection is closed", recv_frame(s) is None)

# 3. unknown op: ENOSYS, connection stays usable
s = conn()
s.sendall(hdr(200, 3, 9) + b"abc")
r = recv_frame(s)
check("unknown op gets ENOSYS with its id", r is not None and r[2] == errno.ENOSYS and r[1] == 9)
check("connection still usable after an unknown op", hello(s))

# 4. truncated payload inside a well-formed frame: EBADMSG
s.sendall(hdr(2, 7, 11) + struct.pack("<I", 100) + b"abc")
r = recv_frame(s)
check("str longer than its frame gets an error", r is not None and r[1] == 11 and r[2] in (errno.EBADMSG, errno.ENAMETOOLONG))
s.sendall(hdr(3, 12, 12) + struct.pack("<QI", 0xFFFF0001, 0))
r = recv_frame(s)
check("CHUNK on a handle that does not exist gets EBADF", r is not None and r[2] == errno.EBADF)
s.sendall(hdr(3, 5, 13) + b"12345")
r = recv_frame(s)
check("CHUNK with a short payload gets EBADMSG", r is not None and r[2] == errno.EBADMSG)
p = s_str(b"ds/a\x00b.txt")
s.sendall(hdr(2, len(p), 14) + p)
r = recv_frame(s)
check("path with a NUL byte gets EINVAL", r is not None and r[2] == errno.EINVAL)
check("connection still usable after bad payloads", hello(s, 15))

# 5. pipelining: several requests before reading, replies carry their ids
s.sendall(hdr(1, 4, 21) + struct.pack("<I", VERSION) + hdr(200, 0, 22) + hdr(1, 4, 23) + struct.pack("<I", VERSION))
ids = [recv_frame(s)[1] for _ in range(3)]
check("pipelined requests answered with their ids", sorted(ids) == [21, 22, 23])

# 6. half a frame then disconnect, then a frame split byte by byte
s2 = conn()
s2.sendall(hdr(1, 4, 1)[:9])
s2.close()
s3 = conn()
frame = hdr(1, 4, 31) + struct.pack("<I", VERSION)
for i in range(len(frame)):
    s3.send(frame[i:i + 1])
r = recv_frame(s3)
check("a frame sent one byte at a time is answered", r is not None and r[1] == 31 and r[2] == 0)

# 7. a wrong protocol version in HELLO
s4 = conn()
s4.sendall(hdr(1, 4, 41) + struct.pack("<I", 99))
r = recv_frame(s4)
check("HELLO with an unknown protocol version gets EPROTO", r is not None and r[2] == errno.EPROTO)

print("frames: %d failures" % fails)
sys.exit(1 if fails else 0)
