/*
 * Finding a sibling program: tierctl advise runs tiercache-sim, which runs
 * its plotter. They are installed side by side, or side by side in
 * BUILD/bin of a source tree.
 */
#ifndef TIERCACHE_FIND_TOOL_H
#define TIERCACHE_FIND_TOOL_H

#include <stddef.h>

/* The program into path (n bytes): the environment variable env if it is
 * set (then nothing else is tried), else the first executable of names (a
 * NULL-terminated list of paths relative to the running program's
 * directory). 0, or -ENOENT. */
int tc_find_tool(const char *env, const char *const *names, char *path, size_t n);

#endif
