/*
 * Chunk table and chunk life cycle: see chunk.h. Loop thread only.
 */
#include "chunk.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "chunk_sum.h"
#include "index.h"
#include "log.h"
#include "loop.h"
#include "mover.h"
#include "seg_punch.h"
#include "tiercache/protocol.h"

uint64_t chunk_key(const char *dataset, const char *path, const struct cold_stat *src, uint32_t idx)
{
	/* dataset NUL path NUL size mtime version idx, hashed in one go */
	uint8_t buf[TC_DATASET_NAME_MAX + TC_PATH_MAX + 2 + 28];
	size_t dn = strnlen(dataset, TC_DATASET_NAME_MAX);
	size_t pn = strnlen(path, TC_PATH_MAX);
	size_t at = 0;
	memcpy(buf, dataset, dn);
	at += dn;
	buf[at++] = 0;
	memcpy(buf + at, path, pn);
	at += pn;
	buf[at++] = 0;
	uint64_t v[3] = {src->size, (uint64_t)src->mtime_ns, src->version};
	for (int i = 0; i < 3; i++)
		for (int b = 0; b < 8; b++)
			buf[at++] = (uint8_t)(v[i] >> (8 * b));
	for (int b = 0; b < 4; b++)
		buf[at++] = (uint8_t)(idx >> (8 * b));
	return XXH3_64bits(buf, at);
}

uint64_t chunk_checksum(const void *buf, size_t len)
{
	return chunk_sum(buf, len);
}

int chunk_table_init(struct chunk_table *t)
{
	return u64h_init(&t->h, 1024,
			 (ptrdiff_t)offsetof(struct chunk, key) - (ptrdiff_t)offsetof(struct chunk, hn));
}

void chunk_table_free(struct chunk_table *t)
{
	u64h_free(&t->h);
}

static struct chunk *chunk_of_node(struct u64h_node *n)
{
	return n ? (struct chunk *)(void *)((char *)n - offsetof(struct chunk, hn)) : NULL;
}

struct chunk *chunk_find(const struct chunk_table *t, uint64_t key)
{
	return chunk_of_node(u64h_find(&t->h, key));
}

int chunk_table_add(struct chunk_table *t, struct chunk *c)
{
	u64h_add(&t->h, &c->hn);
	return 0;
}

void chunk_table_del(struct chunk_table *t, struct chunk *c)
{
	u64h_del(&t->h, &c->hn);
}

size_t chunk_table_count(const struct chunk_table *t)
{
	return t->h.n;
}

struct chunk *chunk_iter_first(struct chunk_iter *it, const struct chunk_table *t)
{
	u64h_iter_init(&it->it, &t->h);
	return chunk_iter_next(it);
}

struct chunk *chunk_iter_next(struct chunk_iter *it)
{
	return chunk_of_node(u64h_next(&it->it));
}

struct chunk *chunk_cursor_next(const struct chunk_table *t, struct chunk_cursor *cur, bool *wrapped)
{
	const struct u64h *h = &t->h;
	if (!h->n || !h->nb)
		return NULL;
	/* at most every bucket once, plus the one we start in */
	for (size_t tries = 0; tries <= h->nb; tries++) {
		if (cur->bucket >= h->nb) { /* the end, or the table shrank */
			cur->bucket = 0;
			cur->pos = 0;
			*wrapped = true;
		}
		struct u64h_node *n = h->b[cur->bucket];
		for (size_t i = 0; n && i < cur->pos; i++)
			n = n->next;
		if (n) {
			cur->pos++;
			return chunk_of_node(n);
		}
		cur->bucket++;
		cur->pos = 0;
	}
	return NULL;
}

void cfile_ref(struct cfile *f)
{
	f->refs++;
	if (f->seg) /* not reclaimed while held (segment.h) */
		segment_hold(f->seg);
}

static void cfile_put(struct cache *cache, struct cfile *f);

void cfile_unref(struct cache *cache, struct cfile *f)
{
	loop_assert();
	struct segment *g = f->seg;
	if (g && segment_unhold(g) && g->named && segment_disk_bytes(g) > g->live)
		mover_kick(cache); /* its dead bytes may be reclaimed now */
	cfile_put(cache, f);
}

/* Let go of one reference: a holder's (cfile_unref) or the chunk's own. */
static void cfile_put(struct cache *cache, struct cfile *f)
{
	if (--f->refs)
		return;
	if (f->tier == CFILE_IN_RAM) {
		cache->unkept_ram -= f->len;
		close(f->fd);
		free(f);
		return;
	}
	struct tier *t = &cache->tiers[f->tier];
	if (f->seg) {
		/* an item of a segment, dead and unheld: its blocks go now
		 * where the file system punches holes (seg_punch.h); the rest of
		 * the segment's bytes leave the tier when it is unlinked and its
		 * last reference goes */
		seg_punch_item(cache, f->tier, f->seg, f->off, f->len);
		uint64_t size = segment_disk_bytes(f->seg);
		if (segment_unref(&cache->segs[f->tier], f->seg))
			tier_unhold(t, size);
		free(f);
		return;
	}
	/* the last holder of a detached (already unlinked) file let go: its
	 * blocks are free now */
	tier_unhold(t, f->len);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static struct cfile *cfile_new(struct chunk *c)
{
	struct cfile *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->chunk = c;
	f->key = c->key;
	f->len = c->len;
	f->tier = c->tier;
	f->refs = 1;
	f->fd = -1;
	return f;
}

/* Open descriptors of recently handed-out chunk files: a hit costs a dup()
 * instead of a path lookup. Direct-mapped by chunk key; private to this file. */
struct fdslot {
	const struct cfile *f;
	int fd;
};

int chunk_fdcache_init(struct cache *cache)
{
	cache->fdcache = calloc(FDCACHE_SLOTS, sizeof(*cache->fdcache));
	if (!cache->fdcache)
		return -ENOMEM;
	for (unsigned i = 0; i < FDCACHE_SLOTS; i++)
		cache->fdcache[i].fd = -1;
	return 0;
}

void chunk_fdcache_free(struct cache *cache)
{
	for (unsigned i = 0; cache->fdcache && i < FDCACHE_SLOTS; i++)
		if (cache->fdcache[i].fd >= 0)
			close(cache->fdcache[i].fd);
	free(cache->fdcache);
	cache->fdcache = NULL;
}

/* A file leaving (unlinked): its cached descriptor must never be handed out
 * again, and the cfile's address may be reused. */
static void fdcache_forget(struct cache *cache, const struct cfile *f)
{
	struct fdslot *s = &cache->fdcache[f->key & (FDCACHE_SLOTS - 1)];
	if (s->f == f) {
		close(s->fd);
		s->fd = -1;
		s->f = NULL;
	}
}

void chunk_segment_gone(struct cache *cache, uint8_t tier, uint64_t size, uint32_t refs)
{
	struct tier *t = &cache->tiers[tier];
	if (refs)
		tier_hold_segment(t, size); /* tier_unhold when the last goes */
	else
		tier_release(t, size);
}

void chunk_segment_item_dead(struct cache *cache, uint8_t tier, struct segment *g, uint32_t len)
{
	uint64_t size = segment_disk_bytes(g);
	uint32_t refs = g->refs;
	if (segment_item_dead(&cache->segs[tier], g, len))
		chunk_segment_gone(cache, tier, size, refs);
}

/* Unlink a chunk's current file and let go of the chunk's reference. */
static void cfile_detach(struct cache *cache, struct cfile *f)
{
	char path[PATH_MAX + 64];
	struct tier *t = &cache->tiers[f->tier];
	if (f->seg) {
		/* its bytes stay in the segment, dead, until the segment goes */
		seg_link_del(&f->seg_link);
		f->chunk = NULL;
		tier_item_dead(t);
		chunk_segment_item_dead(cache, f->tier, f->seg, f->len);
		cfile_put(cache, f); /* the chunk's own reference */
		return;
	}
	fdcache_forget(cache, f);
	tier_chunk_path(t, f->key, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("tier=%s op=unlink path=%s err=\"%s\"", t->name, path, strerror(errno));
	f->chunk = NULL;
	tier_chunk_unnamed(t, f->len); /* undone by cfile_unref when refs reach 0 */
	cfile_unref(cache, f);
}

void chunk_policy_insert(struct cache *cache, struct chunk *c, uint64_t now)
{
	(void)cache;
	c->pe.key = c->key;
	c->pe.size = c->len;
	policy_insert(c->ds->pol[c->tier], &c->pe, now);
}

void chunk_policy_moved_in(struct cache *cache, struct chunk *c, uint8_t from, uint64_t now)
{
	(void)cache;
	c->pe.key = c->key;
	c->pe.size = c->len;
	if (from == TIER_HOT && c->tier == TIER_WARM)
		placement_demoted_insert(&c->ds->pl, &c->pe, now);
	else
		policy_insert(c->ds->pol[c->tier], &c->pe, now);
}

void chunk_policy_reinsert(struct cache *cache, struct chunk *c, uint64_t now)
{
	(void)cache;
	policy_reinsert(c->ds->pol[c->tier], &c->pe, now);
}

void chunk_policy_remove(struct cache *cache, struct chunk *c)
{
	(void)cache;
	policy_remove(c->ds->pol[c->tier], &c->pe);
}

void chunk_persist_at(struct cache *cache, const struct chunk *c, uint8_t tier, uint64_t seg,
		      uint64_t seg_off)
{
	struct index_chunk ic = {
		.key = c->key,
		.tier = tier,
		.idx = c->idx,
		.len = c->len,
		.checksum = c->checksum,
		.atime_s = c->atime_s,
		.src = c->src,
		.dataset = c->ds->name,
		.path = c->path,
		.seg = seg,
		.seg_off = seg_off,
	};
	if (cache->ix && index_chunk_put(cache->ix, &ic) < 0)
		log_err("dataset=%s path=%s chunk=%u op=index_put err=\"index write failed\"",
			c->ds->name, c->path, c->idx);
}

static void persist(struct cache *cache, const struct chunk *c)
{
	chunk_persist_at(cache, c, c->tier, c->file->seg ? c->file->seg->id : 0,
			 c->file->seg ? c->file->off : 0);
}

void chunk_persist(struct cache *cache, const struct chunk *c)
{
	persist(cache, c);
}

struct chunk *chunk_publish(struct cache *cache, struct dataset *ds, const char *path,
			    const struct cold_stat *src, uint32_t idx, uint32_t len, uint64_t checksum,
			    uint8_t tier, int64_t atime_s, bool do_persist)
{
	loop_assert();
	struct chunk *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = strdup(path);
	if (!c->path) {
		free(c);
		return NULL;
	}
	c->key = chunk_key(ds->name, path, src, idx);
	c->ds = ds;
	c->src = *src;
	c->idx = idx;
	c->len = len;
	c->checksum = checksum;
	c->atime_s = atime_s;
	c->tier = tier;
	c->file = cfile_new(c);
	if (!c->file) {
		free(c->path);
		free(c);
		return NULL;
	}
	chunk_table_add(&cache->chunks, c);
	tier_chunk_named(&cache->tiers[tier]);
	ds->resident[tier] += len;
	if (do_persist)
		persist(cache, c);
	chunk_policy_insert(cache, c, cache_now_ns());
	return c;
}

void chunk_set_segment(struct chunk *c, struct segment *g, uint64_t off)
{
	c->file->seg = g;
	c->file->off = off;
	segment_ref(g);
	seg_link_add_tail(&g->items_live, &c->file->seg_link);
}

void chunk_loc_path(const struct cache *cache, const struct chunk *c, char *buf, size_t n)
{
	if (c->file->seg)
		snprintf(buf, n, "%s", c->file->seg->path);
	else
		tier_chunk_path(&cache->tiers[c->tier], c->key, buf, n);
}

void chunk_move_commit(struct cache *cache, struct chunk *c, uint8_t new_tier, struct segment *seg,
		       uint64_t off)
{
	struct cfile *old = c->file;
	struct cfile *nf = calloc(1, sizeof(*nf));
	if (!nf) {
		chunk_drop(cache, c, "oom");
		return;
	}
	c->ds->resident[c->tier] -= c->len;
	c->tier = new_tier;
	c->ds->resident[new_tier] += c->len;
	*nf = (struct cfile){
		.chunk = c, .key = c->key, .len = c->len, .tier = new_tier, .refs = 1, .fd = -1};
	c->file = nf;
	if (seg)
		chunk_set_segment(c, seg, off);
	tier_chunk_named(&cache->tiers[new_tier]);
	/* index first: after a crash here the record names the new file, the
	 * old one is an orphan that startup removes. The new file was synced
	 * by the mover: a fill's sync still pending for the old one is moot. */
	c->sync_seq = 0;
	persist(cache, c);
	cfile_detach(cache, old);
}

struct chunk *chunk_unkept_new(struct cache *cache, struct dataset *ds, const char *path,
			       const struct cold_stat *src, uint32_t idx, uint32_t len, uint8_t tier,
			       int fd)
{
	struct chunk *c = calloc(1, sizeof(*c));
	struct cfile *f = calloc(1, sizeof(*f));
	char *p = strdup(path);
	if (!c || !f || !p) {
		free(c);
		free(f);
		free(p);
		return NULL;
	}
	c->key = chunk_key(ds->name, path, src, idx);
	c->ds = ds;
	c->path = p;
	c->src = *src;
	c->idx = idx;
	c->len = len;
	c->tier = tier == CFILE_IN_RAM ? TIER_HOT : tier; /* where it is served from */
	c->state = CHUNK_UNKEPT;
	*f = (struct cfile){.key = c->key, .len = len, .tier = tier, .refs = 1, .fd = fd};
	c->file = f;
	/* its bytes are on the tier's disk but under no name: count them as
	 * held until the last descriptor goes (cfile_unref); in memory they
	 * are counted in unkept_ram already */
	if (tier != CFILE_IN_RAM)
		tier_hold_unnamed(&cache->tiers[tier], len);
	return c;
}

void chunk_unkept_free(struct cache *cache, struct chunk *c)
{
	cfile_unref(cache, c->file);
	free(c->path);
	free(c);
}

void chunk_drop(struct cache *cache, struct chunk *c, const char *why)
{
	loop_assert();
	if (c->state == CHUNK_MOVING) {
		/* the copy in flight still reads the file: finish there */
		c->doomed = true;
		return;
	}
	log_debug("dataset=%s path=%s chunk=%u tier=%s op=drop why=%s", c->ds->name, c->path, c->idx,
		  cache->tiers[c->tier].name, why);
	if (cache->hooks.chunk_dropped)
		cache->hooks.chunk_dropped(cache->hooks.arg, c);
	if (c->state == CHUNK_PINNED) {
		/* in no policy (a stale source version, a bad checksum) */
		cache->pinned[c->tier] -= c->len;
		c->ds->pinned_bytes -= c->len;
	} else {
		chunk_policy_remove(cache, c);
	}
	/* its record goes with the next index write, or the next punches
	 * (committed before them), or after SEG_PUNCH_DELAY_US: one write for
	 * a stream of drops instead of one each */
	if (cache->ix) {
		index_chunk_delete_later(cache->ix, c->key);
		seg_punch_flush_later(cache);
	}
	chunk_table_del(&cache->chunks, c);
	c->ds->resident[c->tier] -= c->len;
	cfile_detach(cache, c->file);
	free(c->path);
	free(c);
}

void chunk_count_read(struct cache *cache, const struct chunk *c)
{
	if (c->file->tier < TIER_COUNT)
		tier_count_read(&cache->tiers[c->file->tier], c->len);
}

int chunk_open_fd(struct cache *cache, const struct chunk *c)
{
	char path[PATH_MAX + 64];
	struct fdslot *s = &cache->fdcache[c->key & (FDCACHE_SLOTS - 1)];
	if (c->file->seg)
		return segment_open_fd(c->file->seg);
	if (c->file->fd >= 0) { /* unkept: no name to open */
		int fd = fcntl(c->file->fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	if (s->f != c->file) {
		tier_chunk_path(&cache->tiers[c->tier], c->key, path, sizeof(path));
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (s->fd >= 0)
			close(s->fd);
		s->fd = fd;
		s->f = c->file;
	}
	int fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

void chunk_drop_version(struct cache *cache, struct dataset *ds, const char *path,
			const struct cold_stat *src, const char *why)
{
	uint32_t cs = ds->conf.chunk_size;
	uint64_t n = src->size ? (src->size + cs - 1) / cs : 1;
	for (uint64_t i = 0; i < n && i <= UINT32_MAX; i++) {
		struct chunk *c = chunk_find(&cache->chunks, chunk_key(ds->name, path, src, (uint32_t)i));
		if (c)
			chunk_drop(cache, c, why);
	}
}
