/*
 * Pins (private to admin/): the pin specs a residency keeps, "DATASET" or
 * "DATASET/PATH", saved in the index (namespace PIN_NS), and pinning one
 * chunk (state CHUNK_PINNED: out of every policy, still counted in its
 * tier). residency.c has the model; this file the bookkeeping. Loop
 * thread only.
 */
#ifndef TIERCACHE_PINS_H
#define TIERCACHE_PINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cache.h"

#define PIN_NS "pin"

struct pin_set {
	char **specs;
	size_t n, cap;
};

/* Does path lie at or under rest ("" matches everything)? */
static inline bool path_under(const char *path, const char *rest)
{
	size_t n = strlen(rest);
	return n == 0 || (strncmp(path, rest, n) == 0 && (path[n] == '\0' || path[n] == '/'));
}

/* Is SPEC a pin in dataset DS? Then *rest is its path in it ("" = all). */
bool pin_in(const char *spec, const struct dataset *ds, const char **rest);

/* Read the saved pins (dropping those of datasets no longer configured). */
int pin_set_load(struct pin_set *ps, struct cache *cache);
/* Add SPEC (kept once) in memory. 0 or -ENOMEM. */
int pin_set_add(struct pin_set *ps, const char *spec);
/* Does any pin cover c? */
bool pin_set_covers(const struct pin_set *ps, const struct chunk *c);
/* Forget (in memory and in the index) every pin of ds at or under rest
 * ("" = the whole dataset). Returns how many. */
size_t pin_set_remove_under(struct pin_set *ps, struct cache *cache, const struct dataset *ds,
			    const char *rest);
void pin_set_free(struct pin_set *ps);

/* Pin / unpin one resident chunk (nothing if it is in another state). */
void pin_chunk(struct cache *cache, struct chunk *c);
void unpin_chunk(struct cache *cache, struct chunk *c);
/* Room a tier has left for pins (its policies' budget minus what is
 * pinned), and whether c fits on its own tier. */
uint64_t pin_room(const struct cache *cache, int t);
bool pin_fits(const struct cache *cache, const struct chunk *c);

#endif
