/*
 * Residency ops: see residency.h; the module and the building of an op
 * (residency_op.h names the other files). Loop thread only; checksum
 * re-reads run on the workers, copies on the mover.
 *
 * An async op is a list of chunks (file, chunk number, key) worked through
 * with at most `window` chunks in flight, so a warmup of a large file
 * neither floods the cold store nor the workers. Each chunk goes through
 * the stages its op needs: fill (fill_get, single flight with readers),
 * move to the asked tier, checksum re-read, pin; then it is counted where
 * it ended up. What an op reports is looked up at the end of each chunk,
 * never assumed.
 *
 * Pins: a pin is a selection string "DATASET[/PATH]" kept in the index
 * (namespace "pin"). Its chunks are in state CHUNK_PINNED: out of every
 * policy, so no victim selection sees them, yet counted in their tier's
 * used bytes, so they take room from everything else; the mover shrinks
 * the policies' budget by the pinned bytes. Pins may take a tier's whole
 * policy budget (its low watermark), no more: the band above stays for
 * fills in flight and held files, so a pin can still read its own chunks
 * when the tier is full of pins. A chunk that lands on a tier with no pin
 * room left is copied to the other tier and pinned there. A pin covers the files present when it is set (and, after a
 * restart, whatever of them is still resident); a file that changes at the
 * source is read again on demand and not pinned until pinned again.
 *
 * A chunk that is being copied by someone else when an op reaches it (the
 * mover's demotion or promotion, a segment reclaim keeping it) cannot be
 * moved or pinned yet, and is not out of room either: the slot waits for
 * that copy to end, polling on a short timer bounded by MOVE_WAIT_MAX_NS,
 * then looks the chunk up again (it may be on another tier, or gone) and
 * goes on. Only a copy that outlasts the bound is reported, as busy.
 */
#include "residency_op.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* ---- the module ---- */

void residency_pin_moved(struct residency *res, struct chunk *c)
{
	if (!c->pin_after_move)
		return;
	c->pin_after_move = false;
	pin_chunk(res->cache, c);
}

void residency_forget_dataset(struct residency *res, const struct dataset *ds)
{
	size_t n = res ? pin_set_remove_under(&res->pins, res->cache, ds, "") : 0;
	if (n)
		log_info("dataset=%s op=unpin pins=%zu why=\"the dataset left the config\"", ds->name, n);
}

int residency_init(struct residency **out, struct cache *cache)
{
	struct residency *res = calloc(1, sizeof(*res));
	if (!res)
		return -ENOMEM;
	*out = res;
	res->cache = cache;
	int rc = pin_set_load(&res->pins, cache);
	if (rc < 0)
		return rc;
	uint64_t chunks = 0;
	struct chunk_iter it;
	if (res->pins.n)
		for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c;
		     c = chunk_iter_next(&it))
			if (c->state == CHUNK_RESIDENT && pin_set_covers(&res->pins, c)) {
				pin_chunk(cache, c);
				chunks++;
			}
	if (res->pins.n)
		log_info("op=pin_load pins=%zu chunks=%" PRIu64 " hot_bytes=%" PRIu64
			 " warm_bytes=%" PRIu64,
			 res->pins.n, chunks, cache->pinned[TIER_HOT], cache->pinned[TIER_WARM]);
	return 0;
}

void residency_free(struct residency *res)
{
	if (!res)
		return;
	pin_set_free(&res->pins);
	free(res);
}
/* ---- op building ---- */

struct rop *rop_new(struct residency *res, enum rop_kind kind, const struct res_cb *cb)
{
	struct rop *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->cache = res->cache;
	op->res = res;
	op->kind = kind;
	op->tier = TIER_COUNT;
	op->window = kind == ROP_DEMOTE ? WINDOW_MOVE : kind == ROP_PIN ? WINDOW_PIN : WINDOW_FILL;
	if (cb)
		op->cb = *cb;
	return op;
}

void rop_free(struct rop *op)
{
	for (size_t i = 0; i < op->nfiles; i++)
		free(op->files[i].path);
	free(op->files);
	free(op->items);
	free(op->pin_spec);
	free(op);
}

static int rop_add_file(struct rop *op, struct dataset *ds, const char *path,
			const struct cold_stat *src)
{
	if (op->nfiles == op->capfiles) {
		size_t cap = op->capfiles ? op->capfiles * 2 : 16;
		struct rop_file *v = realloc(op->files, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		op->files = v;
		op->capfiles = cap;
	}
	struct rop_file *f = &op->files[op->nfiles];
	if (!(f->path = strdup(path)))
		return -ENOMEM;
	f->ds = ds;
	f->src = *src;
	op->nfiles++;
	return 0;
}

static int rop_add_item(struct rop *op, uint32_t idx, uint32_t len)
{
	const struct rop_file *f = &op->files[op->nfiles - 1];
	if (op->n >= ROP_ITEMS_MAX)
		return -E2BIG;
	if (op->n == op->cap) {
		size_t cap = op->cap ? op->cap * 2 : 64;
		struct rop_item *v = realloc(op->items, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		op->items = v;
		op->cap = cap;
	}
	op->items[op->n++] = (struct rop_item){
		.key = chunk_key(f->ds->name, f->path, &f->src, idx),
		.file = (uint32_t)(op->nfiles - 1),
		.idx = idx,
		.len = len,
	};
	return 0;
}

/* Chunks [first, first + nchunks) of a file of the manifest (0: all). */
int rop_add_chunks(struct rop *op, struct dataset *ds, const struct mf_entry *e,
			  uint32_t first, uint32_t nchunks)
{
	uint64_t cs = ds->conf.chunk_size;
	uint64_t n = (e->st.size + cs - 1) / cs;
	int rc = rop_add_file(op, ds, e->path, &e->st);
	if (rc < 0)
		return rc;
	uint64_t end = nchunks ? (uint64_t)first + nchunks : n;
	if (end > n)
		end = n;
	for (uint64_t i = first; i < end; i++) {
		uint64_t off = i * cs;
		rc = rop_add_item(op, (uint32_t)i, (uint32_t)(e->st.size - off < cs ? e->st.size - off : cs));
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Every file of ds at or under rest. */
int rop_add_manifest(struct rop *op, struct dataset *ds, const char *rest)
{
	for (size_t i = 0; i < ds->mf->n; i++) {
		const struct mf_entry *e = &ds->mf->v[i];
		if (e->gone || !path_under(e->path, rest))
			continue;
		int rc = rop_add_chunks(op, ds, e, 0, 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* A resident chunk as an item (verify, demote). */
int rop_add_chunk(struct rop *op, const struct chunk *c)
{
	if (!op->nfiles || op->files[op->nfiles - 1].ds != c->ds ||
	    strcmp(op->files[op->nfiles - 1].path, c->path) != 0 ||
	    !cold_stat_same(&op->files[op->nfiles - 1].src, &c->src)) {
		int rc = rop_add_file(op, c->ds, c->path, &c->src);
		if (rc < 0)
			return rc;
	}
	return rop_add_item(op, c->idx, c->len);
}
/* ---- errors ---- */

int res_fail(struct res_result *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

int res_check_selection(const struct dataset *ds, const char *rest, struct res_result *r)
{
	if (*rest && !manifest_find(ds->mf, rest) && !manifest_dir_exists(ds->mf, rest))
		return res_fail(r, -ENOENT, "no file or directory \"%s\" in dataset %s", rest, ds->name);
	return 0;
}

int rop_build_failed(struct rop *op, struct res_result *r, int rc)
{
	rop_free(op);
	return res_fail(r, rc, rc == -E2BIG ? "too many chunks in one request (at most %u)" : "out of memory",
		    ROP_ITEMS_MAX);
}
