/*
 * Open-ahead from plans (TC_OP_OPEN_AHEAD, docs/plans.md): when this
 * connection has a job tag and the daemon knows a plan of that job, keep a
 * table path -> open record (+ chunk 0's descriptor) of the plan's next
 * files, and answer tiercache_open of a path in it with no round trip.
 *
 * The table is refilled inside tiercache_open (no thread of ours) once
 * fewer than half of it are ahead of the furthest entry used, one request
 * for a batch of up to TC_REPLY_FDS_MAX records. An open the table lacks
 * asks and waits for the answer. After an open the table answered, the
 * request is sent and its reply left on the socket: it is read at the
 * latest by the next call that opens (tiercache_open, tiercache_open_many),
 * earlier when an open misses the table or another request waits for its
 * reply (tc_xfer). The daemon's answer then overlaps the program's reads
 * of what it opened, so a reader that keeps to its plan does not wait for
 * it; what the answer says (the plan went) is acted on one call later than
 * if it were waited for. An entry leaves it
 * when used (it becomes an ordinary handle, whose CLOSE tells the daemon it
 * was used), when it is older than the daemon said its version may be
 * trusted (fresh_ms: then the open goes to the daemon, which confirms the
 * version), when a batch needs its room and the reads have gone past it
 * (the program skipped it; the furthest behind go first), or when the plan
 * changes or goes; the daemon is told of unused ones in the next
 * OPEN_AHEAD (or one sent for that alone). A new connection (daemon restart) or a forked child drops
 * the table without telling anyone: the handles belonged to the old
 * connection.
 *
 * Threads: everything here runs with tc->io_lock held.
 */
#include "libtc_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AHEAD_TABLE 128u                   /* entries held at most */
#define AHEAD_BATCH TC_REPLY_FDS_MAX       /* records asked per round trip */
#define AHEAD_MIN_ASK (AHEAD_BATCH / 4)    /* ... at least, when the table is full */
/* an entry the reads went past is taken for skipped (its room given to a
 * new batch) once handed this long ago: a reader lagging far behind the
 * others sharing the connection (descheduled for a while on a busy
 * machine) still finds its files */
#define AHEAD_SKIP_NS 250000000ull
#define AHEAD_RETRY_NS 1000000000ull       /* no plan, or nothing to hand: ask again after */

struct ahead_ent {
	char *path;
	uint64_t hash;
	uint64_t seq;       /* handed order */
	uint64_t expire_ns; /* use before (CLOCK_MONOTONIC) */
	uint64_t handed_ns; /* when it came */
	struct tc_open_rec o;
	int fd;             /* chunk 0's, or -1 */
};

struct tc_ahead {
	uint32_t gen;      /* connection the entries' handles live on */
	uint64_t plan;     /* the daemon's plan id for them */
	uint64_t retry_ns; /* do not ask before (0: ask) */
	uint64_t next_seq;
	uint64_t used_seq; /* the furthest entry used (its seq + 1; 0: none yet) */
	bool disabled;     /* the daemon does not know OPEN_AHEAD */
	/* entries ahead right after the last batch that came short (the
	 * daemon's byte bound, or the plan's end); 0: the last came full */
	unsigned short_n;
	unsigned n;
	struct ahead_ent ent[AHEAD_TABLE];
	unsigned nrel;     /* handles to release unused with the next request */
	uint64_t rel[TC_AHEAD_HANDLES_MAX];
	/* the request whose reply is on its way (tc->ahead_pending) */
	uint32_t pend_id, pend_want;
	uint64_t pend_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static void ent_free(struct ahead_ent *e)
{
	if (e->fd >= 0)
		close(e->fd);
	free(e->path);
	e->path = NULL;
	e->fd = -1;
}

/* Remove entry i; if release, the daemon is told (with the next request). */
static void ent_drop(struct tc_ahead *a, unsigned i, bool release)
{
	if (release && a->nrel < TC_AHEAD_HANDLES_MAX)
		a->rel[a->nrel++] = a->ent[i].o.dh;
	ent_free(&a->ent[i]);
	a->ent[i] = a->ent[--a->n];
}

void tc_ahead_forget(struct tiercache *tc)
{
	struct tc_ahead *a = tc->ahead;
	tc->ahead_pending = false; /* its reply belongs to the old socket */
	if (!a)
		return;
	while (a->n)
		ent_drop(a, a->n - 1, false);
	a->nrel = 0;
	a->retry_ns = 0;
	a->short_n = 0;
}

void tc_ahead_free(struct tiercache *tc)
{
	tc_ahead_forget(tc);
	free(tc->ahead);
	tc->ahead = NULL;
}

/* Send the releases queued (one frame, no reply). */
static void release_send(struct tiercache *tc, struct tc_ahead *a)
{
	if (!a->nrel || tc->fd < 0 || a->gen != tc->gen) {
		a->nrel = 0;
		return;
	}
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, 0);
	proto_wr_u32(&w, a->nrel);
	for (unsigned i = 0; i < a->nrel; i++)
		proto_wr_u64(&w, a->rel[i]);
	a->nrel = 0;
	if (!w.oom)
		(void)tc_xfer(tc, TC_OP_OPEN_AHEAD, TC_F_NOREPLY, &w, NULL);
	proto_wr_free(&w);
}

void tc_ahead_reset(struct tiercache *tc)
{
	struct tc_ahead *a = tc->ahead;
	if (!a)
		return;
	tc_ahead_collect(tc); /* its records are released with the rest */
	bool live = a->gen == tc->gen;
	while (a->n)
		ent_drop(a, a->n - 1, live);
	release_send(tc, a);
	a->retry_ns = 0;
}

static int find(const struct tc_ahead *a, const char *path, uint64_t h)
{
	for (unsigned i = 0; i < a->n; i++)
		if (a->ent[i].hash == h && strcmp(a->ent[i].path, path) == 0)
			return (int)i;
	return -1;
}

/* Read one record of an OPEN_AHEAD reply into e (its fd taken from m in
 * order). 0, or -EPROTO (connection dropped). */
static int rec_read(struct tiercache *tc, struct proto_rd *r, struct tc_msg *m, int *nfd,
		    uint64_t now, struct ahead_ent *e)
{
	size_t plen = 0;
	const char *p = proto_rd_str(r, TC_PATH_MAX - 1, &plen);
	uint32_t fresh_ms = proto_rd_u32(r);
	if (!p || !proto_rd_ok(r) || plen == 0 || memchr(p, 0, plen))
		return tc_bad_reply(tc, "OPEN_AHEAD path");
	int rc = tc_open_rec_read(tc, r, &e->o);
	if (rc < 0)
		return rc;
	e->fd = -1;
	if (e->o.has_chunk) {
		if (*nfd >= m->nfds)
			return tc_bad_reply(tc, "OPEN_AHEAD descriptors");
		e->fd = m->fds[*nfd];
		m->fds[(*nfd)++] = -1;
	}
	if (!(e->path = strndup(p, plen))) {
		if (e->fd >= 0)
			close(e->fd);
		e->fd = -1;
		return -ENOMEM;
	}
	e->hash = path_hash(e->path);
	e->expire_ns = now + (uint64_t)fresh_ms * 1000000ull;
	e->handed_ns = now;
	return 0;
}

/* Entries the reads have not reached yet (handed after the furthest used). */
static unsigned ahead_count(const struct tc_ahead *a)
{
	unsigned k = 0;
	for (unsigned i = 0; i < a->n; i++)
		k += a->ent[i].seq >= a->used_seq;
	return k;
}

/* Should the next batch be asked for? Entries the reads went past do not
 * count: several readers sharing a connection (the FUSE mount's readers, a
 * loader's workers) use the plan's files out of order, and one that lags
 * still comes for its own. */
static bool refill_due(const struct tiercache *tc, const struct tc_ahead *a, uint64_t now, bool hit)
{
	if (tc->fd < 0 || a->gen != tc->gen || now < a->retry_ns || tc->ahead_pending)
		return false;
	unsigned k = ahead_count(a);
	/* after a short batch (the daemon bounds what a connection holds
	 * ahead by the tiers' room: a few files on small tiers) an open that
	 * used an entry asks again once most of the batch is used, not every
	 * time: what is still ahead (and the handle being opened) counts
	 * against the bound until closed, so asking early brings one file a
	 * round trip, or nothing and a back-off of a second. An open the
	 * table did not have asks as usual (the reads left the entries: a new
	 * plan, an epoch cut short). */
	if (a->short_n && hit)
		return k <= a->short_n / 4;
	return k < AHEAD_TABLE / 2;
}

/* Make room for a batch of at least AHEAD_MIN_ASK: drop (release) the
 * entries the reads left furthest behind a while ago, which the program
 * skipped. */
static void room_make(struct tc_ahead *a, uint64_t now)
{
	while (a->n > AHEAD_TABLE - AHEAD_MIN_ASK) {
		int low = -1;
		for (unsigned i = 0; i < a->n; i++) {
			const struct ahead_ent *e = &a->ent[i];
			if (e->seq < a->used_seq && now - e->handed_ns > AHEAD_SKIP_NS &&
			    (low < 0 || e->seq < a->ent[low].seq))
				low = (int)i;
		}
		if (low < 0)
			return; /* all still ahead: ask for what fits */
		ent_drop(a, (unsigned)low, true);
	}
}

/* Send the request for a batch (and release what is queued): 0 and *want
 * (the records asked), 1 if there is nothing to ask (the table is full of
 * entries readers may still come for; the releases went), or -errno. */
static int refill_send(struct tiercache *tc, struct tc_ahead *a, uint64_t now, uint32_t *want,
		       uint32_t *id)
{
	struct proto_wr w;
	room_make(a, now);
	*want = AHEAD_TABLE - a->n;
	if (*want > AHEAD_BATCH)
		*want = AHEAD_BATCH;
	if (*want < AHEAD_MIN_ASK) {
		release_send(tc, a);
		return 1;
	}
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, *want);
	proto_wr_u32(&w, a->nrel);
	for (unsigned i = 0; i < a->nrel; i++)
		proto_wr_u64(&w, a->rel[i]);
	if (tc->stride[1]) /* once set, always sent: the daemon keeps the last */
		for (int i = 0; i < 3; i++)
			proto_wr_u32(&w, tc->stride[i]);
	int rc = w.oom ? -ENOMEM : tc_xfer_send(tc, TC_OP_OPEN_AHEAD, 0, &w, id);
	proto_wr_free(&w);
	if (rc == 0)
		a->nrel = 0; /* the daemon has them */
	return rc;
}

/* Take the reply (rc: how reading it went) to a request for want records
 * into the table. Errors leave the table as it is. */
static void refill_take(struct tiercache *tc, struct tc_ahead *a, int rc, struct tc_msg *mp,
			uint32_t want, uint64_t now)
{
	struct tc_msg m = *mp;
	if (rc == -ENOSYS || rc == -EBADMSG) {
		a->disabled = true; /* an older daemon */
		return;
	}
	if (rc < 0) {
		a->retry_ns = now + AHEAD_RETRY_NS;
		return;
	}
	struct proto_rd r;
	proto_rd_init(&r, m.payload, m.len);
	uint8_t state = proto_rd_u8(&r);
	uint64_t plan = proto_rd_u64(&r);
	uint32_t count = proto_rd_u32(&r);
	if (!proto_rd_ok(&r) || count > want || state > TC_AHEAD_PLAN) {
		tc_msg_free(&m);
		(void)tc_bad_reply(tc, "OPEN_AHEAD");
		return;
	}
	if (state == TC_AHEAD_NONE || plan != a->plan) {
		/* the plan went or was replaced: what we hold was for it */
		while (a->n)
			ent_drop(a, a->n - 1, true);
		a->plan = plan;
	}
	int nfd = 0;
	for (uint32_t i = 0; i < count; i++) {
		struct ahead_ent e = {.fd = -1};
		rc = rec_read(tc, &r, &m, &nfd, now, &e);
		if (rc == -EPROTO)
			break; /* the connection is gone, and its handles with it */
		if (rc < 0 || a->n == AHEAD_TABLE || find(a, e.path, e.hash) >= 0) {
			if (rc == 0) {
				if (a->nrel < TC_AHEAD_HANDLES_MAX)
					a->rel[a->nrel++] = e.o.dh;
				ent_free(&e);
			}
			continue;
		}
		e.seq = a->next_seq++;
		a->ent[a->n++] = e;
	}
	if (rc == 0 && (nfd != m.nfds || !proto_rd_done(&r)))
		(void)tc_bad_reply(tc, "OPEN_AHEAD");
	tc_msg_free(&m); /* closes descriptors nobody took */
	if (tc->gen != a->gen || tc->fd < 0) {
		tc_ahead_forget(tc);
		return;
	}
	if (count == 0)
		a->retry_ns = now + AHEAD_RETRY_NS;
	a->short_n = count > 0 && count < want ? ahead_count(a) : 0;
	release_send(tc, a);
}

/* Ask for a batch and wait for it (an open the table lacks). */
static void refill(struct tiercache *tc, struct tc_ahead *a, uint64_t now)
{
	struct tc_msg m = {0};
	uint32_t want, id;
	int rc = refill_send(tc, a, now, &want, &id);
	if (rc == 1)
		return;
	if (rc == 0)
		rc = tc_xfer_recv(tc, TC_OP_OPEN_AHEAD, id, &m);
	refill_take(tc, a, rc, &m, want, now);
}

/* Ask for a batch and leave its reply on the socket (tc_ahead_collect
 * reads it). */
static void refill_start(struct tiercache *tc, struct tc_ahead *a, uint64_t now)
{
	struct tc_msg m = {0};
	uint32_t want, id;
	int rc = refill_send(tc, a, now, &want, &id);
	if (rc == 1)
		return;
	if (rc < 0) {
		refill_take(tc, a, rc, &m, want, now);
		return;
	}
	a->pend_id = id;
	a->pend_want = want;
	a->pend_ns = now;
	tc->ahead_pending = true;
}

void tc_ahead_collect(struct tiercache *tc)
{
	struct tc_ahead *a = tc->ahead;
	if (!tc->ahead_pending)
		return;
	tc->ahead_pending = false;
	if (!a || a->gen != tc->gen || tc->fd < 0)
		return;
	struct tc_msg m;
	int rc = tc_xfer_recv(tc, TC_OP_OPEN_AHEAD, a->pend_id, &m);
	/* records are as fresh as when they were asked for */
	refill_take(tc, a, rc, &m, a->pend_want, a->pend_ns);
}

int tc_ahead_open(struct tiercache *tc, const char *path)
{
	if (!tc->job.set || tc->no_fd_passing || tc->fd < 0)
		return -ENOENT;
	struct tc_ahead *a = tc->ahead;
	if (!a) {
		if (!(a = tc->ahead = calloc(1, sizeof(*a))))
			return -ENOMEM;
		a->gen = tc->gen;
	}
	if (a->disabled)
		return -ENOENT;
	if (a->gen != tc->gen) { /* a new connection: the handles are gone */
		tc_ahead_forget(tc);
		a->gen = tc->gen;
	}
	uint64_t now = now_ns();
	uint64_t h = path_hash(path);
	int i = find(a, path, h);
	if (i < 0 && tc->ahead_pending) { /* maybe in the batch on its way */
		tc_ahead_collect(tc);
		if (a->gen != tc->gen)
			return -ENOENT;
		i = find(a, path, h);
	}
	if (i < 0 && refill_due(tc, a, now, false)) {
		refill(tc, a, now);
		if (a->gen != tc->gen)
			return -ENOENT;
		i = find(a, path, h);
	}
	if (i < 0)
		return -ENOENT;
	struct ahead_ent e = a->ent[i];
	a->ent[i] = a->ent[--a->n];
	if (e.seq + 1 > a->used_seq)
		a->used_seq = e.seq + 1;
	/* too old to use: they would only hold descriptors and tier bytes */
	for (unsigned j = 0; j < a->n;) {
		if (now >= a->ent[j].expire_ns)
			ent_drop(a, j, true);
		else
			j++;
	}
	int hd = -ENOENT;
	if (now >= e.expire_ns) {
		/* its version may have changed: let the daemon confirm it */
		if (a->nrel < TC_AHEAD_HANDLES_MAX)
			a->rel[a->nrel++] = e.o.dh;
		ent_free(&e);
	} else {
		hd = tc_handle_install(tc, path, &e.o, e.fd);
		free(e.path);
	}
	/* after this open (it is answered): ask for more, which also says
	 * whether the plan is still there, or at least hand back what went;
	 * the reply is read when needed */
	if (refill_due(tc, a, now, true))
		refill_start(tc, a, now);
	else if (a->nrel)
		release_send(tc, a);
	return hd;
}

int tiercache_set_ahead_stride(struct tiercache *tc, uint32_t batch, uint32_t workers,
			       uint32_t index)
{
	tc_err_begin();
	if (!tc || batch < 1 || batch > TC_AHEAD_STRIDE_MAX || workers < 1 ||
	    workers > TC_AHEAD_STRIDE_MAX || index >= workers)
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	tc_io_lock(tc);
	if (workers == 1)
		batch = 1;
	if (tc->stride[0] != batch || tc->stride[1] != workers || tc->stride[2] != index) {
		/* the daemon learns it with the next OPEN_AHEAD; what is held
		 * was chosen for the old one: released */
		tc_ahead_reset(tc);
		tc->stride[0] = batch;
		tc->stride[1] = workers;
		tc->stride[2] = index;
	}
	tc_io_unlock(tc);
	return 0;
}
