/*
 * clairvoyant: Belady's rule driven by the plans registered for the node.
 * Evicts the resident entry whose next planned read is furthest away (over
 * every plan: the oracle in struct policy_env, normally the plan store of
 * plan.h), and does not admit an entry that would be that victim itself,
 * i.e. one that would be evicted before its next use.
 *
 * Entries the plans do not mention ("unplanned", next use unknown) are the
 * first to go, least recently used first; a new unplanned entry may replace
 * an older unplanned one (tunable unplanned=admit, the default) so that a
 * dataset with no plans at all gets plain LRU rather than nothing. With
 * unplanned=skip it is never admitted once the cache is full.
 *
 * Next-use times are taken when an entry is read. Plans move (an epoch is
 * appended, a plan dropped, a job skips reads), so the candidate victim is
 * re-asked before it is named, and after the oracle's version changes each
 * insert re-asks one more resident in turn until all have been: stale
 * answers cannot pin an entry for ever.
 *
 * The residents sit in a lazy 4-ary max-heap of (next use, insertion
 * sequence) nodes: an entry that is read gets a new node and its old one
 * turns stale (its entry's stamp or sequence no longer match), and stale
 * nodes are dropped when they surface or by a compaction once they
 * outnumber the live ones. This writes nothing into the entries while
 * sifting, which is what keeps it fast on a cache of millions of entries.
 * An entry's next use is in stamp.
 *
 * Whether a node is current is asked of a slot the instance owns, never
 * of the entry the node points to: the caller may free an entry as soon as
 * it is removed, or insert it into another instance (the daemon's other
 * tier), so a stale node must not even read its entry. Each resident has a
 * slot (its index in the entry's aux) holding the sequence of its current
 * node; remove() clears it, and a slot is reused once no node refers to
 * it any more.
 *
 * Pure: no I/O, no locks, no clock reads. One instance per thread.
 */
#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CV_NEVER UINT64_MAX
/* Changed answers tolerated before a victim is named anyway. */
#define CV_REVALIDATE 8

enum { CV_IN = 1, CV_OVERFLOW = 2 };
#define CV_SEQ_NONE UINT32_MAX /* slot of no resident (removed, overflowed) */
#define CV_SLOT_NIL UINT32_MAX
/* Sequences are 32 bits so that a node is 16 bytes. When they run out
 * (after some 4 billion pushes) the nodes are renumbered in order, which
 * changes no comparison. Overridable for the test that exercises it. */
#ifndef CV_SEQ_LIMIT
#define CV_SEQ_LIMIT (UINT32_MAX - 1)
#endif

struct cv_slot {
	uint32_t seq;     /* the current node's sequence, or CV_SEQ_NONE */
	uint32_t refs;    /* heap nodes pointing here */
	struct pol_entry *e;
	uint64_t version; /* the oracle's version when the current node's next_use was asked */
	uint32_t next_free;
};

/* 16 bytes: a node's four children fill one cache line (see cv_heap_grow). */
struct cv_node {
	uint64_t next_use;
	uint32_t seq;  /* ties (unplanned) go oldest first */
	uint32_t slot; /* the entry and whether this node is current */
};

struct clairvoyant {
	struct policy base;
	uint64_t capacity;
	uint64_t (*next_use)(void *ctx, uint64_t key, uint64_t now);
	uint64_t (*version)(void *ctx);
	void *ctx;
	struct cv_node *heap; /* heap_mem + 3: see cv_heap_grow */
	void *heap_mem;
	size_t n, cap;
	struct cv_slot *slots;
	uint32_t nslots, free_slot;
	uint32_t seq;
	size_t sweep;           /* next heap slot to re-ask */
	uint64_t sweep_version; /* the oracle version the sweep has caught up with */
	bool admit_unplanned;
	struct pol_list overflow; /* entries the heap had no memory for */
	uint64_t pending_key, pending_use;
	bool pending_valid;
	uint64_t admitted, refused, requeried, compactions;
};

static uint64_t cv_ask(const struct clairvoyant *c, uint64_t key, uint64_t now)
{
	return c->next_use ? c->next_use(c->ctx, key, now) : CV_NEVER;
}

static uint64_t cv_version(const struct clairvoyant *c)
{
	return c->version ? c->version(c->ctx) : 0;
}

/* a goes before b (nearer the top: evicted first)? */
static bool cv_above(const struct cv_node *a, const struct cv_node *b)
{
	return a->next_use > b->next_use || (a->next_use == b->next_use && a->seq < b->seq);
}

static bool cv_valid(const struct clairvoyant *c, const struct cv_node *nd)
{
	return c->slots[nd->slot].seq == nd->seq;
}

/* A slot for a new resident, or CV_SLOT_NIL (no memory). */
static uint32_t cv_slot_new(struct clairvoyant *c)
{
	if (c->free_slot == CV_SLOT_NIL) {
		uint32_t n = c->nslots ? 2 * c->nslots : 1024;
		if (n <= c->nslots)
			return CV_SLOT_NIL;
		struct cv_slot *ns = realloc(c->slots, n * sizeof(*ns));
		if (!ns)
			return CV_SLOT_NIL;
		for (uint32_t i = c->nslots; i < n; i++)
			ns[i] = (struct cv_slot){.seq = CV_SEQ_NONE, .next_free = i + 1 < n ? i + 1 : CV_SLOT_NIL};
		c->slots = ns;
		c->free_slot = c->nslots;
		c->nslots = n;
	}
	uint32_t i = c->free_slot;
	c->free_slot = c->slots[i].next_free;
	c->slots[i] = (struct cv_slot){.seq = CV_SEQ_NONE, .next_free = CV_SLOT_NIL};
	/* The next free slot may have been released long ago: load it now,
	 * not when the next insert needs it (a hint only). */
	if (c->free_slot != CV_SLOT_NIL)
		__builtin_prefetch(&c->slots[c->free_slot]);
	return i;
}

/* Reuse the slot once it has no resident and no node. */
static void cv_slot_release(struct clairvoyant *c, uint32_t i)
{
	if (c->slots[i].seq == CV_SEQ_NONE && c->slots[i].refs == 0) {
		c->slots[i].next_free = c->free_slot;
		c->free_slot = i;
	}
}

/* The resident of slot i has gone (removed, or moved to the overflow). */
static void cv_slot_vacate(struct clairvoyant *c, uint32_t i)
{
	c->slots[i].seq = CV_SEQ_NONE;
	cv_slot_release(c, i);
}

/* A node leaves the heap. */
static void cv_node_drop(struct clairvoyant *c, const struct cv_node *nd)
{
	c->slots[nd->slot].refs--;
	cv_slot_release(c, nd->slot);
}

/* A 4-ary heap: half the depth of a binary one, and a node's children
 * share cache lines, which is what a pop pays for on a big cache. */
#define CV_ARITY 4

/* The order of cv_above() as one number: (next_use, ~seq) in 96 bits.
 * Sequences are unique, so no two nodes rank the same. */
static inline unsigned __int128 cv_rank(const struct cv_node *n)
{
	return ((unsigned __int128)n->next_use << 32) | (uint32_t)~n->seq;
}

/* Of four siblings, the one nearest the top: a tournament of selects, not
 * branches (which way a comparison goes is a coin toss: a mispredicted
 * branch per comparison costs more than the memory it waits for). */
static inline size_t cv_best_of4(const struct cv_node *h, unsigned __int128 *rank)
{
	unsigned __int128 r0 = cv_rank(&h[0]), r1 = cv_rank(&h[1]);
	unsigned __int128 r2 = cv_rank(&h[2]), r3 = cv_rank(&h[3]);
	size_t a = r1 > r0, b = 2 + (r3 > r2);
	unsigned __int128 ra = r1 > r0 ? r1 : r0, rb = r3 > r2 ? r3 : r2;
	*rank = rb > ra ? rb : ra;
	return rb > ra ? b : a;
}

static void cv_down(struct clairvoyant *c, size_t i)
{
	struct cv_node nd = c->heap[i];
	unsigned __int128 rnd = cv_rank(&nd);
	for (;;) {
		size_t first = CV_ARITY * i + 1, best = i;
		const struct cv_node *bn = &nd;
		size_t last = first + CV_ARITY < c->n ? first + CV_ARITY : c->n;
		/* Each child's children are one cache line: load the next
		 * level while this one is compared, so the walk down costs
		 * one memory latency per two levels (a hint only). */
		size_t grand = CV_ARITY * first + 1;
		if (grand < c->n) {
			const char *g = (const char *)&c->heap[grand];
			__builtin_prefetch(g);
			__builtin_prefetch(g + 64);
			__builtin_prefetch(g + 128);
			__builtin_prefetch(g + 192);
		}
		if (last - first == CV_ARITY) {
			unsigned __int128 rk;
			size_t k = first + cv_best_of4(&c->heap[first], &rk);
			if (rk <= rnd)
				break;
			c->heap[i] = c->heap[k];
			i = k;
			continue;
		}
		for (size_t k = first; k < last; k++) {
			if (cv_above(&c->heap[k], bn)) {
				best = k;
				bn = &c->heap[k];
			}
		}
		if (best == i)
			break;
		c->heap[i] = c->heap[best];
		i = best;
	}
	c->heap[i] = nd;
}

static void cv_pop(struct clairvoyant *c)
{
	cv_node_drop(c, &c->heap[0]);
	if (--c->n) {
		c->heap[0] = c->heap[c->n];
		cv_down(c, 0);
	}
	/* The next top is checked through its slot: start loading the
	 * candidates' slots now (a hint; no effect on behaviour). */
	for (size_t k = 1; k <= CV_ARITY && k < c->n; k++)
		__builtin_prefetch(&c->slots[c->heap[k].slot]);
}

/* Drop stale nodes and rebuild the heap in place (Floyd), O(n). */
static void cv_compact(struct clairvoyant *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (cv_valid(c, &c->heap[i]))
			c->heap[k++] = c->heap[i];
		else
			cv_node_drop(c, &c->heap[i]);
	}
	c->n = k;
	for (size_t i = k / CV_ARITY + 1; i-- > 0;)
		if (i < k)
			cv_down(c, i);
	c->sweep = 0;
	c->compactions++;
}

/* Room for ncap nodes. The array starts 3 nodes (48 bytes) into a 64-byte
 * aligned block, so that the children of node i, 4i+1 .. 4i+4, are one
 * cache line: a sift down reads one line per level. false: no memory. */
static bool cv_heap_grow(struct clairvoyant *c, size_t ncap)
{
	size_t bytes = ((ncap + 3) * sizeof(struct cv_node) + 63) & ~(size_t)63;
	void *mem = aligned_alloc(64, bytes);
	if (!mem)
		return false;
	struct cv_node *nh = (struct cv_node *)mem + 3;
	if (c->n)
		memcpy(nh, c->heap, c->n * sizeof(*nh));
	free(c->heap_mem);
	c->heap_mem = mem;
	c->heap = nh;
	c->cap = ncap;
	return true;
}

struct cv_order {
	uint32_t seq;
	bool valid;
	size_t i;
};

static int cv_order_cmp(const void *a, const void *b)
{
	const struct cv_order *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The sequences ran out: number every node, stale ones too, 0, 1, ... in
 * the order of its sequence, and move each resident's slot to its current
 * node's new number. Every comparison and every staleness test answers as
 * before, so nothing moves in the heap. false: no memory. */
static bool cv_renumber(struct clairvoyant *c)
{
	if (c->n >= CV_SEQ_LIMIT)
		return false;
	struct cv_order *o = malloc((c->n ? c->n : 1) * sizeof(*o));
	if (!o)
		return false;
	for (size_t i = 0; i < c->n; i++)
		o[i] = (struct cv_order){ .seq = c->heap[i].seq, .valid = cv_valid(c, &c->heap[i]), .i = i };
	qsort(o, c->n, sizeof(*o), cv_order_cmp);
	for (size_t r = 0; r < c->n; r++) {
		struct cv_node *nd = &c->heap[o[r].i];
		nd->seq = (uint32_t)r;
		if (o[r].valid)
			c->slots[nd->slot].seq = (uint32_t)r;
	}
	c->seq = (uint32_t)c->n;
	free(o);
	return true;
}

/* Give e a node for its current stamp. false: no memory. */
static bool cv_push(struct clairvoyant *c, struct pol_entry *e)
{
	if (c->n == c->cap && c->n > c->base.entries + c->base.entries / 2 + 1024)
		cv_compact(c);
	if (c->n == c->cap && !cv_heap_grow(c, c->cap ? 2 * c->cap : 1024))
		return false;
	if (c->seq >= CV_SEQ_LIMIT && !cv_renumber(c))
		return false;
	struct cv_node nd = { .next_use = e->stamp, .seq = c->seq++, .slot = e->aux };
	struct cv_slot *sl = &c->slots[nd.slot];
	sl->seq = nd.seq;
	sl->e = e;
	sl->refs++;
	sl->version = cv_version(c);
	size_t i = c->n++;
	while (i > 0) {
		size_t parent = (i - 1) / CV_ARITY;
		if (!cv_above(&nd, &c->heap[parent]))
			break;
		c->heap[i] = c->heap[parent];
		i = parent;
	}
	c->heap[i] = nd;
	return true;
}

/* Out of memory: keep e where victim() names it first, so the caller's
 * accounting stays right. */
static void cv_to_overflow(struct clairvoyant *c, struct pol_entry *e)
{
	if (e->list & CV_IN)
		cv_slot_vacate(c, e->aux); /* its nodes are stale */
	e->list = CV_OVERFLOW;
	pol_list_push_head(&c->overflow, e);
}

/* Re-ask about a resident entry; true if the answer moved (and e has a new
 * node: the old one is stale now). */
static bool cv_requery(struct clairvoyant *c, struct pol_entry *e, uint64_t now)
{
	uint64_t u = cv_ask(c, e->key, now);
	if (u == e->stamp)
		return false;
	e->stamp = u;
	c->requeried++;
	if (!cv_push(c, e))
		cv_to_overflow(c, e);
	return true;
}

/* The valid top node, re-asked if the oracle may have moved since its
 * answer was taken (always, for an oracle without a version). */
static struct cv_node *cv_top(struct clairvoyant *c, uint64_t now)
{
	int changed = 0;
	for (;;) {
		while (c->n && !cv_valid(c, &c->heap[0]))
			cv_pop(c);
		if (!c->n)
			return NULL;
		struct cv_node *top = &c->heap[0];
		struct cv_slot *sl = &c->slots[top->slot];
		/* It is the next victim: start loading its entry for the
		 * caller's remove() (a hint only). */
		__builtin_prefetch(sl->e);
		uint64_t v = cv_version(c);
		if (c->version && sl->version == v)
			return top;
		if (changed >= CV_REVALIDATE || !cv_requery(c, sl->e, now)) {
			c->slots[c->heap[0].slot].version = v; /* same answer: fresh again */
			return &c->heap[0];
		}
		changed++;
	}
}

static int cv_create(const struct policy_env *env, struct policy **out)
{
	struct clairvoyant *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (env) {
		c->capacity = env->capacity;
		c->next_use = env->next_use;
		c->version = env->version;
		c->ctx = env->ctx;
	}
	c->admit_unplanned = true;
	c->sweep_version = cv_version(c);
	c->free_slot = CV_SLOT_NIL;
	pol_list_init(&c->overflow);
	*out = &c->base;
	return 0;
}

static void cv_destroy(struct policy *p)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	free(c->slots);
	free(c->heap_mem);
	free(c);
}

static int cv_set_tunable(struct policy *p, const char *key, const char *value, char *err, size_t n)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	if (strcmp(key, "unplanned") == 0) {
		if (value && strcmp(value, "admit") == 0)
			c->admit_unplanned = true;
		else if (value && strcmp(value, "skip") == 0)
			c->admit_unplanned = false;
		else {
			snprintf(err, n, "clairvoyant: unplanned: \"%s\" is not admit or skip",
				 value ? value : "");
			return -EINVAL;
		}
		return 0;
	}
	return policy_unknown_tunable(p, key, err, n);
}

static void cv_hit(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	e->atime = now;
	if (e->list & CV_OVERFLOW) /* it goes first anyway */
		return;
	e->stamp = cv_ask(c, e->key, now);
	if (!cv_push(c, e))
		cv_to_overflow(c, e);
}

static bool cv_admit(struct policy *p, uint64_t key, uint64_t size, uint64_t now)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	uint64_t u = cv_ask(c, key, now);
	bool ok = false;
	c->pending_key = key;
	c->pending_use = u;
	c->pending_valid = true;
	if (!c->capacity) {
		ok = true;
		goto out;
	}
	if (size > c->capacity)
		goto out;
	if (p->bytes + size <= c->capacity) {
		ok = true;
		goto out;
	}
	struct cv_node *top = cv_top(c, now);
	if (!top)
		goto out;
	if (u == CV_NEVER)
		ok = c->admit_unplanned && top->next_use == CV_NEVER;
	else
		ok = u < top->next_use;
out:
	if (ok)
		c->admitted++;
	else
		c->refused++;
	return ok;
}

/* After the oracle's version moved, re-ask one resident per insert until
 * every slot has been seen once. */
static void cv_sweep_step(struct clairvoyant *c, uint64_t now)
{
	uint64_t v = cv_version(c);
	if (c->version && v == c->sweep_version)
		return;
	if (c->sweep >= c->n) {
		c->sweep = 0;
		c->sweep_version = v;
		return;
	}
	struct cv_node *nd = &c->heap[c->sweep++];
	if (!cv_valid(c, nd))
		return;
	struct cv_slot *sl = &c->slots[nd->slot];
	if (c->version && sl->version == v)
		return;
	if (!cv_requery(c, sl->e, now))
		c->slots[nd->slot].version = v;
}

static void cv_insert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	uint64_t u = c->pending_valid && c->pending_key == e->key ? c->pending_use
								  : cv_ask(c, e->key, now);
	c->pending_valid = false;
	e->stamp = u;
	e->atime = now;
	e->list = 0;
	uint32_t slot = cv_slot_new(c);
	if (slot == CV_SLOT_NIL) {
		cv_to_overflow(c, e);
		return;
	}
	e->aux = slot;
	e->list = CV_IN;
	if (!cv_push(c, e)) {
		cv_to_overflow(c, e);
		return;
	}
	cv_sweep_step(c, now);
}

static void cv_remove(struct policy *p, struct pol_entry *e)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	if (e->list & CV_OVERFLOW)
		pol_list_unlink(&c->overflow, e);
	else if (e->list & CV_IN)
		cv_slot_vacate(c, e->aux); /* its nodes are stale from now on */
	e->list = 0;
}

static struct pol_entry *cv_victim(struct policy *p, uint64_t now)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	if (!pol_list_empty(&c->overflow))
		return pol_list_tail(&c->overflow);
	struct cv_node *top = cv_top(c, now);
	return top ? c->slots[top->slot].e : NULL;
}

static int cv_describe(struct policy *p, char *buf, size_t len)
{
	struct clairvoyant *c = (struct clairvoyant *)p;
	snprintf(buf, len,
		 "unplanned=%s oracle=%s admitted=%llu refused=%llu requeried=%llu heap=%zu "
		 "compactions=%llu",
		 c->admit_unplanned ? "admit" : "skip", c->next_use ? "yes" : "none",
		 (unsigned long long)c->admitted, (unsigned long long)c->refused,
		 (unsigned long long)c->requeried, c->n, (unsigned long long)c->compactions);
	return 0;
}

/* A hit writes the entry's slot (a new node): load it. */
static void cv_prefetch(const struct policy *p, const struct pol_entry *e)
{
	const struct clairvoyant *c = (const struct clairvoyant *)p;
	if ((e->list & CV_IN) && e->aux < c->nslots)
		__builtin_prefetch(&c->slots[e->aux]);
}

const struct policy_ops policy_clairvoyant_ops = {
	.name = "clairvoyant",
	.summary = "plan-aware Belady: evicts what the registered plans need furthest away",
	.create = cv_create,
	.destroy = cv_destroy,
	.set = cv_set_tunable,
	.hit = cv_hit,
	.admit = cv_admit,
	.insert = cv_insert,
	.remove = cv_remove,
	.victim = cv_victim,
	.tunables = "unplanned",
	.caps = POLICY_CAP_PLANS,
	.describe = cv_describe,
	.prefetch = cv_prefetch,
};
