/*
 * ARC (Megiddo & Modha, FAST '03), measured in bytes: the frequency-aware
 * baseline for skewed (zipf-like) reads. Two resident lists, T1 (seen once
 * recently) and T2 (seen at least twice), and two ghost lists of keys only,
 * B1 and B2, remembering what each list gave up. A miss that hits a ghost
 * moves the target size p of T1 towards the list that would have kept it, so
 * ARC tunes itself between recency and frequency with no knob to set.
 *
 * Sizes differ per entry, so every count of the paper is a byte count here
 * and a ghost hit moves p by its own size (scaled by the ghost lists' ratio).
 * The ghosts live in a keymap (key -> position) plus one ring per ghost list,
 * owned by the instance; remove() turns an entry into a ghost, whatever its
 * reason. A ghost list only ever grows at its head and shrinks at its tail,
 * except for a ghost hit, which takes a ghost out of the middle: its ring
 * slot is marked dead and skipped when the tail reaches it. So trimming
 * reads the ring in order, where a linked list would chase a pointer (and
 * wait for memory) per ghost dropped.
 *
 * An entry moved in without a read (insert_aged: a hot victim demoted to
 * warm under demote=flat) keeps its list: T2 if it was on T2 in the tier
 * that gave it up (arc_remove leaves that in pol_entry.aux), else T1 (or
 * T2 on a ghost hit, as any insert). It enters that list's head as at its
 * demotion, as demote=1 inserts it, not at the age of its last read as
 * lru's insert_aged does: placed by age, ARC's lists over hot + warm turn
 * into one LRU and lose ARC's gain on reshuffled epochs (hits 0.91x of
 * demote=1's on tiercache-sim's shuffle 30 %, docs/policies.md).
 *
 * admit() and insert() of one key need not be adjacent: the daemon admits
 * when a fill starts and inserts when it is published, with other fills
 * admitted in between. The keys whose admit was a ghost hit (insert them
 * into T2) are remembered in a small ring, not in a single slot.
 *
 * Pure: no I/O, no locks, no clock reads. One instance per thread.
 */
#include "keymap.h"
#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum { ARC_T1 = 1, ARC_T2 = 2 };
/* pol_entry.aux of an entry arc_remove() gave up: ARC_AUX_GONE | the list
 * it was on, for the arc it moves into (insert_aged) */
#define ARC_AUX_GONE 0xa2c00000u
enum { ARC_B1 = 1, ARC_B2 = 2 };
/* A position that is not a ghost's (arc_ghost_find). */
#define ARC_NONE UINT64_MAX
/* The size of a ring slot whose ghost was taken out of the middle. */
#define ARC_DEAD UINT64_MAX
/* Ghost hits admitted and not yet inserted that are remembered: more than
 * the fills a daemon has in flight at once. An older one that is inserted
 * at last goes to T1, costing adaptivity only. */
#define ARC_PENDING 32
/* Ring slots ahead of the tail whose cache line is loaded while trimming. */
#define ARC_RING_AHEAD 8

struct arc_gslot {
	uint64_t key;
	uint64_t size; /* ARC_DEAD: no longer a ghost */
};

/* A ghost list, oldest at the tail. Positions are absolute and only grow;
 * slot of position x: s[x & mask]. [tail, head) holds the list and dead
 * slots; tail is a live ghost's position, or head when the list is empty. */
struct arc_ring {
	struct arc_gslot *s;
	uint64_t mask;
	uint64_t head, tail;
	uint64_t bytes;
};

struct arc {
	struct policy base;
	uint64_t capacity;
	uint64_t p;          /* target bytes of T1 */
	struct pol_list t1, t2;
	struct arc_ring b1, b2;
	struct keymap gmap;  /* key -> position << 1 | (1 if in B2) */
	uint64_t last_key;    /* the last admit() (the usual case: its insert is next) */
	bool last_valid, last_t2;
	uint64_t pending[ARC_PENDING]; /* keys whose admit was a ghost hit */
	bool pending_used[ARC_PENDING];
	uint32_t pending_next, pending_n;
	bool pending_b2;      /* the last admit was a B2 hit (ARC's tie rule in REPLACE) */
	uint64_t ghost_hits;
};

static struct arc_ring *arc_ring_of(struct arc *a, uint64_t ghost)
{
	return ghost & 1 ? &a->b2 : &a->b1;
}

static bool arc_ring_empty(const struct arc_ring *r)
{
	return r->tail == r->head;
}

/* Move the tail past dead slots, and load what the next drops will read
 * (hints only). */
static void arc_ring_settle(struct arc *a, struct arc_ring *r)
{
	while (r->tail != r->head && r->s[r->tail & r->mask].size == ARC_DEAD)
		r->tail++;
	if (r->tail != r->head) {
		keymap_prefetch(&a->gmap, r->s[r->tail & r->mask].key);
		__builtin_prefetch(&r->s[(r->tail + ARC_RING_AHEAD) & r->mask]);
	}
}

static int arc_ring_grow(struct arc_ring *r)
{
	uint64_t n = r->s ? 2 * (r->mask + 1) : 64;
	struct arc_gslot *ns = malloc(n * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (uint64_t x = r->tail; x != r->head; x++)
		ns[x & (n - 1)] = r->s[x & r->mask];
	free(r->s);
	r->s = ns;
	r->mask = n - 1;
	return 0;
}

/* Take the ghost at position ghost >> 1 out of its list. */
static void arc_ghost_drop(struct arc *a, uint64_t ghost)
{
	struct arc_ring *r = arc_ring_of(a, ghost);
	struct arc_gslot *g = &r->s[(ghost >> 1) & r->mask];
	keymap_del(&a->gmap, g->key);
	r->bytes -= g->size;
	g->size = ARC_DEAD;
	arc_ring_settle(a, r);
}

static void arc_ghost_drop_tail(struct arc *a, struct arc_ring *r, uint64_t list)
{
	arc_ghost_drop(a, r->tail << 1 | list);
}

/* The ghost for key (position << 1 | list bit), or ARC_NONE. */
static uint64_t arc_ghost_find(const struct arc *a, uint64_t key)
{
	uint64_t *v = keymap_get(&a->gmap, key);
	return v ? *v : ARC_NONE;
}

static int arc_ghost_add(struct arc *a, uint32_t list, uint64_t key, uint64_t size)
{
	struct arc_ring *r = list == ARC_B1 ? &a->b1 : &a->b2;
	if (!r->s || r->head - r->tail > r->mask) {
		int rc = arc_ring_grow(r);
		if (rc < 0)
			return rc;
	}
	/* Only resident entries become ghosts, and residents are no ghosts. */
	if (keymap_put_new(&a->gmap, key, r->head << 1 | (list == ARC_B2)) < 0)
		return -ENOMEM;
	r->s[r->head & r->mask] = (struct arc_gslot){ .key = key, .size = size };
	r->head++;
	r->bytes += size;
	return 0;
}

/* Keep |T1|+|B1| <= c and |T1|+|T2|+|B1|+|B2| <= 2c, as the paper does. */
static void arc_ghost_trim(struct arc *a)
{
	while (!arc_ring_empty(&a->b1) && a->t1.bytes + a->b1.bytes > a->capacity)
		arc_ghost_drop_tail(a, &a->b1, 0);
	while (!arc_ring_empty(&a->b2) &&
	       a->t1.bytes + a->t2.bytes + a->b1.bytes + a->b2.bytes > 2 * a->capacity)
		arc_ghost_drop_tail(a, &a->b2, 1);
	while (!arc_ring_empty(&a->b1) &&
	       a->t1.bytes + a->t2.bytes + a->b1.bytes + a->b2.bytes > 2 * a->capacity)
		arc_ghost_drop_tail(a, &a->b1, 0);
}

static int arc_create(const struct policy_env *env, struct policy **out)
{
	/* ARC sizes its lists against the capacity: without one it cannot
	 * adapt, so say so rather than run as a worse LRU. */
	if (!env || !env->capacity)
		return -EINVAL;
	struct arc *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->capacity = env->capacity;
	pol_list_init(&a->t1);
	pol_list_init(&a->t2);
	keymap_init(&a->gmap);
	*out = &a->base;
	return 0;
}

static void arc_destroy(struct policy *p)
{
	struct arc *a = (struct arc *)p;
	keymap_free(&a->gmap);
	free(a->b1.s);
	free(a->b2.s);
	free(a);
}

static int arc_set(struct policy *p, const char *key, const char *value, char *err, size_t n)
{
	(void)value;
	return policy_unknown_tunable(p, key, err, n);
}

static void arc_hit(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct arc *a = (struct arc *)p;
	pol_list_unlink(e->list == ARC_T1 ? &a->t1 : &a->t2, e);
	e->list = ARC_T2;
	e->atime = now;
	pol_list_push_head(&a->t2, e);
}

static bool arc_admit(struct policy *p, uint64_t key, uint64_t size, uint64_t now)
{
	struct arc *a = (struct arc *)p;
	(void)now;
	a->pending_b2 = false;
	a->last_key = key;
	a->last_valid = true;
	a->last_t2 = false;
	uint64_t i = arc_ghost_find(a, key);
	if (i == ARC_NONE)
		return true;
	uint64_t b1 = a->b1.bytes ? a->b1.bytes : 1, b2 = a->b2.bytes ? a->b2.bytes : 1;
	if (!(i & 1)) {
		/* B1 hit: recency list was too small; grow p. */
		uint64_t delta = size * (b2 > b1 ? b2 / b1 : 1);
		a->p = a->p + delta < a->capacity ? a->p + delta : a->capacity;
	} else {
		uint64_t delta = size * (b1 > b2 ? b1 / b2 : 1);
		a->p = a->p > delta ? a->p - delta : 0;
		a->pending_b2 = true;
	}
	a->last_t2 = true;
	if (!a->pending_used[a->pending_next])
		a->pending_n++;
	a->pending[a->pending_next] = key;
	a->pending_used[a->pending_next] = true;
	a->pending_next = (a->pending_next + 1) % ARC_PENDING;
	a->ghost_hits++;
	arc_ghost_drop(a, i);
	return true;
}

/* Was key's admit a ghost hit? Forgets it either way. */
static bool arc_pending_take(struct arc *a, uint64_t key)
{
	for (uint32_t i = 0; a->pending_n && i < ARC_PENDING; i++) {
		if (a->pending_used[i] && a->pending[i] == key) {
			a->pending_used[i] = false;
			a->pending_n--;
			return true;
		}
	}
	return false;
}

/* Does e, inserted now, go to T2? Its admit was a ghost hit, or it is a
 * ghost here (moved in without admit). */
static bool arc_insert_t2(struct arc *a, struct pol_entry *e)
{
	bool t2;
	if (a->last_valid && a->last_key == e->key) {
		/* right after its admit (which dropped any ghost) */
		t2 = a->last_t2 && arc_pending_take(a, e->key);
	} else {
		t2 = arc_pending_take(a, e->key);
		/* admitted earlier with no ghost, or moved in without admit():
		 * it is no ghost now. Moved in as a B2 ghost: it left T2 a
		 * moment ago (the daemon copies an entry within its tier:
		 * remove, then insert), so it goes back to T2, not to T1 as
		 * if seen once; a B1 ghost goes back to T1. */
		uint64_t gi = t2 ? ARC_NONE : arc_ghost_find(a, e->key);
		if (gi != ARC_NONE) {
			t2 = (gi & 1) != 0;
			arc_ghost_drop(a, gi);
		}
	}
	a->last_valid = false;
	return t2;
}

static void arc_push(struct arc *a, struct pol_entry *e, bool t2, uint64_t now)
{
	e->list = t2 ? ARC_T2 : ARC_T1;
	e->aux = 0;
	e->atime = now;
	pol_list_push_head(t2 ? &a->t2 : &a->t1, e);
	arc_ghost_trim(a);
}

static void arc_insert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct arc *a = (struct arc *)p;
	arc_push(a, e, arc_insert_t2(a, e), now);
}

/* Moved in without a read (see the top): T2 if it was on T2 where it came
 * from, else as arc_insert; at the head, atime = now, as demote=1 puts it. */
static void arc_insert_aged(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct arc *a = (struct arc *)p;
	bool was_t2 = e->aux == (ARC_AUX_GONE | ARC_T2);
	bool t2 = arc_insert_t2(a, e);
	arc_push(a, e, t2 || was_t2, now);
}

static void arc_remove(struct policy *p, struct pol_entry *e)
{
	struct arc *a = (struct arc *)p;
	bool from_t1 = e->list == ARC_T1;
	pol_list_unlink(from_t1 ? &a->t1 : &a->t2, e);
	pol_list_prefetch_tail(from_t1 ? &a->t1 : &a->t2);
	/* Either tail may be the next victim, whose key then becomes a
	 * ghost: load both map slots now (hints only). */
	if (!pol_list_empty(&a->t1))
		keymap_prefetch(&a->gmap, a->t1.head.prev->key);
	if (!pol_list_empty(&a->t2))
		keymap_prefetch(&a->gmap, a->t2.head.prev->key);
	e->list = 0;
	e->aux = ARC_AUX_GONE | (from_t1 ? ARC_T1 : ARC_T2);
	/* Out of memory only costs adaptivity: the ghost is just not kept. */
	(void)arc_ghost_add(a, from_t1 ? ARC_B1 : ARC_B2, e->key, e->size);
	arc_ghost_trim(a);
}

static struct pol_entry *arc_victim(struct policy *p, uint64_t now)
{
	struct arc *a = (struct arc *)p;
	struct pol_entry *v;
	(void)now;
	bool t1_over = a->t1.bytes > a->p || (a->pending_b2 && a->t1.bytes == a->p);
	if (!pol_list_empty(&a->t1) && (t1_over || pol_list_empty(&a->t2)))
		v = pol_list_tail(&a->t1);
	else
		v = pol_list_tail(&a->t2);
	/* remove() will make it a ghost: load its slot now. */
	if (v)
		keymap_prefetch(&a->gmap, v->key);
	return v;
}

/* victim() and remove() in turn, on copies of the two lists' byte counts:
 * remove() changes neither p nor the tie rule, so each step takes the tail
 * victim() would name then. */
static size_t arc_next_victims(const struct policy *p, uint64_t now, uint64_t bytes,
			       struct pol_entry **out, size_t max)
{
	const struct arc *a = (const struct arc *)p;
	const struct pol_entry *h1 = &a->t1.head, *h2 = &a->t2.head;
	struct pol_entry *c1 = a->t1.head.prev, *c2 = a->t2.head.prev;
	uint64_t t1 = a->t1.bytes, got = 0;
	size_t n = 0;
	(void)now;
	while (n < max && got < bytes && (c1 != h1 || c2 != h2)) {
		bool t1_over = t1 > a->p || (a->pending_b2 && t1 == a->p);
		struct pol_entry *v;
		if (c1 != h1 && (t1_over || c2 == h2)) {
			v = c1;
			c1 = c1->prev;
			t1 -= v->size;
		} else {
			v = c2;
			c2 = c2->prev;
		}
		out[n++] = v;
		got += v->size;
	}
	return n;
}

static int arc_describe(struct policy *p, char *buf, size_t len)
{
	struct arc *a = (struct arc *)p;
	snprintf(buf, len, "p=%llu t1=%llu t2=%llu b1=%llu b2=%llu ghost_hits=%llu",
		 (unsigned long long)a->p, (unsigned long long)a->t1.bytes,
		 (unsigned long long)a->t2.bytes, (unsigned long long)a->b1.bytes,
		 (unsigned long long)a->b2.bytes, (unsigned long long)a->ghost_hits);
	return 0;
}

/* A miss looks the key up among the ghosts: load its first slot. (A
 * resident's list neighbours are the caller's to load: see engine.c.) */
static void arc_prefetch(const struct policy *p, const struct pol_entry *e)
{
	const struct arc *a = (const struct arc *)p;
	if (!e->list)
		keymap_prefetch(&a->gmap, e->key);
}

const struct policy_ops policy_arc_ops = {
	.name = "arc",
	.summary = "adaptive replacement cache: recency + frequency, for skewed reads",
	.create = arc_create,
	.destroy = arc_destroy,
	.set = arc_set,
	.hit = arc_hit,
	.admit = arc_admit,
	.insert = arc_insert,
	.remove = arc_remove,
	.victim = arc_victim,
	.tunables = "",
	.describe = arc_describe,
	.prefetch = arc_prefetch,
	.next_victims = arc_next_victims,
	.insert_aged = arc_insert_aged,
};
