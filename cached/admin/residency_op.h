/*
 * Residency ops, private to cached/admin/residency*.c: the shared
 * operation engine. An async op (struct rop) is a list of chunks worked
 * through with at most `window` of them in flight; each chunk in flight is
 * a slot that goes through the stages its op needs (fill, move, checksum
 * re-read, pin) and is counted where it ended up.
 *
 *   residency.c            the module (init, pins at startup), building an op
 *   residency_run.c        running an op: slots, window, finish
 *   residency_warm.c       warm, pin, unpin
 *   residency_move.c       evict, demote
 *   residency_verify.c     checksum re-reads on the workers; verify
 *   residency_lifecycle.c  lifecycle
 *
 * Loop thread only, like residency.h.
 */
#ifndef TIERCACHE_RESIDENCY_OP_H
#define TIERCACHE_RESIDENCY_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "chunk.h"
#include "fill.h"
#include "manifest.h"
#include "pins.h"
#include "residency.h"
#include "workers.h"

#define WINDOW_FILL 8u  /* chunks of one op in flight: fills */
#define WINDOW_MOVE 4u  /* ... copies between tiers (the mover's own limit) */
#define WINDOW_PIN 2u   /* ... pins: fills must fit the band a full tier keeps */
#define ROP_ITEMS_MAX (64u << 20) /* chunks in one op: far beyond any dataset we serve */
#define MOVE_WAIT_POLL_US 5000u   /* a slot waiting for someone else's copy looks again */
#define MOVE_WAIT_MAX_NS (120ull * 1000000000ull) /* ... and gives up after this */

struct residency {
	struct cache *cache;
	struct pin_set pins;
};

enum rop_kind {
	ROP_WARM,
	ROP_PIN,
	ROP_DEMOTE,
	ROP_VERIFY,
};

struct rop_file {
	struct dataset *ds;
	char *path;
	struct cold_stat src;
};

struct rop_item {
	uint64_t key;
	uint32_t file;
	uint32_t idx;
	uint32_t len;
	bool pinned_here; /* pinned by this op (undone if the pin fails) */
};

struct rop {
	struct cache *cache;
	struct residency *res;
	enum rop_kind kind;
	struct rop_file *files;
	size_t nfiles, capfiles;
	struct rop_item *items;
	size_t n, cap, next;
	unsigned inflight, window;
	int tier;        /* warm: the tier asked for, TIER_COUNT: any */
	unsigned flags;  /* RES_WARM_* */
	bool make_room;  /* moves may evict the target tier's victims */
	bool pumping, stopped;
	char *pin_spec;  /* pin: recorded when every chunk is pinned */
	struct res_cb cb;
	struct res_result r;
};

struct slot {
	struct waiter w; /* first: fill.c hands it back */
	struct job job;
	struct rop *op;
	size_t i;
	bool moved;      /* pin: already copied to the other tier once */
	bool refetched;  /* warm --verify: read again after a bad checksum */
	int fd;
	struct cfile *f;
	uint64_t checksum;
	uint64_t base;  /* the chunk's offset in fd (a segment item), else 0 */
	uint32_t len;
	int err;
	struct event *wait;     /* waiting for another copy of the chunk to end */
	uint64_t wait_deadline; /* cache_now_ns() when it gives up waiting */
};

static inline void res_count_add(struct res_count *c, uint64_t len)
{
	c->chunks++;
	c->bytes += len;
}

/* c is in the selection ds (NULL: every dataset) / rest ("" : all of it). */
static inline bool res_chunk_in(const struct chunk *c, const struct dataset *ds, const char *rest)
{
	return (!ds || c->ds == ds) && path_under(c->path, rest);
}

/* r->err = err with r->msg from fmt; returns err. */
int res_fail(struct res_result *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* rest ("": the whole dataset) names a file or a directory of ds; else
 * fills r (ENOENT) and returns -ENOENT. */
int res_check_selection(const struct dataset *ds, const char *rest, struct res_result *r);

/* Building an op (residency.c). */
struct rop *rop_new(struct residency *res, enum rop_kind kind, const struct res_cb *cb);
void rop_free(struct rop *op);
/* Chunks [first, first + nchunks) of a file of the manifest (0: all). */
int rop_add_chunks(struct rop *op, struct dataset *ds, const struct mf_entry *e, uint32_t first,
		   uint32_t nchunks);
/* Every file of ds at or under rest. */
int rop_add_manifest(struct rop *op, struct dataset *ds, const char *rest);
/* A resident chunk as an item (verify, demote). */
int rop_add_chunk(struct rop *op, const struct chunk *c);
/* Building failed with rc: frees op, fills r; returns rc. */
int rop_build_failed(struct rop *op, struct res_result *r, int rc);

/* Running an op (residency_run.c): start slots up to the window; the op
 * ends (cb.done, then freed) when the last one ends. */
void rop_pump(struct rop *op);
/* A slot's ends: done without counting where the chunk is; counted where
 * it is (or as missing); failed with err. Each frees the slot. */
void rop_slot_end(struct slot *s);
void rop_slot_final(struct slot *s);
void rop_slot_failed(struct slot *s, int err);
/* warm --verify found the chunk bad and dropped it: fill it again. */
void rop_slot_refetch(struct slot *s);

/* Re-read c on the workers and check its checksum (residency_verify.c). */
void rop_slot_verify(struct slot *s, struct chunk *c);

#endif
