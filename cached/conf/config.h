/*
 * The daemon's configuration: one INI file, parsed with libinih through one
 * table of keys (type, bounds, default, where it lands in struct config).
 * Three phases: defaults, parse, cross-check. Every error names the place
 * and the fix: "FILE:LINE: section.key: reason" (cross-checks: "FILE:
 * section: reason"). All errors are collected, not just the first.
 *
 * Pure: no daemon state is touched; loading a new file for a reload yields a
 * fresh struct config that the caller swaps in or throws away.
 */
#ifndef TIERCACHE_CONFIG_H
#define TIERCACHE_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tier_id.h" /* enum tier_id, shared with policy/placement.h */

#define CONFIG_EXIT_BAD 78 /* EX_CONFIG */
#define CONFIG_NAME_MAX 64
#define CONFIG_DATASETS_MAX 4096     /* [dataset] sections in one file */
#define CONFIG_FILE_MAX (1024 * 1024) /* bytes: a larger file is refused */
#define CONFIG_ALLOW_MAX 64          /* users (groups) in one allow_users (allow_groups) */

struct tier_conf {
	bool present;
	char path[PATH_MAX];
	uint64_t capacity;   /* bytes */
	unsigned high_water; /* percent of capacity: start demoting/evicting */
	unsigned low_water;  /* percent: stop */
	int line;            /* where the section starts, for messages */
};

struct dataset_conf {
	char name[CONFIG_NAME_MAX + 1];
	char backend[16];          /* "posix" | "rados" */
	char path[PATH_MAX];       /* posix: the cold directory */
	uint32_t chunk_size;       /* bytes, default 4 MiB */
	char policy[512];          /* "NAME [k=v ...]", default "lru" */
	uint64_t revalidate_after_ms; /* re-check a source entry older than this on open */
	uint64_t demote_after_s;   /* lifecycle: hot -> warm after this long unread (0: never) */
	uint64_t evict_after_s;    /* lifecycle: drop warm after this long unread (0: never) */
	char serve_stale_on_error[4]; /* "no" | "yes": serve an unverifiable entry past revalidate_after */
	char access[8];            /* "socket" | "source" (posix: the source file's permissions) */
	char allow_users[512];     /* user names or uids, comma/blank separated ("" = anyone) */
	char allow_groups[512];    /* group names or gids ("" = anyone) */
	/* allow_users / allow_groups resolved at load (derived fields) */
	uint32_t nallow_uids;
	uid_t allow_uids[CONFIG_ALLOW_MAX];
	uint32_t nallow_gids;
	gid_t allow_gids[CONFIG_ALLOW_MAX];
	/* rados */
	char ceph_conf[PATH_MAX];
	char client_id[64];        /* default "admin" */
	char keyring[PATH_MAX];
	char pool[128];
	char rados_namespace[128];
	char prefix[256];
	char layout[16];           /* "plain" | "striper" */
	uint32_t op_timeout_s;
	uint32_t max_inflight;
	int line;
};

/* [cluster] (docs/cluster.md): absent, the daemon is a node of its own and
 * behaves exactly as without this section. Read at start only. */
struct cluster_conf {
	bool enabled;              /* the file has a [cluster] section */
	char name[CONFIG_NAME_MAX + 1];    /* required: the Redis keys' prefix tc:{name}: */
	char node_id[CONFIG_NAME_MAX + 1]; /* default: the host name */
	char redis[PATH_MAX];      /* required: "HOST:PORT" or "unix:PATH" */
	char redis_host[64];       /* redis split at load: host and port, */
	uint16_t redis_port;
	char redis_unix[PATH_MAX]; /* ... or the socket's path */
	char redis_user[64];       /* ACL user ("" = default) */
	char redis_password_file[PATH_MAX]; /* "" = no AUTH */
	char peer_listen[128];     /* required: "HOST:PORT" the peer port binds to */
	char peer_host[64];        /* peer_listen split at load: an IP address */
	uint16_t peer_port;
	char peer_addr[80];        /* what other nodes are told: "IP:PORT" or "[IPv6]:PORT" */
	char key_file[PATH_MAX];   /* required: the cluster key (peer_auth.h) */
	uint64_t heartbeat_ms;     /* membership heartbeat */
	uint64_t lease_ms;         /* a member not heard of this long is gone */
	uint64_t redis_timeout_ms; /* deadline of every Redis command */
	uint64_t peer_connect_ms;  /* peer: connect + handshake deadline */
	uint64_t peer_first_byte_ms; /* peer: request sent to the first reply byte */
	uint64_t peer_transfer_ms; /* peer: request sent to the last byte */
	uint64_t peer_suspect_ms;  /* a peer that failed is skipped this long */
	unsigned peer_max_clients; /* incoming peer connections at once */
	unsigned peer_conns;       /* outgoing connections to one peer at most */
	uint64_t prev_home_window_ms; /* a home's miss asks the previous home this long
				       * after the member list changed (handover.h) */
	int line;
};

struct config {
	char file[PATH_MAX];
	/* [daemon] */
	char socket[108];          /* sun_path size */
	char state_dir[PATH_MAX];
	int log_level;             /* LOG_ERR..LOG_DEBUG as in cached/util/log.h */
	unsigned max_clients;
	unsigned workers;          /* blocking-I/O worker threads */
	char admin_group[64];      /* members may run admin ops ("" = root only) */
	gid_t admin_gid;           /* admin_group resolved at load; (gid_t)-1 if none */
	unsigned socket_mode;      /* permission bits of the socket file, default 0660 */
	char socket_group[64];     /* group of the socket file ("" = the daemon's) */
	gid_t socket_gid;          /* socket_group resolved at load; (gid_t)-1 if none */
	char metrics_listen[128];  /* "HOST:PORT" of the Prometheus endpoint, "" = off */
	char metrics_host[64];     /* metrics_listen split at load */
	uint16_t metrics_port;
	uint64_t demote_after_s;   /* lifecycle defaults for datasets (0: never) */
	uint64_t evict_after_s;
	uint32_t plan_grace_s;     /* a plan outlives its connection this long */
	uint64_t prefetch_max_bytes; /* a plan's lookahead window at most */
	unsigned prefetch_inflight; /* prefetch cold reads in flight, all plans */
	unsigned prefetch_small_inflight; /* small-file read-aheads in flight at most
					   * (or prefetch_inflight if larger) */
	unsigned readahead_chunks; /* sequential readahead depth without a plan (0: off) */
	unsigned readahead_files;  /* on a small-file miss, next files of its directory (0: off) */
	unsigned stat_ahead_inflight; /* revalidation stats ahead of the opens in flight (0: off) */
	uint64_t sync_delay_ms;    /* a filled chunk is fdatasync'ed and recorded this late */
	uint64_t sync_backlog;     /* ... or sooner, oldest first, past this many bytes */
	uint64_t segment_threshold; /* chunks up to this size go into segment files (0: off) */
	uint64_t segment_size;     /* a segment file is sealed at this size */
	char segment_punch[4];     /* "yes": dead items' blocks are given back
				    * where the file system can; "no": only a
				    * segment's reclaim gives them back */
	/* limits per client (docs/security.md) */
	unsigned max_clients_per_uid; /* connections of one uid at once */
	uint64_t idle_timeout_s;   /* close a connection idle and holding nothing (0: never) */
	uint64_t max_held_per_client; /* chunk bytes one connection may hold through descriptors */
	uint64_t max_held_per_user;   /* ... all connections of one uid together */
	unsigned metrics_max_clients; /* metrics endpoint connections at once */
	uint64_t scrub_rate;       /* bytes/s the scrubber re-checksums (0: off) */
	/* [tier hot], [tier warm] */
	struct tier_conf tiers[TIER_COUNT];
	/* [cluster] */
	struct cluster_conf cluster;
	/* [dataset NAME] */
	struct dataset_conf *datasets;
	unsigned ndatasets;
};

/* Load and check FILE. Returns 0 and a new config in *out, or -EINVAL (bad
 * content) / -errno (cannot read) with every message, one per line, in
 * *errors (malloc'd; caller frees). */
int config_load(const char *file, struct config **out, char **errors);
void config_free(struct config *cfg);
const struct dataset_conf *config_dataset(const struct config *cfg, const char *name);

/* ---- paths as the file system sees them (config_paths.c) ---- */
enum {
	CONFIG_PATHS_APART = 0,
	CONFIG_PATHS_SAME,     /* the same directory */
	CONFIG_PATHS_INSIDE,   /* a is inside b */
	CONFIG_PATHS_CONTAINS, /* a contains b */
};
/* Compare directories a and b after resolving symlinks (realpath of what
 * exists) and by (st_dev, st_ino) of each ancestor: one of the above, or
 * -errno. ra, rb get the resolved paths. */
int config_paths_overlap(const char *a, const char *b, char ra[PATH_MAX], char rb[PATH_MAX]);
/* Every pair of directories that must be apart (each tier against the
 * other, state_dir and every posix cold directory; cold directories
 * against state_dir) and is apart as written but not once resolved: one
 * message per pair to fn, naming both paths. Returns how many. Run at load
 * and again at daemon start. */
unsigned config_check_resolved(const struct config *cfg, void (*fn)(void *arg, const char *msg),
			       void *arg);
/* Things worth a warning but no refusal: a tier's capacity larger than
 * its file system (statvfs f_blocks * f_frsize). Returns how many. */
unsigned config_warnings(const struct config *cfg, void (*fn)(void *arg, const char *msg), void *arg);

/* Parse "64G", "512M", "4096", "1.5T" (binary units, B or iB optional; a
 * fraction needs a unit and is rounded down to whole bytes). Returns 0,
 * -EINVAL (not a size) or -ERANGE (does not fit in 64 bits). */
int config_parse_size(const char *s, uint64_t *out);
/* Parse "30", "30s", "5m", "2h", "1d", "250ms" into milliseconds. Returns 0,
 * -EINVAL or -ERANGE. */
int config_parse_duration_ms(const char *s, uint64_t *out);

/* What a reload does with a changed key: each key's row in the table says,
 * and reload.c only follows it. Zero is no class, so that a row that forgot
 * to choose is caught (tests/unit/test_config_files.c). */
enum config_reload {
	CONFIG_RELOAD_LIVE = 1, /* the new value takes effect on reload */
	CONFIG_RELOAD_RESTART,  /* read at start only: reported, the running value stays */
	CONFIG_RELOAD_SOURCE,   /* dataset: where its bytes come from; a change replaces it */
};

/* "live", "restart", "source" (NULL for anything else). */
const char *config_reload_name(enum config_reload r);

/* One key of the config table, for tools and tests that list keys (the
 * reference conf/tiercache.conf must show each one with its default). */
struct config_key_info {
	const char *section;       /* "daemon", "tier", "cluster" or "dataset" */
	const char *name;
	const char *default_value; /* as written in a file; NULL: no default */
	bool required;             /* (for backend-only keys: required there) */
	const char *backend;       /* dataset keys of one backend only, else NULL */
	enum config_reload reload;
};

/* The i-th key in table (and reference file) order: 0, or -ENOENT past the
 * end. */
int config_key_at(size_t i, struct config_key_info *out);

/* The value of the i-th key in CFG, written as a file would write it, into
 * BUF; *is_default tells whether it equals the key's default. For a tier key
 * `which` is the tier id, for a dataset key the dataset's index in
 * cfg->datasets (ignored for [daemon] and [cluster]). Returns 0, or -ENOENT
 * when the key does not apply (tier absent, key of another backend, no
 * [cluster], past the end). */
int config_key_value(const struct config *cfg, size_t i, unsigned which, char *buf, size_t n,
		     bool *is_default);

/* ---- comparing two configs, for reload (config_diff.c) ----
 * Each walk goes over the key table in order and calls FN for every key
 * of the section whose value differs between A (running) and B (new); a
 * nonzero return from FN stops the walk and is returned. Dataset keys of a
 * backend neither dataset has are skipped. */
#define CONFIG_CHANGE_VALUE_MAX (PATH_MAX + 3) /* a path in quotes */
struct config_change {
	size_t key;                /* for config_key_at() and config_change_copy() */
	const char *name;          /* "capacity" */
	enum config_reload reload; /* the key's class */
	const char *applies;       /* a live change applies so, when not at once (NULL) */
	/* the values as a file writes them, a string or a path in quotes */
	char was[CONFIG_CHANGE_VALUE_MAX], now[CONFIG_CHANGE_VALUE_MAX];
};
int config_diff_daemon(const struct config *a, const struct config *b,
		       int (*fn)(void *arg, const struct config_change *ch), void *arg);
int config_diff_tier(const struct tier_conf *a, const struct tier_conf *b,
		     int (*fn)(void *arg, const struct config_change *ch), void *arg);
/* [cluster] keys (all restart-only); A and B whole configs. */
int config_diff_cluster(const struct config *a, const struct config *b,
			int (*fn)(void *arg, const struct config_change *ch), void *arg);
int config_diff_dataset(const struct dataset_conf *a, const struct dataset_conf *b,
			int (*fn)(void *arg, const struct config_change *ch), void *arg);
/* Copy the key of CH, with the fields loading derived from it, from FROM to
 * TO: both the struct of the section that was compared (struct config,
 * tier_conf or dataset_conf). */
void config_change_copy(const struct config_change *ch, void *to, const void *from);
/* No key of class source differs: the same bytes, cut the same way. */
bool config_same_source(const struct dataset_conf *a, const struct dataset_conf *b);

#endif
