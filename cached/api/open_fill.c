/*
 * One request per small miss (open_fill.h).
 *
 * Without it a miss of a small file costs its client two round trips: the
 * OPEN, answered at once without a chunk, then a CHUNK request that waits
 * for the cold read. Here the OPEN itself waits: it joins chunk 0's fill
 * (fill_get: single flight with every other reader of the chunk, and the
 * fills' own bounds) and is answered when the fill ends, with the chunk's
 * record and descriptor, exactly as the OPEN of a resident file.
 *
 * What may go wrong is answered as a CHUNK would be, on the OPEN:
 *   - the cold read fails: the OPEN fails with its error and what to do;
 *   - the file changed at the source (ESTALE; the fill marked the entry
 *     for revalidation): the OPEN runs again as if it had just arrived,
 *     without this flag, so it opens the new version;
 *   - the manifest changed meanwhile (a refresh, a reload): the file is
 *     found again and answered at its current version (its own chunk, if
 *     that is what was filled, else without one);
 *   - the client went away: the fill goes on for the cache; its answer
 *     is dropped and the connection released.
 * A connection has at most OPEN_FILL_MAX OPENs parked here; each holds its
 * connection (conn_get), so it also counts against SERVER_WAIT_MAX.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "counts.h"
#include "dataset.h"
#include "fill.h"
#include "handlers.h"
#include "manifest.h"
#include "open_fill.h"
#include "plans.h"
#include "prefetch.h"
#include "target.h"

struct open_fill {
	struct waiter w; /* first: the fill's callback gets this */
	struct conn *c;
	uint32_t id;
	uint32_t flags;        /* the OPEN's request flags */
	struct cold_stat src;  /* the version being filled */
	char path[];           /* "DATASET/PATH", as the request named it */
};

static void open_filled(struct cache *cache, struct waiter *w, struct chunk *ch, int err)
{
	struct open_fill *of = (struct open_fill *)w;
	struct conn *c = of->c;
	struct target t;
	conn_sess(c)->nopen_filling--;
	cache->ctr.opens_filling--;
	if (c->dead || !handlers_reresolve(c, TC_OP_OPEN, of->id, of->path, &t))
		goto out;
	struct mf_entry *e = manifest_find(t.ds->mf, t.rest);
	if (!e) {
		conn_reply_err(c, TC_OP_OPEN, of->id, ENOENT, "no file \"%s\" in dataset %s", t.rest,
			       t.ds->name);
	} else if (err == -ESTALE) {
		/* the source has another version than the one filled: open
		 * again (the fill made the entry due for revalidation) */
		handlers_open_again(c, of->id, of->flags & TC_F_WANT_CHUNK0, of->path);
	} else if (err < 0) {
		conn_reply_err(c, TC_OP_OPEN, of->id, -err,
			       "cold read of %s failed: %s (the daemon's log says more; the open may "
			       "be tried again)",
			       of->path, strerror(-err));
	} else if (cold_stat_same(&e->st, &of->src)) {
		cache->ctr.opens_filled++;
		handlers_open_reply(c, of->id, of->flags, t.ds, e, ch);
	} else {
		/* replaced while its chunk was read: the current version */
		handlers_open_reply(c, of->id, of->flags, t.ds, e, NULL);
	}
out:
	conn_put(c);
	free(of);
}

bool open_fill_park(struct conn *c, uint32_t id, uint32_t flags, struct dataset *ds, struct mf_entry *e,
		    const char *path)
{
	struct cache *cache = conn_api(c)->cache;
	struct session *s = conn_sess(c);
	if ((flags & (TC_F_WANT_CHUNK0 | TC_F_FILL_CHUNK0)) != (TC_F_WANT_CHUNK0 | TC_F_FILL_CHUNK0))
		return false;
	if (e->st.size == 0 || e->st.size > ds->conf.chunk_size || ds->removed ||
	    s->nopen_filling >= OPEN_FILL_MAX)
		return false;
	/* resident (or being checked: the open answers that as it does) */
	if (chunk_find(&cache->chunks, chunk_key(ds->name, e->path, &e->st, 0)))
		return false;
	size_t n = strlen(path) + 1;
	struct open_fill *of = calloc(1, sizeof(*of) + n);
	if (!of)
		return false;
	memcpy(of->path, path, n);
	of->w.cb = open_filled;
	of->c = c;
	of->id = id;
	of->flags = flags;
	of->src = e->st;
	struct chunk *ch = NULL;
	const struct read_ctx rctx = conn_read_ctx(c);
	int rc = fill_get(cache, ds, e->path, &e->st, 0, &rctx, &of->w, &ch);
	if (rc != 0) {
		/* resident after all (1), or the read cannot start: the open
		 * is answered now, and a CHUNK request meets the error as
		 * without this flag */
		free(of);
		return false;
	}
	s->nopen_filling++;
	cache->ctr.opens_filling++;
	counts_miss(cache, ds);
	conn_get(c);
	prefetch_readahead(conn_api(c)->plans->pf, ds, e->path, &e->st, 0, 1);
	return true;
}
