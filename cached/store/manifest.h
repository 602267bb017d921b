/*
 * A dataset's manifest: every file of the source with its version, sorted
 * by path so that a directory's entries are one contiguous range.
 *
 * Built on a worker thread from the backend's list(), then handed to the
 * loop, which owns it from then on (lookups, listings, revalidation updates
 * of single entries). Directories are implied by paths.
 */
#ifndef TIERCACHE_MANIFEST_H
#define TIERCACHE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct proto_wr;

struct mf_entry {
	char *path;
	struct cold_stat st;
	uint64_t checked_ns; /* when st was last confirmed against the source */
	bool gone;           /* removed at the source since the manifest was built */
	/* stat-ahead (cache/stat_ahead.c), loop-owned; in gone's padding */
	bool ahead;          /* a stat ahead of it is in flight */
	bool ahead_ok;       /* confirmed by a stat ahead, not opened since */
	bool ahead_lapsed;   /* ... and due again before it was: counted wasted */
};

struct manifest {
	struct mf_entry *v;
	size_t n, cap;
	uint64_t bytes;
	unsigned skipped; /* source names that break the path rules */
};

/* Worker thread: list the source into a new sorted manifest. listed (may
 * be NULL) follows the files listed so far, stored atomically as they come
 * so that the loop can show the progress of a long listing. */
int manifest_build(struct manifest **out, struct cold *c, uint64_t now_ns, uint64_t *listed);
void manifest_free(struct manifest *m);
int manifest_add(struct manifest *m, const char *path, const struct cold_stat *st, uint64_t now_ns);
void manifest_sort(struct manifest *m);

/* The live entry for path (NULL if absent or gone). */
struct mf_entry *manifest_find(const struct manifest *m, const char *path);
/* dir "" is the root; true if any file lies below dir. */
bool manifest_dir_exists(const struct manifest *m, const char *dir);

struct mf_dirent {
	const char *name; /* not NUL-terminated */
	size_t namelen;
	bool is_dir;
	const struct mf_entry *e; /* the file (NULL for a directory) */
};

/* Walk dir's direct children starting at cookie (0 = start). fn returns
 * non-zero when it cannot take the entry (a page is full): the walk stops
 * and the cookie to resume at that entry is returned; 0 at the end. */
uint32_t manifest_listdir(const struct manifest *m, const char *dir, uint32_t cookie,
			  int (*fn)(void *arg, const struct mf_dirent *de), void *arg);

/* The persisted form (one index record per dataset, so that a restart
 * knows the versions whose chunks it holds even with the source down):
 * u8 format, u64 n, n x {str path, u64 size, i64 mtime_ns, u64 version};
 * entries marked gone are left out. Any thread (the manifest is not
 * changed). */
void manifest_encode(const struct manifest *m, struct proto_wr *w);
/* Decode a record of manifest_encode() into a new sorted manifest whose
 * entries are all unchecked (checked_ns 0). Returns 0, -EINVAL for a record
 * that is cut short, too long, of another format, with an invalid path or
 * with a path twice, or -ENOMEM. Bytes from disk: every length and count is
 * bounded by what is left of the record. */
int manifest_decode(const void *p, size_t n, struct manifest **out);

/* A dataset path is valid if it is relative, has no empty, "." or ".."
 * component, no NUL, and components of at most TC_NAME_MAX bytes. */
bool manifest_path_valid(const char *path, size_t len);

#endif
