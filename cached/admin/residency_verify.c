/*
 * Checksum re-reads of resident chunks: tierctl verify, and warm --verify
 * for each chunk it warmed. The read runs on the workers, on an fd and a
 * file reference taken on the loop; the verdict is applied on the loop
 * (a bad chunk is dropped). Loop thread unless a function says otherwise.
 */
#include "residency_op.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"

/* Runs on a worker: reads s->fd only, never the index. */
static void verify_work(struct job *j)
{
	struct slot *s = (struct slot *)((char *)j - offsetof(struct slot, job));
	uint8_t *buf = malloc(s->len ? s->len : 1);
	size_t got = 0;
	s->err = buf ? 0 : -ENOMEM;
	while (!s->err && got < s->len) {
		ssize_t r = pread(s->fd, buf + got, s->len - got, (off_t)(s->base + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			s->err = -errno;
		else if (r == 0)
			s->err = -EBADMSG; /* shorter than its record: as bad as a wrong byte */
		else
			got += (size_t)r;
	}
	if (!s->err && chunk_checksum(buf, s->len) != s->checksum)
		s->err = -EBADMSG;
	free(buf);
	close(s->fd);
}

static void verify_done(struct job *j)
{
	struct slot *s = (struct slot *)((char *)j - offsetof(struct slot, job));
	struct rop *op = s->op;
	struct cache *cache = op->cache;
	struct rop_item *it = &op->items[s->i];
	struct chunk *c = chunk_find(&cache->chunks, it->key);
	bool same = c && c->file == s->f; /* s->f is still referenced: no reuse */
	if (!s->refetched)
		res_count_add(&op->r.checked, it->len); /* a chunk once, however often read */
	if (s->err == -EBADMSG) {
		res_count_add(&op->r.bad, it->len);
		cache->ctr.checksum_errors++;
		log_err("dataset=%s path=%s chunk=%u tier=%s op=verify err=\"checksum mismatch: "
			"dropping the chunk; it will be read from the cold store again\"",
			op->files[it->file].ds->name, op->files[it->file].path, it->idx,
			s->f->tier < TIER_COUNT ? cache->tiers[s->f->tier].name : "ram");
		if (same)
			chunk_drop(cache, c, "checksum");
	}
	if (!s->err && same)
		c->unverified = false; /* checked now: its first use need not check again */
	cfile_unref(cache, s->f);
	if (s->err && s->err != -EBADMSG)
		rop_slot_failed(s, s->err);
	else if (op->kind == ROP_VERIFY)
		rop_slot_end(s);
	else if (s->err == -EBADMSG && !s->refetched && !cache->stopping)
		rop_slot_refetch(s); /* warm: read it again from the cold store, once */
	else if (s->err == -EBADMSG)
		rop_slot_failed(s, -EBADMSG); /* bad again: the report says so */
	else
		rop_slot_final(s);
}

void rop_slot_verify(struct slot *s, struct chunk *c)
{
	if (c->state != CHUNK_RESIDENT && c->state != CHUNK_PINNED) {
		/* moving: its copy is checked on the way by the mover */
		if (s->op->kind == ROP_VERIFY)
			rop_slot_end(s);
		else
			rop_slot_final(s);
		return;
	}
	s->fd = chunk_open_fd(s->op->cache, c);
	if (s->fd < 0) {
		rop_slot_failed(s, s->fd);
		return;
	}
	s->f = c->file;
	cfile_ref(s->f);
	s->checksum = c->checksum;
	s->base = chunk_base(c);
	s->len = c->len;
	s->job.work = verify_work;
	s->job.done = verify_done;
	workers_submit(s->op->cache->workers, &s->job);
}

int residency_verify(struct residency *res, struct dataset *ds, const struct res_cb *cb,
		     struct res_result *r)
{
	struct cache *cache = res->cache;
	struct rop *op = rop_new(res, ROP_VERIFY, cb);
	if (!op)
		return res_fail(r, -ENOMEM, "out of memory");
	op->window = cache->cfg->workers;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (!res_chunk_in(c, ds, "") ||
		    (c->state != CHUNK_RESIDENT && c->state != CHUNK_PINNED))
			continue;
		int rc = rop_add_chunk(op, c);
		if (rc < 0)
			return rop_build_failed(op, r, rc);
	}
	rop_pump(op);
	return 0;
}
