/*
 * Comparing two loaded configs key by key, for reload (cached/reload.c).
 *
 * The walk goes over the key table, so a key added to config_keys[] is
 * compared, reported and classed (live, restart, source: its row says) with
 * no list here or in reload.c to update. Pure: reads two structs, calls the
 * caller back, copies fields when asked. Any thread.
 */
#include "config.h"
#include "config_keys.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

static bool key_is_text(const struct key_def *k)
{
	return k->type == KEY_STRING || k->type == KEY_PATH || k->type == KEY_ENUM ||
	       k->type == KEY_POLICY;
}

/* Equal as loaded: text fields up to their NUL (the bytes after it are
 * whatever an earlier value left there), others byte for byte. */
static bool key_equal(const struct key_def *k, const void *a, const void *b)
{
	const char *fa = (const char *)a + k->off, *fb = (const char *)b + k->off;
	if (key_is_text(k))
		return strncmp(fa, fb, k->size) == 0;
	return memcmp(fa, fb, k->size) == 0;
}

/* The value as a file writes it; a string or a path in quotes, since it
 * may be empty or hold blanks. */
static void key_show(const struct key_def *k, const void *base, char *buf, size_t n)
{
	if (k->type == KEY_STRING || k->type == KEY_PATH) {
		char v[CONFIG_CHANGE_VALUE_MAX - 2];
		config_key_format(k, base, v, sizeof(v));
		snprintf(buf, n, "\"%s\"", v);
	} else {
		config_key_format(k, base, buf, n);
	}
}

/* A dataset key of one backend only applies to a dataset of that backend. */
static bool key_applies(const struct key_def *k, const struct dataset_conf *ds)
{
	unsigned only = k->flags & (KEY_POSIX | KEY_RADOS);
	return !only || only == (strcmp(ds->backend, "rados") == 0 ? KEY_RADOS : KEY_POSIX);
}

static int diff(enum section_kind kind, const void *a, const void *b,
		const struct dataset_conf *da, const struct dataset_conf *db,
		int (*fn)(void *arg, const struct config_change *ch), void *arg)
{
	struct config_change ch;
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct key_def *k = &config_keys[i];
		if (k->sect != kind || key_equal(k, a, b))
			continue;
		/* a key of the other backend holds its unused default in both */
		if (da && !key_applies(k, da) && !key_applies(k, db))
			continue;
		ch = (struct config_change){
			.key = i, .name = k->name, .reload = k->reload, .applies = k->applies};
		key_show(k, a, ch.was, sizeof(ch.was));
		key_show(k, b, ch.now, sizeof(ch.now));
		int rc = fn(arg, &ch);
		if (rc)
			return rc;
	}
	return 0;
}

int config_diff_daemon(const struct config *a, const struct config *b,
		       int (*fn)(void *arg, const struct config_change *ch), void *arg)
{
	return diff(SECT_DAEMON, a, b, NULL, NULL, fn, arg);
}

int config_diff_tier(const struct tier_conf *a, const struct tier_conf *b,
		     int (*fn)(void *arg, const struct config_change *ch), void *arg)
{
	return diff(SECT_TIER, a, b, NULL, NULL, fn, arg);
}

int config_diff_cluster(const struct config *a, const struct config *b,
			int (*fn)(void *arg, const struct config_change *ch), void *arg)
{
	return diff(SECT_CLUSTER, a, b, NULL, NULL, fn, arg);
}

int config_diff_dataset(const struct dataset_conf *a, const struct dataset_conf *b,
			int (*fn)(void *arg, const struct config_change *ch), void *arg)
{
	return diff(SECT_DATASET, a, b, a, b, fn, arg);
}

void config_change_copy(const struct config_change *ch, void *to, const void *from)
{
	assert(ch->key < config_nkeys);
	const struct key_def *k = &config_keys[ch->key];
	memcpy((char *)to + k->off, (const char *)from + k->off, k->size);
	if (k->derived_size)
		memcpy((char *)to + k->derived_off, (const char *)from + k->derived_off,
		       k->derived_size);
}

static int source_changed(void *arg, const struct config_change *ch)
{
	(void)arg;
	return ch->reload == CONFIG_RELOAD_SOURCE;
}

bool config_same_source(const struct dataset_conf *a, const struct dataset_conf *b)
{
	return config_diff_dataset(a, b, source_changed, NULL) == 0;
}
