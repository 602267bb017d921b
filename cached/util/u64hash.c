/*
 * The intrusive u64 hash table: see u64hash.h.
 */
#include "u64hash.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t node_key(const struct u64h *h, const struct u64h_node *n)
{
	return *(const uint64_t *)(const void *)((const char *)n + h->key_off);
}

int u64h_init(struct u64h *h, size_t nb, ptrdiff_t key_off)
{
	size_t p = 1;
	while (p < nb)
		p <<= 1;
	h->b = calloc(p, sizeof(*h->b));
	h->nb = h->b ? p : 0;
	h->n = 0;
	h->key_off = key_off;
	return h->b ? 0 : -ENOMEM;
}

void u64h_free(struct u64h *h)
{
	free(h->b);
	h->b = NULL;
	h->nb = h->n = 0;
}

struct u64h_node *u64h_find(const struct u64h *h, uint64_t key)
{
	for (struct u64h_node *n = h->b[key & (h->nb - 1)]; n; n = n->next)
		if (node_key(h, n) == key)
			return n;
	return NULL;
}

static void grow(struct u64h *h)
{
	size_t nb = h->nb * 2;
	struct u64h_node **b = calloc(nb, sizeof(*b));
	if (!b)
		return; /* keep the longer chains; still correct */
	for (size_t i = 0; i < h->nb; i++) {
		for (struct u64h_node *n = h->b[i], *next; n; n = next) {
			next = n->next;
			struct u64h_node **slot = &b[node_key(h, n) & (nb - 1)];
			n->next = *slot;
			*slot = n;
		}
	}
	free(h->b);
	h->b = b;
	h->nb = nb;
}

void u64h_add(struct u64h *h, struct u64h_node *n)
{
	if (h->n >= h->nb)
		grow(h);
	struct u64h_node **slot = &h->b[node_key(h, n) & (h->nb - 1)];
	n->next = *slot;
	*slot = n;
	h->n++;
}

void u64h_del(struct u64h *h, struct u64h_node *n)
{
	for (struct u64h_node **p = &h->b[node_key(h, n) & (h->nb - 1)]; *p; p = &(*p)->next) {
		if (*p == n) {
			*p = n->next;
			h->n--;
			return;
		}
	}
}

void u64h_iter_init(struct u64h_iter *it, const struct u64h *h)
{
	it->h = h;
	it->b = 0;
	it->next = h->nb ? h->b[0] : NULL;
}

struct u64h_node *u64h_next(struct u64h_iter *it)
{
	while (!it->next) {
		if (++it->b >= it->h->nb)
			return NULL;
		it->next = it->h->b[it->b];
	}
	struct u64h_node *n = it->next;
	it->next = n->next; /* step past it now: the caller may remove n */
	return n;
}
