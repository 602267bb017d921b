/*
 * keymap: open addressing with linear probing and backward-shift deletion.
 * See keymap.h. Load factor stays at or below 1/2 so probes are short; an
 * empty slot is one whose value is KEYMAP_EMPTY. Single-threaded; no I/O.
 */
#include "keymap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KEYMAP_HUGE ((size_t)2 << 20)

/* Lookups land at random: on 4 KiB pages a big map costs a TLB miss per
 * probe as well. A map of 2 MiB or more (a power of two) is aligned to
 * huge pages and asks for them (advice only: refused is fine). */
static struct keymap_slot *keymap_alloc(size_t nslots)
{
	size_t bytes = nslots * sizeof(struct keymap_slot);
	if (bytes >= KEYMAP_HUGE) {
		void *p = aligned_alloc(KEYMAP_HUGE, bytes);
		if (p) {
			(void)madvise(p, bytes, MADV_HUGEPAGE);
			return p;
		}
	}
	return malloc(bytes);
}

void keymap_init(struct keymap *m)
{
	memset(m, 0, sizeof(*m));
}

void keymap_free(struct keymap *m)
{
	free(m->slots);
	keymap_init(m);
}

static void keymap_wipe(struct keymap_slot *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		s[i].val = KEYMAP_EMPTY;
}

void keymap_clear(struct keymap *m)
{
	if (m->slots)
		keymap_wipe(m->slots, m->mask + 1);
	m->count = 0;
}

static size_t keymap_home(const struct keymap *m, uint64_t key)
{
	return (size_t)keymap_mix(key) & m->mask;
}

static void keymap_place(struct keymap *m, uint64_t key, uint64_t val)
{
	size_t i = keymap_home(m, key);
	while (m->slots[i].val != KEYMAP_EMPTY)
		i = (i + 1) & m->mask;
	m->slots[i].key = key;
	m->slots[i].val = val;
}

static int keymap_grow(struct keymap *m, size_t nslots)
{
	struct keymap_slot *old = m->slots;
	size_t old_n = m->slots ? m->mask + 1 : 0;

	struct keymap_slot *ns = keymap_alloc(nslots);
	if (!ns)
		return -ENOMEM;
	keymap_wipe(ns, nslots);
	m->slots = ns;
	m->mask = nslots - 1;
	for (size_t i = 0; i < old_n; i++)
		if (old[i].val != KEYMAP_EMPTY)
			keymap_place(m, old[i].key, old[i].val);
	free(old);
	return 0;
}

int keymap_reserve(struct keymap *m, size_t n)
{
	size_t want = 16;
	while (want < 2 * n)
		want <<= 1;
	if (m->slots && m->mask + 1 >= want)
		return 0;
	return keymap_grow(m, want);
}

uint64_t *keymap_get(const struct keymap *m, uint64_t key)
{
	if (!m->slots)
		return NULL;
	for (size_t i = keymap_home(m, key); m->slots[i].val != KEYMAP_EMPTY; i = (i + 1) & m->mask)
		if (m->slots[i].key == key)
			return &m->slots[i].val;
	return NULL;
}

int keymap_put(struct keymap *m, uint64_t key, uint64_t val)
{
	if (val == KEYMAP_EMPTY)
		return -EINVAL;
	uint64_t *v = keymap_get(m, key);
	if (v) {
		*v = val;
		return 0;
	}
	return keymap_put_new(m, key, val);
}

int keymap_put_new(struct keymap *m, uint64_t key, uint64_t val)
{
	if (val == KEYMAP_EMPTY)
		return -EINVAL;
	if (!m->slots || 2 * (m->count + 1) > m->mask + 1) {
		int rc = keymap_grow(m, m->slots ? 2 * (m->mask + 1) : 16);
		if (rc < 0)
			return rc;
	}
	keymap_place(m, key, val);
	m->count++;
	return 0;
}

bool keymap_del(struct keymap *m, uint64_t key)
{
	if (!m->slots)
		return false;
	size_t i = keymap_home(m, key);
	while (m->slots[i].val != KEYMAP_EMPTY && m->slots[i].key != key)
		i = (i + 1) & m->mask;
	if (m->slots[i].val == KEYMAP_EMPTY)
		return false;
	/* Backward shift: pull later members of the probe run into the hole
	 * when the hole lies between their home and their slot. */
	size_t hole = i;
	for (size_t j = (i + 1) & m->mask; m->slots[j].val != KEYMAP_EMPTY; j = (j + 1) & m->mask) {
		size_t home = keymap_home(m, m->slots[j].key);
		bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
		if (movable) {
			m->slots[hole] = m->slots[j];
			hole = j;
		}
	}
	m->slots[hole].val = KEYMAP_EMPTY;
	m->count--;
	return true;
}
