/*
 * The directories the daemon writes (its tiers, state_dir) and the cold
 * directories it must never write, compared as the file system sees them:
 * symlinks resolved, then by device and inode, so that a tier path that
 * reaches a dataset's cold directory through a symlink or a bind mount is
 * caught like one written inside it. config.c compares the paths as
 * written; this runs at load (check-config, reload) and again at daemon
 * start, since the file system may have changed in between. A path that
 * does not exist yet is resolved as far as it exists. Also the warnings
 * that are not errors (a tier capacity larger than its file system).
 *
 * Pure apart from stat/realpath/statvfs: any thread.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "config_value.h"

/* PATH with symlinks resolved: realpath of its deepest existing ancestor,
 * the rest appended as written. */
static int resolve(const char *path, char out[PATH_MAX])
{
	char buf[PATH_MAX], tail[PATH_MAX] = "";
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (;;) {
		char *r = realpath(buf, NULL);
		if (r) {
			/* "/" + "/x" is "/x" */
			int n = snprintf(out, PATH_MAX, "%s%s", tail[0] && !strcmp(r, "/") ? "" : r,
					 tail);
			free(r);
			return n >= PATH_MAX ? -ENAMETOOLONG : 0;
		}
		if (errno != ENOENT && errno != ENOTDIR)
			return -errno;
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf) { /* nothing exists but "/" */
			int n = snprintf(out, PATH_MAX, "%s", path);
			return n >= PATH_MAX ? -ENAMETOOLONG : 0;
		}
		char t2[PATH_MAX];
		snprintf(t2, sizeof(t2), "%s%s", slash, tail);
		memcpy(tail, t2, sizeof(tail));
		*slash = '\0';
	}
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (strcmp(a, b) == 0)
		return true;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Is resolved path x strictly inside resolved path y: is any ancestor of x
 * the same directory as y? */
static bool inside(const char *x, const char *y)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", x);
	for (;;) {
		char *slash = strrchr(p, '/');
		if (!slash)
			return false;
		if (slash == p) {
			if (!p[1])
				return false; /* x was "/" */
			p[1] = '\0';
		} else {
			*slash = '\0';
		}
		if (same_file(p, y))
			return true;
		if (!strcmp(p, "/"))
			return false;
	}
}

int config_paths_overlap(const char *a, const char *b, char ra[PATH_MAX], char rb[PATH_MAX])
{
	int rc = resolve(a, ra);
	if (rc == 0)
		rc = resolve(b, rb);
	if (rc < 0)
		return rc;
	if (same_file(ra, rb))
		return CONFIG_PATHS_SAME;
	if (inside(ra, rb))
		return CONFIG_PATHS_INSIDE;
	if (inside(rb, ra))
		return CONFIG_PATHS_CONTAINS;
	return CONFIG_PATHS_APART;
}

/* One pair: the message if they overlap once resolved (not if they do as
 * written: config.c says so already). */
static unsigned pair(const char *what, const char *a, const char *other, const char *b,
		     void (*fn)(void *arg, const char *msg), void *arg)
{
	char ra[PATH_MAX], rb[PATH_MAX], msg[3 * PATH_MAX + 512];
	if (!strcmp(a, b) || config_path_inside(a, b) || config_path_inside(b, a))
		return 0;
	int how = config_paths_overlap(a, b, ra, rb);
	if (how <= CONFIG_PATHS_APART)
		return 0;
	snprintf(msg, sizeof(msg),
		 "%s: path \"%s\" (resolved: \"%s\") %s %s \"%s\" (resolved: \"%s\") once symlinks "
		 "are followed; give each its own directory, not reached through a symlink into the "
		 "other",
		 what, a, ra,
		 how == CONFIG_PATHS_SAME ? "is the same directory as"
		 : how == CONFIG_PATHS_INSIDE ? "is inside" : "contains",
		 other, b, rb);
	fn(arg, msg);
	return 1;
}

static const char *const tier_label[TIER_COUNT] = {"hot", "warm"};

unsigned config_check_resolved(const struct config *cfg, void (*fn)(void *arg, const char *msg),
			       void *arg)
{
	unsigned n = 0;
	char other[CONFIG_NAME_MAX + 32];
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *tc = &cfg->tiers[t];
		if (!tc->present || !tc->path[0])
			continue;
		if (cfg->state_dir[0])
			n += pair(tier_label[t], tc->path, "daemon.state_dir", cfg->state_dir, fn, arg);
		if (t == TIER_WARM && cfg->tiers[TIER_HOT].present && cfg->tiers[TIER_HOT].path[0])
			n += pair("warm", tc->path, "hot.path", cfg->tiers[TIER_HOT].path, fn, arg);
		for (unsigned i = 0; i < cfg->ndatasets; i++) {
			const struct dataset_conf *ds = &cfg->datasets[i];
			if (strcmp(ds->backend, "posix") != 0 || !ds->path[0])
				continue;
			snprintf(other, sizeof(other), "dataset.%s's path", ds->name);
			n += pair(tier_label[t], tc->path, other, ds->path, fn, arg);
		}
	}
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dataset_conf *ds = &cfg->datasets[i];
		if (strcmp(ds->backend, "posix") != 0 || !ds->path[0] || !cfg->state_dir[0])
			continue;
		snprintf(other, sizeof(other), "dataset.%s", ds->name);
		n += pair(other, ds->path, "daemon.state_dir", cfg->state_dir, fn, arg);
	}
	return n;
}

/* The file system that holds PATH, or its deepest existing ancestor. */
static int fs_of(const char *path, struct statvfs *sv, char where[PATH_MAX])
{
	snprintf(where, PATH_MAX, "%s", path);
	for (;;) {
		if (statvfs(where, sv) == 0)
			return 0;
		if (errno != ENOENT && errno != ENOTDIR)
			return -errno;
		char *slash = strrchr(where, '/');
		if (!slash)
			return -ENOENT;
		if (slash == where) {
			where[1] = '\0';
			return statvfs(where, sv) == 0 ? 0 : -errno;
		}
		*slash = '\0';
	}
}

unsigned config_warnings(const struct config *cfg, void (*fn)(void *arg, const char *msg), void *arg)
{
	unsigned n = 0;
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *tc = &cfg->tiers[t];
		struct statvfs sv;
		char where[PATH_MAX], a[32], b[32], msg[2 * PATH_MAX + 512];
		if (!tc->present || !tc->path[0] || fs_of(tc->path, &sv, where) < 0)
			continue;
		uint64_t size = (uint64_t)sv.f_blocks * sv.f_frsize;
		if (tc->capacity <= size)
			continue;
		snprintf(msg, sizeof(msg),
			 "%s: capacity %s (%llu bytes) is larger than the file system that holds "
			 "\"%s\" (%s, %llu bytes at \"%s\"); the daemon will use at most what the disk "
			 "has free; lower %s.capacity to silence this",
			 tier_label[t], config_fmt_size(a, sizeof(a), tc->capacity),
			 (unsigned long long)tc->capacity, tc->path, config_fmt_size(b, sizeof(b), size),
			 (unsigned long long)size, where, tier_label[t]);
		fn(arg, msg);
		n++;
	}
	return n;
}
