/*
 * Cache replacement policies: pure C behind one ops table.
 *
 * No I/O, no locks, no clock reads: time comes in as `now` (any monotonic
 * unit the caller chooses; the daemon passes nanoseconds, the simulator the
 * access number). The daemon runs one instance per (tier, dataset) on its
 * loop thread; tiercache-sim runs the very same code on traces.
 *
 * The caller owns the entries: a struct pol_entry is embedded in the
 * caller's record (a cached chunk, a simulated object). The policy owns the
 * entry's link and bookkeeping fields while the entry is inserted, and
 * forgets it on remove(). victim() names the entry the policy would give up
 * next but does not remove it: the caller removes it (and may decide to
 * demote rather than drop it).
 */
#ifndef TIERCACHE_POLICY_H
#define TIERCACHE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pol_entry {
	struct pol_entry *prev, *next; /* owned by the policy while inserted */
	uint64_t key;                  /* stable identity of the cached unit */
	uint64_t size;                 /* bytes it occupies */
	uint64_t atime;                /* last access (`now` of the last hit) */
	uint32_t list;                 /* policy-private */
	uint32_t aux;                  /* policy-private */
	uint64_t stamp;                /* policy-private */
	/* Placement-owned (placement.h), not the policy's: POL_PLACED_*
	 * flags. demote=reread needs one bit per entry (read again since it
	 * was filled or moved in?) and only the entry can carry it. It costs
	 * 8 bytes of padding (56 -> 64 bytes, one cache line); list and aux
	 * have no spare bits (epoch keeps a 32-bit magic in list). */
	uint8_t placed;
};

/* pol_entry.placed: cleared by policy_insert (a fill or a move in), kept by
 * policy_reinsert */
#define POL_PLACED_REREAD 0x1u /* a hit since it was inserted (placement_hit) */
#define POL_PLACED_AHEAD 0x2u  /* loaded ahead of its read: its first hit is
				* that read, not a read again */

/* What a policy may know of its surroundings, given at creation. */
struct policy_env {
	uint64_t capacity; /* bytes the instance manages (0: unknown) */
	/* Optional oracle for plan-aware policies: the time of the next access
	 * to key after now, or UINT64_MAX if none is known. The unit is the
	 * oracle's own (the plan store counts accesses, see plan.h): a policy
	 * only compares values from the same oracle with each other. */
	uint64_t (*next_use)(void *ctx, uint64_t key, uint64_t now);
	void *ctx;
	/* Optional, with next_use: a number that changes whenever earlier
	 * answers of next_use may have changed other than by time passing
	 * (plans added or dropped). NULL: assume they may change any time. */
	uint64_t (*version)(void *ctx);
};

struct policy;

/* Capabilities a policy declares in its ops. */
#define POLICY_CAP_PLANS 0x1u /* uses policy_env.next_use: feed it the plan store */

struct policy_ops {
	const char *name;
	const char *summary; /* one line for `tierctl policy show` */
	int (*create)(const struct policy_env *env, struct policy **out);
	void (*destroy)(struct policy *p);
	/* Set a tunable. Returns 0, or -EINVAL with a message in err. */
	int (*set)(struct policy *p, const char *key, const char *value, char *err, size_t errlen);
	/* A resident entry was read. */
	void (*hit)(struct policy *p, struct pol_entry *e, uint64_t now);
	/* A read missed: should the chunk it fills be kept? (NULL: always.) */
	bool (*admit)(struct policy *p, uint64_t key, uint64_t size, uint64_t now);
	void (*insert)(struct policy *p, struct pol_entry *e, uint64_t now);
	void (*remove)(struct policy *p, struct pol_entry *e);
	/* The entry to give up next, or NULL if the instance holds none. */
	struct pol_entry *(*victim)(struct policy *p, uint64_t now);

	/* --- optional, added after the first version; NULL-safe wrappers --- */
	/* Names of the tunables, space separated ("" or NULL: none), for help
	 * texts and error messages; docs/policies.md says what each means. */
	const char *tunables;
	unsigned caps; /* POLICY_CAP_* */
	/* Current tunables and state as "key=value key=value". */
	int (*describe)(struct policy *p, char *buf, size_t len);
	/* A hint: a read of e is coming soon, and e is resident in this
	 * instance or in none. Start loading what hit() or admit() will
	 * touch for it; no effect on any decision. The simulator, which
	 * knows the trace ahead, calls it a few reads early. */
	void (*prefetch)(const struct policy *p, const struct pol_entry *e);
	/* e, just inserted, was loaded ahead of its read (a plan prefetch),
	 * not filled by one: its read is coming. A policy whose victim would
	 * otherwise be the newest entry (epoch) keeps it out of victim()
	 * until that read (hit) or until it has idled like a dead entry.
	 * NULL: treated as any insert. */
	void (*loaded_ahead)(struct policy *p, struct pol_entry *e);
	/* The entries victim() would name next, in that order, if the caller
	 * removed each in turn and nothing else happened: written to out
	 * until their sizes add up to `bytes` or `max` entries are written;
	 * returns how many. Changes nothing. A policy whose order can be
	 * read off its lists says it (lru, arc); NULL: it cannot (the
	 * daemon's segment reclaim then ranks by last access instead). */
	size_t (*next_victims)(const struct policy *p, uint64_t now, uint64_t bytes,
			       struct pol_entry **out, size_t max);
	/* Insert e, last read at e->atime (<= now), where an entry read then
	 * belongs, not as read now: a demotion under demote=flat, which is
	 * not an access (placement.h). Entries come in about in atime order
	 * (hot's victims). NULL: policy_insert_aged inserts at now and puts
	 * e->atime back: the policy's order is its own, the age the
	 * placement and the mover compare is the real one. A policy whose
	 * order is not by age may take e as moved in now and set e->atime =
	 * now itself (arc: it keeps the list it was on, T1 or T2, and enters
	 * as demote=1 inserts it; see arc.c). */
	void (*insert_aged)(struct policy *p, struct pol_entry *e, uint64_t now);
};

/* Every policy instance starts with this. */
struct policy {
	const struct policy_ops *ops;
	uint64_t bytes;   /* bytes of the entries inserted */
	uint64_t entries; /* number of entries inserted */
};

/*
 * Calling contract (the daemon and tiercache-sim both follow it):
 *   hit      once for every read served from an entry of this instance;
 *   admit    once for every read this instance could have served but did
 *            not (a miss, or a read served by another tier that this
 *            instance is asked to take: see placement.h); a policy may
 *            count it as an access, so call it once per read, not per try;
 *   insert   only after admit said yes (or for entries moved in);
 *   victim   then remove, repeatedly, until the caller has the room it needs;
 *   remove   at any time (evicted, pinned, moved, invalidated).
 */

/* The registry: NULL if no policy has that name. */
const struct policy_ops *policy_find(const char *name);
/* All policies, NULL-terminated. */
const struct policy_ops *const *policy_all(void);

int policy_create(const char *name, const struct policy_env *env, struct policy **out);

static inline void policy_destroy(struct policy *p)
{
	if (p)
		p->ops->destroy(p);
}

static inline int policy_set(struct policy *p, const char *k, const char *v, char *err, size_t n)
{
	return p->ops->set(p, k, v, err, n);
}

static inline void policy_hit(struct policy *p, struct pol_entry *e, uint64_t now)
{
	p->ops->hit(p, e, now);
}

static inline bool policy_admit(struct policy *p, uint64_t key, uint64_t size, uint64_t now)
{
	return p->ops->admit ? p->ops->admit(p, key, size, now) : true;
}

static inline void policy_insert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	p->bytes += e->size;
	p->entries++;
	e->placed = 0;
	p->ops->insert(p, e, now);
}

/* The same entry back in a tier without a fill or a move in (a move that
 * failed, a policy switch, a segment reclaim keeping it in place): as
 * policy_insert, but placement's marks (a read again since it came in)
 * stay, so demote=reread still demotes it. */
static inline void policy_reinsert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	uint8_t placed = e->placed;
	policy_insert(p, e, now);
	e->placed = placed;
}

/* e moved in from another tier without being read (placement.h,
 * placement_demoted_insert): as policy_insert, but e keeps its age. */
static inline void policy_insert_aged(struct policy *p, struct pol_entry *e, uint64_t now)
{
	uint64_t atime = e->atime < now ? e->atime : now;
	e->atime = atime;
	if (!p->ops->insert_aged) {
		policy_insert(p, e, now);
		e->atime = atime;
		return;
	}
	p->bytes += e->size;
	p->entries++;
	e->placed = 0;
	p->ops->insert_aged(p, e, now);
}

static inline void policy_remove(struct policy *p, struct pol_entry *e)
{
	p->bytes -= e->size;
	p->entries--;
	p->ops->remove(p, e);
}

static inline struct pol_entry *policy_victim(struct policy *p, uint64_t now)
{
	return p->ops->victim(p, now);
}

static inline void policy_prefetch(const struct policy *p, const struct pol_entry *e)
{
	if (p->ops->prefetch)
		p->ops->prefetch(p, e);
}

/* Call right after policy_insert() of an entry a prefetch brought. */
static inline void policy_loaded_ahead(struct policy *p, struct pol_entry *e)
{
	e->placed |= POL_PLACED_AHEAD;
	if (p->ops->loaded_ahead)
		p->ops->loaded_ahead(p, e);
}

/* The policy can name its next victims (next_victims). */
static inline bool policy_has_order(const struct policy *p)
{
	return p->ops->next_victims != NULL;
}

/* See next_victims in struct policy_ops; 0 for a policy without it. */
static inline size_t policy_next_victims(const struct policy *p, uint64_t now, uint64_t bytes,
					 struct pol_entry **out, size_t max)
{
	return p->ops->next_victims ? p->ops->next_victims(p, now, bytes, out, max) : 0;
}

static inline const char *policy_name(const struct policy *p)
{
	return p->ops->name;
}

/* Writes "" when the policy has nothing to say. */
static inline int policy_describe(struct policy *p, char *buf, size_t len)
{
	if (p->ops->describe)
		return p->ops->describe(p, buf, len);
	if (len)
		buf[0] = '\0';
	return 0;
}

/*
 * Create a policy and apply tunables in one step, for config loading and
 * for an admin's runtime switch. `tunables` is NULL, "" or a list of
 * key=value separated by spaces or commas. On any error (unknown policy:
 * -ENOENT, bad tunable: -EINVAL, -ENOMEM) *out is untouched, nothing leaks
 * and err says why, e.g.
 *   unknown policy "lfu" (policies: lru arc epoch clairvoyant)
 *   epoch: unknown tunable "x" (tunables: dead_factor min_reuse)
 * so the caller keeps its old policy. Moving resident entries to the new
 * instance is the caller's job (remove from the old, insert into the new).
 */
int policy_create_with(const char *name, const char *tunables, const struct policy_env *env,
		       struct policy **out, char *err, size_t errlen);

/* Apply "k=v k=v" to an existing instance; stops at the first error, so
 * earlier pairs of the list stay applied. To change tunables all or
 * nothing, first check the list on a scratch instance:
 *   policy_create_with(policy_name(p), list, env, &tmp, err, n) == 0
 * then destroy tmp and apply the list to p, which then cannot fail. */
int policy_set_list(struct policy *p, const char *tunables, char *err, size_t errlen);

/* Helpers for set(): parse a value or write the standard message. */
int policy_parse_double(const struct policy *p, const char *key, const char *value, double lo,
			double hi, double *out, char *err, size_t errlen);
int policy_parse_u64(const struct policy *p, const char *key, const char *value, uint64_t lo,
		     uint64_t hi, uint64_t *out, char *err, size_t errlen);
int policy_unknown_tunable(const struct policy *p, const char *key, char *err, size_t errlen);

/* Doubly linked list with a sentinel, for policies that keep queues. */
struct pol_list {
	struct pol_entry head;
	uint64_t bytes;
	uint64_t count;
};

static inline void pol_list_init(struct pol_list *l)
{
	l->head.prev = l->head.next = &l->head;
	l->bytes = l->count = 0;
}

static inline bool pol_list_empty(const struct pol_list *l)
{
	return l->head.next == &l->head;
}

/* Most recent at the head, oldest at the tail. */
static inline void pol_list_push_head(struct pol_list *l, struct pol_entry *e)
{
	e->next = l->head.next;
	e->prev = &l->head;
	l->head.next->prev = e;
	l->head.next = e;
	l->bytes += e->size;
	l->count++;
}

/* Least recent end (an entry that is older than everything listed). */
static inline void pol_list_push_tail(struct pol_list *l, struct pol_entry *e)
{
	e->prev = l->head.prev;
	e->next = &l->head;
	l->head.prev->next = e;
	l->head.prev = e;
	l->bytes += e->size;
	l->count++;
}

static inline void pol_list_unlink(struct pol_list *l, struct pol_entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = NULL;
	l->bytes -= e->size;
	l->count--;
}

static inline struct pol_entry *pol_list_tail(const struct pol_list *l)
{
	return pol_list_empty(l) ? NULL : l->head.prev;
}

/* After taking the tail: start loading the entry that will be the tail
 * after the next one, so a steady stream of evictions does not stall on
 * a cache miss each (a hint only; no effect on behaviour). */
static inline void pol_list_prefetch_tail(const struct pol_list *l)
{
	const struct pol_entry *t = l->head.prev;
	if (t != &l->head)
		__builtin_prefetch(t->prev);
}

#endif
