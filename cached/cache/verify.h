/*
 * Checking a resident chunk's file against the checksum it was written
 * with, before the daemon trusts it (docs/architecture.md, "What is
 * checked where"):
 *   - a chunk loaded from the index at startup is unverified
 *     (chunk.unverified) until its file has been re-read once: the first
 *     request for it waits for that like a miss (fill_get);
 *   - a client that read a chunk short through its descriptor says so
 *     (TC_F_CHUNK_BAD): the chunk is verified again before it is served;
 *   - the scrubber (scrub.h) verifies every resident chunk in turn.
 * A chunk whose file is short or does not match is dropped, counted
 * (checksum_errors), logged with its tier file, and every request that
 * waited for it is served from the cold store instead (single flight, as
 * fill.c: one verification per chunk however many wait for it).
 *
 * The re-read runs on a worker; everything else on the loop thread.
 */
#ifndef TIERCACHE_VERIFY_H
#define TIERCACHE_VERIFY_H

#include "cache.h"
#include "fill.h"

/* What a verification was for, for the log. */
enum verify_why {
	VERIFY_FIRST_OPEN, /* loaded from the index: first use this run */
	VERIFY_REPORT,     /* a client read it short through its descriptor */
	VERIFY_SCRUB,      /* the scrubber's turn */
};

/* Told how a verification the caller started ended (the scrubber). Loop
 * thread. err: 0 the file matched, -EBADMSG it did not (the chunk is
 * dropped), another -errno it could not be checked. */
typedef void (*verify_done_fn)(struct cache *cache, void *arg, uint64_t bytes, int err);

int verify_init(struct cache *cache);
void verify_free(struct cache *cache);

/* Verify resident chunk c (not CHUNK_UNKEPT) on a worker, or join the
 * verification of c already in flight. w (may be NULL) is answered like a
 * fill's waiter: with c once it matched, or with a refetched chunk (a fill)
 * when it did not. done (may be NULL; not with a verification already in
 * flight) hears how it ended.
 * Returns 0 if queued, 1 if c's file could not even be opened (c was
 * dropped: the caller goes on as for a miss; w was not queued), or -errno. */
int verify_join(struct cache *cache, struct chunk *c, enum verify_why why, struct waiter *w,
		verify_done_fn done, void *arg);
/* Whether a verification of key is in flight. */
bool verify_inflight(const struct cache *cache, uint64_t key);
size_t verify_count_inflight(const struct cache *cache);

/* A daemon-side reader (a streamed READ) found c's file bad: count, log
 * (op names the reader), drop. detail says what was wrong. */
void verify_chunk_bad(struct cache *cache, struct chunk *c, const char *op, const char *detail);

/* Any thread (workers): read the len bytes of chunk file fd in pieces and
 * compare their XXH3-64 with checksum; the file must be exactly len bytes.
 * If dst, the bytes [copy_off, copy_off + copy_len) of the file are copied
 * there on the way (a streamed READ sends exactly the bytes it checked).
 * 0, -EBADMSG (a mismatch, or a file of another size: *found_size says
 * which), or -errno of a read. */
int verify_fd(int fd, uint32_t len, uint64_t checksum, void *dst, uint32_t copy_off,
	      uint32_t copy_len, uint64_t *found_size);
/* The same for a chunk at base in a segment (base 0 with in_segment false
 * is verify_fd): the segment must hold [base, base + len). */
int verify_fd_at(int fd, uint64_t base, bool in_segment, uint32_t len, uint64_t checksum, void *dst,
		 uint32_t copy_off, uint32_t copy_len, uint64_t *found_size);

#endif
