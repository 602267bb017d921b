/*
 * Reloading the configuration file at run time (tierctl reload, SIGHUP).
 * Loop thread only.
 *
 * What changes live: tier capacities and watermarks (a shrunk tier is
 * drained by the mover), log_level, max_clients, admin_group, datasets
 * added and removed, a dataset's policy and revalidate_after. A dataset
 * whose source settings changed (backend, path, pool, chunk_size, ...) is
 * removed and added again: its cached chunks are dropped. Keys that only
 * take effect at start (socket, socket_mode, socket_group, state_dir,
 * workers, metrics_listen, a tier's path or presence) are reported as
 * needing a restart and keep their running values. A file with errors
 * changes nothing.
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
