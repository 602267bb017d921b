/*
 * Service ops: the status and dataset record sets, a dataset's refresh,
 * the effective configuration and reloading it. Loop thread.
 *
 * TC_OP_CONFIG_SHOW
 *   req: empty, or str section ("" = all; "daemon", "tier hot", "tier
 *        warm", "dataset NAME": only that section's keys; a node with
 *        thousands of datasets needs this, as the whole config would not
 *        fit one reply)
 *   rep: a record set: "file" (one record: path, reloads, reload_failures)
 *        and "config" (one record per key that applies: section ("daemon",
 *        "tier hot", "dataset NAME"), key, value (as a file writes it),
 *        default (bool: the value equals the key's default)).
 *   Any client that may connect may ask: the config holds paths (a
 *   keyring's path, never its contents) and no secrets, and `tierctl
 *   datasets` shows the same paths already.
 *
 * TC_OP_RELOAD (admin)
 *   req: empty
 *   rep: str report: one line per change ("applied: ...", "added: ...",
 *        "removed: ...", "replaced: ...", "needs a restart: ...") or "no
 *        changes". Error EINVAL: the file has errors, the detail lists them
 *        (cut to fit one reply; every line is also in the daemon's log) and
 *        the running config stays.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "dataset.h"
#include "log.h"
#include "status.h"
#include "handlers.h"

#define DETAIL_MAX 900 /* conn_reply_err's message buffer is 1024 */

static void key_record(struct proto_rs *rs, const char *section, const char *key,
		       const char *value, bool dflt)
{
	proto_rs_record(rs);
	proto_rs_str(rs, "section", section);
	proto_rs_str(rs, "key", key);
	proto_rs_str(rs, "value", value);
	proto_rs_bool(rs, "default", dflt);
}

void handlers_config_show(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	const struct config *cfg = conn_api(c)->cache->cfg;
	struct proto_wr w;
	struct proto_rs rs;
	struct config_key_info k;
	char value[PATH_MAX + 16], section[CONFIG_NAME_MAX + 16], only[CONFIG_NAME_MAX + 16] = "";
	bool dflt;

	if (h->len && !proto_rd_str_copy(r, only, sizeof(only))) {
		conn_reply_err(c, h->op, h->id, EBADMSG,
			       "malformed CONFIG_SHOW (an optional section name of at most %zu bytes)",
			       sizeof(only) - 1);
		return;
	}
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed CONFIG_SHOW (trailing bytes)");
		return;
	}
	bool found = !only[0] || strcmp(only, "daemon") == 0 ||
		     (cfg->cluster.enabled && strcmp(only, "cluster") == 0);
	for (unsigned t = 0; t < TIER_COUNT && !found; t++)
		found = cfg->tiers[t].present &&
			strcmp(only, t == TIER_HOT ? "tier hot" : "tier warm") == 0;
	found = found || (strncmp(only, "dataset ", 8) == 0 && config_dataset(cfg, only + 8));
	if (!found) {
		conn_reply_err(c, h->op, h->id, ENOENT,
			       "no section [%s] in the running config (use daemon, \"tier hot\", "
			       "\"tier warm\", cluster or \"dataset NAME\")", only);
		return;
	}
#define WANT(sec) (!only[0] || strcmp(only, (sec)) == 0)
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	proto_rs_section(&rs, "file", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	proto_rs_str(&rs, "path", cfg->file);
	proto_rs_u64(&rs, "reloads", conn_api(c)->status->reloads);
	proto_rs_u64(&rs, "reload_failures", conn_api(c)->status->reload_failures);
	proto_rs_section(&rs, "config", TC_SHAPE_ARRAY);
	for (size_t i = 0; WANT("daemon") && config_key_at(i, &k) == 0; i++)
		if (strcmp(k.section, "daemon") == 0 &&
		    config_key_value(cfg, i, 0, value, sizeof(value), &dflt) == 0)
			key_record(&rs, "daemon", k.name, value, dflt);
	for (unsigned t = 0; t < TIER_COUNT; t++) {
		snprintf(section, sizeof(section), "tier %s", t == TIER_HOT ? "hot" : "warm");
		for (size_t i = 0; WANT(section) && config_key_at(i, &k) == 0; i++)
			if (strcmp(k.section, "tier") == 0 &&
			    config_key_value(cfg, i, t, value, sizeof(value), &dflt) == 0)
				key_record(&rs, section, k.name, value, dflt);
	}
	for (size_t i = 0; WANT("cluster") && config_key_at(i, &k) == 0; i++)
		if (strcmp(k.section, "cluster") == 0 &&
		    config_key_value(cfg, i, 0, value, sizeof(value), &dflt) == 0)
			key_record(&rs, "cluster", k.name, value, dflt);
	for (unsigned n = 0; n < cfg->ndatasets; n++) {
		snprintf(section, sizeof(section), "dataset %s", cfg->datasets[n].name);
		for (size_t i = 0; WANT(section) && config_key_at(i, &k) == 0; i++)
			if (strcmp(k.section, "dataset") == 0 &&
			    config_key_value(cfg, i, n, value, sizeof(value), &dflt) == 0)
				key_record(&rs, section, k.name, value, dflt);
	}
#undef WANT
	proto_rs_end(&rs);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

void handlers_reload(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	if (!conn_require_admin(c, h))
		return;
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed RELOAD (takes no payload)");
		return;
	}
	char *report = NULL;
	log_info("op=reload client_pid=%d uid=%u file=%s", (int)c->pid, (unsigned)c->uid,
		 conn_api(c)->cache->cfg->file);
	struct api *api = conn_api(c);
	int rc = api->reload(api->reload_arg, &report);
	if (rc < 0) {
		const char *text = report ? report : strerror(-rc);
		size_t n = strlen(text);
		while (n && text[n - 1] == '\n')
			n--;
		if (n > DETAIL_MAX)
			conn_reply_err(c, h->op, h->id, -rc,
				       "%.*s\n... (more in the daemon's log); the running config stays",
				       DETAIL_MAX, text);
		else
			conn_reply_err(c, h->op, h->id, -rc, "%.*s\nthe running config stays", (int)n,
				       text);
		free(report);
		return;
	}
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, report ? report : "reloaded (no report: out of memory)\n");
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
	free(report);
}

/* TC_OP_REFRESH waiting for its listing. */
struct refresh_wait {
	struct conn *c;
	uint32_t id;
};

void handlers_recset(struct conn *c, const struct tc_hdr *h,
		     void (*fill)(struct status *st, struct proto_rs *rs))
{
	struct proto_wr w;
	struct proto_rs rs;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	fill(conn_api(c)->status, &rs);
	proto_rs_end(&rs);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

static void refresh_done(struct cache *cache, void *arg, int err, uint64_t files, uint64_t bytes,
			 uint64_t changed)
{
	struct refresh_wait *p = arg;
	struct conn *c = p->c;
	(void)cache;
	if (!c->dead) {
		if (err < 0) {
			conn_reply_err(c, TC_OP_REFRESH, p->id, -err, "refresh failed: %s", strerror(-err));
		} else {
			struct proto_wr w;
			proto_wr_init(&w);
			proto_wr_begin(&w);
			proto_wr_u64(&w, files);
			proto_wr_u64(&w, bytes);
			proto_wr_u64(&w, changed);
			conn_reply(c, TC_OP_REFRESH, p->id, &w, -1);
			proto_wr_free(&w);
		}
	}
	conn_put(c);
	free(p);
}

void handlers_refresh(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	char name[TC_DATASET_NAME_MAX + 1];
	if (!proto_rd_str_copy(r, name, sizeof(name)) || !proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EINVAL, "REFRESH takes a dataset name (at most %u bytes)",
			       TC_DATASET_NAME_MAX);
		return;
	}
	struct dataset *ds = cache_dataset(conn_api(c)->cache, name, strlen(name));
	if (!ds) {
		conn_reply_err(c, h->op, h->id, ENOENT, "no dataset named \"%s\"", name);
		return;
	}
	if (!access_check(c, h->op, h->id, ds, "", ACCESS_STAT))
		return;
	struct refresh_wait *p = calloc(1, sizeof(*p));
	if (!p) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	p->c = c;
	p->id = h->id;
	conn_get(c);
	int rc = dataset_refresh(conn_api(c)->cache, ds, refresh_done, p);
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc,
			       rc == -EBUSY ? "dataset %s is already being refreshed; try again shortly"
					    : "cannot refresh %s",
			       ds->name);
		conn_put(c);
		free(p);
	}
}
