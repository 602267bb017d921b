/*
 * Weighted rendezvous hashing (home.h). Each eligible node scores
 * w / -ln(u), u in (0,1) a hash of the chunk key and the node's id: the
 * highest score is the key's home. With u uniform, P(node i wins) is
 * w_i / sum(w), and a node's score for a key does not depend on the other
 * nodes, so a join or leave moves only the keys that were or become the
 * home of that node.
 *
 * The hash is XXH3-64 of the id string seeded with the key; its top 53
 * bits, centred in their interval, give a u that is never 0 or 1, so
 * -ln(u) is finite and positive. Ties (equal scores: practically never)
 * go to the smaller id, so the answer does not depend on the list's order.
 *
 * Pure; any thread.
 */
#include "home.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

/* u in (0,1) for node ID and KEY. */
static double home_unit(const char *id, uint64_t key)
{
	uint64_t h = XXH3_64bits_withSeed(id, strlen(id), key);
	return ((double)(h >> 11) + 0.5) / 9007199254740992.0; /* 2^53 */
}

/* Does node a (score sa) beat node b (score sb)? */
static int home_beats(double sa, const char *a, double sb, const char *b)
{
	if (sa != sb)
		return sa > sb;
	return strcmp(a, b) < 0;
}

void home_pick(const struct home_node *nodes, size_t n, uint64_t key, int *first, int *second)
{
	double s1 = 0, s2 = 0;
	int i1 = -1, i2 = -1;
	for (size_t i = 0; i < n && i <= INT32_MAX; i++) {
		const struct home_node *nd = &nodes[i];
		if (nd->skip || !nd->id)
			continue;
		double w = nd->weight ? (double)nd->weight : 1.0;
		double score = w / -log(home_unit(nd->id, key));
		if (i1 < 0 || home_beats(score, nd->id, s1, nodes[i1].id)) {
			i2 = i1;
			s2 = s1;
			i1 = (int)i;
			s1 = score;
		} else if (i2 < 0 || home_beats(score, nd->id, s2, nodes[i2].id)) {
			i2 = (int)i;
			s2 = score;
		}
	}
	if (first)
		*first = i1;
	if (second)
		*second = i2;
}
