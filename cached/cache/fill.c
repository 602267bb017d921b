/*
 * Single-flight chunk fills: see fill.h.
 *
 * A fill lives in a small hash table keyed by chunk key while it runs, so a
 * second request for the same chunk joins its waiter list instead of reading
 * the cold store again. Space on the target tier is reserved before the
 * cold read starts, so the tier can never be overcommitted by fills.
 *
 * A kept chunk is answered before it is durable: the worker writes its
 * file and renames it into place without fdatasync, the loop publishes it
 * in memory (table, policy) and answers the waiters at once, and hands it
 * to durable.c, which fdatasyncs the file and writes the index record
 * later (after daemon.sync_delay, or sooner under sync_backlog), or never
 * if the chunk is gone by then. The index is what survives a crash, and it
 * only ever names synced files: after a crash before the sync, the file
 * has no record and startup removes it as an orphan; the chunk is read
 * from the cold store again. Readers before the sync read the same bytes
 * from the page cache (the file is immutable once renamed). This takes the
 * disk flush (~2 ms per 4 MiB on the test machine's disk) off each miss.
 * A sync that fails drops the chunk.
 *
 * Where the chunk goes is the dataset's placement's call (policy_glue.h).
 * A chunk it admits nowhere (TIER_NONE) is still served: its bytes go to a
 * temp file on a tier that is unlinked as soon as it is written, and the
 * waiters get descriptors of that nameless file. The bytes count in the
 * tier's used (as held, unlinked bytes) until the last descriptor is
 * released, exactly like an evicted file a client still holds. They go
 * in the band between a tier's budget and its high watermark, so that they
 * never make the mover give up what the policies chose to keep; when that
 * band is used up (large chunks, many held), in a sealed memfd, up to
 * UNKEPT_RAM_MAX bytes in all; past that, on any tier with room. Chosen
 * over streaming because the client library reads every chunk through a
 * descriptor and a streamed handle would read the cold store once per
 * READ, not once per chunk.
 */
#include "fill.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* XXH3_state_t on the stack (fill_write_body): the header and the library
 * come from the same Debian package */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "chunk.h"
#include "chunk_sum.h"
#include "dataset.h"
#include "durable.h"
#include "fill_buf.h"
#include "log.h"
#include "loop.h"
#include "manifest.h"
#include "mover.h"
#include "policy_glue.h"
#include "seg_place.h"
#include "tier_health.h"
#include "verify.h"
#include "workers.h"

/* Memory for unkept chunks when no tier has band left (see above). */
#define UNKEPT_RAM_MAX (256ull << 20)
/* A segment item at most this large is written on the cold backend's
 * completion thread (fill_io_done); a larger one (segment_threshold may be
 * up to 64M) goes to a worker, so that thread never holds a long write. */
#define FILL_INLINE_MAX (1u << 20)
/* room for one of a fill's file names */
#define FILL_PATH (PATH_MAX + 96)
/* fill.tried: a tier, or memory, whose write failed for this fill */
#define FILL_TRIED(tier) (1u << ((tier) == CFILE_IN_RAM ? TIER_COUNT : (tier)))

struct fill {
	struct job job;
	struct u64h_node hn;   /* fill table link (keyed by key) */
	struct cache *cache;
	struct dataset *ds;
	uint64_t key;
	char *path;
	struct cold_stat src;
	uint32_t idx;
	uint32_t len;
	uint8_t tier;
	bool placed; /* holds a reservation on tier (or unkept_ram) */
	uint8_t tried; /* FILL_TRIED(tier) of every place whose write failed */
	bool keep;   /* admitted: publish; else serve from a nameless file */
	bool prefetch; /* started by the prefetcher (READ_PREFETCH), not a read */
	bool lost;     /* !keep although a tier had room for it (fill_place) */
	int fd;      /* !keep: the written, unlinked file; keep: the published one */
	struct segment *seg; /* keep, small: the segment it is appended to (else NULL) */
	uint64_t seg_off;
	int seg_wfd;         /* the segment's descriptor for the worker's pwrite */
	struct cold_io io;
	struct remote_read rr; /* remote: the request to the chunk's home */
	bool remote;           /* the bytes come from the home node, not the cold store */
	void *buf;
	size_t buf_cap; /* fill_buf_get */
	uint64_t checksum;
	int err;     /* reading the cold store (or memory): fails the fill */
	int werr;    /* writing the bytes where they were placed: try elsewhere */
	/* the temp and final names of a chunk file of its own (fill_paths);
	 * NULL for a segment item, which needs neither: one allocation of
	 * 2 * FILL_PATH, so that a fill is small and cheap to clear */
	char *tmp, *final;
	struct waiter *waiters, **wtail;
	uint64_t start_ns; /* the miss, for the cold-read latency histogram */
	uint64_t cold_ns;  /* its cold read was sent (fill_start_cold), 0 before */
	uint64_t remote_ns; /* the home's reply was in (stage times, log_debug) */
	uint64_t work_ns[2]; /* the worker's write began and ended (stage times, log_debug) */
};

int fill_table_init(struct fill_table *t)
{
	return u64h_init(&t->h, 256,
			 (ptrdiff_t)offsetof(struct fill, key) - (ptrdiff_t)offsetof(struct fill, hn));
}

void fill_table_free(struct fill_table *t)
{
	fill_buf_free_all(t);
	u64h_free(&t->h);
}

size_t fill_inflight(const struct cache *cache)
{
	return cache->fills.h.n;
}

static struct fill *fill_find(struct fill_table *t, uint64_t key)
{
	struct u64h_node *n = u64h_find(&t->h, key);
	return n ? (struct fill *)(void *)((char *)n - offsetof(struct fill, hn)) : NULL;
}

bool fill_cold_since(const struct cache *cache, uint64_t key, uint64_t since_ns)
{
	const struct u64h_node *n = u64h_find(&cache->fills.h, key);
	const struct fill *f = n ? (const struct fill *)(const void *)((const char *)n -
								      offsetof(struct fill, hn))
				 : NULL;
	return f && !f->remote && f->cold_ns && f->cold_ns >= since_ns;
}

bool fill_pending(const struct cache *cache, uint64_t key)
{
	return u64h_find(&cache->fills.h, key) != NULL;
}

static void fill_unlink(struct fill_table *t, struct fill *f)
{
	u64h_del(&t->h, &f->hn);
}

/* Loop: the names of f's chunk file on f->tier (not in memory). */
static int fill_paths(struct cache *cache, struct fill *f)
{
	if (!f->tmp) {
		f->tmp = malloc(2 * FILL_PATH);
		if (!f->tmp)
			return -ENOMEM;
		f->final = f->tmp + FILL_PATH;
	}
	tier_tmp_path(&cache->tiers[f->tier], f->key, f->tmp, FILL_PATH);
	tier_chunk_path(&cache->tiers[f->tier], f->key, f->final, FILL_PATH);
	return 0;
}

static void fill_free(struct cache *cache, struct fill *f)
{
	fill_buf_put(&cache->fills, f->buf, f->buf_cap);
	free(f->tmp);
	free(f->path);
	free(f);
}

/* Worker: len bytes in a new memfd sealed against any change, so that the
 * descriptors handed to clients are as immutable as tier files. */
static int memfd_write_sealed(const void *buf, size_t len, int *fd)
{
	int rc = 0;
	*fd = memfd_create("tiercache-unkept", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return -errno;
	rc = tier_write_all(*fd, buf, len);
	if (rc < 0)
		goto out;
	if (fcntl(*fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		rc = -errno;
out:
	if (rc < 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

static void fill_sum_piece(void *arg, const void *p, size_t n)
{
	chunk_sum_update(arg, p, n);
}

static void fill_nosum_piece(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
}

/* Worker: checksum and publish the bytes in f->buf. The checksum is taken
 * piece by piece just before each piece is written (chunk_checksum's value,
 * by the streaming API), so the chunk is read from memory once, not twice.
 * A peer's bytes were checksummed whole against the home's checksum
 * before anything is written: that value is the chunk's, not taken again. */
static void fill_write_body(struct fill *f);

static void fill_write(struct fill *f)
{
	f->work_ns[0] = cache_now_ns();
	fill_write_body(f);
	f->work_ns[1] = cache_now_ns();
}

static void fill_write_body(struct fill *f)
{
	f->werr = 0;
	if (f->err)
		return;
	if (f->remote && chunk_checksum(f->buf, f->len) != f->rr.checksum) {
		/* not the bytes the home says it sent: nothing is written */
		f->err = -EBADMSG;
		return;
	}
	if (!f->keep)
		f->checksum = f->remote ? f->rr.checksum : chunk_checksum(f->buf, f->len);
	if (!f->keep && f->tier == CFILE_IN_RAM) {
		f->werr = memfd_write_sealed(f->buf, f->len, &f->fd);
		return;
	}
	if (!f->keep) {
		f->werr = tier_file_write_unlinked(f->tmp, f->buf, f->len, &f->fd);
		return;
	}
	bool sum = !f->remote; /* a peer's bytes: checked above, one pass */
	XXH3_state_t state; /* on the stack: no malloc per fill */
	XXH3_state_t *st = &state;
	XXH3_INITSTATE(st);
	if (XXH3_64bits_reset(st) != XXH_OK) {
		f->err = -EINVAL;
		return;
	}
	if (f->seg) {
		/* a small chunk: appended to its segment at the offset the loop
		 * gave it, checksummed piece by piece just before each write */
		const char *p = f->buf;
		for (uint32_t at = 0; at < f->len && !f->werr; at += TIER_PIECE) {
			uint32_t n = f->len - at < TIER_PIECE ? f->len - at : TIER_PIECE;
			if (sum)
				chunk_sum_update(st, p + at, n);
			f->werr = segment_pwrite(f->seg_wfd, p + at, n, f->seg_off + at);
		}
	} else {
		f->werr = tier_file_write_pieces(f->tmp, f->final, f->buf, f->len, false,
						 sum ? fill_sum_piece : fill_nosum_piece, st, &f->fd);
	}
	f->checksum = sum ? XXH3_64bits_digest(st) : f->rr.checksum;
}

static void fill_check_read(struct fill *f, ssize_t got)
{
	if (got < 0)
		f->err = (int)got;
	else if ((size_t)got != f->len)
		f->err = -ESTALE; /* the source is shorter than its version said */
}

/* Worker, blocking backends: read then write. */
static void fill_work_sync(struct job *j)
{
	struct fill *f = (struct fill *)j;
	f->io.result = cold_read(&f->ds->cold, &f->io);
	fill_check_read(f, f->io.result);
	fill_write(f);
}

/* Worker, async backends: the read is done, write. */
static void fill_work_write(struct job *j)
{
	fill_write((struct fill *)j);
}

/* Backend completion thread (async backends). A small chunk bound for a
 * segment (at most FILL_INLINE_MAX bytes: a checksum and one pwrite into
 * the page cache, tens of microseconds) and a failed read (nothing to
 * write) go straight to the loop from here: one thread hand-off fewer per
 * miss than through a worker, which is most of a small miss's cost over
 * RADOS (docs/ceph.md, "Measured: small files from RADOS"). So does a
 * small unkept chunk bound for memory (a memfd: no file system, no disk).
 * Everything else (a chunk file of its own, an unkept chunk on a tier) is
 * written by a worker,
 * so that the backend's thread never waits on a file create or a large
 * write. */
static void fill_io_done(struct cold_io *io)
{
	struct fill *f = io->arg;
	fill_check_read(f, io->result);
	bool small_unkept = !f->keep && f->tier == CFILE_IN_RAM && f->len <= FILL_INLINE_MAX;
	if (f->err || (f->seg && f->len <= FILL_INLINE_MAX) || small_unkept) {
		fill_write(f);
		workers_post(f->cache->workers, &f->job);
		return;
	}
	f->job.work = fill_work_write;
	workers_submit(f->cache->workers, &f->job);
}

static void fill_note_stale(struct cache *cache, struct fill *f)
{
	struct dataset *ds = f->ds;
	cache->ctr.stale_reads++;
	if (!ds->mf)
		return;
	struct mf_entry *e = manifest_find(ds->mf, f->path);
	if (e && cold_stat_same(&e->st, &f->src))
		e->checked_ns = 0; /* the next open revalidates this file */
}

/* Give back what placing the fill took (its reservation, the placement's
 * bytes in flight). */
static void fill_unplace(struct fill *f)
{
	struct cache *cache = f->cache;
	if (!f->placed)
		return;
	f->placed = false;
	if (f->keep)
		policy_glue_arrived(f->ds, f->tier, f->len);
	else if (f->tier != CFILE_IN_RAM)
		cache->unkept_filling[f->tier] -= f->len;
	if (f->tier == CFILE_IN_RAM)
		cache->unkept_ram -= f->len;
	else
		tier_unreserve(&cache->tiers[f->tier], f->len);
}

static int place_unkept(struct cache *cache, uint32_t len, unsigned avoid, uint8_t *tier);

/* Loop: the bytes are read but could not be written where they were
 * placed (a full, read-only, failing or removed tier; memory). The tier
 * hears of it (tier_health: room shrunk or tier failed), and the bytes go
 * to the other tier if the fill was to be kept and it has room, else they
 * are served unkept from wherever that can be. Returns true if the write
 * was queued again. The reader never sees the tier's error. */
static bool fill_retry(struct fill *f)
{
	struct cache *cache = f->cache;
	uint8_t was = f->tier;
	fill_unplace(f);
	f->tried |= (uint8_t)FILL_TRIED(was);
	if (was != CFILE_IN_RAM) {
		tier_health_write_error(cache, (enum tier_id)was, f->werr, f->tmp ? f->tmp : "(segment)");
		cache->ctr.fill_errors++;
	}
	log_warn("dataset=%s path=%s chunk=%u tier=%s op=fill_write err=\"%s\" action=\"writing "
		 "it elsewhere; the reader gets the bytes from there\"",
		 f->ds->name, f->path, f->idx, was == CFILE_IN_RAM ? "memory" : cache->tiers[was].name,
		 strerror(-f->werr));
	if (cache->stopping)
		return false;
	bool placed = false;
	if (f->keep) {
		for (int t = 0; t < TIER_COUNT && !placed; t++) {
			if ((f->tried & FILL_TRIED(t)) || !tier_reserve(&cache->tiers[t], f->len))
				continue;
			f->tier = (uint8_t)t;
			policy_glue_arriving(f->ds, t, f->len);
			placed = true;
		}
	}
	if (!placed) {
		f->keep = false;
		placed = place_unkept(cache, f->len, f->tried, &f->tier) == 0;
	}
	if (!placed)
		return false;
	f->placed = true;
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
	if (f->tier != CFILE_IN_RAM && fill_paths(cache, f) < 0) {
		fill_unplace(f);
		f->werr = -ENOMEM;
		return false;
	}
	f->werr = 0;
	f->job.work = fill_work_write;
	workers_submit(cache->workers, &f->job);
	return true;
}

/* Where a fill's bytes came from (status, the egress counters). */
static void fill_count_bytes(struct fill *f)
{
	struct cache *cache = f->cache;
	if (f->remote) {
		cache->ctr.bytes_from_peers += f->len;
		f->ds->bytes_from_peers += f->len;
		cache->ctr.peer_fills++;
	} else {
		cache->ctr.bytes_from_cold += f->len;
		f->ds->bytes_from_cold += f->len;
	}
}

static void fill_start_cold(struct fill *f);

/* Loop: publish and answer every waiter. */
static void fill_done(struct job *j)
{
	struct fill *f = (struct fill *)j;
	struct cache *cache = f->cache;

	if (f->remote && f->err && !cache->stopping) {
		/* the home sent bytes that do not match its checksum: nothing
		 * was written; read the cold store instead */
		cache->ctr.peer_bad++;
		log_warn("dataset=%s path=%s chunk=%u op=peer_fill err=\"%s\" action=\"reading the "
			 "cold store instead\"", f->ds->name, f->path, f->idx, strerror(-f->err));
		fill_start_cold(f);
		return;
	}
	if (f->seg && (f->err || f->werr)) {
		/* its place in the segment is dead bytes on the tier from now */
		struct segment *g = f->seg;
		uint64_t size = segment_disk_bytes(g);
		uint32_t refs = g->refs;
		f->seg = NULL;
		tier_adopt(&cache->tiers[f->tier], f->len);
		if (segment_write_end(&cache->segs[f->tier], g, f->len, false))
			chunk_segment_gone(cache, f->tier, size, refs);
	}
	if (!f->err && f->werr && fill_retry(f))
		return;
	bool in_ram = f->tier == CFILE_IN_RAM;
	struct tier *t = in_ram ? NULL : &cache->tiers[f->tier];
	struct chunk *c = NULL;
	int err = f->err ? f->err : f->werr;

	fill_unlink(&cache->fills, f);
	histogram_observe(&cache->lat_fill, cache_now_ns() - f->start_ns);
	if (f->remote)
		log_debug("op=peer_fill_done key=%016llx path=%s chunk=%u start_ns=%llu reply_ns=%llu work_ns=%llu "
			  "work_end_ns=%llu done_ns=%llu prefetch=%d",
			  (unsigned long long)f->key, f->path, f->idx, (unsigned long long)f->start_ns,
			  (unsigned long long)f->remote_ns, (unsigned long long)f->work_ns[0],
			  (unsigned long long)f->work_ns[1], (unsigned long long)cache_now_ns(), f->prefetch);
	else
		log_debug("op=cold_fill_done key=%016llx path=%s chunk=%u start_ns=%llu done_ns=%llu prefetch=%d",
			  (unsigned long long)f->key, f->path, f->idx, (unsigned long long)f->start_ns,
			  (unsigned long long)cache_now_ns(), f->prefetch);
	/* the cold read's outcome only: a tier's write error is no fault of
	 * the cold store (io.result: set by the read, < 0 if it failed) */
	if (!f->remote)
		dataset_note_cold(cache, f->ds, f->io.result < 0 ? (int)f->io.result : 0);
	if (f->placed && f->keep)
		policy_glue_arrived(f->ds, f->tier, f->len);
	else if (f->placed && !in_ram)
		cache->unkept_filling[f->tier] -= f->len;
	if (!err && !f->keep) {
		if (t)
			tier_commit(t, f->len);
		c = chunk_unkept_new(cache, f->ds, f->path, &f->src, f->idx, f->len, f->tier, f->fd);
		if (c)
			c->checksum = f->checksum;
		if (!c) {
			err = -ENOMEM;
			close(f->fd);
			if (t)
				tier_release(t, f->len);
			else
				cache->unkept_ram -= f->len;
		} else {
			fill_count_bytes(f);
			cache->ctr.served_unkept++;
			f->ds->served_unkept++;
			if (f->lost)
				cache->ctr.served_unkept_room++;
		}
	} else if (!err) {
		tier_commit(t, f->len);
		c = chunk_publish(cache, f->ds, f->path, &f->src, f->idx, f->len, f->checksum, f->tier,
				  cache_wall_s(), false);
		bool in_seg = f->seg != NULL;
		if (in_seg) {
			struct segment *g = f->seg;
			uint64_t size = segment_disk_bytes(g);
			uint32_t refs = g->refs;
			if (c)
				chunk_set_segment(c, g, f->seg_off);
			if (segment_write_end(&cache->segs[f->tier], g, f->len, c != NULL))
				chunk_segment_gone(cache, f->tier, size, refs);
			if (!c) {
				err = -ENOMEM;
				f->seg = NULL;
			}
		}
		if (!c && !in_seg) {
			err = -ENOMEM;
			close(f->fd);
			f->fd = -1;
			unlink(f->final);
			tier_release(t, f->len);
		} else if (c) {
			c->sync_seq = ++cache->sync_seq;
			fill_count_bytes(f);
		}
	} else {
		if (f->placed && t)
			tier_unreserve(t, f->len);
		else if (f->placed)
			cache->unkept_ram -= f->len;
		f->placed = false;
		if (err == -ESTALE)
			fill_note_stale(cache, f);
		if (!f->err) {
			/* the bytes were read but no tier and no memory could take
			 * them (fill_retry said why) */
			log_warn("dataset=%s path=%s chunk=%u op=fill err=\"no tier and no memory can "
				 "hold the chunk: %s\"", f->ds->name, f->path, f->idx, strerror(-err));
			err = -ENOSPC;
		} else if (err == -ESTALE && f->prefetch) {
			/* read ahead of a version the source no longer has (an
			 * open's revalidation finds the new one): no fault */
			log_info("dataset=%s path=%s chunk=%u op=prefetch err=\"%s\" "
				 "(changed at the source)", f->ds->name, f->path, f->idx, strerror(-err));
		} else {
			cache->ctr.cold_errors++;
			log_warn("dataset=%s path=%s chunk=%u op=fill err=\"%s\"", f->ds->name,
				 f->path, f->idx, strerror(-err));
		}
	}
	struct waiter *w = f->waiters;
	while (w) {
		struct waiter *next = w->next;
		w->cb(cache, w, c, err);
		w = next;
	}
	if (c && !f->keep)
		chunk_unkept_free(cache, c); /* what the waiters hold keeps it */
	else if (c && f->ds->removed)
		chunk_drop(cache, c, "dataset_removed"); /* a reload removed it meanwhile */
	else if (c)
		durable_add(cache, c); /* answered: durable, with its record, later */
	if (f->keep && f->fd >= 0)
		close(f->fd);
	fill_free(cache, f);
	mover_kick(cache);
}

/* Room for a chunk nobody keeps. Such chunks, like evicted files clients
 * still hold, belong in the band between a tier's budget (where its
 * policies keep it) and its high watermark: placed there, they can never
 * push the tier past it and make the mover give up what the policies chose
 * to keep. The tier with the most of that band left takes it; if neither
 * has enough, memory (up to UNKEPT_RAM_MAX); then any tier with room; else
 * hot after dropping chunks.
 *
 * A small chunk (at most FILL_INLINE_MAX) goes to memory first while
 * UNKEPT_RAM_MAX has room: on a tier it costs a file created, written,
 * unlinked and, at the last close, freed (about 90 us of file-system work
 * per chunk on ext4, most of what a miss that is not kept costs, e.g. once
 * the `epoch` policy's tiers are full: docs/ceph.md), where a sealed memfd
 * is written on the completion thread with no disk behind it. Its bytes
 * take page-cache memory either way while a client holds them. */
static int place_unkept(struct cache *cache, uint32_t len, unsigned avoid, uint8_t *tier)
{
	int best = TIER_NONE;
	uint64_t best_left = 0;
	if (len <= FILL_INLINE_MAX && !(avoid & FILL_TRIED(CFILE_IN_RAM)) &&
	    cache->unkept_ram + len <= UNKEPT_RAM_MAX) {
		cache->unkept_ram += len;
		*tier = CFILE_IN_RAM;
		return 0;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		struct tier *tr = &cache->tiers[t];
		if (!tr->present || tr->failed || (avoid & FILL_TRIED(t)))
			continue;
		uint64_t band = tr->high_bytes - policy_glue_budget(cache, (enum tier_id)t);
		uint64_t in = tr->held_dead + cache->unkept_filling[t];
		uint64_t left = in < band ? band - in : 0;
		if (left >= len && left > best_left) {
			best = t;
			best_left = left;
		}
	}
	if (best != TIER_NONE && tier_reserve(&cache->tiers[best], len)) {
		*tier = (uint8_t)best;
		goto out;
	}
	if (!(avoid & FILL_TRIED(CFILE_IN_RAM)) && cache->unkept_ram + len <= UNKEPT_RAM_MAX) {
		cache->unkept_ram += len;
		*tier = CFILE_IN_RAM;
		return 0;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		if (!(avoid & FILL_TRIED(t)) && tier_reserve(&cache->tiers[t], len)) {
			*tier = (uint8_t)t;
			goto out;
		}
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		if (!(avoid & FILL_TRIED(t)) && mover_make_room(cache, (enum tier_id)t, len) == 0 &&
		    tier_reserve(&cache->tiers[t], len)) {
			*tier = (uint8_t)t;
			goto out;
		}
	}
	return -ENOSPC;
out:
	cache->unkept_filling[*tier] += len;
	return 0;
}

/* Room for len bytes on tier `to` now: free room, or dead bytes of its
 * segments reclaimed. Nothing any policy keeps is given up. */
static bool fill_reserve(struct cache *cache, int to, uint32_t len)
{
	return tier_reserve(&cache->tiers[to], len) ||
	       (cache->segs[to].bytes_dead >= len && mover_reclaim(cache, to, len) &&
		tier_reserve(&cache->tiers[to], len));
}

/* Some tier had room its policies could have used for len bytes. */
static bool fill_some_room(const struct cache *cache, uint32_t len)
{
	for (int t = 0; t < TIER_COUNT; t++)
		if (policy_glue_room(cache, (enum tier_id)t) >= len)
			return true;
	return false;
}

/* Where a prefetch goes when hot has no room now: warm, if warm's policies
 * have room to spare (the prefetch then displaces nothing there either). */
static int fill_prefetch_instead(struct cache *cache, int refused, uint32_t len)
{
	if (refused == TIER_HOT && policy_glue_room(cache, TIER_WARM) >= len)
		return TIER_WARM;
	return TIER_NONE;
}

/* Where a new chunk goes. The placement picks the tier (ahead_hot, a plan's
 * prefetch: hot, the prefetcher checked it displaces nothing needed
 * sooner; a guess, READ_PLACED, is placed as a miss). When that
 * tier has no room at this moment (fills and moves in flight, files
 * clients hold, chunks served unkept take it), the chunk goes to the next
 * tier whose policy admits it (policy_glue_fill_instead): concurrency
 * must not throw away what the policies would keep. If none of them has
 * room, the last that admitted it (the one whose victims are dropped, not
 * demoted) gives up victims to make room. Only when that fails too is the
 * chunk served without being kept; *lost says a tier had room for it all
 * the same (counted: the goal is none). */
/* A prefetch a plan asked for goes to hot (ahead_hot, fill_place); a read,
 * and a guess (READ_PLACED), goes where the placement puts a miss. */
static bool fill_ahead_hot(const struct read_ctx *rc)
{
	return rc && (rc->flags & READ_PREFETCH) && !(rc->flags & READ_PLACED);
}

int fill_first_tier(struct cache *cache, struct dataset *ds, uint32_t len, const struct read_ctx *rc)
{
	return fill_ahead_hot(rc) ? TIER_HOT : policy_glue_fill_first(cache, ds, len);
}

static int fill_place(struct cache *cache, struct dataset *ds, uint64_t key, uint32_t len,
		      bool ahead_hot, uint8_t *tier, bool *keep, bool *lost)
{
	int to = ahead_hot ? TIER_HOT : policy_glue_fill(cache, ds, key, len);
	int first = to, last = TIER_NONE;
	while (to != TIER_NONE) {
		if (fill_reserve(cache, to, len))
			goto keep;
		last = to;
		to = ahead_hot ? fill_prefetch_instead(cache, to, len)
			       : policy_glue_fill_instead(cache, ds, to, key, len);
	}
	if (last != TIER_NONE && !ahead_hot &&
	    mover_make_room_now(cache, (enum tier_id)last, len) == 0 &&
	    tier_reserve(&cache->tiers[last], len)) {
		to = last;
		goto keep;
	}
	*keep = false;
	*lost = fill_some_room(cache, len);
	return place_unkept(cache, len, 0, tier);
keep:
	if (to != first)
		cache->ctr.fills_instead++;
	*tier = (uint8_t)to;
	*keep = true;
	*lost = false;
	policy_glue_arriving(ds, to, len);
	return 0;
}

/* Read the chunk from the cold store (the fill is in the table). */
static void fill_start_cold(struct fill *f)
{
	struct cache *cache = f->cache;
	uint64_t cs = f->ds->conf.chunk_size;
	f->remote = false;
	f->err = 0;
	f->io = (struct cold_io){
		.path = f->path,
		.expect = f->src,
		.off = (uint64_t)f->idx * cs,
		.len = f->len,
		.buf = f->buf,
		.done = fill_io_done,
		.arg = f,
	};
	f->job.done = fill_done;
	f->cold_ns = cache_now_ns();
	cache->ctr.cold_reads++;

	if (cold_is_async(&f->ds->cold)) {
		ssize_t r = cold_read(&f->ds->cold, &f->io);
		if (r < 0) {
			/* never started: finish through the loop like any failure */
			f->err = (int)r;
			f->io.result = r;
			f->job.work = NULL;
			workers_post(cache->workers, &f->job);
		}
	} else {
		f->job.work = fill_work_sync;
		workers_submit(cache->workers, &f->job);
	}
}

/* Loop: the home node answered (or could not). Its bytes are checked
 * against its checksum by the worker that writes them (fill_write); no
 * answer means the cold store. */
static void fill_remote_done(struct remote_read *rr)
{
	struct fill *f = rr->arg;
	struct cache *cache = f->cache;
	if (cache->stopping) {
		/* no cold read is started any more: end like any failure */
		f->err = rr->result < 0 ? rr->result : -ESHUTDOWN;
		f->io.result = 0;
		f->job.work = NULL;
		workers_post(cache->workers, &f->job);
		return;
	}
	if (rr->result < 0) {
		cache->ctr.peer_fallbacks++;
		fill_start_cold(f);
		return;
	}
	f->io.result = f->len;
	f->remote_ns = cache_now_ns();
	f->job.work = fill_work_write;
	workers_submit(cache->workers, &f->job);
}

int fill_get(struct cache *cache, struct dataset *ds, const char *path, const struct cold_stat *src,
	     uint32_t idx, const struct read_ctx *rc, struct waiter *w, struct chunk **out)
{
	loop_assert();
	uint64_t key = chunk_key(ds->name, path, src, idx);
	bool prefetch = rc && (rc->flags & READ_PREFETCH);
	if (!prefetch && !(rc && (rc->flags & READ_REFETCH))) /* a prefetch is not a read */
		policy_glue_access(cache, key, rc);
	struct chunk *c = chunk_find(&cache->chunks, key);
	if (c && c->unverified) {
		/* not checked since it was loaded (or reported): wait for that
		 * like a miss; 1: its file was gone, read it again */
		int v = verify_join(cache, c, VERIFY_FIRST_OPEN, w, NULL, NULL);
		if (v <= 0)
			return v;
		c = NULL;
	}
	if (c) {
		*out = c;
		return 1;
	}
	struct fill *f = fill_find(&cache->fills, key);
	if (f) {
		w->next = NULL;
		*f->wtail = w;
		f->wtail = &w->next;
		return 0;
	}
	if (!ds->opened)
		return -EHOSTDOWN; /* the backend never connected: nothing to read from */
	uint64_t cs = ds->conf.chunk_size;
	uint64_t off = (uint64_t)idx * cs;
	if (off >= src->size)
		return -EINVAL;
	uint32_t len = (uint32_t)(src->size - off < cs ? src->size - off : cs);

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->path = strdup(path);
	f->buf = fill_buf_get(&cache->fills, len, &f->buf_cap);
	if (!f->path || !f->buf) {
		free(f->path);
		fill_buf_put(&cache->fills, f->buf, f->buf_cap);
		free(f);
		return -ENOMEM;
	}
	int err = fill_place(cache, ds, key, len, fill_ahead_hot(rc), &f->tier, &f->keep, &f->lost);
	if (err < 0) {
		log_warn("dataset=%s path=%s chunk=%u op=fill err=\"no room anywhere: every tier is "
			 "full of chunks held open by clients (or failed) and the %llu MiB for chunks "
			 "served from memory are in use; the read fails with ENOSPC until clients "
			 "release chunks\"",
			 ds->name, path, idx, UNKEPT_RAM_MAX >> 20);
		free(f->path);
		fill_buf_put(&cache->fills, f->buf, f->buf_cap);
		free(f);
		return err;
	}
	f->start_ns = cache_now_ns();
	f->cache = cache;
	f->ds = ds;
	f->key = key;
	f->src = *src;
	f->idx = idx;
	f->prefetch = prefetch;
	f->len = len;
	f->fd = -1;
	f->placed = true;
	if (f->keep && seg_place(cache, ds, f->tier, len, &f->seg, &f->seg_off))
		f->seg_wfd = f->seg->wfd; /* else: its own file, as a large chunk */
	else if (f->tier != CFILE_IN_RAM && fill_paths(cache, f) < 0) {
		fill_unplace(f);
		fill_free(cache, f);
		return -ENOMEM;
	}
	f->waiters = w;
	w->next = NULL;
	f->wtail = &w->next;
	f->job.done = fill_done;
	u64h_add(&cache->fills.h, &f->hn);
	if (cache->hooks.remote_read && !(rc && (rc->flags & READ_PREV_HOME))) {
		f->rr = (struct remote_read){
			.ds = ds,
			.path = f->path,
			.src = *src,
			.idx = idx,
			.len = len,
			.key = key,
			.flags = rc ? rc->flags : 0,
			.buf = f->buf,
			.done = fill_remote_done,
			.arg = f,
		};
		if (cache->hooks.remote_read(cache->hooks.arg, &f->rr) == 0) {
			f->remote = true;
			return 0;
		}
	}
	fill_start_cold(f);
	return 0;
}
