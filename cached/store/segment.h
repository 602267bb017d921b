/*
 * Segments: small chunks packed into large append-only files, so that a
 * miss of a small object costs no file creation, rename or unlink.
 *
 * A tier holds segment files `TIER/segments/seg-<tier>-<16 hex id>`. One
 * segment per tier and *domain* is open: a client handed a segment's
 * descriptor can read every byte of it, so items whose readers differ
 * (the caller's domain: one per dataset) never share a segment. The loop
 * assigns each new item an offset in its domain's open segment
 * (segstore_assign) and a worker pwrites the item's bytes there
 * (segment_pwrite). Bytes once written are never written again: an item
 * handed to a client as (descriptor, base, len) reads the same bytes for as
 * long as the client holds the descriptor. A segment that reached the
 * segment size (or any segment found at start) is sealed: it takes no more
 * items. Items die (evicted, moved, dropped) one by one; a sealed segment
 * whose last live item died is unlinked, and its bytes leave the tier's
 * `used` when the last descriptor of it closes.
 *
 * Durability is the engine's business (cache/durable.c): an item gets its
 * index record only after an fdatasync of its segment that started after
 * the item was written, exactly as a chunk file gets its record after its
 * own fdatasync. At start, a segment file that no record names is deleted
 * (only files of this naming); the unrecorded tail of a recorded one is
 * dead bytes.
 *
 * Accounting: `size` is every byte assigned in the segment (on the tier's
 * `used` from the moment each item is committed); `live` the bytes of live
 * items; `punched` the bytes of dead items already given back to the file
 * system (below); size - live - punched is dead on disk, returned to the
 * tier only by unlinking the whole segment (reclaim).
 *
 * Punching: where the tier's file system can (probed at start:
 * fallocate(FALLOC_FL_PUNCH_HOLE), which ext4, XFS, btrfs and tmpfs do),
 * the blocks of an item that died and that no client holds any more are
 * given back at once (cache/seg_punch.c): the tier's dead bytes then do not
 * wait for a reclaim that copies the live ones. Items of segments this
 * daemon writes start on a SEGMENT_ALIGN boundary, so each item's blocks
 * are its own (the padding is a hole: it was never written); an item of a
 * segment found at start whose items were not all aligned gives back only
 * the blocks inside it.
 *
 * Loop thread, except segment_pwrite/segment_sync (workers).
 */
#ifndef TIERCACHE_SEGMENT_H
#define TIERCACHE_SEGMENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A link in a segment's list of live items. The store only starts the
 * list empty; the engine (cache/chunk.c) links each live item's file in
 * and out, so a reclaim visits a segment's items without walking every
 * chunk. */
struct seg_link {
	struct seg_link *prev, *next;
};

static inline void seg_link_init(struct seg_link *l)
{
	l->prev = l->next = l;
}

static inline void seg_link_add_tail(struct seg_link *head, struct seg_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static inline void seg_link_del(struct seg_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
}

struct segstore;

struct segment {
	struct segment *next;    /* the store's list */
	struct segstore *store;  /* whose it is */
	uint64_t id;
	uint64_t domain;         /* who may read it (segstore_assign); 0 for
				  * segments found at start (sealed) */
	struct segment *next_open; /* the store's open segments */
	uint64_t size;           /* bytes assigned (written or being written) */
	uint64_t end;            /* where the next item may start (size plus
				  * the aligned items' padding) */
	uint64_t live;           /* bytes of live items */
	uint64_t punched;        /* bytes of dead items given back (a hole
				  * punched or being punched): not on disk */
	bool found;              /* found at start: its size is its file's,
				  * padding and holes included (punched: the
				  * holes) */
	bool gaps;               /* found at start: the blocks between its
				  * live items are still to be given back */
	bool aligned;            /* every item starts on a SEGMENT_ALIGN
				  * boundary: the blocks from an item's start
				  * to the next boundary past its end are its
				  * own */
	uint32_t items;          /* live items */
	struct seg_link items_live; /* ... linked by the engine (circular, its head) */
	uint32_t writers;        /* appends in flight */
	uint32_t refs;           /* descriptors handed out that still need it
				  * (held by the engine's file references) */
	uint32_t holds;          /* references to its items' files beyond the
				  * items' own (clients, checks): counted by
				  * the engine; a held segment is not reclaimed */
	bool sealed;             /* takes no more items */
	bool named;              /* its file still has its name */
	int wfd;                 /* for the workers' pwrite; -1 once sealed and idle */
	int rfd;                 /* read-only: what clients get (dup'ed) */
	char path[PATH_MAX + 64];
};

struct segstore {
	char dir[PATH_MAX];      /* TIER/segments */
	char tier_name[16];
	uint64_t seg_size;       /* seal at this size */
	uint64_t next_id;
	struct segment *opens;   /* those taking items: one per domain at most */
	struct segment *list;    /* every segment still named or referenced */
	/* counters (status, metrics) */
	uint64_t nsegs;          /* named segments */
	uint64_t bytes_live, bytes_dead; /* over named segments */
	uint64_t sealed, reclaimed, created;
	uint32_t held;           /* segments with holds (segment_hold) */
	/* punching (segstore_init probes the file system) */
	bool punch;              /* dead items' blocks are given back */
	char punch_why[128];     /* why not, when not */
	uint64_t punched_bytes, punches, punch_errors;
	/* closes the last descriptors of a segment that is gone (unlinked,
	 * unreferenced): the close of an unlinked file frees its page cache
	 * and blocks, which the owner may hand to another thread
	 * (cached/cache/seg_close.c). NULL: close() on the calling thread. */
	void (*close_fd)(void *arg, int fd);
	void *close_arg;
	/* A spare: one empty segment file per tier created ahead on another
	 * thread (segment_file_create), which the next new segment takes, so
	 * that the loop does not create a file when one seals (ext4: an
	 * open(O_CREAT) ~0.7 ms after a mass delete, every reader stalled).
	 * Asked for after each new segment. Unrecorded: an empty file at
	 * start is deleted like any segment no record names; segstore_free
	 * deletes it. */
	struct seg_spare {
		uint64_t id;     /* 0: none */
		int wfd, rfd;
		bool pending;    /* being created (spare_make asked) */
	} spare;
	/* Asks the owner to create segment id ahead (its path: segment_path)
	 * and then call segstore_spare_done on the loop; false: not now
	 * (NULL: every segment is created on the loop). */
	bool (*spare_make)(void *arg, struct segstore *s, uint64_t id);
	void *spare_arg;
	uint64_t spares_used;    /* new segments that took the spare */
	uint64_t created_on_loop; /* new segments created by segstore_assign itself */
	uint64_t spare_errors;   /* spares that could not be created */
};

#define SEGMENT_ALIGN 4096u

#define SEGMENT_DIR "segments"
#define SEGMENT_SIZE_DEFAULT (64ull << 20)

/* The segment size for a tier of this capacity: the configured size, but
 * at most 1/SEGMENT_TIER_SHARE of the tier, not below SEGMENT_SIZE_MIN (an
 * item larger than that gets a segment of its own).
 * Only sealed segments are reclaimed, so on a tier not much larger than
 * one segment the open one would gather every dead byte and never give
 * them back. */
#define SEGMENT_TIER_SHARE 16
#define SEGMENT_SIZE_MIN (64ull << 10)
uint64_t segment_size_for(uint64_t configured, uint64_t capacity);

/* Set up the store of a tier whose path is tier_path (creates
 * TIER/segments, probes whether its file system punches holes). 0 or
 * -errno. */
int segstore_init(struct segstore *s, const char *tier_path, const char *tier_name, uint64_t seg_size);
/* A new segment size (the tier's capacity changed: segment_size_for):
 * the open segments seal when their next item would pass it. */
void segstore_set_size(struct segstore *s, uint64_t seg_size);
/* Close every descriptor and free every segment (the files stay). */
void segstore_free(struct segstore *s);

/* A place for an item of len bytes: in the open segment of its domain (an
 * id of who may read it: every item of a segment can be read by whoever
 * holds its descriptor), or a new one (the full one is sealed). The
 * segment counts one more writer until segment_write_end. 0 or -errno (a
 * new segment could not be created). */
int segstore_assign(struct segstore *s, uint64_t domain, uint32_t len, struct segment **seg,
		    uint64_t *off);
/* A worker finished writing an item (ok: it is now live; else its bytes
 * are dead). Returns true if the segment became empty and was unlinked. */
bool segment_write_end(struct segstore *s, struct segment *seg, uint32_t len, bool ok);
/* Close each open segment's write descriptor if no append is in flight
 * (segstore_assign opens it again): an idle daemon keeps no tier file open
 * for writing, so an admin can remount a tier read-only (a remount fails
 * with EBUSY while any file on it is open for writing). */
void segstore_idle_close(struct segstore *s);
/* Seal the open segments (they take no more items). */
void segstore_seal_open(struct segstore *s);
/* A live item died. Returns true if its segment is now sealed and empty
 * and was unlinked (the caller moves its bytes out of `used`, or into
 * held bytes if refs remain). */
bool segment_item_dead(struct segstore *s, struct segment *seg, uint32_t len);
/* Unlink a segment (reclaim): the caller has made every item dead first. */
void segment_unlink(struct segstore *s, struct segment *seg);
/* References from descriptors held: a segment unlinked and unreferenced
 * is freed; segment_unref returns true then. */
void segment_ref(struct segment *seg);
bool segment_unref(struct segstore *s, struct segment *seg);
/* A file of one of its items is held beyond the item's own reference (a
 * descriptor handed out, a check): a held segment is not reclaimed.
 * segment_unhold returns true when the last hold went. */
void segment_hold(struct segment *seg);
bool segment_unhold(struct segment *seg);
/* The named segment with the most dead bytes that has no writer, with at
 * most max_live_pct % of its size live; NULL if none. An open segment
 * (with dead bytes) is sealed when chosen. */
struct segment *segstore_reclaim_candidate(struct segstore *s, unsigned max_live_pct);
/* Up to k segments segstore_reclaim_candidate could choose, the most dead
 * bytes first (none is sealed): for a caller that ranks them by what their
 * live items are worth. Returns how many. */
size_t segstore_reclaim_candidates(struct segstore *s, unsigned max_live_pct, struct segment **out,
				   size_t k);
/* Take no more items (a chosen candidate that is still open). */
void segment_seal(struct segstore *s, struct segment *g);
struct segment *segstore_find(const struct segstore *s, uint64_t id);
/* Create segment file path (O_EXCL; dir is made again if it is missing),
 * opened for appends (*wfd) and read-only (*rfd). 0 or -errno (nothing
 * left behind). Any thread: touches no store. */
int segment_file_create(const char *dir, const char *path, int *wfd, int *rfd);
/* The spare asked for (spare_make) was created (rc 0: wfd, rfd) or not
 * (rc -errno: the next segment is created on the loop, which reports the
 * error as it always did). Loop. */
void segstore_spare_done(struct segstore *s, uint64_t id, int rc, int wfd, int rfd);
/* A new read-only descriptor of the segment (for a client). */
int segment_open_fd(const struct segment *seg);

/* Start: adopt each segment file that keep(arg, id, size) wants (sealed,
 * live 0: the caller adds items with segment_adopt_item, which marks it
 * not aligned if an item does not start on a boundary; its holes count as
 * punched), delete the others of the store's naming; files of other names
 * are left alone. */
int segstore_load(struct segstore *s, bool (*keep)(void *arg, uint64_t id, uint64_t size), void *arg,
		  unsigned *removed);
void segment_adopt_item(struct segstore *s, struct segment *seg, uint64_t off, uint32_t len);
/* After adopting every item: segments left with no live item are
 * unlinked (their bytes were never counted). */
void segstore_load_done(struct segstore *s);

/* Bytes of g on disk (what its unlinking gives back to the tier). */
static inline uint64_t segment_disk_bytes(const struct segment *g)
{
	return g->size - g->punched;
}
/* The range [*lo, *hi) of g's file whose blocks only the item at off, len
 * bytes long, holds, block-aligned: what may be punched once it is dead
 * and unheld. False if no whole block. *acct gets what its punching takes
 * off g's size: len for an aligned item of a segment written in this run
 * (its padding was never counted), else the range's bytes below the size. */
bool segment_punch_range(const struct segment *g, uint64_t off, uint32_t len, uint64_t *lo,
			 uint64_t *hi, uint64_t *acct);
/* acct bytes of g given back (counted now: the loop then hands the punch
 * to a worker), or not after all (the punch failed). g must be named. */
void segment_punched(struct segstore *s, struct segment *g, uint64_t acct);
void segment_unpunched(struct segstore *s, struct segment *g, uint64_t acct);
/* The path of segment id of s (a worker may call it: s->dir and
 * s->tier_name never change). */
void segment_path(const struct segstore *s, uint64_t id, char *buf, size_t n);

/* Workers: pwrite all of buf at off; fdatasync the file; punch a hole
 * (fd open for writing; the file keeps its size). 0 or -errno. (An item is
 * read back with tier_file_pread.) */
int segment_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int segment_sync(const char *path);
int segment_punch(int fd, uint64_t lo, uint64_t hi);
/* The bytes of [lo, hi) of fd's file that are data, not holes. */
uint64_t segment_data_bytes(int fd, uint64_t lo, uint64_t hi);
/* Whether s's file system punches holes: s->punch, s->punch_why
 * (segstore_init calls it; a test may again). */
void segstore_probe_punch(struct segstore *s);

#endif
