/*
 * keymap: an open-addressing hash map from a 64-bit key to a 64-bit value,
 * for policies that must remember keys they do not hold (ARC's ghosts, the
 * plan store's next positions). Linear probing with backward-shift deletion,
 * so there are no tombstones and lookups stay short however many deletes.
 *
 * Pure and single-threaded: the owner serialises every call. Memory grows by
 * doubling, and the growth is incremental: the new table takes the inserts
 * at once while the keys of the old one move over a few at a time (at most
 * KEYMAP_STEP slots or keys per put or del), so no single call rehashes a
 * big map. Lookups consult both tables until the move is done. A new table
 * comes zeroed from the allocator (an empty slot is one whose key is 0; the
 * key 0 itself is held beside the table), so growing wipes nothing either.
 * Nothing allocates on lookup or delete.
 */
#ifndef TIERCACHE_POLICY_KEYMAP_H
#define TIERCACHE_POLICY_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keymap_slot {
	uint64_t key; /* 0: empty */
	uint64_t val;
};

/* The one value a keymap does not take (callers use it as "none"). */
#define KEYMAP_EMPTY UINT64_MAX

/* Work bound of one put or del while a growth is under way: old slots
 * visited plus keys moved. A growth ends long before the new table is half
 * full (it needs at most old slots / KEYMAP_STEP inserts; the new table has
 * room for at least old slots / 2 more keys). */
#define KEYMAP_STEP 16u

struct keymap {
	struct keymap_slot *slots; /* the table inserts go to; NULL until the first put */
	size_t mask;               /* slot count - 1 (a power of two) */
	size_t count;              /* keys held, in both tables and the key 0 */
	struct keymap_slot *old;   /* while growing: the previous table, else NULL */
	size_t old_mask;
	size_t old_count; /* keys still in old */
	size_t moved;     /* old slots below this one are empty (their keys moved) */
	bool has_zero;    /* the key 0 is held, with zero_val */
	uint64_t zero_val;
};

void keymap_init(struct keymap *m);
void keymap_free(struct keymap *m);
/* Reserve room for n keys without allocating later (a growth to that size
 * may still be moving keys: it needs no memory). 0 or -ENOMEM. */
int keymap_reserve(struct keymap *m, size_t n);
/* Insert or overwrite; val != KEYMAP_EMPTY. 0, -EINVAL or -ENOMEM. */
int keymap_put(struct keymap *m, uint64_t key, uint64_t val);
/* Insert a key the caller knows is absent (skips the lookup). */
int keymap_put_new(struct keymap *m, uint64_t key, uint64_t val);
/* Pointer to the value, or NULL. Valid until the next put or del. */
uint64_t *keymap_get(const struct keymap *m, uint64_t key);
/* true if the key was there. */
bool keymap_del(struct keymap *m, uint64_t key);
void keymap_clear(struct keymap *m);
/* true while a growth is still moving keys out of the old table. */
static inline bool keymap_growing(const struct keymap *m)
{
	return m->old != NULL;
}

/* A strong 64-bit mixer (splitmix64 finaliser): keys may be dense ids. */
static inline uint64_t keymap_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* Start loading the slot a lookup of key would probe first (a hint for a
 * lookup that is known to come; no effect on behaviour). */
static inline void keymap_prefetch(const struct keymap *m, uint64_t key)
{
	if (m->slots)
		__builtin_prefetch(&m->slots[keymap_mix(key) & m->mask]);
}

#endif
