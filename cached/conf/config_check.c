/*
 * The configuration's cross-checks (config.c runs them once every section
 * is parsed): keys that must come together, paths that must stay apart,
 * groups and listen addresses that must exist or parse, what datasets
 * inherit from [daemon], the cluster section. Every problem is one line
 * "FILE: SECTION: reason (hint)".
 */
#include "config_int.h"
#include "config_value.h"

#include "log.h"
#include "policy.h"
#include "policy_spec.h"

#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Was the key written, and accepted? */
static bool key_ok(const struct sect_state *st, enum section_kind kind, const char *name)
{
	size_t ki = config_key_index(kind, name);
	return st->key_line[ki] && !st->key_bad[ki];
}

static bool key_rejected(const struct sect_state *st, enum section_kind kind, const char *name)
{
	return st->key_bad[config_key_index(kind, name)];
}

static void check_missing(struct load *ld, const struct sect_state *st, enum section_kind kind,
			  const char *label, unsigned backend_flag, const char *backend)
{
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct key_def *k = &config_keys[i];
		if (k->sect != kind || !(k->flags & KEY_REQUIRED) || st->key_line[i])
			continue;
		if ((k->flags & (KEY_POSIX | KEY_RADOS)) && !(k->flags & backend_flag))
			continue;
		if (backend)
			key_msg(ld, st->line, label, k,
				"missing (required for backend = %s; e.g. %s)", backend,
				k->example);
		else
			key_msg(ld, st->line, label, k, "missing (required; e.g. %s)", k->example);
	}
}

/* SUBJECT.path must neither be, be inside, nor contain OTHER. */
static void check_apart(struct load *ld, const char *subject, const char *path, const char *other,
			const char *other_path)
{
	char a[512], b[512];
	const char *hint = "give each its own directory";
	if (strcmp(path, other_path) == 0)
		config_msg(ld, 0, "%s: path \"%s\" is also %s (%s)", subject,
			   config_shown(a, sizeof(a), path), other, hint);
	else if (config_path_inside(path, other_path))
		config_msg(ld, 0, "%s: path \"%s\" is inside %s \"%s\" (%s)", subject,
			   config_shown(a, sizeof(a), path), other,
			   config_shown(b, sizeof(b), other_path), hint);
	else if (config_path_inside(other_path, path))
		config_msg(ld, 0, "%s: path \"%s\" contains %s \"%s\" (%s)", subject,
			   config_shown(a, sizeof(a), path), other,
			   config_shown(b, sizeof(b), other_path), hint);
}

/* metrics_listen = HOST:PORT: split into metrics_host and metrics_port. Any
 * address is allowed (the default is off; the documented example is
 * loopback). */
static void check_listen(struct load *ld, struct config *cfg)
{
	char sb[160];
	const char *bad = config_parse_listen(cfg->metrics_listen, cfg->metrics_host,
					      sizeof(cfg->metrics_host), &cfg->metrics_port);
	if (bad)
		config_msg(ld, 0,
			   "daemon.metrics_listen: \"%s\" %s (use HOST:PORT, e.g. 127.0.0.1:9464 "
			   "or [::1]:9464)",
			   config_shown(sb, sizeof(sb), cfg->metrics_listen), bad);
}

/* Dataset keys left unset take the [daemon] key of the same name (its
 * value, or its default). */
static void inherit_daemon_keys(struct load *ld, struct dataset_conf *ds,
				const struct sect_state *st)
{
	for (size_t j = 0; j < config_nkeys; j++) {
		const struct key_def *k = &config_keys[j];
		if (k->sect != SECT_DATASET || !(k->flags & KEY_INHERIT) || st->key_line[j])
			continue;
		size_t di = config_key_index(SECT_DAEMON, k->name);
		const struct key_def *dk = &config_keys[di];
		assert(dk->size == k->size);
		memcpy((char *)ds + k->off, (char *)ld->cfg + dk->off, k->size);
	}
}

/* allow_users / allow_groups: names or numeric ids separated by commas or
 * blanks, resolved once here (a name that leaves the system later does
 * not change a running daemon until a reload). */
struct allow_key {
	struct load *ld;
	int line;
	const char *label;
	const struct key_def *k;
	const char *what; /* "user" | "group" */
};

static void allow_unknown(void *arg, const char *word)
{
	struct allow_key *ak = arg;
	char sb[80];
	key_msg(ak->ld, ak->line, ak->label, ak->k,
		"unknown %s \"%s\" (use a %s name known to this system or a numeric id)", ak->what,
		config_shown(sb, sizeof(sb), word), ak->what);
}

static void resolve_allow(struct load *ld, struct dataset_conf *ds, const struct sect_state *st,
			  const char *label, bool is_group)
{
	size_t ki = config_key_index(SECT_DATASET, is_group ? "allow_groups" : "allow_users");
	struct allow_key ak = {.ld = ld,
			       .line = st->key_line[ki],
			       .label = label,
			       .k = &config_keys[ki],
			       .what = is_group ? "group" : "user"};
	uint32_t ids[CONFIG_ALLOW_MAX];
	unsigned n;
	if (config_parse_ids(is_group ? ds->allow_groups : ds->allow_users, is_group, ids,
			     CONFIG_ALLOW_MAX, &n, allow_unknown, &ak) == -E2BIG)
		key_msg(ld, ak.line, label, ak.k,
			"more than %d %ss (list fewer; a group admits many users)",
			CONFIG_ALLOW_MAX, ak.what);
	for (unsigned i = 0; i < n; i++) {
		if (is_group)
			ds->allow_gids[i] = (gid_t)ids[i];
		else
			ds->allow_uids[i] = (uid_t)ids[i];
	}
	*(is_group ? &ds->nallow_gids : &ds->nallow_uids) = n;
}

static void resolved_msg(void *arg, const char *msg)
{
	config_msg(arg, 0, "%s", msg);
}

static void cluster_msg(void *arg, int line, const char *msg)
{
	config_msg(arg, line, "%s", msg);
}

/* The gid of [daemon] KEY's group NAME; (gid_t)-1 if NAME is empty, or
 * reported with HINT if no such group exists. */
static gid_t resolve_group(struct load *ld, const char *key, const char *name, const char *hint)
{
	if (!name[0])
		return (gid_t)-1;
	struct group gr, *res = NULL;
	char buf[4096];
	if (getgrnam_r(name, &gr, buf, sizeof(buf), &res) == 0 && res)
		return gr.gr_gid;
	char sb[80]; /* through config_shown(): no control bytes in a message */
	config_msg(ld, 0, "daemon.%s: no group named \"%s\" on this system (%s)", key,
		   config_shown(sb, sizeof(sb), name), hint);
	return (gid_t)-1;
}

void config_cross_check(struct load *ld)
{
	struct config *cfg = ld->cfg;
	bool tier_path[TIER_COUNT] = {false};
	bool state_ok = !key_rejected(&ld->daemon, SECT_DAEMON, "state_dir");

	cfg->admin_gid = resolve_group(ld, "admin_group", cfg->admin_group,
				       "create it, or leave admin_group empty for root only");
	cfg->socket_gid = resolve_group(ld, "socket_group", cfg->socket_group,
					"create it, or leave socket_group empty for the daemon's group");
	if (cfg->metrics_listen[0])
		check_listen(ld, cfg);
	if (!cfg->tiers[TIER_HOT].present)
		config_msg(ld, 0,
			   "hot: missing [tier hot] (required; give it a path and a capacity)");
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *tc = &cfg->tiers[t];
		const struct sect_state *st = &ld->tiers[t];
		if (!tc->present)
			continue;
		check_missing(ld, st, SECT_TIER, tier_names[t], 0, NULL);
		if (!key_rejected(st, SECT_TIER, "high_water") &&
		    !key_rejected(st, SECT_TIER, "low_water") && tc->low_water >= tc->high_water)
			config_msg(ld, 0, "%s: need low_water < high_water (got %u >= %u)",
				   tier_names[t], tc->low_water, tc->high_water);
		tier_path[t] = key_ok(st, SECT_TIER, "path");
		if (tier_path[t] && state_ok)
			check_apart(ld, tier_names[t], tc->path, "daemon.state_dir",
				    cfg->state_dir);
	}
	if (tier_path[TIER_HOT] && tier_path[TIER_WARM])
		check_apart(ld, "warm", cfg->tiers[TIER_WARM].path, "hot.path",
			    cfg->tiers[TIER_HOT].path);
	if (cfg->cluster.enabled) {
		check_missing(ld, &ld->cluster, SECT_CLUSTER, "cluster", 0, NULL);
		config_cluster_check(cfg, ld->cluster.key_line, ld->cluster.key_bad, cluster_msg,
				     ld);
	}

	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dataset_conf *ds = &cfg->datasets[i];
		const struct sect_state *st = &ld->ds[i];
		char label[CONFIG_NAME_MAX + 16];
		snprintf(label, sizeof(label), "dataset.%s", ds->name);
		if (key_rejected(st, SECT_DATASET, "backend"))
			continue; /* a bad backend: which keys belong is unknown */
		bool rados = strcmp(ds->backend, "rados") == 0;
		unsigned mine = rados ? KEY_RADOS : KEY_POSIX;
		for (size_t j = 0; j < config_nkeys; j++) {
			const struct key_def *k = &config_keys[j];
			unsigned only = k->flags & (KEY_POSIX | KEY_RADOS);
			if (k->sect != SECT_DATASET || !only || only == mine || !st->key_line[j])
				continue;
			key_msg(ld, st->key_line[j], label, k,
				"%s is for backend = %s (this dataset has backend = %s)", k->name,
				only == KEY_RADOS ? "rados" : "posix", ds->backend);
		}
		check_missing(ld, st, SECT_DATASET, label, mine, ds->backend);
		inherit_daemon_keys(ld, &cfg->datasets[i], st);
		resolve_allow(ld, &cfg->datasets[i], st, label, false);
		resolve_allow(ld, &cfg->datasets[i], st, label, true);
		if (rados && strcmp(ds->access, "source") == 0)
			config_msg(ld, st->key_line[config_key_index(SECT_DATASET, "access")],
				   "%s.access: source checks the source file's owner, group and "
				   "mode, "
				   "which needs backend = posix (this dataset has backend = %s; "
				   "use "
				   "access = socket with allow_users / allow_groups)",
				   label, ds->backend);
		if (rados || !key_ok(st, SECT_DATASET, "path"))
			continue;
		/* the cold directory is the source of truth: a tier or the index
		 * inside it (or it inside them) would serve or evict the wrong files */
		for (int t = 0; t < TIER_COUNT; t++)
			if (tier_path[t]) {
				char other[16];
				snprintf(other, sizeof(other), "%s.path", tier_names[t]);
				check_apart(ld, label, ds->path, other, cfg->tiers[t].path);
			}
		if (state_ok)
			check_apart(ld, label, ds->path, "daemon.state_dir", cfg->state_dir);
	}
	/* the same, as the file system sees them (a symlink, a bind mount) */
	if (!ld->nerr)
		config_check_resolved(cfg, resolved_msg, ld);
}
