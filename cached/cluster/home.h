/*
 * Where a chunk lives in the cluster: weighted rendezvous hashing over the
 * live members. Every daemon computes the same home from the same member
 * list, with no per-chunk directory; a member that joins or leaves moves
 * only the homes that were or become its own (about 1/N of them). Each
 * member scores w / -ln(u), u the chunk key hashed with the member's id
 * into (0,1), w its weight (hot + warm capacity); the highest score is
 * home, the second highest the "previous home" a joining node asks.
 *
 * Pure: no I/O, no state.
 */
#ifndef TIERCACHE_HOME_H
#define TIERCACHE_HOME_H

#include <stddef.h>
#include <stdint.h>

struct home_node {
	const char *id;   /* the member's node id */
	uint64_t weight;  /* > 0; 0 counts as 1 */
	unsigned skip;    /* non-zero: not eligible (suspect, draining) */
};

/* The index of the best and second best eligible node for key into
 * nodes[0..n): *first and *second (-1 where there is none). */
void home_pick(const struct home_node *nodes, size_t n, uint64_t key, int *first, int *second);

#endif
