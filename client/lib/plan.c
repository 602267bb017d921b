/*
 * Plans: tiercache_plan_paths / tiercache_plan_indices / tiercache_plan_cancel
 * (include/tiercache.h). A plan of any length goes out as a sequence of
 * PLAN_SET frames (include/tiercache/protocol.h), each at most
 * TC_FRAME_MAX bytes; the daemon registers the whole plan when the last
 * one arrives, so a bad entry anywhere registers nothing.
 *
 * Thread safety: like every call, safe from several threads; two threads
 * sending plans for the same (dataset, job, rank) on one connection at the
 * same time would interleave their frames (the daemon then registers one
 * of them or refuses the other's continuation frames).
 */
#include <errno.h>
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
	if (flags & ~TIERCACHE_PLAN_APPEND) {
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
	struct proto_wr w;
	proto_wr_init(&w);
	size_t i = 0;
	bool first = true;
	do {
		/* how many entries fit in this frame */
		size_t j = i, bytes = 0;
		while (j < s->n) {
			long sz = plan_entry_size(s, j);
			if (sz < 0) {
				proto_wr_free(&w);
				return tc_err_fail((int)sz);
			}
			if (bytes + (size_t)sz > PLAN_FRAME_BUDGET)
				break;
			bytes += (size_t)sz;
			j++;
		}
		uint8_t f = 0;
		if (first && (flags & TIERCACHE_PLAN_APPEND))
			f |= TC_PLAN_APPEND;
		if (!first)
			f |= TC_PLAN_CONT;
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
			proto_wr_free(&w);
			return tc_err_fail(-ENOMEM);
		}
		void *rep = NULL;
		size_t replen = 0;
		if (tiercache_call(tc, TC_OP_PLAN_SET, w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE, &rep,
				   &replen) < 0) {
			int e = errno;
			proto_wr_free(&w);
			errno = e;
			return -1; /* errno and the detail are the daemon's */
		}
		free(rep);
		i = j;
		first = false;
	} while (i < s->n);
	proto_wr_free(&w);
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
	errno = e;
	return rc;
}
