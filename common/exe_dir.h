/*
 * Where the running program lives, for tools that run their siblings
 * (tierctl advise runs tiercache-sim, which runs its plotter): installed
 * side by side, or side by side in BUILD/bin.
 */
#ifndef TIERCACHE_EXE_DIR_H
#define TIERCACHE_EXE_DIR_H

#include <stddef.h>

/* The directory of /proc/self/exe into dir (n bytes): 0, or -ENOENT. */
int tc_exe_dir(char *dir, size_t n);

#endif
