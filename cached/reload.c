/*
 * Reloading the configuration: see reload.h.
 *
 * Two phases, so that a reload is all or nothing: first everything that can
 * fail (parsing the file, creating the added datasets and their policies)
 * is done aside; then the changes are applied, and those cannot fail.
 *
 * What to do with a changed key is not decided here: the running and the new
 * config are compared over the key table (config_diff_*), and each key's row
 * gives its class. Restart keys keep their running values in the new
 * config; source keys of a dataset replace it; live keys are reported and
 * applied: [daemon] by swapping d->cfg, a tier by tier_set_limits(), a
 * dataset by copying the key into ds->conf. A dataset key inherited from
 * [daemon] is compared in the dataset, where loading has put it, so a new
 * [daemon] default reaches each dataset that takes it.
 *
 * Pointers: nothing keeps a pointer into struct config (a dataset has its
 * own copy of its dataset_conf, tiers copy what they need), so the old
 * config is freed at once. A removed dataset is another matter: client
 * handles, fills and manifest loads on the workers point at it, and a
 * worker may be reading through its backend right now. It is therefore
 * never freed before exit: it leaves d->cache.ds (no new open finds it), its
 * chunks, persisted manifest and policy choice are dropped, it is marked
 * removed (handles of it get ESTALE, a fill that ends for it keeps
 * nothing), and it waits in d->retired.
 */
#include "reload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "dataset.h"
#include "index.h"
#include "log.h"
#include "mover.h"
#include "plans.h"
#include "policy_glue.h"
#include "reclaim.h"
#include "residency.h"
#include "server.h"
#include "status.h"
#include "trace_rec.h"

#define POLICY_NS "policy" /* policy_glue.c's namespace of persisted choices */

/* One walk over the keys that differ between a running section and its
 * new one (config_diff_*): LABEL names the section in the report, and a
 * key that is handled is copied from FROM to TO (NULL: not copied). */
struct walk {
	FILE *out;
	const char *label; /* "daemon", "hot", "dataset.NAME" */
	void *to;
	const void *from;
	unsigned n;        /* keys handled */
};

/* Keys read only at start (their row says restart): report the change and
 * keep the running value in the new config (walk: FROM running, TO new), so
 * that what `config show` prints is what runs. */
static int keep_restart_key(void *arg, const struct config_change *ch)
{
	struct walk *w = arg;
	if (ch->reload != CONFIG_RELOAD_RESTART)
		return 0;
	fprintf(w->out, "needs a restart: %s.%s (running %s, file %s)\n", w->label, ch->name,
		ch->was, ch->now);
	config_change_copy(ch, w->to, w->from);
	w->n++;
	return 0;
}

/* A live key: report it and, for a dataset, copy it into the running
 * dataset's own copy of its settings (walk: FROM new, TO running). Daemon
 * keys are read from d->cfg where they are used, so swapping the config
 * applies them; a tier's apply through tier_set_limits(). */
static int apply_live_key(void *arg, const struct config_change *ch)
{
	struct walk *w = arg;
	if (ch->reload != CONFIG_RELOAD_LIVE)
		return 0;
	fprintf(w->out, "applied: %s.%s = %s (was %s%s%s)\n", w->label, ch->name, ch->now, ch->was,
		ch->applies ? ", " : "", ch->applies ? ch->applies : "");
	if (w->to)
		config_change_copy(ch, w->to, w->from);
	w->n++;
	return 0;
}

/* For the report of a replaced dataset: "key: old -> new" of every key
 * that differs, whatever its class (the new dataset takes them all). */
static int list_key(void *arg, const struct config_change *ch)
{
	struct walk *w = arg;
	fprintf(w->out, "%s%s: %s -> %s", w->n++ ? ", " : "", ch->name, ch->was, ch->now);
	return 0;
}

/* The new config's section of dataset NAME, writable (config_dataset()
 * gives a const one). */
static struct dataset_conf *new_dataset_conf(struct config *nc, const char *name)
{
	for (unsigned i = 0; i < nc->ndatasets; i++)
		if (strcmp(nc->datasets[i].name, name) == 0)
			return &nc->datasets[i];
	return NULL;
}

/* Phase 1: restart keys of [daemon], the tiers and the datasets that stay
 * keep their running values in NC. */
static void keep_running(struct daemon *d, const struct config *oc, struct config *nc, FILE *out)
{
	struct walk w = {.out = out, .label = "daemon", .to = nc, .from = oc};
	config_diff_daemon(oc, nc, keep_restart_key, &w);
	if (oc->cluster.enabled != nc->cluster.enabled) {
		/* [cluster] is read at start: joining or leaving needs a restart */
		fprintf(out, "needs a restart: [cluster] %s\n", nc->cluster.enabled ? "added" : "removed");
		nc->cluster = oc->cluster;
	} else if (oc->cluster.enabled) {
		w = (struct walk){.out = out, .label = "cluster", .to = nc, .from = oc};
		config_diff_cluster(oc, nc, keep_restart_key, &w);
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *a = &oc->tiers[t];
		struct tier_conf *b = &nc->tiers[t];
		const char *name = t == TIER_HOT ? "hot" : "warm";
		if (a->present != b->present) {
			/* a tier is not a key: its presence is read at start */
			fprintf(out, "needs a restart: [tier %s] %s\n", name,
				b->present ? "added" : "removed");
			*b = *a;
		} else if (a->present) {
			w = (struct walk){.out = out, .label = name, .to = b, .from = a};
			config_diff_tier(a, b, keep_restart_key, &w);
		}
	}
	for (unsigned i = 0; i < nc->ndatasets; i++) {
		struct dataset_conf *nd = &nc->datasets[i];
		const struct dataset *ds = cache_dataset(&d->cache, nd->name, strlen(nd->name));
		char label[CONFIG_NAME_MAX + 16];
		if (!ds || !config_same_source(&ds->conf, nd))
			continue; /* added or replaced: created with the file's values */
		snprintf(label, sizeof(label), "dataset.%s", nd->name);
		w = (struct walk){.out = out, .label = label, .to = nd, .from = &ds->conf};
		config_diff_dataset(&ds->conf, nd, keep_restart_key, &w);
	}
}

static bool apply_tiers(struct daemon *d, const struct config *oc, const struct config *nc,
			FILE *out)
{
	bool changed = false;
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *a = &oc->tiers[t], *b = &nc->tiers[t];
		if (!a->present || !b->present)
			continue;
		struct walk w = {.out = out, .label = d->cache.tiers[t].name};
		config_diff_tier(a, b, apply_live_key, &w);
		if (!w.n)
			continue;
		tier_set_limits(&d->cache.tiers[t], b);
		/* segments stay a small part of the tier: on one shrunk from
		 * 64M to 2M, 4M segments would hold its every dead byte */
		reclaim_size_tier(&d->cache, (enum tier_id)t, oc->segment_size);
		changed = true;
		log_info("op=reload tier=%s capacity=%llu high_water=%u low_water=%u", d->cache.tiers[t].name,
			 (unsigned long long)b->capacity, b->high_water, b->low_water);
	}
	return changed;
}

/* Policy instances learn their tier's budget when they are created
 * (policy_env.capacity): after a tier's limits changed, give every dataset
 * new instances of the same policy, residents moved over in the order they
 * were read (what tierctl policy set does). */
static void rebudget(struct daemon *d)
{
	char err[512];
	for (unsigned i = 0; i < d->cache.nds; i++) {
		struct dataset *ds = d->cache.ds[i];
		struct policy_spec spec = ds->spec;
		if (policy_glue_set(&d->cache, ds, ds->spec_by_admin ? &spec : NULL, err, sizeof(err)) < 0)
			log_warn("dataset=%s op=reload err=\"policy keeps the old tier budget: %s\"",
				 ds->name, err);
	}
}

/* Take ds out of service for good (see the file comment). */
static int retire(struct daemon *d, struct dataset *ds)
{
	struct dataset **r = realloc(d->retired, (d->nretired + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	d->retired = r;
	unsigned dropped = 0;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &d->cache.chunks); c;
	     c = chunk_iter_next(&it)) {
		if (c->ds == ds) {
			chunk_drop(&d->cache, c, "dataset_removed");
			dropped++;
		}
	}
	dataset_forget(&d->cache, ds);
	residency_forget_dataset(d->res, ds);
	plans_forget_dataset(d->plans, ds);
	index_kv_delete(d->cache.ix, POLICY_NS, ds->name);
	d->retired[d->nretired++] = ds;
	log_info("dataset=%s op=reload action=removed chunks_dropped=%u", ds->name, dropped);
	return 0;
}

/* A kept dataset's policy: applied like tierctl policy set, which may
 * fail; then the dataset keeps its policy and ND is set back to it, so
 * that `config show` prints what runs. */
static void apply_policy(struct daemon *d, struct dataset *ds, struct dataset_conf *nd, FILE *out)
{
	if (strcmp(ds->conf.policy, nd->policy) == 0)
		return;
	char old[sizeof(ds->conf.policy)], err[512];
	memcpy(old, ds->conf.policy, sizeof(old));
	memcpy(ds->conf.policy, nd->policy, sizeof(old));
	/* like a restart: a tierctl choice made against the old file policy
	 * gives way to the file's new one */
	int rc = policy_glue_set(&d->cache, ds, NULL, err, sizeof(err));
	if (rc < 0) {
		memcpy(ds->conf.policy, old, sizeof(old));
		fprintf(out, "not applied: dataset.%s.policy = %s: %s (keeps %s)\n", ds->name,
			nd->policy, err, old);
		log_warn("dataset=%s op=reload policy=%s err=\"%s\"", ds->name, nd->policy, err);
		memcpy(nd->policy, old, sizeof(old));
		return;
	}
	fprintf(out, "applied: dataset.%s.policy = %s (was %s)\n", ds->name, nd->policy, old);
}

/* A kept dataset (same source): every live key that changed reaches the
 * running dataset, whose settings are its own copy (ds->conf), read where
 * they are used (lifecycle, revalidation, the policy). */
static void apply_settings(struct daemon *d, struct dataset *ds, struct dataset_conf *nd,
			   FILE *out)
{
	char label[CONFIG_NAME_MAX + 16];
	apply_policy(d, ds, nd, out);
	snprintf(label, sizeof(label), "dataset.%s", ds->name);
	struct walk w = {.out = out, .label = label, .to = &ds->conf, .from = nd};
	config_diff_dataset(&ds->conf, nd, apply_live_key, &w);
}

int reload_config(struct daemon *d, char **report)
{
	struct config *oc = d->cfg, *nc = NULL;
	char *text = NULL, *errors = NULL;
	size_t textlen = 0;
	struct dataset **added = NULL, **all = NULL;
	unsigned nadded = 0, nall = 0;
	int rc;

	*report = NULL;
	rc = config_load(oc->file, &nc, &errors);
	if (rc < 0) {
		*report = errors;
		status_note_reload(d->status, false);
		return rc;
	}
	FILE *out = open_memstream(&text, &textlen);
	added = calloc(nc->ndatasets + 1, sizeof(*added));
	all = calloc(d->cache.nds + nc->ndatasets + 1, sizeof(*all));
	if (!out || !added || !all) {
		rc = -ENOMEM;
		goto fail;
	}

	/* phase 1: what may fail, aside */
	keep_running(d, oc, nc, out);
	for (unsigned i = 0; i < nc->ndatasets; i++) {
		const struct dataset_conf *nd = &nc->datasets[i];
		struct dataset *ds = cache_dataset(&d->cache, nd->name, strlen(nd->name));
		if (ds && config_same_source(&ds->conf, nd))
			continue;
		char err[512] = "";
		if (ds) {
			struct walk w = {.out = out};
			fprintf(out, "replaced: dataset.%s (", nd->name);
			config_diff_dataset(&ds->conf, nd, list_key, &w);
			fputs("; cached chunks dropped)\n", out);
		}
		rc = dataset_new(&d->cache, nd, &added[nadded], err, sizeof(err));
		if (rc < 0) {
			fprintf(out, "%s: dataset %s: %s\n", oc->file, nd->name, err);
			goto fail;
		}
		nadded++;
	}

	/* phase 2: apply; nothing below fails */
	log_set_level(nc->log_level);
	struct walk w = {.out = out, .label = "daemon"};
	config_diff_daemon(oc, nc, apply_live_key, &w);
	bool tiers_changed = apply_tiers(d, oc, nc, out);
	for (unsigned i = 0; i < d->cache.nds; i++) {
		struct dataset *ds = d->cache.ds[i];
		struct dataset_conf *nd = new_dataset_conf(nc, ds->name);
		if (nd && config_same_source(&ds->conf, nd)) {
			apply_settings(d, ds, nd, out);
			all[nall++] = ds;
			continue;
		}
		if (retire(d, ds) < 0) {
			/* cannot even remember it: keep serving it rather than
			 * free what others point at */
			fprintf(out, "not removed: dataset.%s (out of memory)\n", ds->name);
			all[nall++] = ds;
			continue;
		}
		if (!nd)
			fprintf(out, "removed: dataset.%s (cached chunks dropped)\n", ds->name);
	}
	for (unsigned i = 0; i < nadded; i++) {
		struct dataset *ds = added[i];
		char err[512];
		if (ds->spec_by_admin && policy_glue_set(&d->cache, ds, NULL, err, sizeof(err)) < 0)
			log_warn("dataset=%s op=reload err=\"cannot drop the tierctl policy choice "
				 "of the dataset it replaces: %s\"", ds->name, err);
		all[nall++] = ds;
		dataset_restore_manifest(&d->cache, ds);
		fprintf(out, "added: dataset.%s\n", ds->name);
		log_info("dataset=%s op=reload action=added backend=%s", ds->name, ds->conf.backend);
	}
	free(d->cache.ds);
	d->cache.ds = all;
	d->cache.nds = nall;
	all = NULL;
	d->cfg = nc;
	d->cache.cfg = nc;
	server_set_config(d->srv, nc);
	if (tiers_changed)
		rebudget(d);
	for (unsigned i = 0; i < nadded; i++)
		if (dataset_refresh(&d->cache, added[i], NULL, NULL) < 0) /* on a worker: the loop goes on */
			log_warn("dataset=%s op=reload err=\"cannot start listing the source\"",
				 added[i]->name);
	mover_kick(&d->cache);
	status_note_reload(d->status, true);
	fflush(out);
	/* a trace is of one configuration: a reload that changed it ends it */
	if (textlen)
		(void)trace_rec_stop(&d->cache, "stopped: the daemon's config was reloaded", NULL);
	if (textlen == 0)
		fputs("no changes\n", out);
	fclose(out);
	log_info("op=reload file=%s result=ok datasets=%u", nc->file, d->cache.nds);
	config_free(oc);
	free(added);
	*report = text;
	return 0;

fail:
	for (unsigned i = 0; i < nadded; i++)
		dataset_free(&d->cache, added[i]);
	if (out)
		fclose(out);
	config_free(nc);
	free(added);
	free(all);
	*report = text;
	status_note_reload(d->status, false);
	return rc;
}

void reload_free_retired(struct daemon *d)
{
	for (unsigned i = 0; i < d->nretired; i++)
		dataset_free(&d->cache, d->retired[i]);
	free(d->retired);
	d->retired = NULL;
	d->nretired = 0;
}
