/*
 * An intrusive hash table keyed by a u64 that lives in the element itself:
 * the element embeds a struct u64h_node and keeps its key at a fixed offset
 * from it (given once at init), so the table allocates nothing per element
 * and a lookup touches only the chain. Buckets double when the table holds
 * as many elements as buckets; a failed doubling keeps longer chains and
 * stays correct. Keys are already hashes here (XXH3 chunk keys): the low
 * bits pick the bucket.
 *
 * Iteration is removal-safe for the element just returned: u64h_next() has
 * already stepped past it, so the caller may unlink (and free) it. Adding
 * while iterating is not allowed (a doubling would reorder the buckets).
 *
 * Not thread-safe: the owner's thread only (the loop, for the daemon).
 */
#ifndef TIERCACHE_U64HASH_H
#define TIERCACHE_U64HASH_H

#include <stddef.h>
#include <stdint.h>

struct u64h_node {
	struct u64h_node *next;
};

struct u64h {
	struct u64h_node **b;
	size_t nb;        /* buckets, a power of two */
	size_t n;         /* elements */
	ptrdiff_t key_off; /* the key's offset from the node in each element */
};

/* nb buckets to start (rounded up to a power of two); key_off is
 * offsetof(T, key) - offsetof(T, node). 0 or -ENOMEM. */
int u64h_init(struct u64h *h, size_t nb, ptrdiff_t key_off);
void u64h_free(struct u64h *h);

struct u64h_node *u64h_find(const struct u64h *h, uint64_t key);
/* The key must not be in the table yet. */
void u64h_add(struct u64h *h, struct u64h_node *n);
/* n must be in the table. */
void u64h_del(struct u64h *h, struct u64h_node *n);

struct u64h_iter {
	const struct u64h *h;
	size_t b;              /* the bucket of next */
	struct u64h_node *next;
};
void u64h_iter_init(struct u64h_iter *it, const struct u64h *h);
/* The next element's node, or NULL at the end. */
struct u64h_node *u64h_next(struct u64h_iter *it);

#endif
