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
 * The ghosts live in a keymap plus an index-linked node pool owned by the
 * instance; remove() turns an entry into a ghost, whatever its reason.
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
enum { ARC_B1 = 1, ARC_B2 = 2 };
#define ARC_NIL UINT32_MAX
/* Ghost hits admitted and not yet inserted that are remembered: more than
 * the fills a daemon has in flight at once. An older one that is inserted
 * at last goes to T1, costing adaptivity only. */
#define ARC_PENDING 32

struct arc_ghost {
	uint64_t key;
	uint64_t size;
	uint32_t prev, next; /* towards head / towards tail */
	uint32_t list;       /* ARC_B1, ARC_B2, 0 free */
};

struct arc_glist {
	uint32_t head, tail;
	uint64_t bytes;
};

struct arc {
	struct policy base;
	uint64_t capacity;
	uint64_t p;          /* target bytes of T1 */
	struct pol_list t1, t2;
	struct arc_glist b1, b2;
	struct arc_ghost *g; /* node pool */
	uint32_t gcap, gfree;
	struct keymap gmap;  /* key -> node index */
	uint64_t last_key;    /* the last admit() (the usual case: its insert is next) */
	bool last_valid, last_t2;
	uint64_t pending[ARC_PENDING]; /* keys whose admit was a ghost hit */
	bool pending_used[ARC_PENDING];
	uint32_t pending_next, pending_n;
	bool pending_b2;      /* the last admit was a B2 hit (ARC's tie rule in REPLACE) */
	uint64_t ghost_hits;
};

static void arc_glist_unlink(struct arc *a, struct arc_glist *l, uint32_t i)
{
	struct arc_ghost *n = &a->g[i];
	if (n->prev != ARC_NIL)
		a->g[n->prev].next = n->next;
	else
		l->head = n->next;
	if (n->next != ARC_NIL)
		a->g[n->next].prev = n->prev;
	else
		l->tail = n->prev;
	l->bytes -= n->size;
}

static void arc_ghost_drop(struct arc *a, uint32_t i)
{
	struct arc_ghost *n = &a->g[i];
	struct arc_glist *l = n->list == ARC_B1 ? &a->b1 : &a->b2;
	arc_glist_unlink(a, l, i);
	keymap_del(&a->gmap, n->key);
	n->list = 0;
	n->next = a->gfree;
	a->gfree = i;
	/* Ghosts leave from the tail in a steady stream: load the next
	 * one's map slot (its node came in at the last drop) and the node
	 * after it, so no drop waits for memory (hints only). */
	if (l->tail != ARC_NIL) {
		const struct arc_ghost *t = &a->g[l->tail];
		keymap_prefetch(&a->gmap, t->key);
		if (t->prev != ARC_NIL)
			__builtin_prefetch(&a->g[t->prev]);
	}
}

/* The ghost for key, or ARC_NIL. */
static uint32_t arc_ghost_find(const struct arc *a, uint64_t key)
{
	uint64_t *v = keymap_get(&a->gmap, key);
	return v ? (uint32_t)*v : ARC_NIL;
}

static int arc_ghost_add(struct arc *a, uint32_t list, uint64_t key, uint64_t size)
{
	if (a->gfree == ARC_NIL) {
		uint32_t ncap = a->gcap ? 2 * a->gcap : 64;
		struct arc_ghost *ng = realloc(a->g, ncap * sizeof(*ng));
		if (!ng)
			return -ENOMEM;
		a->g = ng;
		for (uint32_t i = a->gcap; i < ncap; i++) {
			ng[i].list = 0;
			ng[i].next = i + 1 < ncap ? i + 1 : ARC_NIL;
		}
		a->gfree = a->gcap;
		a->gcap = ncap;
	}
	uint32_t i = a->gfree;
	/* Only resident entries become ghosts, and residents are no ghosts. */
	if (keymap_put_new(&a->gmap, key, i) < 0)
		return -ENOMEM;
	a->gfree = a->g[i].next;
	struct arc_glist *l = list == ARC_B1 ? &a->b1 : &a->b2;
	struct arc_ghost *n = &a->g[i];
	n->key = key;
	n->size = size;
	n->list = list;
	n->prev = ARC_NIL;
	n->next = l->head;
	if (l->head != ARC_NIL)
		a->g[l->head].prev = i;
	else
		l->tail = i;
	l->head = i;
	l->bytes += size;
	return 0;
}

/* Keep |T1|+|B1| <= c and |T1|+|T2|+|B1|+|B2| <= 2c, as the paper does. */
static void arc_ghost_trim(struct arc *a)
{
	while (a->b1.tail != ARC_NIL && a->t1.bytes + a->b1.bytes > a->capacity)
		arc_ghost_drop(a, a->b1.tail);
	while (a->b2.tail != ARC_NIL &&
	       a->t1.bytes + a->t2.bytes + a->b1.bytes + a->b2.bytes > 2 * a->capacity)
		arc_ghost_drop(a, a->b2.tail);
	while (a->b1.tail != ARC_NIL &&
	       a->t1.bytes + a->t2.bytes + a->b1.bytes + a->b2.bytes > 2 * a->capacity)
		arc_ghost_drop(a, a->b1.tail);
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
	a->b1.head = a->b1.tail = a->b2.head = a->b2.tail = ARC_NIL;
	a->gfree = ARC_NIL;
	keymap_init(&a->gmap);
	*out = &a->base;
	return 0;
}

static void arc_destroy(struct policy *p)
{
	struct arc *a = (struct arc *)p;
	keymap_free(&a->gmap);
	free(a->g);
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
	uint32_t i = arc_ghost_find(a, key);
	if (i == ARC_NIL)
		return true;
	uint64_t b1 = a->b1.bytes ? a->b1.bytes : 1, b2 = a->b2.bytes ? a->b2.bytes : 1;
	if (a->g[i].list == ARC_B1) {
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

static void arc_insert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct arc *a = (struct arc *)p;
	bool t2;
	if (a->last_valid && a->last_key == e->key) {
		/* right after its admit (which dropped any ghost) */
		t2 = a->last_t2 && arc_pending_take(a, e->key);
	} else {
		t2 = arc_pending_take(a, e->key);
		/* admitted earlier with no ghost, or moved in without admit():
		 * it is no ghost now */
		uint32_t gi = t2 ? ARC_NIL : arc_ghost_find(a, e->key);
		if (gi != ARC_NIL)
			arc_ghost_drop(a, gi);
	}
	a->last_valid = false;
	e->list = t2 ? ARC_T2 : ARC_T1;
	e->atime = now;
	pol_list_push_head(t2 ? &a->t2 : &a->t1, e);
	arc_ghost_trim(a);
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
};
