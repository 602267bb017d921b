/*
 * The config key table, shared by the loader (config.c) and what lists and
 * prints keys (config_keys.c: config_key_at, config show). Private to
 * cached/config*.c.
 */
#ifndef TIERCACHE_CONFIG_KEYS_H
#define TIERCACHE_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h" /* enum config_reload */

#define KEYS_MAX 96 /* keys in the table at most (parse bookkeeping arrays) */

enum section_kind {
	SECT_NONE,   /* before the first header */
	SECT_SKIP,   /* inside a bad header: its keys were not asked for */
	SECT_DAEMON, /* [daemon] -> struct config */
	SECT_TIER,   /* [tier hot|warm] -> struct tier_conf */
	SECT_DATASET, /* [dataset NAME] -> struct dataset_conf */
	SECT_CLUSTER  /* [cluster] -> struct config (fields of cfg->cluster) */
};

enum key_type {
	KEY_STRING,
	KEY_PATH,     /* relative to the config file's directory; stored absolute */
	KEY_SIZE,     /* bytes */
	KEY_PERCENT,  /* "90" or "90%" */
	KEY_UINT,
	KEY_DURATION, /* milliseconds (or whole seconds, KEY_SECONDS) */
	KEY_ENUM,     /* one of values[], stored as the string */
	KEY_LOG_LEVEL,
	KEY_POLICY,   /* a name in the policy registry */
	KEY_MODE,     /* octal permission bits, "0660" */
};

enum key_flag {
	KEY_REQUIRED = 1 << 0, /* with KEY_POSIX/KEY_RADOS: required for that backend */
	KEY_NONEMPTY = 1 << 1,
	KEY_POSIX = 1 << 2,    /* dataset key of backend = posix only */
	KEY_RADOS = 1 << 3,    /* dataset key of backend = rados only */
	KEY_SECONDS = 1 << 4,  /* duration stored as whole seconds */
	KEY_SUN_PATH = 1 << 5, /* a Unix socket path: the field is sun_path sized */
	KEY_OFF = 1 << 6,      /* duration: "off" means 0 (never) */
	KEY_INHERIT = 1 << 7,  /* dataset key: unset takes [daemon]'s key of that name */
	KEY_ABSOLUTE = 1 << 8, /* path: must be written absolute */
};

struct key_def {
	enum section_kind sect;
	const char *name;
	enum key_type type;
	unsigned flags;
	const char *def;     /* default as text, NULL: none (zero / empty) */
	const char *example; /* shown when a required key is missing */
	uint64_t min, max;   /* in the stored unit before KEY_SECONDS: bytes, ms, number */
	uint64_t align;      /* sizes: must be a multiple of this */
	const char *const *values;
	size_t off, size; /* the field in the section's struct */
	/* Fields that loading derives from this one (socket_group ->
	 * socket_gid): a reload that keeps the running value keeps them too. */
	size_t derived_off, derived_size;
	enum config_reload reload; /* what a reload does with a change */
	const char *applies;       /* a live change applies so, when not at once (NULL) */
};

/* Order matters: it is the order of conf/tiercache.conf and of key lists in
 * messages. */
extern const struct key_def config_keys[];
extern const size_t config_nkeys;

/* The key NAME of section kind KIND, or NULL. */
const struct key_def *config_key_find(enum section_kind kind, const char *name);
/* Index of a key that exists: for the cross-checks, which name keys. */
size_t config_key_index(enum section_kind kind, const char *name);
/* KEY's field at BASE as text, the way a file writes it. */
void config_key_format(const struct key_def *k, const void *base, char *buf, size_t n);
/* KEY's default parsed the way loading parses a file's value, into out (a
 * zeroed struct of the key's section kind): 0 or -errno (config.c). */
int config_key_default(const struct config *cfg, const struct key_def *k, void *out);

/* The [cluster] cross-checks (config_cluster.c), run when the file has the
 * section: names, the redis and peer_listen addresses split into their
 * derived fields, node_id's default (the host name), lease against
 * heartbeat. KEY_LINE/KEY_BAD: parse bookkeeping indexed like
 * config_keys[]. Each problem goes to msg() as "cluster.KEY: reason" (or
 * "cluster: reason") with the key's line (0: none). */
void config_cluster_check(struct config *cfg, const int *key_line, const bool *key_bad,
			  void (*msg)(void *arg, int line, const char *text), void *arg);

#endif
