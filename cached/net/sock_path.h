/*
 * The server's socket file (sock_path.c): made in a private directory and
 * renamed into place, in a directory only the daemon may write.
 */
#ifndef TIERCACHE_SOCK_PATH_H
#define TIERCACHE_SOCK_PATH_H

#include <stddef.h>

#include "config.h"

/* Create path's missing parent directories, 0755. 0 or -errno. */
int sock_path_mkdir_parent(const char *path);
/* Bind lfd to path with cfg's socket_mode and socket_group: in a fresh
 * 0700 directory next to it, renamed into place. Refuses a directory
 * others can write, a live daemon's socket and a non-socket file at path
 * (a symlink there is replaced). 0, or -errno with the reason and the fix
 * in err. */
int sock_path_bind(int lfd, const struct config *cfg, const char *path, char *err, size_t n);

#endif
