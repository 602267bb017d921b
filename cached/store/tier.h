/*
 * A tier: one local directory (hot NVMe, warm SSD) with a byte capacity and
 * watermarks, holding immutable chunk files.
 *
 * Layout under the tier path:
 *   .tiercache-tier            the marker: this directory is a tiercache
 *                              tier (magic line, tier name, random id)
 *   chunks/XX/<16 hex>.chunk   published chunk files (XX: first two hex)
 *   tmp/                       files being written; *.tmp emptied at startup
 * The daemon writes the marker only into an empty directory (or one with
 * nothing but its own chunks/ and tmp/ layout: an install from before
 * markers), refuses a non-empty directory without one, and deletes only
 * files of its own naming under chunks/ and tmp/: a tier path that points
 * at the wrong place (the cold directory through a symlink) is refused, not
 * emptied.
 *
 * Accounting (loop thread): `used` counts every published file that still
 * occupies the disk, including files already unlinked that a client still
 * holds open; `reserved` counts fills and copies in progress. used +
 * reserved never exceeds the tier's effective capacity, the configured
 * capacity or, when its file system has less, what the disk can take
 * (`room`: used + its free space at the last look, tier_set_room());
 * tier_reserve() refuses instead. The watermarks follow the effective
 * capacity. A tier that cannot be written (read-only, I/O errors, its
 * directory removed) is `failed`: it takes no new bytes until a probe
 * write succeeds again (cache/tier_health.c decides; this only records).
 *
 * The file functions (tier_file_*) are for worker threads: pure file I/O on
 * paths the loop computed.
 */
#ifndef TIERCACHE_TIER_H
#define TIERCACHE_TIER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct tier {
	enum tier_id id;
	const char *name;    /* "hot", "warm" */
	bool present;
	char path[PATH_MAX];
	uint64_t capacity;   /* configured */
	uint64_t room;       /* what the disk can hold (used + free at the last
			      * look); UINT64_MAX until looked at */
	unsigned high_pct, low_pct;
	uint64_t high_bytes; /* start demoting/evicting above this (of the effective capacity) */
	uint64_t low_bytes;  /* ... down to this */
	bool failed;         /* cannot be written: takes no new bytes */
	char fail_reason[192];
	uint64_t fail_count; /* times it went from ok to failed */
	uint64_t used;
	uint64_t reserved;
	uint64_t spare;      /* kept free for a segment reclaim's copies: new
			      * bytes do not take it (tier_reserve), the
			      * copies may (tier_reserve_spare). Without it a
			      * full tier's dead bytes could never come back
			      * but by dropping what the policies keep */
	uint64_t held_dead;  /* part of used: unlinked but still open by clients */
	uint64_t chunks;     /* published chunk files (live) */
	uint64_t read_bytes; /* bytes handed out from this tier */
};

#define TIER_MARKER ".tiercache-tier"
#define TIER_MARKER_MAGIC "tiercache tier marker v1"
#define TIER_ID_LEN 32 /* hex digits of a marker's random id */

/* Set the tier up at start: create the directory if it is missing, check
 * or write its marker (see above), create the layout. *id gets the
 * marker's id (TIER_ID_LEN hex + NUL). A non-empty directory without a
 * marker, or with the other tier's, is refused: -EEXIST and a message. */
int tier_setup(struct tier *t, enum tier_id id, const struct tier_conf *tc, char id_out[TIER_ID_LEN + 1],
	       char *err, size_t n);
/* Apply new capacity / watermarks (reload); never drops data by itself. */
void tier_set_limits(struct tier *t, const struct tier_conf *tc);
/* What the disk can hold now (used + free): the effective capacity is the
 * smaller of this and the configured one; the watermarks follow it. */
void tier_set_room(struct tier *t, uint64_t room);
/* Failed / back (loop thread; the caller logs). */
void tier_set_failed(struct tier *t, const char *reason);
void tier_set_ok(struct tier *t);

/* The capacity the tier works with now. */
static inline uint64_t tier_capacity_now(const struct tier *t)
{
	return t->room < t->capacity ? t->room : t->capacity;
}

/* Room left once `keep` more bytes are set aside. */
static inline uint64_t tier_room_past(const struct tier *t, uint64_t keep)
{
	uint64_t busy = t->used + t->reserved + keep, cap = tier_capacity_now(t);
	if (t->failed)
		return 0;
	return busy >= cap ? 0 : cap - busy;
}

/* Room for new bytes: the spare is not theirs. */
static inline uint64_t tier_free(const struct tier *t)
{
	return tier_room_past(t, t->spare);
}

/* Reserve len bytes for a segment reclaim's copy: the spare too. */
static inline bool tier_reserve_spare(struct tier *t, uint64_t len)
{
	if (!t->present || tier_room_past(t, 0) < len)
		return false;
	t->reserved += len;
	return true;
}

static inline bool tier_reserve(struct tier *t, uint64_t len)
{
	if (!t->present || t->failed || tier_free(t) < len)
		return false;
	t->reserved += len;
	return true;
}

static inline void tier_unreserve(struct tier *t, uint64_t len)
{
	t->reserved -= len;
}

/* A reservation became a published file. */
static inline void tier_commit(struct tier *t, uint64_t len)
{
	t->reserved -= len;
	t->used += len;
}

/* The rest of a tier's accounting, one call per event; nothing outside
 * this header writes the counters. */

/* Startup: a file the index names is on the tier. */
static inline void tier_adopt(struct tier *t, uint64_t len)
{
	t->used += len;
}

/* A committed file's bytes are gone before any client held them (its
 * publish failed after the commit). */
static inline void tier_release(struct tier *t, uint64_t len)
{
	t->used -= len;
}

/* A chunk file took its name on the tier. */
static inline void tier_chunk_named(struct tier *t)
{
	t->chunks++;
}

/* A chunk file lost its name (evicted, moved, dropped): its bytes stay in
 * used, as held, until the last descriptor of it closes (tier_unhold). */
static inline void tier_chunk_unnamed(struct tier *t, uint64_t len)
{
	t->chunks--;
	t->held_dead += len;
}

/* An item of a segment died (store/segment.h): its bytes stay in used,
 * dead, until the whole segment is unlinked. */
static inline void tier_item_dead(struct tier *t)
{
	t->chunks--;
}

/* Blocks of dead segment items given back to the file system (a hole
 * punched), or not after all (the punch failed). */
static inline void tier_punched(struct tier *t, uint64_t len)
{
	t->used -= len;
}

static inline void tier_unpunched(struct tier *t, uint64_t len)
{
	t->used += len;
}

/* A segment left the tier's namespace (reclaimed) with descriptors still
 * open: its bytes are held until the last closes (tier_unhold). */
static inline void tier_hold_segment(struct tier *t, uint64_t size)
{
	t->held_dead += size;
}

/* Bytes on the tier under no name from the start (a chunk served without
 * being kept), held by descriptors until tier_unhold. */
static inline void tier_hold_unnamed(struct tier *t, uint64_t len)
{
	t->held_dead += len;
}

/* The last descriptor of a file with no name closed: its blocks are free. */
static inline void tier_unhold(struct tier *t, uint64_t len)
{
	t->used -= len;
	t->held_dead -= len;
}

/* Bytes handed to clients from the tier (status read rate). */
static inline void tier_count_read(struct tier *t, uint64_t len)
{
	t->read_bytes += len;
}

static inline bool tier_over_high(const struct tier *t)
{
	return t->present && t->used + t->reserved > t->high_bytes;
}

void tier_chunk_path(const struct tier *t, uint64_t key, char *buf, size_t n);
/* A fresh temp name (unique per call). */
void tier_tmp_path(const struct tier *t, uint64_t key, char *buf, size_t n);

/* Write all of buf to fd (retrying short writes and EINTR). 0 or -errno. */
int tier_write_all(int fd, const void *buf, size_t len);

/* Worker thread: write len bytes to tmp, fsync, rename to final. On success
 * *fd is an O_RDONLY descriptor of the published file (caller closes).
 * Returns 0 or -errno; the temp file is removed on failure. */
int tier_file_write(const char *tmp, const char *final, const void *buf, size_t len, int *fd);
/* Worker thread: like tier_file_write, but the bytes go in pieces of
 * TIER_PIECE and each(arg, piece, n) sees every piece just before it is
 * written, while it is still in the CPU cache (a fill checksums it there
 * instead of reading the whole chunk from memory twice). sync false: no
 * fdatasync before the rename (the caller syncs *fd before anything
 * refers to the file durably). On success *fd is the written file, open
 * for writing (caller closes). */
#define TIER_PIECE (256u << 10)
int tier_file_write_pieces(const char *tmp, const char *final, const void *buf, size_t len,
			   bool sync, void (*each)(void *arg, const void *p, size_t n), void *arg,
			   int *fd);
/* Worker thread: write len bytes to tmp, open it read-only, unlink it. The
 * bytes live as long as *fd (or a dup of it) is open: a chunk served
 * without being kept. Returns 0 or -errno (nothing left behind). */
int tier_file_write_unlinked(const char *tmp, const void *buf, size_t len, int *fd);
/* Worker thread: read a whole chunk file of exactly len bytes into buf;
 * tier_file_pread: exactly len bytes at off (a segment's item). -EIO if
 * the file is shorter. */
int tier_file_read(const char *path, void *buf, size_t len);
int tier_file_pread(const char *path, void *buf, size_t len, uint64_t off);

/* Worker: write, fsync and remove a small file in TIER/tmp: can the tier
 * be written now? 0 or -errno. */
int tier_probe(const char *tier_path);
/* Worker: is dir the root of a usable tier: the marker (with this tier's
 * name) and chunks/ present? 0, -ENOENT (gone, or emptied), -errno. */
int tier_check_layout(const char *dir, const char *name);
/* Worker: dir exists and is empty (a removed tier recreated by an admin):
 * make the layout and a new marker. 0 or -errno; -ENOTEMPTY if it is not
 * empty. id_out as for tier_setup. */
int tier_reinit(const char *dir, const char *name, char id_out[TIER_ID_LEN + 1]);

/* Startup: delete temp files (tmp/NAME.tmp), then for every file named like
 * a chunk (chunks/XX/<16 hex>.chunk) ask known(key, size); delete the ones
 * it rejects (orphans). Files of any other name are left alone (the daemon
 * did not make them). Counts deletions. */
int tier_reconcile(struct tier *t, bool (*known)(void *arg, struct tier *t, uint64_t key, uint64_t size),
		   void *arg, unsigned *orphans);

#endif
