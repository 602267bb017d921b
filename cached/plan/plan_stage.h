/*
 * Plan registrations in progress: the entries of a PLAN_SET sent in several
 * frames (TC_PLAN_MORE, then TC_PLAN_CONT) wait here until its last frame.
 *
 * A staged entry is the file's index in its dataset's manifest (4 bytes for
 * the 8 of an index or the >= 5 of a path the client sent): the path and
 * version are the manifest's, looked up once at commit. The indices are
 * good only while the dataset keeps that manifest (a refresh replaces it),
 * so a stage remembers the manifest and a fingerprint of the staged paths,
 * and the commit refuses a stage whose manifest is no longer the dataset's.
 *
 * Bounds per connection (all its stages together): PLAN_STAGE_CONN_MAX
 * registrations in progress and PLAN_STAGE_CONN_ENTRIES entries, so a
 * connection stages at most about 4 bytes x TC_PLAN_ENTRIES_MAX (64 MiB).
 * A connection's stages go when it closes, when it is cancelled or fails,
 * and when their dataset leaves the config.
 *
 * Pure bookkeeping (no I/O, no engine): the fuzz target drives it as is.
 * Loop thread only.
 */
#ifndef TIERCACHE_PLAN_STAGE_H
#define TIERCACHE_PLAN_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "tiercache/protocol.h"

#define PLAN_STAGE_CONN_MAX 8u                      /* registrations in progress */
#define PLAN_STAGE_CONN_ENTRIES TC_PLAN_ENTRIES_MAX /* entries staged, all of them */

struct plan_stage {
	struct plan_stage *next;
	const void *c;   /* the connection staging it (an opaque owner token) */
	const void *ds;  /* its dataset (opaque here) */
	const void *mf;  /* the manifest the indices point into */
	uint64_t job;
	uint32_t rank;
	uint8_t flags;   /* the first frame's TC_PLAN_APPEND / TC_PLAN_RESUME */
	uint64_t fp;     /* plan_stage_fp() of the staged paths, summed */
	uint32_t *ix;    /* manifest indices, n used of cap */
	size_t n, cap;
};

struct plan_stages {
	struct plan_stage *list;
};

/* The stage of (c, ds, job, rank), or NULL. */
struct plan_stage *plan_stage_get(struct plan_stages *s, const void *c, const void *ds, uint64_t job,
				  uint32_t rank);
/* A new, empty stage (an old one of the same key is dropped). 0, -EBUSY
 * (c has PLAN_STAGE_CONN_MAX in progress) or -ENOMEM. */
int plan_stage_start(struct plan_stages *s, const void *c, const void *ds, const void *mf,
		     uint64_t job, uint32_t rank, uint8_t flags, struct plan_stage **out);
/* Append n indices whose paths' plan_stage_fp() sum to fp. 0, -E2BIG
 * (past PLAN_STAGE_CONN_ENTRIES for st's connection) or -ENOMEM; nothing
 * added on error. */
int plan_stage_add(struct plan_stages *s, struct plan_stage *st, const uint32_t *ix, size_t n,
		   uint64_t fp);
void plan_stage_drop(struct plan_stages *s, struct plan_stage *st);
/* Drop every stage of connection c / of dataset ds. */
void plan_stage_drop_conn(struct plan_stages *s, const void *c);
void plan_stage_drop_ds(struct plan_stages *s, const void *ds);
void plan_stages_free(struct plan_stages *s);
/* Entries and bytes (arrays and structs) staged by connection c. */
size_t plan_stage_conn_entries(const struct plan_stages *s, const void *c);
size_t plan_stage_conn_bytes(const struct plan_stages *s, const void *c);
/* One path's part of a stage's fingerprint (64-bit FNV-1a). */
uint64_t plan_stage_fp(const char *path);

#endif
