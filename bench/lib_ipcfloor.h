/*
 * The IPC floor (rados_direct --serve / --via): the least any cache that is
 * a separate process pays for a small miss. A reader asks over a Unix
 * stream socket for one piece of an object; the server reads it from
 * RADOS, appends it to a segment file of the connection's and replies with
 * where it is (the segment's descriptor by SCM_RIGHTS in the first reply
 * of a connection); the reader preads it. See bench/rados_direct.c.
 */
#ifndef TIERCACHE_BENCH_LIB_IPCFLOOR_H
#define TIERCACHE_BENCH_LIB_IPCFLOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>

#define IPCFLOOR_MAGIC 0x74636970u /* "tcip" */
#define IPCFLOOR_OID_MAX 1024u
#define IPCFLOOR_LEN_MAX (256u << 20)
#define IPCFLOOR_VERIFY 1u

/* A request: the header, then oid_len bytes of object name. */
struct ipcfloor_req {
	uint32_t magic;
	uint32_t flags;   /* IPCFLOOR_VERIFY */
	uint32_t len;     /* bytes to read, 1..IPCFLOOR_LEN_MAX */
	uint32_t oid_len; /* 1..IPCFLOOR_OID_MAX */
	uint64_t off;     /* in the object */
	uint64_t share;   /* what the connection's segment may hold (0: no limit) */
};

/* The reply; the first one of a connection carries the segment's fd. */
struct ipcfloor_rep {
	int32_t status; /* bytes read, or -errno */
	uint32_t pad;
	uint64_t seg_off; /* where they are in the segment */
	uint64_t sum;     /* with IPCFLOOR_VERIFY: ipcfloor_sum() of the bytes read */
};

enum ipcfloor_mode {
	IPCFLOOR_AIO,    /* event loop + aio; completion thread writes, loop replies */
	IPCFLOOR_INLINE, /* as AIO, the completion thread also replies */
	IPCFLOOR_SYNC,   /* a thread per connection, blocking rados_read */
};

/* 0 and *mode, or -EINVAL for a name that is none of aio, inline, sync. */
int ipcfloor_mode_parse(const char *name, enum ipcfloor_mode *mode);

/* Serve on the Unix socket path sock, segments in dir, until killed.
 * Returns -errno only when it cannot start. */
int ipcfloor_serve(rados_ioctx_t io, const char *sock, const char *dir, enum ipcfloor_mode mode,
		   uint32_t max_len);

/* FNV-1a, 64 bits. */
uint64_t ipcfloor_sum(const void *buf, size_t len);

/* The reader's side of one connection. */
struct ipcfloor_conn {
	int sock;
	int seg; /* the segment's fd once the first reply brought it, else -1 */
};

/* 0 or -errno. */
int ipcfloor_connect(struct ipcfloor_conn *c, const char *sock);
void ipcfloor_close(struct ipcfloor_conn *c);

/* Ask for len bytes of oid at off and pread them into buf. Returns the
 * bytes read, or -errno (-EIO for a short piece; -EBADMSG for bytes whose
 * checksum differs from the server's, with verify). *sum: their checksum
 * (with verify, else 0). */
int64_t ipcfloor_get(struct ipcfloor_conn *c, const char *oid, uint64_t off, uint32_t len,
		     uint64_t share, bool verify, char *buf, uint64_t *sum);

#endif
