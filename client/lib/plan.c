/*
 * Plans: tiercache_plan_paths / tiercache_plan_indices / tiercache_plan_cancel
 * (include/tiercache.h). A plan of any length goes out as a sequence of
 * PLAN_SET frames (include/tiercache/protocol.h), each at most
 * TC_FRAME_MAX bytes; the daemon registers the whole plan when the last
 * one arrives, so a bad entry anywhere registers nothing.
 *
 * Every plan registered is also kept (kept_note) and registered again on
 * the next connection after a daemon restart (tc_conn_restore, called by
 * conn.c with io_lock held), with TC_PLAN_RESUME so the daemon resumes it
 * where the job is. tc->kept is guarded by io_lock.
 *
 * Thread safety: like every call, safe from several threads; two threads
 * sending plans for the same (dataset, job, rank) on one connection at the
 * same time would interleave their frames (the daemon then registers one
 * of them or refuses the other's continuation frames).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libtc_private.h"
#include "proto.h"
#include "tiercache.h"

/* Room for the fixed fields of a PLAN_SET payload. */
#define PLAN_HEAD_MAX (4 + TC_DATASET_NAME_MAX + 8 + 4 + 4 + 4 + 1 + 1 + 4)
#define PLAN_FRAME_BUDGET (TC_FRAME_MAX - PLAN_HEAD_MAX)

struct plan_src {
	const char *const *paths;   /* or */
	const uint64_t *indices;
	size_t n;
};

static int plan_check(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
		      unsigned flags)
{
	if (!tc || !dataset || !p)
		return -EINVAL;
	size_t dn = strlen(dataset);
	if (dn == 0 || dn > TC_DATASET_NAME_MAX || strchr(dataset, '/')) {
		tc_err_detail("dataset name \"%.64s\" is empty, too long or has a '/'", dataset);
		return -EINVAL;
	}
	if (p->world_size == 0 || p->rank >= p->world_size) {
		tc_err_detail("rank %u of world_size %u: need world_size >= 1 and rank < world_size", p->rank,
			      p->world_size);
		return -EINVAL;
	}
	if (flags & ~(TIERCACHE_PLAN_APPEND | TIERCACHE_PLAN_JOB)) {
		tc_err_detail("unknown plan flags 0x%x", flags);
		return -EINVAL;
	}
	return 0;
}

/* Bytes entry i takes in a frame, or -errno if it cannot be sent. */
static long plan_entry_size(const struct plan_src *s, size_t i)
{
	if (s->indices)
		return 8;
	const char *path = s->paths[i];
	if (!path) {
		tc_err_detail("plan entry %zu is NULL", i);
		return -EINVAL;
	}
	size_t n = strlen(path);
	if (n == 0 || n >= TC_PATH_MAX) {
		tc_err_detail("plan entry %zu: path empty or longer than %u bytes", i, TC_PATH_MAX - 1);
		return n ? -ENAMETOOLONG : -EINVAL;
	}
	return (long)(4 + n);
}

/* Sends one frame of a sequence: 0, -errno (the daemon's, detail set) or
 * TC_ERETRY (replay only). */
typedef int (*plan_xfer_fn)(struct tiercache *tc, uint8_t op, struct proto_wr *w);

/* A public call: its own request with reconnect-and-retry. */
static int plan_xfer_call(struct tiercache *tc, uint8_t op, struct proto_wr *w)
{
	void *rep = NULL;
	size_t replen = 0;
	if (tiercache_call(tc, op, w->buf + TC_HDR_SIZE, w->len - TC_HDR_SIZE, &rep, &replen) < 0)
		return -errno;
	free(rep);
	return 0;
}

/* Replay on a connection being set up: io_lock held, no retry here. */
static int plan_xfer_raw(struct tiercache *tc, uint8_t op, struct proto_wr *w)
{
	struct proto_wr out;
	struct tc_msg m;
	proto_wr_init(&out);
	proto_wr_begin(&out);
	proto_wr_bytes(&out, w->buf + TC_HDR_SIZE, w->len - TC_HDR_SIZE);
	int rc = out.oom ? -ENOMEM : tc_xfer(tc, op, 0, &out, &m);
	proto_wr_free(&out);
	if (rc == 0)
		tc_msg_free(&m);
	return rc;
}

/* Send s as a sequence of PLAN_SET frames; first_flags (TC_PLAN_APPEND,
 * TC_PLAN_RESUME) go on the first one. 0 or -errno / TC_ERETRY; *sent
 * counts the frames answered. */
static int plan_frames(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
		       const struct plan_src *s, uint8_t first_flags, plan_xfer_fn xfer, size_t *sent)
{
	*sent = 0;
	struct proto_wr w;
	proto_wr_init(&w);
	size_t i = 0;
	bool first = true;
	int rc = 0;
	do {
		/* how many entries fit in this frame */
		size_t j = i, bytes = 0;
		while (j < s->n) {
			long sz = plan_entry_size(s, j);
			if (sz < 0) {
				rc = (int)sz;
				goto out;
			}
			if (bytes + (size_t)sz > PLAN_FRAME_BUDGET)
				break;
			bytes += (size_t)sz;
			j++;
		}
		uint8_t f = first ? first_flags : TC_PLAN_CONT;
		if (j < s->n)
			f |= TC_PLAN_MORE;
		proto_wr_begin(&w);
		proto_wr_str(&w, dataset);
		proto_wr_u64(&w, p->job);
		proto_wr_u32(&w, p->rank);
		proto_wr_u32(&w, p->world_size);
		proto_wr_u32(&w, p->epoch);
		proto_wr_u8(&w, f);
		proto_wr_u8(&w, s->indices ? TC_PLAN_INDICES : TC_PLAN_PATHS);
		proto_wr_u32(&w, (uint32_t)(j - i));
		for (size_t k = i; k < j; k++) {
			if (s->indices)
				proto_wr_u64(&w, s->indices[k]);
			else
				proto_wr_str(&w, s->paths[k]);
		}
		if (w.oom) {
			rc = -ENOMEM;
			goto out;
		}
		rc = xfer(tc, TC_OP_PLAN_SET, &w);
		if (rc != 0)
			goto out;
		(*sent)++;
		i = j;
		first = false;
	} while (i < s->n);
out:
	proto_wr_free(&w);
	return rc;
}

/* ---- kept plans: re-registered on a new connection ---- */

/* One registration as it was sent. */
struct tc_kept_seg {
	uint8_t kind;   /* TC_PLAN_PATHS | TC_PLAN_INDICES */
	uint32_t epoch;
	uint32_t world_size;
	size_t n;
	size_t bytes;   /* of data */
	void *data;     /* n x u64, or n NUL-terminated paths back to back */
};

/* The last registration of (dataset, job, rank) and the append after it
 * (a sampler publishes epoch e+1 when epoch e starts: the job is in the
 * first of the two). */
struct tc_kept_plan {
	struct tc_kept_plan *next;
	char dataset[TC_DATASET_NAME_MAX + 1];
	uint64_t job;
	uint32_t rank;
	bool whole; /* registered with TIERCACHE_PLAN_JOB */
	struct tc_kept_seg seg[2];
	int nseg;
};

static void seg_free(struct tiercache *tc, struct tc_kept_seg *g)
{
	tc->kept_bytes -= g->bytes;
	free(g->data);
	memset(g, 0, sizeof(*g));
}

static void kept_free(struct tiercache *tc, struct tc_kept_plan *k)
{
	for (int i = 0; i < k->nseg; i++)
		seg_free(tc, &k->seg[i]);
	free(k);
}

void tc_plans_forget(struct tiercache *tc)
{
	while (tc->kept) {
		struct tc_kept_plan *k = tc->kept;
		tc->kept = k->next;
		kept_free(tc, k);
	}
	tc->kept_bytes = 0;
}

static struct tc_kept_plan **kept_find(struct tiercache *tc, const char *dataset, uint64_t job,
				       uint32_t rank)
{
	struct tc_kept_plan **pp = &tc->kept;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->job == job && (*pp)->rank == rank && strcmp((*pp)->dataset, dataset) == 0)
			break;
	return pp;
}

static void kept_drop(struct tiercache *tc, const char *dataset, uint64_t job, uint32_t rank)
{
	struct tc_kept_plan **pp = kept_find(tc, dataset, job, rank);
	if (*pp) {
		struct tc_kept_plan *k = *pp;
		*pp = k->next;
		kept_free(tc, k);
	}
}

/* Copy what was sent. -ENOMEM, or -EFBIG above TIERCACHE_PLAN_KEEP_MAX. */
static int seg_copy(struct tc_kept_seg *g, const struct tiercache_plan *p, const struct plan_src *s)
{
	size_t bytes = 0;
	if (s->indices) {
		bytes = s->n * sizeof(uint64_t);
	} else {
		for (size_t i = 0; i < s->n; i++) {
			bytes += strlen(s->paths[i]) + 1;
			if (bytes > TIERCACHE_PLAN_KEEP_MAX)
				return -EFBIG;
		}
	}
	if (bytes > TIERCACHE_PLAN_KEEP_MAX)
		return -EFBIG;
	uint8_t *d = malloc(bytes ? bytes : 1);
	if (!d)
		return -ENOMEM;
	if (s->indices && s->n) {
		memcpy(d, s->indices, bytes);
	} else {
		uint8_t *at = d;
		for (size_t i = 0; i < s->n; i++) {
			size_t len = strlen(s->paths[i]) + 1;
			memcpy(at, s->paths[i], len);
			at += len;
		}
	}
	*g = (struct tc_kept_seg){.kind = s->indices ? TC_PLAN_INDICES : TC_PLAN_PATHS,
				  .epoch = p->epoch, .world_size = p->world_size, .n = s->n,
				  .bytes = bytes, .data = d};
	return 0;
}

/* The daemon registered s: keep it (io_lock held). A plan that cannot be
 * kept is logged and will not survive a restart; the call still succeeded. */
static void kept_note(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
		      const struct plan_src *s, bool append, bool whole)
{
	struct tc_kept_plan **pp = kept_find(tc, dataset, p->job, p->rank);
	struct tc_kept_plan *k = *pp;
	if (append && !k)
		return; /* extends a plan registered elsewhere: its owner keeps it */
	struct tc_kept_seg g;
	int rc = seg_copy(&g, p, s);
	if (rc < 0) {
		tc_log(1, "dataset=%s job=%llu rank=%u err=\"%s\": plan not kept, it will not be "
			  "re-registered if tiercached restarts",
		       dataset, (unsigned long long)p->job, p->rank, tiercache_strerror(-rc));
		kept_drop(tc, dataset, p->job, p->rank);
		return;
	}
	tc->kept_bytes += g.bytes;
	if (!append) {
		if (!k) {
			k = calloc(1, sizeof(*k));
			if (!k) {
				tc->kept_bytes -= g.bytes;
				free(g.data);
				return;
			}
			snprintf(k->dataset, sizeof(k->dataset), "%s", dataset);
			k->job = p->job;
			k->rank = p->rank;
			k->next = tc->kept;
			tc->kept = k;
		}
		k->whole = whole;
		for (int i = 0; i < k->nseg; i++)
			seg_free(tc, &k->seg[i]);
		k->seg[0] = g;
		k->nseg = 1;
		return;
	}
	if (k->nseg == 2) { /* the older registration is done with */
		seg_free(tc, &k->seg[0]);
		k->seg[0] = k->seg[1];
		k->nseg = 1;
	}
	k->seg[k->nseg++] = g;
}

/* Re-send one kept registration. */
static int seg_replay(struct tiercache *tc, const struct tc_kept_plan *k, const struct tc_kept_seg *g,
		      uint8_t flags)
{
	struct tiercache_plan p = {.job = k->job, .rank = k->rank, .world_size = g->world_size,
				   .epoch = g->epoch};
	struct plan_src s = {.n = g->n};
	const char **paths = NULL;
	if (g->kind == TC_PLAN_INDICES) {
		s.indices = g->data;
	} else {
		paths = malloc((g->n ? g->n : 1) * sizeof(*paths));
		if (!paths)
			return -ENOMEM;
		const char *at = g->data;
		for (size_t i = 0; i < g->n; i++) {
			paths[i] = at;
			at += strlen(at) + 1;
		}
		s.paths = paths;
	}
	size_t sent;
	int rc = plan_frames(tc, k->dataset, &p, &s, flags, plan_xfer_raw, &sent);
	free(paths);
	return rc;
}

int tc_conn_restore(struct tiercache *tc)
{
	if (tc->job.set) {
		int rc = tc_job_send(tc);
		if (rc == TC_ERETRY)
			return rc;
		if (rc < 0)
			tc_log(1, "socket=%s job=%llu err=\"%s\": job tag not restored: reads advance every plan",
			       tc->path, (unsigned long long)tc->job.job, tiercache_strerror(-rc));
	}
	for (struct tc_kept_plan **pp = &tc->kept; *pp;) {
		struct tc_kept_plan *k = *pp;
		int rc = 0;
		for (int i = 0; i < k->nseg && rc == 0; i++)
			rc = seg_replay(tc, k, &k->seg[i],
					(i == 0 ? TC_PLAN_RESUME : TC_PLAN_APPEND) | (k->whole ? TC_PLAN_JOB : 0));
		if (rc == TC_ERETRY)
			return rc;
		if (rc < 0) {
			tc_log(1, "dataset=%s job=%llu rank=%u err=\"%s\": plan not re-registered after "
				  "reconnecting (the dataset or its files changed?); dropped",
			       k->dataset, (unsigned long long)k->job, k->rank, tiercache_strerror(-rc));
			*pp = k->next;
			kept_free(tc, k);
			continue;
		}
		tc_log(2, "dataset=%s job=%llu rank=%u plan re-registered after reconnecting", k->dataset,
		       (unsigned long long)k->job, k->rank);
		pp = &k->next;
	}
	return 0;
}

/* The connection's generation (bumped by every new connection). */
static uint32_t plan_conn_gen(struct tiercache *tc)
{
	tc_io_lock(tc);
	uint32_t g = tc->gen;
	tc_io_unlock(tc);
	return g;
}

static int plan_send(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
		     const struct plan_src *s, unsigned flags)
{
	tc_err_begin();
	int rc = plan_check(tc, dataset, p, flags);
	if (rc < 0)
		return tc_err_fail(rc);
	if (s->n && !s->paths && !s->indices)
		return tc_err_fail(-EINVAL);
	if (s->n > TC_PLAN_ENTRIES_MAX) {
		tc_err_detail("plan of %zu files: at most %u per call (send the rest with "
			      "TIERCACHE_PLAN_APPEND)",
			      s->n, TC_PLAN_ENTRIES_MAX);
		return tc_err_fail(-EINVAL);
	}
	bool append = flags & TIERCACHE_PLAN_APPEND;
	tc_enter(tc); /* before taking io_lock: a forked child resets it first */
	for (int attempt = 0;; attempt++) {
		uint32_t gen0 = plan_conn_gen(tc);
		size_t sent;
		uint8_t first = (append ? TC_PLAN_APPEND : 0) | ((flags & TIERCACHE_PLAN_JOB) ? TC_PLAN_JOB : 0);
		rc = plan_frames(tc, dataset, p, s, first, plan_xfer_call, &sent);
		/* the connection was replaced between two frames of this plan: the
		 * new daemon has no registration in progress. Send it all again. */
		if (rc == -EINVAL && sent > 0 && attempt == 0 && plan_conn_gen(tc) != gen0)
			continue;
		break;
	}
	if (rc < 0)
		return tc_err_fail(rc);
	tc_io_lock(tc);
	kept_note(tc, dataset, p, s, append, flags & TIERCACHE_PLAN_JOB);
	tc_ahead_reset(tc); /* a new plan: ask for its files afresh */
	tc_io_unlock(tc);
	return 0;
}

int tiercache_plan_paths(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
			 const char *const *paths, size_t n, unsigned flags)
{
	struct plan_src s = {.paths = paths, .n = n};
	return plan_send(tc, dataset, p, &s, flags);
}

int tiercache_plan_indices(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
			   const uint64_t *indices, size_t n, unsigned flags)
{
	struct plan_src s = {.indices = indices, .n = n};
	return plan_send(tc, dataset, p, &s, flags);
}

int tiercache_plan_cancel(struct tiercache *tc, const char *dataset, uint64_t job, uint32_t rank)
{
	tc_err_begin();
	struct tiercache_plan p = {.job = job, .rank = rank, .world_size = rank + 1};
	int rc = plan_check(tc, dataset, &p, 0);
	if (rc < 0)
		return tc_err_fail(rc);
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, dataset);
	proto_wr_u64(&w, job);
	proto_wr_u32(&w, rank);
	if (w.oom) {
		proto_wr_free(&w);
		return tc_err_fail(-ENOMEM);
	}
	void *rep = NULL;
	size_t replen = 0;
	rc = tiercache_call(tc, TC_OP_PLAN_CANCEL, w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE, &rep, &replen);
	int e = errno;
	proto_wr_free(&w);
	free(rep);
	if (rc == 0 || e == ENOENT) { /* gone either way: never re-register it */
		tc_io_lock(tc);
		kept_drop(tc, dataset, job, rank);
		tc_ahead_reset(tc); /* what was handed for it goes back */
		tc_io_unlock(tc);
	}
	errno = e;
	return rc;
}
