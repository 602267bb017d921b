/*
 * The rados backend's metadata side: list() and stat(), the per-object
 * probe (one stat + getxattrs op) they and the read path use, and the map
 * of paths known to be striped files. See backend_rados.c for the model.
 *
 * Threads: list() and stat() block (worker threads or startup) and call
 * the list callback on the caller's thread; stat_async() returns at once
 * and its done() runs on librados' thread (or the caller's, when the
 * probes could not start). Probes may also complete on librados' thread
 * (reads). The map is used under rados_ds.lock.
 */
#include "backend_rados.h"
#include "backend_rados_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "tiercache/protocol.h"

#define LIST_WINDOW 64u /* probes in flight while listing */

/* A path known to be a striped file (paths not here are tried as plain
 * objects first). Filled by list(), stat() and read()'s own probes. */
struct smap_ent {
	struct smap_ent *next;
	uint64_t hash;
	struct striper_layout lay;
	char path[];
};

enum name_kind { NK_PLAIN, NK_HEAD, NK_PART };

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

char *rados_be_oid(const struct rados_ds *r, const char *path, bool head)
{
	size_t n = strlen(r->prefix) + strlen(path) + RADOS_STRIPER_SUFFIX_LEN + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s%s", r->prefix, path, head ? ".0000000000000000" : "");
	return s;
}

/* True if name ends in ".%016x"; *idx gets the object number. */
static bool striper_suffix(const char *name, size_t len, uint64_t *idx)
{
	if (len <= RADOS_STRIPER_SUFFIX_LEN || name[len - RADOS_STRIPER_SUFFIX_LEN] != '.')
		return false;
	uint64_t v = 0;
	for (size_t i = len - 16; i < len; i++) {
		char ch = name[i];
		unsigned d;
		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else
			return false;
		v = v << 4 | d;
	}
	*idx = v;
	return true;
}

/* A dataset path must be a clean relative path: the daemon builds its
 * directory tree from it and clients address files by it. */
bool rados_be_path_ok(const char *p)
{
	size_t len = strlen(p);
	if (len == 0 || len > TC_PATH_MAX - TC_DATASET_NAME_MAX - 2 || p[0] == '/' ||
	    p[len - 1] == '/')
		return false;
	const char *s = p;
	while (*s) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0 || n > TC_NAME_MAX || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
		if (*s == '/')
			s++;
	}
	return true;
}

static bool parse_u64(const char *v, size_t n, uint64_t *out)
{
	if (n == 0 || n > 20)
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		uint64_t d = (uint64_t)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

static bool layout_ok(const struct striper_layout *l)
{
	return l->su > 0 && l->sc > 0 && l->os >= l->su && l->os % l->su == 0 && l->sc <= 65536 &&
	       l->os <= (1ull << 40);
}

/* ---- the striped-path map (under r->lock) ---- */

static struct smap_ent **smap_slot(struct rados_ds *r, const char *path, uint64_t h)
{
	struct smap_ent **pp = &r->sm_b[h & (r->sm_nb - 1)];
	while (*pp && ((*pp)->hash != h || strcmp((*pp)->path, path) != 0))
		pp = &(*pp)->next;
	return pp;
}

bool rados_be_smap_get(struct rados_ds *r, const char *path, struct striper_layout *lay)
{
	if (!r->sm_nb)
		return false;
	struct smap_ent **pp = smap_slot(r, path, hash_str(path));
	if (*pp)
		*lay = (*pp)->lay;
	return *pp != NULL;
}

static void smap_grow(struct rados_ds *r)
{
	size_t nb = r->sm_nb ? r->sm_nb * 2 : 64;
	struct smap_ent **b = calloc(nb, sizeof(*b));
	if (!b)
		return; /* keep the old table: longer chains, still correct */
	for (size_t i = 0; i < r->sm_nb; i++) {
		for (struct smap_ent *e = r->sm_b[i], *nx; e; e = nx) {
			nx = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(r->sm_b);
	r->sm_b = b;
	r->sm_nb = nb;
}

/* Record that path is striped (lay != NULL) or not (lay == NULL). A failed
 * allocation only costs a probe on the next read. */
void rados_be_smap_set(struct rados_ds *r, const char *path, const struct striper_layout *lay)
{
	uint64_t h = hash_str(path);
	if (lay && r->sm_n >= r->sm_nb)
		smap_grow(r);
	if (!r->sm_nb)
		return;
	struct smap_ent **pp = smap_slot(r, path, h);
	if (*pp && lay) {
		(*pp)->lay = *lay;
	} else if (*pp) {
		struct smap_ent *e = *pp;
		*pp = e->next;
		free(e);
		r->sm_n--;
	} else if (lay) {
		size_t n = strlen(path) + 1;
		struct smap_ent *e = malloc(sizeof(*e) + n);
		if (!e)
			return;
		memcpy(e->path, path, n);
		e->hash = h;
		e->lay = *lay;
		e->next = NULL;
		*pp = e;
		r->sm_n++;
	}
}

void rados_be_smap_clear(struct rados_ds *r)
{
	for (size_t i = 0; i < r->sm_nb; i++) {
		for (struct smap_ent *e = r->sm_b[i], *nx; e; e = nx) {
			nx = e->next;
			free(e);
		}
		r->sm_b[i] = NULL;
	}
	r->sm_n = 0;
}

/* ---- probe: stat + xattrs of one object ---- */

int rados_be_probe_start(struct rados_ds *r, struct probe *p, const char *oid, rados_callback_t cb,
			 void *arg)
{
	memset(p, 0, sizeof(*p));
	int rc = rados_aio_create_completion2(arg, cb, &p->comp);
	if (rc < 0)
		return rc;
	p->op = rados_create_read_op();
	if (!p->op) {
		rados_aio_release(p->comp);
		p->comp = NULL;
		return -ENOMEM;
	}
	rados_read_op_stat(p->op, &p->size, &p->mtime, &p->stat_rv);
	rados_read_op_getxattrs(p->op, &p->iter, &p->xattr_rv);
	rc = rados_aio_read_op_operate(p->op, r->ioctx, p->comp, oid, 0);
	if (rc < 0) {
		rados_getxattrs_end(p->iter);
		rados_release_read_op(p->op);
		rados_aio_release(p->comp);
		memset(p, 0, sizeof(*p));
	}
	return rc;
}

/* After the probe completed: fill oi and release everything. */
void rados_be_probe_finish(struct probe *p, struct objinfo *oi)
{
	memset(oi, 0, sizeof(*oi));
	oi->rc = rados_aio_get_return_value(p->comp);
	if (oi->rc == 0 && p->stat_rv < 0)
		oi->rc = p->stat_rv;
	oi->version = rados_aio_get_version(p->comp);
	oi->size = p->size;
	oi->mtime = p->mtime;
	if (oi->rc == 0 && p->xattr_rv == 0) {
		bool have_size = false;
		unsigned have_lay = 0;
		const char *k, *v;
		size_t vn;
		while (rados_getxattrs_next(p->iter, &k, &v, &vn) == 0 && k) {
			if (strcmp(k, RADOS_STRIPER_XATTR_SIZE) == 0)
				have_size = parse_u64(v, vn, &oi->logical_size);
			else if (strcmp(k, RADOS_STRIPER_XATTR_SU) == 0)
				have_lay |= parse_u64(v, vn, &oi->lay.su) ? 1u : 0u;
			else if (strcmp(k, RADOS_STRIPER_XATTR_SC) == 0)
				have_lay |= parse_u64(v, vn, &oi->lay.sc) ? 2u : 0u;
			else if (strcmp(k, RADOS_STRIPER_XATTR_OS) == 0)
				have_lay |= parse_u64(v, vn, &oi->lay.os) ? 4u : 0u;
		}
		oi->striped = have_size && have_lay == 7u && layout_ok(&oi->lay);
	}
	rados_getxattrs_end(p->iter);
	rados_release_read_op(p->op);
	rados_aio_release(p->comp);
	memset(p, 0, sizeof(*p));
}

/* Blocking probes of n objects, LIST_WINDOW at a time. */
void rados_be_probe_many(struct rados_ds *r, char *const *oids, struct objinfo *out, size_t n)
{
	struct probe *pr = calloc(LIST_WINDOW, sizeof(*pr));
	if (!pr) {
		for (size_t i = 0; i < n; i++)
			out[i].rc = -ENOMEM;
		return;
	}
	for (size_t base = 0; base < n; base += LIST_WINDOW) {
		size_t m = n - base < LIST_WINDOW ? n - base : LIST_WINDOW;
		for (size_t i = 0; i < m; i++) {
			int rc = rados_be_probe_start(r, &pr[i], oids[base + i], NULL, NULL);
			if (rc < 0) {
				memset(&out[base + i], 0, sizeof(out[0]));
				out[base + i].rc = rc;
			}
		}
		for (size_t i = 0; i < m; i++) {
			if (!pr[i].comp)
				continue;
			rados_aio_wait_for_complete(pr[i].comp);
			rados_be_probe_finish(&pr[i], &out[base + i]);
		}
	}
	free(pr);
}

/* ---- list / stat ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static ssize_t name_find(char *const *names, size_t n, const char *key)
{
	char *const *p = bsearch(&key, names, n, sizeof(*names), cmp_str);
	return p ? p - names : -1;
}

int rados_be_list(struct cold *c, cold_list_fn fn, void *arg)
{
	struct rados_ds *r = c->priv;
	if (!r)
		return -ENOTCONN;
	size_t plen = strlen(r->prefix);
	char **names = NULL; /* object names without the prefix, sorted */
	char **oids = NULL;  /* full object names, same order */
	struct objinfo *oi = NULL;
	enum name_kind *kind = NULL;
	bool *hide = NULL;
	size_t n = 0, cap = 0;
	rados_list_ctx_t lc = NULL;
	int rc = rados_nobjects_list_open(r->ioctx, &lc);
	if (rc < 0)
		goto out;
	for (;;) {
		const char *e, *k, *ns;
		size_t elen, klen, nslen;
		rc = rados_nobjects_list_next2(lc, &e, &k, &ns, &elen, &klen, &nslen);
		if (rc == -ENOENT) { /* the end */
			rc = 0;
			break;
		}
		if (rc < 0)
			goto out;
		if (elen <= plen || memchr(e, 0, elen) || strncmp(e, r->prefix, plen) != 0)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 1024;
			char **nn = realloc(names, nc * sizeof(*nn));
			if (!nn) {
				rc = -ENOMEM;
				goto out;
			}
			names = nn;
			cap = nc;
		}
		names[n] = strndup(e + plen, elen - plen);
		if (!names[n]) {
			rc = -ENOMEM;
			goto out;
		}
		n++;
		__atomic_store_n(&c->list_progress, (uint64_t)n, __ATOMIC_RELAXED);
	}
	rados_nobjects_list_close(lc);
	lc = NULL;
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);

	oids = calloc(n ? n : 1, sizeof(*oids));
	oi = calloc(n ? n : 1, sizeof(*oi));
	kind = calloc(n ? n : 1, sizeof(*kind));
	hide = calloc(n ? n : 1, sizeof(*hide));
	if (!oids || !oi || !kind || !hide) {
		rc = -ENOMEM;
		goto out;
	}
	/* pass 1: plain names and striped-file heads */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t idx;
		size_t len = strlen(names[i]);
		kind[i] =
		    striper_suffix(names[i], len, &idx) ? (idx == 0 ? NK_HEAD : NK_PART) : NK_PLAIN;
		oids[i] = rados_be_oid(r, names[i], false);
		if (!oids[i]) {
			rc = -ENOMEM;
			goto out;
		}
	}
	char **batch = calloc(n ? n : 1, sizeof(*batch));
	size_t *where = calloc(n ? n : 1, sizeof(*where));
	struct objinfo *res = calloc(n ? n : 1, sizeof(*res));
	if (!batch || !where || !res) {
		free(batch);
		free(where);
		free(res);
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (kind[i] != NK_PART) {
			where[m] = i;
			batch[m++] = oids[i];
		}
	rados_be_probe_many(r, batch, res, m);
	for (size_t j = 0; j < m; j++)
		oi[where[j]] = res[j];
	/* pass 2: a "F.%016x" object whose F is not a striped file is a plain
	 * file of that name */
	m = 0;
	for (size_t i = 0; i < n; i++) {
		if (kind[i] != NK_PART)
			continue;
		size_t len = strlen(names[i]);
		char *head = strdup(names[i]);
		if (!head) {
			rc = -ENOMEM;
			break;
		}
		memcpy(head + len - 16, "0000000000000000", 16);
		ssize_t h = name_find(names, n, head);
		free(head);
		if (h >= 0 && oi[h].rc == 0 && oi[h].striped) {
			hide[i] = true;
		} else {
			kind[i] = NK_PLAIN;
			where[m] = i;
			batch[m++] = oids[i];
		}
	}
	if (rc == 0) {
		rados_be_probe_many(r, batch, res, m);
		for (size_t j = 0; j < m; j++)
			oi[where[j]] = res[j];
	}
	free(batch);
	free(where);
	free(res);
	if (rc < 0)
		goto out;

	/* any failure other than "deleted meanwhile" fails the listing: a
	 * manifest with holes would hide files */
	for (size_t i = 0; i < n; i++) {
		if (hide[i] || oi[i].rc == -ENOENT)
			continue;
		if (oi[i].rc < 0) {
			rc = oi[i].rc;
			goto out;
		}
	}

	pthread_mutex_lock(&r->lock);
	rados_be_smap_clear(r);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < n; i++) {
		if (hide[i] || oi[i].rc < 0)
			continue;
		char *path = names[i], *own = NULL;
		struct cold_stat st = {
		    .size = oi[i].size,
		    .mtime_ns = (int64_t)oi[i].mtime * 1000000000LL,
		    .version = oi[i].version,
		};
		if (kind[i] == NK_HEAD && oi[i].striped) {
			/* a copy: names[] must stay sorted for name_find() */
			own = strndup(path, strlen(path) - RADOS_STRIPER_SUFFIX_LEN);
			if (!own) {
				rc = -ENOMEM;
				goto out;
			}
			path = own;
			ssize_t p = name_find(names, n, path);
			if (p >= 0 && oi[p].rc == 0 && !r->prefer_striper) {
				free(own);
				continue; /* the plain object of that name wins */
			}
			if (p >= 0)
				hide[p] = true;
			st.size = oi[i].logical_size;
			pthread_mutex_lock(&r->lock);
			rados_be_smap_set(r, path, &oi[i].lay);
			pthread_mutex_unlock(&r->lock);
		} else if (r->prefer_striper) {
			/* a striped file of the same name sorts after us: skip
			 * this one if it is there */
			size_t len = strlen(path);
			char *head = malloc(len + RADOS_STRIPER_SUFFIX_LEN + 1);
			if (!head) {
				rc = -ENOMEM;
				goto out;
			}
			snprintf(head, len + RADOS_STRIPER_SUFFIX_LEN + 1, "%s.0000000000000000",
				 path);
			ssize_t h = name_find(names, n, head);
			free(head);
			if (h >= 0 && oi[h].rc == 0 && oi[h].striped)
				continue;
		}
		int stop = 0;
		if (rados_be_path_ok(path))
			stop = fn(arg, path, &st);
		else
			log_warn("dataset=%s op=list object=\"%s%s\" skipped=\"not a clean "
				 "relative path\"",
				 r->name, r->prefix, path);
		free(own);
		if (stop)
			break;
	}
	rc = 0;
out:
	if (lc)
		rados_nobjects_list_close(lc);
	for (size_t i = 0; i < n; i++) {
		free(names[i]);
		if (oids)
			free(oids[i]);
	}
	free(names);
	free(oids);
	free(oi);
	free(kind);
	free(hide);
	return rc;
}

/* A file's version from the probes of its plain object (oi[0]) and of its
 * striped first object (oi[1]); notes which form it is. */
static int stat_combine(struct rados_ds *r, const char *path, const struct objinfo *oi,
			struct cold_stat *st)
{
	bool plain = oi[0].rc == 0, striped = oi[1].rc == 0 && oi[1].striped;
	if (!plain && oi[0].rc != -ENOENT)
		return oi[0].rc;
	if (!striped && oi[1].rc != -ENOENT && oi[1].rc != 0)
		return oi[1].rc;
	if (striped && (!plain || r->prefer_striper)) {
		st->size = oi[1].logical_size;
		st->mtime_ns = (int64_t)oi[1].mtime * 1000000000LL;
		st->version = oi[1].version;
	} else if (plain) {
		st->size = oi[0].size;
		st->mtime_ns = (int64_t)oi[0].mtime * 1000000000LL;
		st->version = oi[0].version;
		striped = false;
	} else {
		return -ENOENT;
	}
	pthread_mutex_lock(&r->lock);
	rados_be_smap_set(r, path, striped ? &oi[1].lay : NULL);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int rados_be_stat(struct cold *c, const char *path, struct cold_stat *st)
{
	struct rados_ds *r = c->priv;
	if (!r)
		return -ENOTCONN;
	if (!rados_be_path_ok(path))
		return -ENOENT;
	char *oids[2] = {rados_be_oid(r, path, false), rados_be_oid(r, path, true)};
	struct objinfo oi[2];
	int rc = -ENOMEM;
	if (oids[0] && oids[1]) {
		rados_be_probe_many(r, oids, oi, 2);
		rc = stat_combine(r, path, oi, st);
	}
	free(oids[0]);
	free(oids[1]);
	return rc;
}

/* ---- stat_async: the same two probes, completing on librados' thread ---- */

struct sreq;
/* One probe of a stat_async: its completion's argument. */
struct sprobe {
	struct sreq *q;
	struct probe pr;
	struct objinfo oi;
};

struct sreq {
	struct rados_ds *r;
	struct cold_statio *sio;
	char *oids[2];
	struct sprobe p[2]; /* the plain object, the striped file's first */
	unsigned pending;   /* probes not finished, under r->lock */
};

static void sreq_end(struct sreq *q)
{
	struct rados_ds *r = q->r;
	struct cold_statio *sio = q->sio;
	struct objinfo oi[2] = {q->p[0].oi, q->p[1].oi};
	sio->result = stat_combine(r, sio->path, oi, &sio->st);
	free(q->oids[0]);
	free(q->oids[1]);
	free(q);
	sio->done(sio);
	pthread_mutex_lock(&r->lock);
	if (--r->stats == 0 && r->inflight == 0)
		pthread_cond_broadcast(&r->idle);
	pthread_mutex_unlock(&r->lock);
}

/* One probe of q is finished (oi[i] filled): the last one ends q. */
static void sreq_one(struct sreq *q)
{
	pthread_mutex_lock(&q->r->lock);
	bool last = --q->pending == 0;
	pthread_mutex_unlock(&q->r->lock);
	if (last)
		sreq_end(q);
}

static void sreq_probe_done(rados_completion_t comp, void *arg)
{
	struct sprobe *sp = arg;
	(void)comp;
	rados_be_probe_finish(&sp->pr, &sp->oi);
	sreq_one(sp->q);
}

int rados_be_stat_async(struct cold *c, struct cold_statio *sio)
{
	struct rados_ds *r = c->priv;
	if (!r)
		return -ENOTCONN;
	if (!sio->done)
		return -EINVAL;
	struct sreq *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->r = r;
	q->sio = sio;
	q->p[0].q = q->p[1].q = q;
	if (!rados_be_path_ok(sio->path)) {
		q->p[0].oi.rc = q->p[1].oi.rc = -ENOENT;
	} else {
		q->oids[0] = rados_be_oid(r, sio->path, false);
		q->oids[1] = rados_be_oid(r, sio->path, true);
		if (!q->oids[0] || !q->oids[1]) {
			free(q->oids[0]);
			free(q->oids[1]);
			free(q);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&r->lock);
	if (r->closing) {
		pthread_mutex_unlock(&r->lock);
		free(q->oids[0]);
		free(q->oids[1]);
		free(q);
		return -ESHUTDOWN;
	}
	r->stats++;
	q->pending = 3; /* two probes and this call: none ends q before both started */
	pthread_mutex_unlock(&r->lock);
	for (int i = 0; i < 2; i++) {
		struct sprobe *sp = &q->p[i];
		int rc = q->oids[i] ? rados_be_probe_start(r, &sp->pr, q->oids[i], sreq_probe_done, sp)
				    : -ENOENT;
		if (rc < 0) {
			memset(&sp->oi, 0, sizeof(sp->oi));
			sp->oi.rc = rc;
			sreq_one(q);
		}
	}
	sreq_one(q); /* may end q here, with done() on this thread */
	return 0;
}
