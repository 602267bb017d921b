/*
 * The OPT reference: Belady's MIN with bypass, over bytes.
 *
 * On a miss the object is cached only if room can be made by evicting
 * objects whose next use is later than its own (furthest first); otherwise
 * it is served and not kept. On a hit nothing moves. With every object the
 * same size this is exactly optimal for the hit count (and so for bytes):
 * the unit tests check it against an exhaustive search. With sizes that
 * differ, the optimum is NP-hard; this is then the standard size-aware
 * variant of Belady (furthest next use first, admit only if that frees
 * enough), a strong reference but not a bound: a policy may beat it.
 *
 * Next uses are precomputed in one backward pass; the residents sit in an
 * indexed binary max-heap keyed by next use. O(log C) per access, no
 * allocation after setup. Single-threaded.
 */
#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define OPT_NEVER UINT32_MAX
#define OPT_OUT UINT32_MAX

struct opt_heap {
	uint32_t *obj;  /* heap slot -> object */
	uint32_t *nu;   /* heap slot -> next use (access index) */
	uint32_t *slot; /* object -> heap slot, OPT_OUT if not resident */
	uint32_t n;
};

static void opt_put(struct opt_heap *h, uint32_t i, uint32_t o, uint32_t nu)
{
	h->obj[i] = o;
	h->nu[i] = nu;
	h->slot[o] = i;
}

static void opt_up(struct opt_heap *h, uint32_t i)
{
	uint32_t o = h->obj[i], nu = h->nu[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (h->nu[p] >= nu)
			break;
		opt_put(h, i, h->obj[p], h->nu[p]);
		i = p;
	}
	opt_put(h, i, o, nu);
}

static void opt_down(struct opt_heap *h, uint32_t i)
{
	uint32_t o = h->obj[i], nu = h->nu[i];
	for (;;) {
		uint32_t l = 2 * i + 1, best = i, bnu = nu;
		if (l < h->n && h->nu[l] > bnu) {
			best = l;
			bnu = h->nu[l];
		}
		if (l + 1 < h->n && h->nu[l + 1] > bnu)
			best = l + 1;
		if (best == i)
			break;
		opt_put(h, i, h->obj[best], h->nu[best]);
		i = best;
	}
	opt_put(h, i, o, nu);
}

static void opt_pop(struct opt_heap *h)
{
	h->slot[h->obj[0]] = OPT_OUT;
	if (--h->n) {
		opt_put(h, 0, h->obj[h->n], h->nu[h->n]);
		opt_down(h, 0);
	}
}

static void opt_push(struct opt_heap *h, uint32_t o, uint32_t nu)
{
	opt_put(h, h->n, o, nu);
	opt_up(h, h->n++);
}

int sim_run_opt(const struct trace *t, uint64_t capacity, struct sim_result *r)
{
	struct opt_heap h = { 0 };
	uint32_t *next = malloc((t->n ? t->n : 1) * sizeof(*next));
	uint32_t *stash = NULL; /* popped while trying to make room */
	int rc = -ENOMEM;
	h.obj = malloc((t->nobj ? t->nobj : 1) * sizeof(*h.obj));
	h.nu = malloc((t->nobj ? t->nobj : 1) * sizeof(*h.nu));
	h.slot = malloc((t->nobj ? t->nobj : 1) * sizeof(*h.slot));
	stash = malloc((t->nobj ? t->nobj : 1) * 2 * sizeof(*stash));
	if (!next || !h.obj || !h.nu || !h.slot || !stash)
		goto out;
	struct timespec t0, t1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);

	/* Backward pass: h.slot doubles as "last seen at" scratch here. */
	for (uint32_t o = 0; o < t->nobj; o++)
		h.slot[o] = OPT_NEVER;
	for (size_t i = t->n; i-- > 0;) {
		uint32_t o = t->obj[i];
		next[i] = h.slot[o];
		h.slot[o] = (uint32_t)i;
	}
	for (uint32_t o = 0; o < t->nobj; o++)
		h.slot[o] = OPT_OUT;

	uint64_t used = 0;
	for (size_t i = 0; i < t->n; i++) {
		uint32_t o = t->obj[i], nu = next[i];
		uint64_t size = t->size[o];
		struct sim_counts *ec = &r->epoch[t->epoch[i]];
		ec->accesses++;
		ec->bytes += size;
		if (h.slot[o] != OPT_OUT) {
			ec->hits++;
			ec->hit_bytes += size;
			uint32_t s = h.slot[o];
			h.nu[s] = nu; /* later than before: it can only go up */
			opt_up(&h, s);
			continue;
		}
		r->cold_bytes += size;
		if (nu == OPT_NEVER || size > capacity)
			continue;
		/* Free room by evicting only what is needed later than o. */
		uint32_t ns = 0;
		uint64_t freed = 0;
		while (used - freed + size > capacity && h.n && h.nu[0] > nu) {
			stash[2 * ns] = h.obj[0];
			stash[2 * ns + 1] = h.nu[0];
			freed += t->size[h.obj[0]];
			ns++;
			opt_pop(&h);
		}
		if (used - freed + size <= capacity) {
			used = used - freed + size;
			opt_push(&h, o, nu);
		} else {
			/* Cannot fit without evicting something needed
			 * sooner: bypass, and keep what was popped. */
			for (uint32_t k = 0; k < ns; k++)
				opt_push(&h, stash[2 * k], stash[2 * k + 1]);
		}
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (uint32_t e = 0; e < r->nepochs; e++) {
		r->all.accesses += r->epoch[e].accesses;
		r->all.hits += r->epoch[e].hits;
		r->all.bytes += r->epoch[e].bytes;
		r->all.hit_bytes += r->epoch[e].hit_bytes;
	}
	r->tier_hits[0] = r->all.hits;
	r->tier_hit_bytes[0] = r->all.hit_bytes;
	rc = 0;
out:
	free(next);
	free(h.obj);
	free(h.nu);
	free(h.slot);
	free(stash);
	return rc;
}
