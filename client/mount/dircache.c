/*
 * Directory listings kept by tiercache-mount to answer lookups without a
 * daemon round trip each.
 *
 * Training code often opens files by a path list (a CSV, a shard list)
 * instead of listing directories, so every first open of a name costs a
 * FUSE LOOKUP and, behind it, a STAT to the daemon. When a directory sees
 * its second lookup, we fetch its whole listing once (LISTDIR pages: name,
 * type, size, mtime — what STAT would say) and answer further lookups in it
 * from memory for min(entry_timeout, attr_timeout) seconds, the staleness
 * the kernel's own entry cache already has; a name missing from the listing
 * is trusted only for negative_timeout, as the kernel would a miss.
 * opendir of the directory drops its listing, so a program that lists
 * sees the present state and lookups after it agree. An open still goes to
 * the daemon, which revalidates the source.
 *
 * Bounds: at most DC_DIRS listings and DC_ENTRIES entries in all (the
 * least recently used go first); a directory with more than DC_DIR_MAX
 * entries is never listed here (lookups in it use STAT).
 *
 * Threads: one mutex for the table; a listing is fetched outside it, by
 * one thread per directory (the others wait on a condition variable).
 */
#include "tcmount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DC_DIRS 64u
#define DC_ENTRIES (1u << 20)
#define DC_DIR_MAX (1u << 18)

enum dc_state {
	DC_FREE = 0,
	DC_SEEN,     /* one lookup so far: not worth a listing yet */
	DC_FETCHING, /* a thread is fetching the listing */
	DC_READY,
	DC_TOOBIG,   /* more than DC_DIR_MAX entries: lookups use STAT */
};

struct dc_entry {
	char *name;
	struct tcm_attr a;
};

struct dc_slot {
	uint64_t ino;
	enum dc_state state;
	double stamp;   /* when the listing was fetched (or the state set) */
	uint64_t used;  /* LRU clock */
	bool dropped;   /* dropped while FETCHING: discard what arrives */
	struct dc_entry *v;
	size_t n;
	char *names;    /* one allocation for every name of v */
};

struct tcm_dircache {
	pthread_mutex_t lock;
	pthread_cond_t done;
	double ttl;
	double neg_ttl; /* "not listed" is trusted this long (negative_timeout) */
	uint64_t clock;
	size_t entries;
	struct dc_slot slots[DC_DIRS];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct tcm_dircache *tcm_dircache_new(double ttl, double neg_ttl)
{
	struct tcm_dircache *dc = calloc(1, sizeof(*dc));
	if (!dc)
		return NULL;
	pthread_mutex_init(&dc->lock, NULL);
	pthread_cond_init(&dc->done, NULL);
	dc->ttl = ttl;
	dc->neg_ttl = neg_ttl < ttl ? neg_ttl : ttl;
	return dc;
}

static void slot_clear(struct tcm_dircache *dc, struct dc_slot *s)
{
	dc->entries -= s->n;
	free(s->v);
	free(s->names);
	memset(s, 0, sizeof(*s));
}

void tcm_dircache_free(struct tcm_dircache *dc)
{
	if (!dc)
		return;
	for (unsigned i = 0; i < DC_DIRS; i++)
		slot_clear(dc, &dc->slots[i]);
	pthread_cond_destroy(&dc->done);
	pthread_mutex_destroy(&dc->lock);
	free(dc);
}

static struct dc_slot *slot_find(struct tcm_dircache *dc, uint64_t ino)
{
	for (unsigned i = 0; i < DC_DIRS; i++)
		if (dc->slots[i].state != DC_FREE && dc->slots[i].ino == ino)
			return &dc->slots[i];
	return NULL;
}

/* A slot for ino: a free one, else the least recently used that nobody
 * is fetching into (NULL if all are busy). lock held. */
static struct dc_slot *slot_take(struct tcm_dircache *dc, uint64_t ino)
{
	struct dc_slot *victim = NULL;
	for (unsigned i = 0; i < DC_DIRS; i++) {
		struct dc_slot *s = &dc->slots[i];
		if (s->state == DC_FREE) {
			victim = s;
			break;
		}
		if (s->state != DC_FETCHING && (!victim || s->used < victim->used))
			victim = s;
	}
	if (!victim)
		return NULL;
	slot_clear(dc, victim);
	victim->ino = ino;
	return victim;
}

/* Make room for n more entries by dropping the least recently used
 * listings other than keep. lock held. */
static void budget_make_room(struct tcm_dircache *dc, size_t n, const struct dc_slot *keep)
{
	while (dc->entries + n > DC_ENTRIES) {
		struct dc_slot *victim = NULL;
		for (unsigned i = 0; i < DC_DIRS; i++) {
			struct dc_slot *s = &dc->slots[i];
			if (s != keep && s->state == DC_READY && (!victim || s->used < victim->used))
				victim = s;
		}
		if (!victim)
			return;
		slot_clear(dc, victim);
	}
}

static int entry_cmp(const void *x, const void *y)
{
	return strcmp(((const struct dc_entry *)x)->name, ((const struct dc_entry *)y)->name);
}

/* Fetch the listing of dirpath (no lock held). Returns 0 and the sorted
 * entries, -E2BIG past DC_DIR_MAX, or -errno. */
static int listing_fetch(struct tcm *m, const char *dirpath, struct dc_entry **out, size_t *nout,
			 char **names_out)
{
	struct dc_entry *v = NULL;
	char *names = NULL;
	size_t n = 0, cap = 0, nbytes = 0, nbcap = 0;
	int rc = 0;
	struct tiercache_dir *d = tiercache_opendir(tcm_pool_pick(&m->pool), dirpath);
	if (!d)
		return -errno;
	for (;;) {
		errno = 0;
		const struct tiercache_dirent *de = tiercache_readdir(d);
		if (!de) {
			rc = -errno;
			break;
		}
		if (n == DC_DIR_MAX) {
			rc = -E2BIG;
			break;
		}
		size_t len = strlen(de->name) + 1;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct dc_entry *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (nbytes + len > nbcap) {
			nbcap = nbcap ? nbcap * 2 : 8192;
			while (nbytes + len > nbcap)
				nbcap *= 2;
			char *nn = realloc(names, nbcap);
			if (!nn) {
				rc = -ENOMEM;
				break;
			}
			names = nn;
		}
		memcpy(names + nbytes, de->name, len);
		/* offsets now, pointers once the arena stops moving */
		v[n].name = (char *)(uintptr_t)nbytes;
		v[n].a.type = de->type;
		v[n].a.size = de->type == TIERCACHE_FILE ? de->size : 0;
		v[n].a.mtime_ns = de->mtime_ns;
		tcm_attr_owner(&v[n].a, de->mode, de->uid, de->gid);
		nbytes += len;
		n++;
	}
	tiercache_closedir(d);
	if (rc < 0) {
		free(v);
		free(names);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		v[i].name = names + (uintptr_t)v[i].name;
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	*out = v;
	*nout = n;
	*names_out = names;
	return 0;
}

/* Look name up in a READY slot: 1 found (*a), 0 absent. lock held. */
static int slot_search(const struct dc_slot *s, const char *name, struct tcm_attr *a)
{
	struct dc_entry key = {.name = (char *)name};
	const struct dc_entry *e = s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), entry_cmp) : NULL;
	if (!e)
		return 0;
	*a = e->a;
	return 1;
}

int tcm_dircache_lookup(struct tcm *m, uint64_t dir, const char *dirpath, const char *name,
			struct tcm_attr *a)
{
	struct tcm_dircache *dc = m->dircache;
	if (!dc || dc->ttl <= 0)
		return -EAGAIN;
	int rc = -EAGAIN;
	pthread_mutex_lock(&dc->lock);
	for (;;) {
		double now = now_s();
		struct dc_slot *s = slot_find(dc, dir);
		if (s && s->state != DC_FETCHING && now - s->stamp >= dc->ttl) {
			slot_clear(dc, s); /* expired: start over */
			s = NULL;
		}
		if (!s) {
			s = slot_take(dc, dir);
			if (s) {
				s->state = DC_SEEN;
				s->stamp = now;
				s->used = ++dc->clock;
			}
			goto out; /* a first lookup: STAT is cheaper */
		}
		s->used = ++dc->clock;
		if (s->state == DC_READY) {
			rc = slot_search(s, name, a);
			if (rc == 0 && now - s->stamp >= dc->neg_ttl)
				rc = -EAGAIN; /* a miss is older news: ask again */
			goto out;
		}
		if (s->state == DC_TOOBIG)
			goto out;
		if (s->state == DC_FETCHING) {
			pthread_cond_wait(&dc->done, &dc->lock);
			continue;
		}
		/* DC_SEEN: the second lookup here, fetch the listing */
		s->state = DC_FETCHING;
		pthread_mutex_unlock(&dc->lock);
		struct dc_entry *v = NULL;
		char *names = NULL;
		size_t n = 0;
		int frc = listing_fetch(m, dirpath, &v, &n, &names);
		pthread_mutex_lock(&dc->lock);
		/* nobody else takes a FETCHING slot; a drop only marks it */
		s->stamp = now_s();
		if (frc == 0 && s->dropped) {
			/* opendir ran meanwhile: this listing may predate it */
			free(v);
			free(names);
			s->state = DC_SEEN;
			s->dropped = false;
		} else if (frc == 0) {
			tcm_log(TCM_DEBUG, "dir=%s entries=%zu: listed to answer lookups", dirpath, n);
			budget_make_room(dc, n, s);
			s->state = DC_READY;
			s->v = v;
			s->n = n;
			s->names = names;
			dc->entries += n;
			rc = slot_search(s, name, a);
		} else {
			s->state = frc == -E2BIG ? DC_TOOBIG : DC_SEEN;
		}
		pthread_cond_broadcast(&dc->done);
		goto out;
	}
out:
	pthread_mutex_unlock(&dc->lock);
	return rc;
}

void tcm_dircache_drop(struct tcm *m, uint64_t dir)
{
	struct tcm_dircache *dc = m->dircache;
	if (!dc)
		return;
	pthread_mutex_lock(&dc->lock);
	struct dc_slot *s = slot_find(dc, dir);
	if (s && s->state == DC_FETCHING)
		s->dropped = true; /* its fetcher owns it */
	else if (s)
		slot_clear(dc, s);
	pthread_mutex_unlock(&dc->lock);
}
