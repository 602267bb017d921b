/*
 * keymap: open addressing with linear probing and backward-shift deletion,
 * grown incrementally. See keymap.h. Load factor stays at or below 1/2 (old
 * and new table together count against the new one) so probes are short.
 * Single-threaded; no I/O.
 *
 * A growth: the new table (twice the size, or what a reserve asks) is
 * allocated zeroed and takes every insert from then on; each put or del
 * also moves up to KEYMAP_STEP units of the old table, in slot order: an
 * old key is moved by deleting it from the old table (backward shift, so
 * the old table stays a valid probe table for the keys it still holds) and
 * placing it in the new one. Slots below `moved` are empty and stay so: a
 * backward shift only fills a hole from later occupied slots, and its scan
 * stops at the first empty one. Every key lives in exactly one table.
 */
#include "keymap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KEYMAP_HUGE ((size_t)2 << 20)

/* Small tables come from calloc. A table of 2 MiB or more is its own
 * anonymous mapping: its pages read as zero until first written, so a new
 * table costs no wipe; the kernel zeroes each page when a put first lands
 * there. Lookups land at random: on 4 KiB pages a big map costs a TLB miss
 * per probe as well, so the mapping is aligned to huge pages and asks for
 * them (advice only). With huge pages the first few hundred puts after a
 * growth fault the whole table in (one 2 MiB zeroing each); on 4 KiB pages
 * it would be about a fault per put for longer, and measured worse in the
 * daemon (docs/cluster.md, "Measured", session 17). */
static struct keymap_slot *table_alloc(size_t nslots)
{
	size_t bytes = nslots * sizeof(struct keymap_slot);
	if (bytes < KEYMAP_HUGE)
		return calloc(nslots, sizeof(struct keymap_slot));
	size_t span = bytes + KEYMAP_HUGE;
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	size_t head = (KEYMAP_HUGE - (uintptr_t)p % KEYMAP_HUGE) % KEYMAP_HUGE;
	if (head)
		(void)munmap(p, head);
	if (span - head - bytes)
		(void)munmap(p + head + bytes, span - head - bytes);
	(void)madvise(p + head, bytes, MADV_HUGEPAGE);
	return (struct keymap_slot *)(void *)(p + head);
}

static void table_release(struct keymap_slot *s, size_t nslots)
{
	size_t bytes = nslots * sizeof(*s);
	if (!s)
		return;
	if (bytes < KEYMAP_HUGE)
		free(s);
	else
		(void)munmap(s, bytes);
}

/* Empty every slot: a big table gives its pages back (they read as zero
 * again), a small one is cleared in place. */
static void table_wipe(struct keymap_slot *s, size_t nslots)
{
	size_t bytes = nslots * sizeof(*s);
	if (bytes >= KEYMAP_HUGE && madvise(s, bytes, MADV_DONTNEED) == 0)
		return;
	memset(s, 0, bytes);
}

static size_t table_home(size_t mask, uint64_t key)
{
	return (size_t)keymap_mix(key) & mask;
}

/* The slot holding key (!= 0), or NULL. */
static struct keymap_slot *table_find(struct keymap_slot *s, size_t mask, uint64_t key)
{
	for (size_t i = table_home(mask, key); s[i].key != 0; i = (i + 1) & mask)
		if (s[i].key == key)
			return &s[i];
	return NULL;
}

static void table_place(struct keymap_slot *s, size_t mask, uint64_t key, uint64_t val)
{
	size_t i = table_home(mask, key);
	while (s[i].key != 0)
		i = (i + 1) & mask;
	s[i].key = key;
	s[i].val = val;
}

/* Empty slot i. Backward shift: pull later members of the probe run into
 * the hole when the hole lies between their home and their slot. */
static void table_remove(struct keymap_slot *s, size_t mask, size_t i)
{
	size_t hole = i;
	for (size_t j = (i + 1) & mask; s[j].key != 0; j = (j + 1) & mask) {
		size_t home = table_home(mask, s[j].key);
		bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
		if (movable) {
			s[hole] = s[j];
			hole = j;
		}
	}
	s[hole].key = 0;
	s[hole].val = 0;
}

static bool table_del(struct keymap_slot *s, size_t mask, uint64_t key)
{
	struct keymap_slot *at = table_find(s, mask, key);
	if (!at)
		return false;
	table_remove(s, mask, (size_t)(at - s));
	return true;
}

void keymap_init(struct keymap *m)
{
	memset(m, 0, sizeof(*m));
}

static void keymap_drop_old(struct keymap *m)
{
	table_release(m->old, m->old_mask + 1);
	m->old = NULL;
	m->old_mask = 0;
	m->old_count = 0;
	m->moved = 0;
}

void keymap_free(struct keymap *m)
{
	if (m->slots)
		table_release(m->slots, m->mask + 1);
	if (m->old)
		keymap_drop_old(m);
	keymap_init(m);
}

void keymap_clear(struct keymap *m)
{
	if (m->old)
		keymap_drop_old(m);
	if (m->slots)
		table_wipe(m->slots, m->mask + 1);
	m->count = 0;
	m->has_zero = false;
	m->zero_val = 0;
}

/* Move up to budget units (an old slot found empty, or a key moved) of
 * the old table into the new one; drop the old table once it is empty. */
static void keymap_move(struct keymap *m, size_t budget)
{
	struct keymap_slot *o = m->old;
	if (!o)
		return;
	size_t n = m->old_mask + 1;
	while (budget && m->old_count && m->moved < n) {
		struct keymap_slot *s = &o[m->moved];
		if (s->key == 0) {
			m->moved++;
		} else {
			table_place(m->slots, m->mask, s->key, s->val);
			table_remove(o, m->old_mask, m->moved); /* may refill this slot */
			m->old_count--;
		}
		budget--;
	}
	if (m->old_count == 0)
		keymap_drop_old(m);
}

/* A new table of nslots takes the inserts; the keys of the current one
 * move over later. A growth still under way is finished first (only when
 * a reserve asks for more than it gives, or inserts outran it). */
static int keymap_grow(struct keymap *m, size_t nslots)
{
	if (m->old)
		keymap_move(m, SIZE_MAX);
	struct keymap_slot *ns = table_alloc(nslots);
	if (!ns)
		return -ENOMEM;
	size_t held = m->count - m->has_zero; /* all in slots now */
	if (m->slots && held) {
		m->old = m->slots;
		m->old_mask = m->mask;
		m->old_count = held;
		m->moved = 0;
	} else if (m->slots) {
		table_release(m->slots, m->mask + 1);
	}
	m->slots = ns;
	m->mask = nslots - 1;
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
	if (key == 0) /* the map is the caller's to write through; const for lookups only */
		return m->has_zero ? (uint64_t *)(uintptr_t)&m->zero_val : NULL;
	if (!m->slots)
		return NULL;
	struct keymap_slot *s = table_find(m->slots, m->mask, key);
	if (!s && m->old)
		s = table_find(m->old, m->old_mask, key);
	return s ? &s->val : NULL;
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
	if (key == 0) {
		m->count += !m->has_zero;
		m->has_zero = true;
		m->zero_val = val;
		return 0;
	}
	if (!m->slots || 2 * (m->count + 1) > m->mask + 1) {
		int rc = keymap_grow(m, m->slots ? 2 * (m->mask + 1) : 16);
		if (rc < 0)
			return rc;
	}
	table_place(m->slots, m->mask, key, val);
	m->count++;
	keymap_move(m, KEYMAP_STEP);
	return 0;
}

bool keymap_del(struct keymap *m, uint64_t key)
{
	if (key == 0) {
		if (!m->has_zero)
			return false;
		m->has_zero = false;
		m->count--;
		return true;
	}
	if (!m->slots)
		return false;
	if (!table_del(m->slots, m->mask, key)) {
		if (!m->old || !table_del(m->old, m->old_mask, key))
			return false;
		m->old_count--;
	}
	m->count--;
	keymap_move(m, KEYMAP_STEP);
	return true;
}
