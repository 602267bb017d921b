/*
 * keymap: an open-addressing hash map from a 64-bit key to a 64-bit value,
 * for policies that must remember keys they do not hold (ARC's ghosts, the
 * plan store's next positions). Linear probing with backward-shift deletion,
 * so there are no tombstones and lookups stay short however many deletes.
 *
 * Pure and single-threaded: the owner serialises every call. Memory grows by
 * doubling (amortised O(1) insert); nothing allocates on lookup or delete.
 */
#ifndef TIERCACHE_POLICY_KEYMAP_H
#define TIERCACHE_POLICY_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keymap_slot {
	uint64_t key;
	uint64_t val;
};

/* The one value a keymap cannot hold: it marks an empty slot, so a probe
 * touches one cache line instead of a flag array and the slot array. */
#define KEYMAP_EMPTY UINT64_MAX

struct keymap {
	struct keymap_slot *slots; /* NULL until the first put */
	size_t mask;               /* slot count - 1 (a power of two) */
	size_t count;
};

void keymap_init(struct keymap *m);
void keymap_free(struct keymap *m);
/* Reserve room for n keys without growing later. 0 or -ENOMEM. */
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
