/*
 * A scratch directory for unit tests that touch real files (the index, tier
 * directories): made by a group setup, removed with its contents by the
 * group teardown.
 */
#ifndef TIERCACHE_TEST_UNIT_TMPDIR_H
#define TIERCACHE_TEST_UNIT_TMPDIR_H

/* tmpl ends in XXXXXX and is filled in. 0 or -1. */
int unit_tmpdir_make(char *tmpl);
/* Remove dir and everything below it. 0 or -1. */
int unit_tmpdir_remove(const char *dir);

#endif
