/*
 * Single-flight chunk fills: see fill.h.
 *
 * A fill lives in a small hash table keyed by chunk key while it runs, so a
 * second request for the same chunk joins its waiter list instead of reading
 * the cold store again. Space on the target tier is reserved before the
 * cold read starts, so the tier can never be overcommitted by fills.
 */
#include "fill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "chunk.h"
#include "dataset.h"
#include "log.h"
#include "manifest.h"
#include "mover.h"
#include "workers.h"

struct fill {
	struct job job;
	struct fill *hnext;
	struct daemon *d;
	struct dataset *ds;
	uint64_t key;
	char *path;
	struct cold_stat src;
	uint32_t idx;
	uint32_t len;
	uint8_t tier;
	struct cold_io io;
	void *buf;
	uint64_t checksum;
	int err;
	char tmp[PATH_MAX + 96];
	char final[PATH_MAX + 96];
	struct waiter *waiters, **wtail;
};

int fill_table_init(struct fill_table *t)
{
	t->nb = 256;
	t->n = 0;
	t->b = calloc(t->nb, sizeof(*t->b));
	return t->b ? 0 : -ENOMEM;
}

void fill_table_free(struct fill_table *t)
{
	free(t->b);
	t->b = NULL;
}

size_t fill_inflight(const struct daemon *d)
{
	return d->fills.n;
}

static struct fill *fill_find(struct fill_table *t, uint64_t key)
{
	for (struct fill *f = t->b[key & (t->nb - 1)]; f; f = f->hnext)
		if (f->key == key)
			return f;
	return NULL;
}

static void fill_unlink(struct fill_table *t, struct fill *f)
{
	for (struct fill **p = &t->b[f->key & (t->nb - 1)]; *p; p = &(*p)->hnext) {
		if (*p == f) {
			*p = f->hnext;
			t->n--;
			return;
		}
	}
}

/* Worker: checksum and publish the bytes in f->buf. */
static void fill_write(struct fill *f)
{
	int fd = -1;
	if (f->err)
		return;
	f->checksum = XXH64(f->buf, f->len, 0);
	f->err = tier_file_write(f->tmp, f->final, f->buf, f->len, &fd);
	if (fd >= 0)
		close(fd);
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
	fill_check_read(f, cold_read(&f->ds->cold, &f->io));
	fill_write(f);
}

/* Worker, async backends: the read is done, write. */
static void fill_work_write(struct job *j)
{
	fill_write((struct fill *)j);
}

/* Backend completion thread (async backends): hand over to a worker. */
static void fill_io_done(struct cold_io *io)
{
	struct fill *f = io->arg;
	fill_check_read(f, io->result);
	f->job.work = fill_work_write;
	workers_submit(f->d->workers, &f->job);
}

static void fill_note_stale(struct daemon *d, struct fill *f)
{
	struct dataset *ds = f->ds;
	d->ctr.stale_reads++;
	if (!ds->mf)
		return;
	struct mf_entry *e = manifest_find(ds->mf, f->path);
	if (e && cold_stat_same(&e->st, &f->src))
		e->checked_ns = 0; /* the next open revalidates this file */
}

/* Loop: publish and answer every waiter. */
static void fill_done(struct job *j)
{
	struct fill *f = (struct fill *)j;
	struct daemon *d = f->d;
	struct tier *t = &d->tiers[f->tier];
	struct chunk *c = NULL;
	int err = f->err;

	fill_unlink(&d->fills, f);
	dataset_note_cold(d, f->ds, err);
	if (!err) {
		tier_commit(t, f->len);
		c = chunk_publish(d, f->ds, f->path, &f->src, f->idx, f->len, f->checksum, f->tier,
				  daemon_wall_s(), true);
		if (!c) {
			err = -ENOMEM;
			unlink(f->final);
			t->used -= f->len;
		} else {
			d->ctr.bytes_from_cold += f->len;
			f->ds->bytes_from_cold += f->len;
		}
	} else {
		tier_unreserve(t, f->len);
		d->ctr.cold_errors++;
		if (err == -ESTALE)
			fill_note_stale(d, f);
		log_warn("dataset=%s path=%s chunk=%u op=fill err=\"%s\"", f->ds->name, f->path, f->idx,
			 strerror(-err));
	}
	struct waiter *w = f->waiters;
	while (w) {
		struct waiter *next = w->next;
		w->cb(d, w, c, err);
		w = next;
	}
	free(f->buf);
	free(f->path);
	free(f);
	mover_kick(d);
}

/* Where a new chunk goes: hot if it has room, else warm, else hot after
 * dropping its coldest chunks. The mover keeps hot under its high
 * watermark, so the first choice nearly always works. */
static int fill_place(struct daemon *d, uint32_t len, uint8_t *tier)
{
	if (tier_reserve(&d->tiers[TIER_HOT], len)) {
		*tier = TIER_HOT;
		return 0;
	}
	if (tier_reserve(&d->tiers[TIER_WARM], len)) {
		*tier = TIER_WARM;
		return 0;
	}
	if (mover_make_room(d, TIER_HOT, len) == 0 && tier_reserve(&d->tiers[TIER_HOT], len)) {
		*tier = TIER_HOT;
		return 0;
	}
	return -ENOSPC;
}

int fill_get(struct daemon *d, struct dataset *ds, const char *path, const struct cold_stat *src,
	     uint32_t idx, struct waiter *w, struct chunk **out)
{
	uint64_t key = chunk_key(ds->name, path, src, idx);
	struct chunk *c = chunk_find(&d->chunks, key);
	if (c) {
		*out = c;
		return 1;
	}
	struct fill *f = fill_find(&d->fills, key);
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
	f->buf = malloc(len ? len : 1);
	if (!f->path || !f->buf) {
		free(f->path);
		free(f->buf);
		free(f);
		return -ENOMEM;
	}
	int rc = fill_place(d, len, &f->tier);
	if (rc < 0) {
		log_warn("dataset=%s path=%s chunk=%u op=fill err=\"no tier has room: every chunk is "
			 "held open by clients\"",
			 ds->name, path, idx);
		free(f->path);
		free(f->buf);
		free(f);
		return rc;
	}
	f->d = d;
	f->ds = ds;
	f->key = key;
	f->src = *src;
	f->idx = idx;
	f->len = len;
	f->waiters = w;
	w->next = NULL;
	f->wtail = &w->next;
	tier_tmp_path(&d->tiers[f->tier], key, f->tmp, sizeof(f->tmp));
	tier_chunk_path(&d->tiers[f->tier], key, f->final, sizeof(f->final));
	f->io = (struct cold_io){
		.path = f->path,
		.expect = *src,
		.off = off,
		.len = len,
		.buf = f->buf,
		.done = fill_io_done,
		.arg = f,
	};
	f->job.done = fill_done;
	if (d->fills.n >= d->fills.nb) {
		/* grow the fill table (rare: fills in flight are bounded by clients) */
		size_t nb = d->fills.nb * 2;
		struct fill **b = calloc(nb, sizeof(*b));
		if (b) {
			for (size_t i = 0; i < d->fills.nb; i++) {
				for (struct fill *x = d->fills.b[i], *nx; x; x = nx) {
					nx = x->hnext;
					x->hnext = b[x->key & (nb - 1)];
					b[x->key & (nb - 1)] = x;
				}
			}
			free(d->fills.b);
			d->fills.b = b;
			d->fills.nb = nb;
		}
	}
	f->hnext = d->fills.b[key & (d->fills.nb - 1)];
	d->fills.b[key & (d->fills.nb - 1)] = f;
	d->fills.n++;
	d->ctr.cold_reads++;

	if (ds->cold.ops->caps & COLD_CAP_ASYNC) {
		ssize_t r = cold_read(&ds->cold, &f->io);
		if (r < 0) {
			/* never started: finish through the loop like any failure */
			f->err = (int)r;
			f->job.work = NULL;
			workers_post(d->workers, &f->job);
		}
	} else {
		f->job.work = fill_work_sync;
		workers_submit(d->workers, &f->job);
	}
	return 0;
}
