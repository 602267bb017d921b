/*
 * libtiercache internals shared by its files (not installed).
 *
 * Locking, in the only order they may be taken:
 *   io_lock   the socket: held from a request's send to its reply, and while
 *             (re)connecting. Everything that talks to the daemon holds it.
 *   tbl_lock  the handle table and every handle's fields and chunk-fd cache.
 *             Held only for short bookkeeping, never across a syscall that
 *             may block (a pread on a cached chunk fd runs without any lock;
 *             the chunk entry is pinned by a reference count instead).
 * A handle's daemon-side fields (dh, gen, stale) change only with both locks
 * held, so a holder of io_lock may read them without tbl_lock.
 *
 * fork(): every public entry point first calls tc_enter(), which notices a
 * changed pid and resets the connection in the child (see conn.c).
 */
#ifndef TIERCACHE_LIBTC_PRIVATE_H
#define TIERCACHE_LIBTC_PRIVATE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"
#include "proto_job.h"
#include "tiercache.h"

/* Chunk fds kept per handle; the least recently used is released beyond. */
#define TC_CHUNK_CACHE 8u
/* fds one reply may carry; more are closed and the reply is refused. */
#define TC_MSG_MAXFDS ((int)TC_REPLY_FDS_MAX)
/* Internal result of the transport: the connection broke (EOF, EPIPE,
 * ECONNRESET) and the request may be retried on a new connection. Never
 * leaves the library: callers turn it into tc->last_conn_err. */
#define TC_ERETRY (-100000)
#define TC_DETAIL_MAX 512
#define TC_HANDLES_MAX (1 << 20)

/* One chunk fd of a handle. Pinned by refs while a thread preads from it;
 * once evicted (live false) the last user closes and frees it. */
struct tc_chunk {
	struct tc_chunk *next;
	uint32_t idx;
	uint32_t len;   /* bytes of the file this chunk holds */
	uint32_t gen;   /* connection the fd came from: RELEASE only on that one */
	uint32_t refs;
	uint64_t stamp; /* LRU clock value of the last use */
	uint64_t base;  /* where the chunk's bytes start in fd (a segment) */
	int fd;
	bool live;
};

/* A chunk record of an OPEN or CHUNK reply (protocol.h): the chunk's bytes
 * are the passed descriptor's bytes [base, base + len). */
struct tc_chunk_rec {
	uint32_t idx;
	uint64_t off;  /* the chunk's offset in its file */
	uint32_t len;
	uint64_t base;
	uint8_t tier;
};

struct tc_handle {
	char *path;
	uint64_t dh;  /* daemon handle, valid on connection generation gen */
	uint32_t gen; /* 0: none (must re-open before the next request) */
	uint64_t size;
	int64_t mtime_ns;
	uint32_t chunk_size;
	uint64_t pos;
	unsigned refs;  /* the table's + one per call in flight */
	bool stale;     /* re-open found another version: ESTALE from now on */
	bool streamed;  /* the daemon sent a CHUNK reply without an fd */
	bool closed;    /* tiercache_close ran; the struct lives on while refs */
	struct tc_chunk *chunks;
	unsigned nlive;
	uint64_t clock;
};

struct tiercache {
	pthread_mutex_t io_lock;
	pthread_mutex_t tbl_lock;
	_Atomic pid_t owner;    /* process the socket belongs to */
	_Atomic pid_t resetter; /* child that is resetting after fork */
	char *path;
	int fd;                 /* -1: not connected */
	uint32_t gen;           /* bumped on every new connection */
	uint32_t next_id;
	int last_conn_err;      /* errno of the last connect / break */
	uint32_t read_max;      /* bytes per streamed READ */
	bool no_fd_passing;     /* $TIERCACHE_NO_FD_PASSING=1 */
	double reconnect_timeout; /* seconds, $TIERCACHE_RECONNECT_TIMEOUT */
	uint64_t poll_ns;       /* reply busy poll, $TIERCACHE_POLL_US (conn.c) */
	unsigned load_wait_s;     /* wait.c: tiercache_set_wait, $TIERCACHE_LOAD_TIMEOUT */
	bool gave_up;           /* a request waited the whole reconnect window
	                         * in vain; cleared by the next good connect */
	struct tc_handle **slots;
	int nslots;
	/* io_lock: what a new connection must be told again (plan.c, job.c) */
	struct tc_job_tag job;  /* tiercache_set_job / $TIERCACHE_JOB */
	struct tc_kept_plan *kept; /* plans this process registered, to re-send */
	bool act_set;           /* tiercache_act_as (act.c) */
	uint32_t act_uid, act_gid, act_ngroups;
	uint32_t *act_groups;
	size_t kept_bytes;
	struct tc_ahead *ahead;  /* io_lock: open-ahead table (ahead.c), NULL until used */
	/* io_lock: an OPEN_AHEAD reply is on its way on this socket (ahead.c):
	 * read it (tc_ahead_collect) before any other reply; cleared when the
	 * socket goes */
	bool ahead_pending;
	/* io_lock: tiercache_set_ahead_stride (batch, workers, index), sent
	 * with every OPEN_AHEAD once set; workers 0: never set (not sent) */
	uint32_t stride[3];
};

/* One reply frame. */
struct tc_msg {
	struct tc_hdr hdr;
	uint8_t *payload; /* malloc'd, NULL when len is 0 */
	size_t len;
	int fds[TC_MSG_MAXFDS];
	int nfds;
};

/* A request for tc_request_locked(). build() runs with io_lock held on a
 * live connection, after hd (if any) was re-opened on it; it appends the
 * payload and returns 0 to send, > 0 to stop without sending (the caller's
 * result is already there), or -errno. */
struct tc_req {
	uint8_t op;
	uint32_t flags;
	struct tc_handle *hd;
	int (*build)(struct tiercache *tc, struct proto_wr *w, void *arg);
	void *arg;
};

/* ---- error.c: per-thread detail, log hook ---- */
/* Start of a public call: forget the detail of earlier steps. */
void tc_err_begin(void);
/* Detail for the failure being returned (daemon's words or ours). */
void tc_err_detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Public failure exit: errno = -rc, publish the detail; returns -1. */
int tc_err_fail(int rc);
void tc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- conn.c: transport ---- */
/* Every public call on a connection starts here (fork detection). */
void tc_enter(struct tiercache *tc);
/* Send one request and, unless TC_F_NOREPLY, read its reply. io_lock held.
 * An error reply becomes -errno with its detail recorded. Returns 0,
 * -errno, or TC_ERETRY (connection dropped). */
int tc_xfer(struct tiercache *tc, uint8_t op, uint32_t flags, struct proto_wr *w,
	    struct tc_msg *rep);
/* tc_xfer in two halves, for a request whose reply is read later (the
 * open-ahead refill): send (*id: its id), then read that reply. No other
 * request that waits for a reply may go between them (tc_xfer reads a
 * pending open-ahead reply first). Same returns as tc_xfer. */
int tc_xfer_send(struct tiercache *tc, uint8_t op, uint32_t flags, struct proto_wr *w, uint32_t *id);
int tc_xfer_recv(struct tiercache *tc, uint8_t op, uint32_t id, struct tc_msg *rep);
/* n NOREPLY frames of op, the payload of frame i being vals[i] (a u64),
 * sent with one send: what n tc_xfer(..., TC_F_NOREPLY) calls do without
 * a syscall and a daemon wakeup each. io_lock held. 0, -errno or
 * TC_ERETRY (connection dropped: the daemon forgot them anyway). */
int tc_xfer_noreply_u64s(struct tiercache *tc, uint8_t op, const uint64_t *vals, size_t n);
/* Run a request with reconnect-and-retry (io_lock held). */
int tc_request_locked(struct tiercache *tc, const struct tc_req *rq, struct tc_msg *rep);
int tc_request(struct tiercache *tc, const struct tc_req *rq, struct tc_msg *rep);
void tc_msg_free(struct tc_msg *m);
/* Read one chunk record (bounds are the caller's to check). */
void tc_chunk_rec_get(struct proto_rd *r, struct tc_chunk_rec *c);
/* Take the (only) fd of a reply, or -1; the message no longer owns it. */
int tc_msg_take_fd(struct tc_msg *m);
/* The reply payload was malformed: drop the connection (the stream cannot
 * be trusted any more) and return -EPROTO. io_lock held. */
int tc_bad_reply(struct tiercache *tc, const char *what);
void tc_io_lock(struct tiercache *tc);
void tc_io_unlock(struct tiercache *tc);
/* strlen(path) < TC_PATH_MAX, else -ENAMETOOLONG; NULL -> -EINVAL. */
int tc_path_check(const char *path);

/* ---- wait.c: waiting for a dataset that is still loading ---- */
/* The wait $TIERCACHE_LOAD_TIMEOUT asks for (a bad value is logged and
 * the default used). */
unsigned tc_wait_from_env(void);
/* The request flags that carry tc's wait, for ops that may wait. */
uint32_t tc_wait_flags(struct tiercache *tc, uint8_t op);

/* ---- plan.c, job.c: state a daemon restart loses ---- */
/* A new connection said HELLO: send it the job tag and re-register the
 * kept plans (io_lock held). 0, TC_ERETRY (it broke again) or -errno of
 * the connection; a plan the daemon refuses now is dropped and logged. */
int tc_conn_restore(struct tiercache *tc);
/* Send the job tag on the current connection (io_lock held, connected). */
int tc_job_send(struct tiercache *tc);
/* Forget every kept plan (disconnect; a forked child: the plans are its
 * parent's, which re-registers them itself). */
void tc_plans_forget(struct tiercache *tc);
/* act.c: say again whom the connection acts for (io_lock held, connected;
 * first thing after HELLO). 0 when it acts for nobody, TC_ERETRY, -errno. */
int tc_act_send(struct tiercache *tc);
/* Parse $TIERCACHE_JOB into tc->job. 0 or -EINVAL with the detail set. */
int tc_job_from_env(struct tiercache *tc);

/* ---- handle.c ---- */
/* The fields of an OPEN reply (one record of an OPEN_MANY reply). */
struct tc_open_rec {
	uint64_t dh;
	uint64_t size;
	int64_t mtime_ns;
	uint32_t chunk_size;
	bool has_chunk;
	struct tc_chunk_rec chunk;
};
/* Read and check one open record; -EPROTO (connection dropped) if bad.
 * io_lock held. */
int tc_open_rec_read(struct tiercache *tc, struct proto_rd *r, struct tc_open_rec *o);
/* A new handle for path from o, with chunk 0's fd (owned from here; -1:
 * none): the handle number, or -errno (the daemon's handle is closed).
 * io_lock held. */
int tc_handle_install(struct tiercache *tc, const char *path, const struct tc_open_rec *o, int fd);
/* Take a reference on handle h (NULL: no such handle), drop it. */
struct tc_handle *tc_handle_get(struct tiercache *tc, int h);
void tc_handle_put(struct tiercache *tc, struct tc_handle *hd);
/* Re-open hd on the current connection if it belongs to an older one
 * (fork, daemon restart). io_lock held, connected. */
int tc_handle_ensure(struct tiercache *tc, struct tc_handle *hd);
/* Drop every chunk fd without telling the daemon (fork child). */
void tc_handles_forget_fds(struct tiercache *tc);
void tc_handles_free_all(struct tiercache *tc);
/* Close and free a handle's chunk entries that no thread uses and mark the
 * rest dead, so their last user frees them. tbl_lock held (close(2) of a
 * plain file does not block, so it may run under the lock). */
void tc_chunks_drop(struct tc_handle *hd);

/* ---- ahead.c: open-ahead from plans (io_lock held for all) ---- */
/* tiercache_open of path from the table: a handle number, or < 0 (not
 * there: the caller sends its OPEN). Refills the table when it runs low. */
int tc_ahead_open(struct tiercache *tc, const char *path);
/* Release every entry to the daemon and ask afresh next time (the job or
 * a plan of this connection changed). */
void tc_ahead_reset(struct tiercache *tc);
/* Read the OPEN_AHEAD reply on its way (tc->ahead_pending) into the table:
 * at the start of every call that opens, so a reply is read at the latest
 * one call after its request. */
void tc_ahead_collect(struct tiercache *tc);
/* Drop the table without telling the daemon (fork child, new connection). */
void tc_ahead_forget(struct tiercache *tc);
void tc_ahead_free(struct tiercache *tc);

/* ---- read.c ---- */
/* Chunk idx (clen bytes) of hd, pinned for the caller: from the handle's
 * cache or fetched from the daemon. *out NULL (and 0 returned) when the
 * bytes must be streamed instead (no fd passing). Unpin with tc_chunk_put. */
int tc_chunk_get(struct tiercache *tc, struct tc_handle *hd, uint32_t idx, uint32_t clen,
		 struct tc_chunk **out);
void tc_chunk_put(struct tiercache *tc, struct tc_handle *hd, struct tc_chunk *c);
/* c (pinned by the caller, who still puts it) read short or failed: drop
 * it from the handle's cache, tell the daemon (CHUNK with
 * TC_F_CHUNK_RECHECK: it checks the chunk's file and reads the chunk from
 * the cold store again if the file is bad) and get the chunk anew, like
 * tc_chunk_get. */
int tc_chunk_recheck(struct tiercache *tc, struct tc_handle *hd, struct tc_chunk *c, uint32_t clen,
		     struct tc_chunk **out);
/* pread on a handle: >= 0 bytes (exactly min(n, size - off)) or -errno. */
ssize_t tc_handle_pread(struct tiercache *tc, struct tc_handle *hd, void *buf, size_t n,
			uint64_t off);

#endif
