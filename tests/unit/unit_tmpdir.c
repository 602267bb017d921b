/*
 * Scratch directories for unit tests: see unit_tmpdir.h.
 */
#define _XOPEN_SOURCE 700
#include "unit_tmpdir.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

int unit_tmpdir_make(char *tmpl)
{
	return mkdtemp(tmpl) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int unit_tmpdir_remove(const char *dir)
{
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
