/*
 * The config key table: every key's section, type, bounds, default and
 * field (see config.c for how loading uses it), and the calls that list
 * keys and print a loaded value the way a file writes it.
 */
#include "config_keys.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_value.h"
#include "log.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)

#define FIELD(type, member) .off = offsetof(type, member), .size = sizeof(((type *)0)->member)
/* fields FIRST..LAST (adjacent in TYPE) that loading fills from the key */
#define DERIVED(type, first, last)                                                                 \
	.derived_off = offsetof(type, first),                                                      \
	.derived_size = offsetof(type, last) + sizeof(((type *)0)->last) - offsetof(type, first)

/* A row's reload class (config.h). A live key must really take effect on
 * reload: a daemon key is read from d->cfg where it is used (or applied by
 * reload.c, log_level), a tier key through tier_set_limits(), a dataset key
 * from ds->conf, which reload.c updates key by key. */
#define LIVE .reload = CONFIG_RELOAD_LIVE
#define RESTART .reload = CONFIG_RELOAD_RESTART
#define SOURCE .reload = CONFIG_RELOAD_SOURCE

static const char *const backend_values[] = {"posix", "rados", NULL};
static const char *const layout_values[] = {"plain", "striper", NULL};
static const char *const yes_no_values[] = {"no", "yes", NULL};
static const char *const access_values[] = {"socket", "source", NULL};

/* Order matters: it is the order of conf/tiercache.conf and of key lists in
 * messages. */
const struct key_def config_keys[] = {
	{.sect = SECT_DAEMON, .name = "socket", .type = KEY_PATH, .flags = KEY_NONEMPTY | KEY_SUN_PATH,
	 .def = "/run/tiercache/tiercached.sock", FIELD(struct config, socket), RESTART},
	{.sect = SECT_DAEMON, .name = "state_dir", .type = KEY_PATH, .flags = KEY_NONEMPTY,
	 .def = "/var/lib/tiercache", FIELD(struct config, state_dir), RESTART},
	{.sect = SECT_DAEMON, .name = "log_level", .type = KEY_LOG_LEVEL, .def = "info",
	 FIELD(struct config, log_level), LIVE},
	{.sect = SECT_DAEMON, .name = "max_clients", .type = KEY_UINT, .def = "1024", .min = 1,
	 .max = 65536, FIELD(struct config, max_clients), LIVE},
	{.sect = SECT_DAEMON, .name = "workers", .type = KEY_UINT, .def = "4", .min = 1, .max = 64,
	 FIELD(struct config, workers), RESTART},
	{.sect = SECT_DAEMON, .name = "admin_group", .type = KEY_STRING,
	 FIELD(struct config, admin_group), LIVE, .applies = "for clients that connect from now on",
	 DERIVED(struct config, admin_gid, admin_gid)},
	{.sect = SECT_DAEMON, .name = "socket_mode", .type = KEY_MODE, .def = "0660", .max = 0777,
	 FIELD(struct config, socket_mode), RESTART},
	{.sect = SECT_DAEMON, .name = "socket_group", .type = KEY_STRING,
	 FIELD(struct config, socket_group), RESTART, DERIVED(struct config, socket_gid, socket_gid)},
	{.sect = SECT_DAEMON, .name = "metrics_listen", .type = KEY_STRING,
	 FIELD(struct config, metrics_listen), RESTART,
	 DERIVED(struct config, metrics_host, metrics_port)},
	{.sect = SECT_DAEMON, .name = "demote_after", .type = KEY_DURATION,
	 .flags = KEY_SECONDS | KEY_OFF, .def = "off", .min = 0, .max = 3650 * DAY_MS,
	 FIELD(struct config, demote_after_s), LIVE,
	 .applies = "in datasets that do not set their own"},
	{.sect = SECT_DAEMON, .name = "evict_after", .type = KEY_DURATION,
	 .flags = KEY_SECONDS | KEY_OFF, .def = "off", .min = 0, .max = 3650 * DAY_MS,
	 FIELD(struct config, evict_after_s), LIVE,
	 .applies = "in datasets that do not set their own"},
	{.sect = SECT_DAEMON, .name = "plan_grace", .type = KEY_DURATION, .flags = KEY_SECONDS,
	 .def = "30s", .min = 0, .max = DAY_MS, FIELD(struct config, plan_grace_s), LIVE},
	{.sect = SECT_DAEMON, .name = "prefetch_max_bytes", .type = KEY_SIZE, .def = "1G",
	 .min = 0, .max = UINT64_MAX, FIELD(struct config, prefetch_max_bytes), LIVE},
	{.sect = SECT_DAEMON, .name = "prefetch_inflight", .type = KEY_UINT, .def = "8", .min = 1,
	 .max = 256, FIELD(struct config, prefetch_inflight), LIVE},
	{.sect = SECT_DAEMON, .name = "prefetch_small_inflight", .type = KEY_UINT, .def = "32",
	 .min = 1, .max = 1024, FIELD(struct config, prefetch_small_inflight), LIVE},
	{.sect = SECT_DAEMON, .name = "readahead_chunks", .type = KEY_UINT, .def = "4", .min = 0,
	 .max = 64, FIELD(struct config, readahead_chunks), LIVE},
	{.sect = SECT_DAEMON, .name = "readahead_files", .type = KEY_UINT, .def = "32", .min = 0,
	 .max = 64, FIELD(struct config, readahead_files), LIVE},
	{.sect = SECT_DAEMON, .name = "stat_ahead_inflight", .type = KEY_UINT, .def = "32", .min = 0,
	 .max = 1024, FIELD(struct config, stat_ahead_inflight), LIVE},
	{.sect = SECT_DAEMON, .name = "sync_delay", .type = KEY_DURATION, .def = "5s", .min = 0,
	 .max = 3600 * 1000, FIELD(struct config, sync_delay_ms), LIVE},
	{.sect = SECT_DAEMON, .name = "sync_backlog", .type = KEY_SIZE, .def = "1G", .min = 0,
	 .max = UINT64_MAX, FIELD(struct config, sync_backlog), LIVE},
	{.sect = SECT_DAEMON, .name = "segment_threshold", .type = KEY_SIZE, .def = "512K", .min = 0,
	 .max = 64 * MIB, FIELD(struct config, segment_threshold), RESTART},
	{.sect = SECT_DAEMON, .name = "segment_size", .type = KEY_SIZE, .def = "64M", .min = 1 * MIB,
	 .max = 4096ull * MIB, FIELD(struct config, segment_size), RESTART},
	{.sect = SECT_DAEMON, .name = "segment_punch", .type = KEY_ENUM, .def = "yes",
	 .values = yes_no_values, FIELD(struct config, segment_punch), RESTART},
	{.sect = SECT_DAEMON, .name = "max_clients_per_uid", .type = KEY_UINT, .def = "256",
	 .min = 1, .max = 65536, FIELD(struct config, max_clients_per_uid), LIVE,
	 .applies = "for clients that connect from now on"},
	{.sect = SECT_DAEMON, .name = "idle_timeout", .type = KEY_DURATION,
	 .flags = KEY_SECONDS | KEY_OFF, .def = "10m", .min = 0, .max = DAY_MS,
	 FIELD(struct config, idle_timeout_s), LIVE},
	{.sect = SECT_DAEMON, .name = "max_held_per_client", .type = KEY_SIZE, .def = "4G",
	 .min = 64 * MIB, .max = UINT64_MAX, FIELD(struct config, max_held_per_client), LIVE},
	{.sect = SECT_DAEMON, .name = "max_held_per_user", .type = KEY_SIZE, .def = "16G",
	 .min = 64 * MIB, .max = UINT64_MAX, FIELD(struct config, max_held_per_user), LIVE},
	{.sect = SECT_DAEMON, .name = "metrics_max_clients", .type = KEY_UINT, .def = "64",
	 .min = 1, .max = 4096, FIELD(struct config, metrics_max_clients), LIVE},
	{.sect = SECT_DAEMON, .name = "scrub_rate", .type = KEY_SIZE, .def = "8M", .min = 0,
	 .max = UINT64_MAX, FIELD(struct config, scrub_rate), LIVE},

	{.sect = SECT_TIER, .name = "path", .type = KEY_PATH, .flags = KEY_REQUIRED | KEY_NONEMPTY,
	 .example = "path = /nvme/tiercache", FIELD(struct tier_conf, path), RESTART},
	{.sect = SECT_TIER, .name = "capacity", .type = KEY_SIZE, .flags = KEY_REQUIRED,
	 .example = "capacity = 64G", .min = MIB, .max = UINT64_MAX,
	 FIELD(struct tier_conf, capacity), LIVE},
	{.sect = SECT_TIER, .name = "high_water", .type = KEY_PERCENT, .def = "90", .min = 1,
	 .max = 100, FIELD(struct tier_conf, high_water), LIVE},
	{.sect = SECT_TIER, .name = "low_water", .type = KEY_PERCENT, .def = "80", .min = 0,
	 .max = 99, FIELD(struct tier_conf, low_water), LIVE},

	/* [cluster]: read at start only (the daemon joins once) */
	{.sect = SECT_CLUSTER, .name = "name", .type = KEY_STRING,
	 .flags = KEY_REQUIRED | KEY_NONEMPTY, .example = "name = train-a",
	 FIELD(struct config, cluster.name), RESTART},
	{.sect = SECT_CLUSTER, .name = "node_id", .type = KEY_STRING,
	 FIELD(struct config, cluster.node_id), RESTART},
	{.sect = SECT_CLUSTER, .name = "redis", .type = KEY_STRING,
	 .flags = KEY_REQUIRED | KEY_NONEMPTY, .example = "redis = 10.0.0.5:6379",
	 FIELD(struct config, cluster.redis), RESTART,
	 DERIVED(struct config, cluster.redis_host, cluster.redis_unix)},
	{.sect = SECT_CLUSTER, .name = "redis_user", .type = KEY_STRING,
	 FIELD(struct config, cluster.redis_user), RESTART},
	{.sect = SECT_CLUSTER, .name = "redis_password_file", .type = KEY_PATH, .flags = KEY_ABSOLUTE,
	 FIELD(struct config, cluster.redis_password_file), RESTART},
	{.sect = SECT_CLUSTER, .name = "peer_listen", .type = KEY_STRING,
	 .flags = KEY_REQUIRED | KEY_NONEMPTY, .example = "peer_listen = 10.0.0.7:7070",
	 FIELD(struct config, cluster.peer_listen), RESTART,
	 DERIVED(struct config, cluster.peer_host, cluster.peer_port)},
	{.sect = SECT_CLUSTER, .name = "key_file", .type = KEY_PATH,
	 .flags = KEY_REQUIRED | KEY_NONEMPTY | KEY_ABSOLUTE,
	 .example = "key_file = /etc/tiercache/cluster.key", FIELD(struct config, cluster.key_file),
	 RESTART},
	{.sect = SECT_CLUSTER, .name = "heartbeat", .type = KEY_DURATION, .def = "1s", .min = 100,
	 .max = 10 * SEC_MS, FIELD(struct config, cluster.heartbeat_ms), RESTART},
	{.sect = SECT_CLUSTER, .name = "lease", .type = KEY_DURATION, .def = "5s", .min = 300,
	 .max = 60 * SEC_MS, FIELD(struct config, cluster.lease_ms), RESTART},
	{.sect = SECT_CLUSTER, .name = "redis_timeout", .type = KEY_DURATION, .def = "1s", .min = 50,
	 .max = 30 * SEC_MS, FIELD(struct config, cluster.redis_timeout_ms), RESTART},
	{.sect = SECT_CLUSTER, .name = "peer_connect_timeout", .type = KEY_DURATION, .def = "1s",
	 .min = 10, .max = 60 * SEC_MS, FIELD(struct config, cluster.peer_connect_ms), RESTART},
	{.sect = SECT_CLUSTER, .name = "peer_first_byte_timeout", .type = KEY_DURATION, .def = "2s",
	 .min = 10, .max = 600 * SEC_MS, FIELD(struct config, cluster.peer_first_byte_ms), RESTART},
	{.sect = SECT_CLUSTER, .name = "peer_transfer_timeout", .type = KEY_DURATION, .def = "10s",
	 .min = 10, .max = HOUR_MS, FIELD(struct config, cluster.peer_transfer_ms), RESTART},
	{.sect = SECT_CLUSTER, .name = "peer_suspect", .type = KEY_DURATION, .def = "10s", .min = 100,
	 .max = HOUR_MS, FIELD(struct config, cluster.peer_suspect_ms), RESTART},
	{.sect = SECT_CLUSTER, .name = "peer_max_clients", .type = KEY_UINT, .def = "64", .min = 1,
	 .max = 4096, FIELD(struct config, cluster.peer_max_clients), RESTART},
	{.sect = SECT_CLUSTER, .name = "peer_conns", .type = KEY_UINT, .def = "4", .min = 1,
	 .max = 64, FIELD(struct config, cluster.peer_conns), RESTART},
	{.sect = SECT_CLUSTER, .name = "prev_home_window", .type = KEY_DURATION, .def = "1m", .min = 0,
	 .max = DAY_MS, FIELD(struct config, cluster.prev_home_window_ms), RESTART},

	{.sect = SECT_DATASET, .name = "backend", .type = KEY_ENUM, .def = "posix",
	 .values = backend_values, FIELD(struct dataset_conf, backend), SOURCE},
	{.sect = SECT_DATASET, .name = "path", .type = KEY_PATH,
	 .flags = KEY_POSIX | KEY_REQUIRED | KEY_NONEMPTY, .example = "path = /data/imagenet",
	 FIELD(struct dataset_conf, path), SOURCE},
	{.sect = SECT_DATASET, .name = "chunk_size", .type = KEY_SIZE, .def = "4M", .min = 64 * KIB,
	 .max = 64 * MIB, .align = 4096, FIELD(struct dataset_conf, chunk_size), SOURCE},
	{.sect = SECT_DATASET, .name = "policy", .type = KEY_POLICY, .def = "lru",
	 FIELD(struct dataset_conf, policy), LIVE},
	{.sect = SECT_DATASET, .name = "revalidate_after", .type = KEY_DURATION, .def = "5s",
	 .min = 0, .max = DAY_MS, FIELD(struct dataset_conf, revalidate_after_ms), LIVE},
	{.sect = SECT_DATASET, .name = "demote_after", .type = KEY_DURATION,
	 .flags = KEY_SECONDS | KEY_OFF | KEY_INHERIT, .min = 0, .max = 3650 * DAY_MS,
	 FIELD(struct dataset_conf, demote_after_s), LIVE},
	{.sect = SECT_DATASET, .name = "evict_after", .type = KEY_DURATION,
	 .flags = KEY_SECONDS | KEY_OFF | KEY_INHERIT, .min = 0, .max = 3650 * DAY_MS,
	 FIELD(struct dataset_conf, evict_after_s), LIVE},
	{.sect = SECT_DATASET, .name = "serve_stale_on_error", .type = KEY_ENUM, .def = "no",
	 .values = yes_no_values, FIELD(struct dataset_conf, serve_stale_on_error), LIVE},
	{.sect = SECT_DATASET, .name = "access", .type = KEY_ENUM, .def = "socket",
	 .values = access_values, FIELD(struct dataset_conf, access), LIVE},
	{.sect = SECT_DATASET, .name = "allow_users", .type = KEY_STRING,
	 FIELD(struct dataset_conf, allow_users), LIVE,
	 DERIVED(struct dataset_conf, nallow_uids, allow_uids)},
	{.sect = SECT_DATASET, .name = "allow_groups", .type = KEY_STRING,
	 FIELD(struct dataset_conf, allow_groups), LIVE,
	 DERIVED(struct dataset_conf, nallow_gids, allow_gids)},
	{.sect = SECT_DATASET, .name = "ceph_conf", .type = KEY_PATH,
	 .flags = KEY_RADOS | KEY_NONEMPTY, .def = "/etc/ceph/ceph.conf",
	 FIELD(struct dataset_conf, ceph_conf), SOURCE},
	{.sect = SECT_DATASET, .name = "client_id", .type = KEY_STRING,
	 .flags = KEY_RADOS | KEY_NONEMPTY, .def = "admin", FIELD(struct dataset_conf, client_id),
	 SOURCE},
	{.sect = SECT_DATASET, .name = "keyring", .type = KEY_PATH, .flags = KEY_RADOS,
	 FIELD(struct dataset_conf, keyring), SOURCE},
	{.sect = SECT_DATASET, .name = "pool", .type = KEY_STRING,
	 .flags = KEY_RADOS | KEY_REQUIRED | KEY_NONEMPTY, .example = "pool = datasets",
	 FIELD(struct dataset_conf, pool), SOURCE},
	{.sect = SECT_DATASET, .name = "namespace", .type = KEY_STRING, .flags = KEY_RADOS,
	 FIELD(struct dataset_conf, rados_namespace), SOURCE},
	{.sect = SECT_DATASET, .name = "prefix", .type = KEY_STRING, .flags = KEY_RADOS,
	 FIELD(struct dataset_conf, prefix), SOURCE},
	{.sect = SECT_DATASET, .name = "layout", .type = KEY_ENUM, .flags = KEY_RADOS,
	 .def = "plain", .values = layout_values, FIELD(struct dataset_conf, layout), SOURCE},
	{.sect = SECT_DATASET, .name = "op_timeout", .type = KEY_DURATION,
	 .flags = KEY_RADOS | KEY_SECONDS, .def = "30s", .min = SEC_MS, .max = HOUR_MS,
	 FIELD(struct dataset_conf, op_timeout_s), SOURCE},
	{.sect = SECT_DATASET, .name = "max_inflight", .type = KEY_UINT, .flags = KEY_RADOS,
	 .def = "16", .min = 1, .max = 1024, FIELD(struct dataset_conf, max_inflight), SOURCE},
};

const size_t config_nkeys = ARRAY_SIZE(config_keys);
_Static_assert(ARRAY_SIZE(config_keys) <= KEYS_MAX, "raise KEYS_MAX");

const struct key_def *config_key_find(enum section_kind kind, const char *name)
{
	for (size_t i = 0; i < config_nkeys; i++)
		if (config_keys[i].sect == kind && strcmp(config_keys[i].name, name) == 0)
			return &config_keys[i];
	return NULL;
}

size_t config_key_index(enum section_kind kind, const char *name)
{
	const struct key_def *k = config_key_find(kind, name);
	assert(k);
	return (size_t)(k - config_keys);
}

int config_key_at(size_t i, struct config_key_info *out)
{
	static const char *const sect_names[] = {
		[SECT_DAEMON] = "daemon", [SECT_TIER] = "tier", [SECT_DATASET] = "dataset",
		[SECT_CLUSTER] = "cluster"};
	if (i >= config_nkeys)
		return -ENOENT;
	const struct key_def *k = &config_keys[i];
	*out = (struct config_key_info){
		.section = sect_names[k->sect],
		.name = k->name,
		.default_value = k->def,
		.required = k->flags & KEY_REQUIRED,
		.backend = k->flags & KEY_POSIX ? "posix" : k->flags & KEY_RADOS ? "rados" : NULL,
		.reload = k->reload,
	};
	return 0;
}

const char *config_reload_name(enum config_reload r)
{
	switch (r) {
	case CONFIG_RELOAD_LIVE:
		return "live";
	case CONFIG_RELOAD_RESTART:
		return "restart";
	case CONFIG_RELOAD_SOURCE:
		return "source";
	}
	return NULL;
}

void config_key_format(const struct key_def *k, const void *base, char *buf, size_t n)
{
	const char *field = (const char *)base + k->off;
	uint64_t x = 0;
	if (k->type == KEY_SIZE || k->type == KEY_PERCENT || k->type == KEY_UINT ||
	    k->type == KEY_DURATION || k->type == KEY_MODE) {
		if (k->size == sizeof(uint64_t)) {
			memcpy(&x, field, sizeof(x));
		} else {
			uint32_t w;
			memcpy(&w, field, sizeof(w));
			x = w;
		}
	}
	switch (k->type) {
	case KEY_STRING:
	case KEY_PATH:
	case KEY_ENUM:
	case KEY_POLICY:
		snprintf(buf, n, "%s", field);
		break;
	case KEY_SIZE:
		config_fmt_size(buf, n, x);
		break;
	case KEY_PERCENT:
	case KEY_UINT:
		snprintf(buf, n, "%" PRIu64, x);
		break;
	case KEY_DURATION:
		/* written back the way a file says it, as the reference does */
		if ((k->flags & KEY_OFF) && x == 0)
			snprintf(buf, n, "off");
		else
			config_fmt_duration(buf, n, (k->flags & KEY_SECONDS) ? x * SEC_MS : x);
		break;
	case KEY_MODE:
		snprintf(buf, n, "%04" PRIo64, x);
		break;
	case KEY_LOG_LEVEL: {
		int level;
		memcpy(&level, field, sizeof(level));
		snprintf(buf, n, "%s", log_level_name(level));
		break;
	}
	}
}

int config_key_value(const struct config *cfg, size_t i, unsigned which, char *buf, size_t n,
		     bool *is_default)
{
	if (i >= config_nkeys)
		return -ENOENT;
	const struct key_def *k = &config_keys[i];
	const void *base = cfg;
	union {
		struct config c;
		struct tier_conf t;
		struct dataset_conf d;
	} *dflt = NULL;
	switch (k->sect) {
	case SECT_TIER:
		if (which >= TIER_COUNT || !cfg->tiers[which].present)
			return -ENOENT;
		base = &cfg->tiers[which];
		break;
	case SECT_DATASET: {
		if (which >= cfg->ndatasets)
			return -ENOENT;
		const struct dataset_conf *ds = &cfg->datasets[which];
		unsigned only = k->flags & (KEY_POSIX | KEY_RADOS);
		if (only && only != (strcmp(ds->backend, "rados") == 0 ? KEY_RADOS : KEY_POSIX))
			return -ENOENT;
		base = ds;
		break;
	}
	case SECT_CLUSTER:
		if (!cfg->cluster.enabled)
			return -ENOENT; /* no [cluster]: the daemon is a node of its own */
		break; /* its fields are cfg->cluster's, offsets in struct config */
	default:
		break;
	}
	config_key_format(k, base, buf, n);
	*is_default = false;
	if (!(dflt = calloc(1, sizeof(*dflt))))
		return 0;
	/* parse the default the way loading does (none: zero / empty), then
	 * compare the fields */
	if (!k->def || config_key_default(cfg, k, dflt) == 0)
		*is_default = memcmp((const char *)dflt + k->off, (const char *)base + k->off,
				     k->size) == 0;
	free(dflt);
	return 0;
}
