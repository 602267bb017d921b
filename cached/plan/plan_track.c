/*
 * Plan progress tracking: see plan_track.h. Loop thread only; no I/O.
 */
#include "plan_track.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TRACK_NONE UINT64_MAX

void plan_track_init(struct plan_track *t, uint32_t window, uint32_t tolerance)
{
	memset(t, 0, sizeof(*t));
	keymap_init(&t->first);
	keymap_init(&t->last);
	t->window = window;
	t->tolerance = tolerance;
}

void plan_track_free(struct plan_track *t)
{
	free(t->keys);
	free(t->aux);
	free(t->next);
	free(t->done);
	keymap_free(&t->first);
	keymap_free(&t->last);
	memset(t, 0, sizeof(*t));
}

static int track_grow(void **p, uint64_t n, size_t each)
{
	void *np = realloc(*p, (size_t)n * each);
	if (!np)
		return -ENOMEM;
	*p = np;
	return 0;
}

/* Room for `more` positions: first drop the passed prefix (positions are
 * absolute, only base moves), then grow. */
static int track_reserve(struct plan_track *t, uint64_t more)
{
	if (t->len + more <= t->cap)
		return 0;
	uint64_t gone = t->pos - t->base;
	if (gone && gone >= t->len / 2) { /* amortised: move at most what was passed */
		uint64_t keep = t->len - gone;
		memmove(t->keys, t->keys + gone, keep * sizeof(*t->keys));
		memmove(t->aux, t->aux + gone, keep * sizeof(*t->aux));
		memmove(t->next, t->next + gone, keep * sizeof(*t->next));
		memmove(t->done, t->done + gone, keep * sizeof(*t->done));
		t->base += gone;
		t->len = keep;
		if (t->len + more <= t->cap)
			return 0;
	}
	uint64_t n = t->cap ? t->cap : 1024;
	while (n < t->len + more)
		n *= 2;
	if (track_grow((void **)&t->keys, n, sizeof(*t->keys)) < 0 ||
	    track_grow((void **)&t->aux, n, sizeof(*t->aux)) < 0 ||
	    track_grow((void **)&t->next, n, sizeof(*t->next)) < 0 ||
	    track_grow((void **)&t->done, n, sizeof(*t->done)) < 0)
		return -ENOMEM; /* arrays that did grow stay valid; cap unchanged */
	t->cap = n;
	return 0;
}

int plan_track_reserve(struct plan_track *t, size_t n)
{
	int rc = track_reserve(t, n);
	if (rc == 0 && (keymap_reserve(&t->first, t->first.count + n) < 0 ||
			keymap_reserve(&t->last, t->last.count + n) < 0))
		rc = -ENOMEM;
	return rc;
}

int plan_track_append(struct plan_track *t, const uint64_t *keys, const uint64_t *aux, size_t n)
{
	int rc = track_reserve(t, n);
	if (rc < 0)
		return rc;
	/* the maps first, so a failure leaves the positions untouched */
	if (keymap_reserve(&t->first, t->first.count + n) < 0 ||
	    keymap_reserve(&t->last, t->last.count + n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t p = t->base + t->len;
		uint64_t key = keys[i];
		t->keys[t->len] = key;
		t->aux[t->len] = aux ? aux[i] : 0;
		t->next[t->len] = TRACK_NONE;
		t->done[t->len] = 0;
		t->len++;
		uint64_t *last = keymap_get(&t->last, key);
		if (last && *last >= t->pos)
			t->next[*last - t->base] = p;
		if (!keymap_get(&t->first, key))
			(void)keymap_put(&t->first, key, p); /* reserved: cannot fail */
		(void)keymap_put(&t->last, key, p);
	}
	return 0;
}

/* Position q (>= pos) is read or skipped: the key's first unread position
 * is its next one. */
static void track_pass(struct plan_track *t, uint64_t q)
{
	uint64_t i = q - t->base;
	if (t->next[i] != TRACK_NONE)
		(void)keymap_put(&t->first, t->keys[i], t->next[i]);
	else
		(void)keymap_del(&t->first, t->keys[i]);
}

bool plan_track_read(struct plan_track *t, uint64_t key, uint64_t *at)
{
	uint64_t *v = keymap_get(&t->first, key);
	if (!v || *v - t->pos > t->window)
		return false; /* not this plan's read, or too far ahead to trust */
	uint64_t p = *v;
	t->done[p - t->base] = 1;
	track_pass(t, p);
	t->matched++;
	if (p + 1 > t->hi)
		t->hi = p + 1;
	*at = p;
	uint64_t end = t->base + t->len;
	for (;;) {
		while (t->pos < end && t->done[t->pos - t->base])
			t->pos++;
		/* reads ran far past an unread position: it was skipped */
		if (t->pos >= end || t->hi <= t->pos + t->tolerance)
			break;
		track_pass(t, t->pos);
		t->skipped++;
		t->pos++;
	}
	return true;
}

bool plan_track_holds(const struct plan_track *t, uint64_t key)
{
	const uint64_t *v = keymap_get(&t->first, key);
	return v && *v - t->pos <= t->window;
}

bool plan_track_find(const struct plan_track *t, uint64_t key, uint64_t *at)
{
	const uint64_t *v = keymap_get(&t->first, key);
	if (!v || *v < t->pos)
		return false;
	*at = *v;
	return true;
}

void plan_track_seek(struct plan_track *t, uint64_t p)
{
	uint64_t end = t->base + t->len;
	if (p > end)
		p = end;
	for (; t->pos < p; t->pos++)
		if (!t->done[t->pos - t->base])
			track_pass(t, t->pos);
	if (t->hi < t->pos)
		t->hi = t->pos;
}
