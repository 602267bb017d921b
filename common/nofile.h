/*
 * The descriptor limit of a long-running tiercache process. The daemon
 * holds a descriptor per client, per cached chunk file in its fd cache and
 * per file waiting for its sync; the mount one per chunk file its open
 * handles hold. Started from a shell, the soft limit is often 1024 while
 * the hard limit allows far more (systemd's unit sets LimitNOFILE itself).
 */
#ifndef TIERCACHE_NOFILE_H
#define TIERCACHE_NOFILE_H

#include <stdint.h>

/* Raise the soft RLIMIT_NOFILE to the hard limit. Returns the soft limit
 * in force afterwards (0 if it cannot be read). */
uint64_t tc_nofile_raise(void);

#endif
