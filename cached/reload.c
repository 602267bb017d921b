/*
 * Reloading the configuration: see reload.h.
 *
 * Two phases, so that a reload is all or nothing: first everything that can
 * fail (parsing the file, creating the added datasets and their policies)
 * is done aside; then the changes are applied, and those cannot fail.
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
#include "config_value.h"
#include "dataset.h"
#include "index.h"
#include "log.h"
#include "mover.h"
#include "plans.h"
#include "policy_glue.h"
#include "residency.h"
#include "server.h"
#include "status.h"

#define POLICY_NS "policy" /* policy_glue.c's namespace of persisted choices */

/* The settings that say where a dataset's bytes come from and how they
 * are cut: a change means other data, so the dataset is replaced. */
static bool same_source(const struct dataset_conf *a, const struct dataset_conf *b)
{
	return strcmp(a->backend, b->backend) == 0 && strcmp(a->path, b->path) == 0 &&
	       a->chunk_size == b->chunk_size && strcmp(a->ceph_conf, b->ceph_conf) == 0 &&
	       strcmp(a->client_id, b->client_id) == 0 && strcmp(a->keyring, b->keyring) == 0 &&
	       strcmp(a->pool, b->pool) == 0 &&
	       strcmp(a->rados_namespace, b->rados_namespace) == 0 &&
	       strcmp(a->prefix, b->prefix) == 0 && strcmp(a->layout, b->layout) == 0 &&
	       a->op_timeout_s == b->op_timeout_s && a->max_inflight == b->max_inflight;
}

/* Keys read only at start: report a change and keep the running value in
 * the new config, so that what `config show` prints is what runs. */
static void keep_running(struct config *oc, struct config *nc, FILE *out)
{
#define KEEP_STR(field, key)                                                                       \
	if (strcmp(oc->field, nc->field) != 0) {                                                   \
		fprintf(out, "needs a restart: %s (running \"%s\", file \"%s\")\n", key, oc->field,  \
			nc->field);                                                                 \
		memcpy(nc->field, oc->field, sizeof(nc->field));                                    \
	}
	KEEP_STR(socket, "daemon.socket")
	KEEP_STR(state_dir, "daemon.state_dir")
	KEEP_STR(socket_group, "daemon.socket_group")
	KEEP_STR(metrics_listen, "daemon.metrics_listen")
#undef KEEP_STR
	nc->socket_gid = oc->socket_gid;
	memcpy(nc->metrics_host, oc->metrics_host, sizeof(nc->metrics_host));
	nc->metrics_port = oc->metrics_port;
	if (oc->workers != nc->workers) {
		fprintf(out, "needs a restart: daemon.workers (running %u, file %u)\n", oc->workers,
			nc->workers);
		nc->workers = oc->workers;
	}
	if (oc->socket_mode != nc->socket_mode) {
		fprintf(out, "needs a restart: daemon.socket_mode (running %04o, file %04o)\n",
			oc->socket_mode, nc->socket_mode);
		nc->socket_mode = oc->socket_mode;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		struct tier_conf *a = &oc->tiers[t], *b = &nc->tiers[t];
		const char *name = t == TIER_HOT ? "hot" : "warm";
		if (a->present != b->present) {
			fprintf(out, "needs a restart: [tier %s] %s\n", name,
				b->present ? "added" : "removed");
			*b = *a;
		} else if (a->present && strcmp(a->path, b->path) != 0) {
			fprintf(out, "needs a restart: %s.path (running \"%s\", file \"%s\")\n", name,
				a->path, b->path);
			memcpy(b->path, a->path, sizeof(b->path));
		}
	}
}

/* Daemon keys that apply as they are read (log_level at once; the others
 * are looked up in d->cfg on use). */
static void report_live_keys(const struct config *oc, const struct config *nc, FILE *out)
{
	if (oc->log_level != nc->log_level)
		fprintf(out, "applied: daemon.log_level = %s\n", log_level_name(nc->log_level));
	if (oc->max_clients != nc->max_clients)
		fprintf(out, "applied: daemon.max_clients = %u\n", nc->max_clients);
	if (oc->sync_delay_ms != nc->sync_delay_ms || oc->sync_backlog != nc->sync_backlog)
		fprintf(out, "applied: daemon.sync_delay = %llums sync_backlog = %llu\n",
			(unsigned long long)nc->sync_delay_ms, (unsigned long long)nc->sync_backlog);
	if (strcmp(oc->admin_group, nc->admin_group) != 0)
		fprintf(out, "applied: daemon.admin_group = \"%s\" (for clients that connect from "
			     "now on)\n",
			nc->admin_group);
}

static bool apply_tiers(struct daemon *d, const struct config *oc, const struct config *nc,
			FILE *out)
{
	bool changed = false;
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *a = &oc->tiers[t], *b = &nc->tiers[t];
		char cap[32];
		if (!b->present || (a->capacity == b->capacity && a->high_water == b->high_water &&
				    a->low_water == b->low_water))
			continue;
		tier_set_limits(&d->cache.tiers[t], b);
		changed = true;
		fprintf(out, "applied: [tier %s] capacity = %s high_water = %u low_water = %u\n",
			d->cache.tiers[t].name, config_fmt_size(cap, sizeof(cap), b->capacity),
			b->high_water, b->low_water);
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
	for (size_t b = 0; b < d->cache.chunks.nb; b++) {
		struct chunk *c = d->cache.chunks.b[b];
		while (c) {
			struct chunk *next = c->hnext;
			if (c->ds == ds) {
				chunk_drop(&d->cache, c, "dataset_removed");
				dropped++;
			}
			c = next;
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

/* A kept dataset whose policy or revalidate_after changed. */
static void apply_settings(struct daemon *d, struct dataset *ds, const struct dataset_conf *nd,
			   FILE *out)
{
	char a[32], b[32];
	if (ds->conf.revalidate_after_ms != nd->revalidate_after_ms) {
		fprintf(out, "applied: dataset.%s.revalidate_after = %s (was %s)\n", ds->name,
			config_fmt_duration(b, sizeof(b), nd->revalidate_after_ms),
			config_fmt_duration(a, sizeof(a), ds->conf.revalidate_after_ms));
		ds->conf.revalidate_after_ms = nd->revalidate_after_ms;
	}
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
		return;
	}
	fprintf(out, "applied: dataset.%s.policy = %s (was %s)\n", ds->name, nd->policy, old);
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
	keep_running(oc, nc, out);
	for (unsigned i = 0; i < nc->ndatasets; i++) {
		const struct dataset_conf *nd = &nc->datasets[i];
		struct dataset *ds = cache_dataset(&d->cache, nd->name, strlen(nd->name));
		if (ds && same_source(&ds->conf, nd))
			continue;
		char err[512] = "";
		if (ds)
			fprintf(out, "replaced: dataset.%s (its source settings changed; cached "
				     "chunks dropped)\n",
				nd->name);
		rc = dataset_new(&d->cache, nd, &added[nadded], err, sizeof(err));
		if (rc < 0) {
			fprintf(out, "%s: dataset %s: %s\n", oc->file, nd->name, err);
			goto fail;
		}
		nadded++;
	}

	/* phase 2: apply; nothing below fails */
	log_set_level(nc->log_level);
	report_live_keys(oc, nc, out);
	bool tiers_changed = apply_tiers(d, oc, nc, out);
	for (unsigned i = 0; i < d->cache.nds; i++) {
		struct dataset *ds = d->cache.ds[i];
		const struct dataset_conf *nd = config_dataset(nc, ds->name);
		if (nd && same_source(&ds->conf, nd)) {
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
