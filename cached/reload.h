/*
 * Reloading the configuration file at run time (tierctl reload, SIGHUP).
 * Loop thread only.
 *
 * Each key's row in the config table (cached/conf/config_keys.c) gives its
 * reload class. Live keys apply (tier capacities and watermarks, a shrunk
 * tier drained by the mover; log_level, max_clients, admin_group, the plan,
 * prefetch and sync keys; a dataset's policy, revalidate_after,
 * demote_after, evict_after, also when inherited from [daemon]). A dataset
 * whose source keys changed (backend, path, pool, chunk_size, ...) is
 * removed and added again: its cached chunks are dropped. Restart keys
 * (socket, socket_mode, socket_group, state_dir, workers, metrics_listen, a
 * tier's path) and a tier added or removed are reported as needing a
 * restart and keep their running values. Datasets are added and removed.
 * A file with errors changes nothing.
 */
#ifndef TIERCACHE_RELOAD_H
#define TIERCACHE_RELOAD_H

#include "daemon.h"

/* Re-read d->cfg->file and apply it. Returns 0 (applied; *report lists
 * what changed and what needs a restart, one line each) or -errno (nothing
 * changed; *report has the file's error messages or the reason). *report is
 * malloc'd, possibly NULL on allocation failure; the caller frees it. */
int reload_config(struct daemon *d, char **report);

/* Free the datasets reloads removed (daemon_free, after the workers stop). */
void reload_free_retired(struct daemon *d);

#endif
