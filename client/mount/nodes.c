/*
 * The inode table of tiercache-mount: FUSE node ids <-> dataset paths.
 *
 * A node is made when the kernel first learns a name (lookup, readdirplus)
 * and lives until the kernel forgets it (its lookup count falls to zero).
 * Node ids count up from 2 and are never reused, so a stale id can never
 * name another file. The root (FUSE_ROOT_ID) is the mounted
 * DATASET[/SUBDIR] and is never forgotten.
 *
 * Each node also remembers which version (size, mtime) of the file the
 * kernel page cache may hold, so that open can keep the cache when the
 * version is the same (data is immutable per version) and drop it when the
 * source changed:
 *   same version as the cached pages        -> KEEP   (FOPEN_KEEP_CACHE)
 *   other version, no handle of the old one -> FRESH  (kernel drops pages)
 *   other version, old handles still open   -> BYPASS (direct I/O for the
 *      new handle: the old handles keep reading old pages consistently,
 *      the new one never sees them; the next open once they are closed is
 *      FRESH)
 *
 * With -o immutable the kernel sends no open or release for files, so the
 * node itself keeps a libtiercache handle for reads (struct tcm_nh), opened
 * by the first read, pinned by each read in flight and closed when the
 * node is forgotten, when its version changes, or when more than
 * t->handle_cap idle handles are open (least recently used first).
 *
 * Threads: everything under t->lock; no syscall or daemon request runs
 * while it is held: handles to close are handed back to the caller.
 */
#include "tcmount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tiercache/protocol.h"

struct tcm_node {
	struct tcm_node *ino_next;
	struct tcm_node *name_next;
	uint64_t ino;
	uint64_t parent;
	uint64_t nlookup;
	char *path;       /* "DATASET/dir/name", immutable */
	const char *name; /* the last component, inside path */
	bool named;       /* in by_name (a replaced node is not) */
	struct tcm_attr attr;  /* last told to the kernel */
	bool cache_set;
	struct tcm_attr cache; /* version the kernel's pages may hold */
	unsigned cache_opens;  /* open handles reading through those pages */
	struct tcm_nh *nh;     /* -o immutable: the node's read handle */
};

/* A node's read handle (-o immutable). On the list t->nh_lru (most
 * recently used first) while attached to its node. */
struct tcm_nh {
	struct tiercache *tc;
	int h;
	unsigned pins;
	struct tcm_node *node; /* NULL once detached */
	struct tcm_nh *prev, *next;
};

#define NODES_FIRST_BUCKETS 1024u

static uint64_t hash_ino(uint64_t ino)
{
	ino ^= ino >> 33;
	ino *= 0xff51afd7ed558ccdULL;
	ino ^= ino >> 33;
	return ino;
}

static uint64_t hash_name(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ hash_ino(parent);
	for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
		h ^= *s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static struct tcm_node *find_ino(const struct tcm_nodes *t, uint64_t ino)
{
	struct tcm_node *n = t->by_ino[hash_ino(ino) & (t->nbuckets - 1)];
	while (n && n->ino != ino)
		n = n->ino_next;
	return n;
}

static struct tcm_node *find_name(const struct tcm_nodes *t, uint64_t parent, const char *name)
{
	struct tcm_node *n = t->by_name[hash_name(parent, name) & (t->nbuckets - 1)];
	while (n && !(n->parent == parent && strcmp(n->name, name) == 0))
		n = n->name_next;
	return n;
}

static void insert_ino(struct tcm_nodes *t, struct tcm_node *n)
{
	struct tcm_node **b = &t->by_ino[hash_ino(n->ino) & (t->nbuckets - 1)];
	n->ino_next = *b;
	*b = n;
}

static void insert_name(struct tcm_nodes *t, struct tcm_node *n)
{
	struct tcm_node **b = &t->by_name[hash_name(n->parent, n->name) & (t->nbuckets - 1)];
	n->name_next = *b;
	*b = n;
	n->named = true;
}

static void remove_ino(struct tcm_nodes *t, struct tcm_node *n)
{
	struct tcm_node **pp = &t->by_ino[hash_ino(n->ino) & (t->nbuckets - 1)];
	while (*pp && *pp != n)
		pp = &(*pp)->ino_next;
	if (*pp)
		*pp = n->ino_next;
}

static void remove_name(struct tcm_nodes *t, struct tcm_node *n)
{
	if (!n->named)
		return;
	struct tcm_node **pp = &t->by_name[hash_name(n->parent, n->name) & (t->nbuckets - 1)];
	while (*pp && *pp != n)
		pp = &(*pp)->name_next;
	if (*pp)
		*pp = n->name_next;
	n->named = false;
}

/* Double both tables when they average more than one node a bucket. An
 * allocation failure just leaves them longer-chained. */
static void maybe_grow(struct tcm_nodes *t)
{
	if (t->count <= t->nbuckets)
		return;
	size_t nb = t->nbuckets * 2;
	struct tcm_node **bi = calloc(nb, sizeof(*bi));
	struct tcm_node **bn = calloc(nb, sizeof(*bn));
	if (!bi || !bn) {
		free(bi);
		free(bn);
		return;
	}
	struct tcm_node **oi = t->by_ino;
	size_t ob = t->nbuckets;
	free(t->by_name);
	t->by_ino = bi;
	t->by_name = bn;
	t->nbuckets = nb;
	for (size_t i = 0; i < ob; i++) {
		struct tcm_node *n = oi[i];
		while (n) {
			struct tcm_node *next = n->ino_next;
			insert_ino(t, n);
			if (n->named)
				insert_name(t, n);
			n = next;
		}
	}
	free(oi);
}

static struct tcm_node *node_new(uint64_t ino, uint64_t parent, char *path, size_t name_off)
{
	struct tcm_node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->ino = ino;
	n->parent = parent;
	n->path = path;
	n->name = path + name_off;
	return n;
}

static void node_free(struct tcm_node *n)
{
	free(n->path);
	free(n);
}

int tcm_nodes_init(struct tcm_nodes *t, const char *root_path)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->nbuckets = NODES_FIRST_BUCKETS;
	t->by_ino = calloc(t->nbuckets, sizeof(*t->by_ino));
	t->by_name = calloc(t->nbuckets, sizeof(*t->by_name));
	char *p = strdup(root_path);
	struct tcm_node *root = p ? node_new(FUSE_ROOT_ID, 0, p, 0) : NULL;
	if (!t->by_ino || !t->by_name || !root) {
		if (root)
			node_free(root);
		else
			free(p);
		tcm_nodes_free(t);
		return -ENOMEM;
	}
	root->nlookup = 1; /* the kernel's root is never forgotten */
	root->attr.type = TIERCACHE_DIR;
	insert_ino(t, root); /* not by name: nothing looks the root up */
	t->count = 1;
	t->next_ino = FUSE_ROOT_ID + 1;
	t->nh_cap = TCM_NH_CAP;
	return 0;
}

void tcm_nodes_free(struct tcm_nodes *t)
{
	if (t->by_ino) {
		for (size_t i = 0; i < t->nbuckets; i++) {
			struct tcm_node *n = t->by_ino[i];
			while (n) {
				struct tcm_node *next = n->ino_next;
				/* the loop has ended: no read holds a handle. A
				 * CLOSE each (one-way, none if the connection is
				 * gone) tells the daemon the use of files handed
				 * ahead of a plan, which it hears of at close */
				if (n->nh)
					(void)tiercache_close(n->nh->tc, n->nh->h);
				free(n->nh);
				node_free(n);
				n = next;
			}
		}
	}
	free(t->by_ino);
	free(t->by_name);
	t->by_ino = t->by_name = NULL;
	pthread_mutex_destroy(&t->lock);
}

int tcm_nodes_path(struct tcm_nodes *t, uint64_t ino, char **path)
{
	int rc = 0;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	if (!n)
		rc = -ESTALE;
	else if (!(*path = strdup(n->path)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int tcm_nodes_child_path(struct tcm_nodes *t, uint64_t parent, const char *name, char **path)
{
	size_t nl = strlen(name);
	if (nl > TC_NAME_MAX)
		return -ENAMETOOLONG;
	if (nl == 0 || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL; /* the kernel resolves . and .. itself */
	int rc = 0;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, parent);
	if (!n) {
		rc = -ESTALE;
		goto out;
	}
	size_t pl = strlen(n->path);
	if (pl + 1 + nl >= TC_PATH_MAX) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	char *p = malloc(pl + 1 + nl + 1);
	if (!p) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(p, n->path, pl);
	p[pl] = '/';
	memcpy(p + pl + 1, name, nl + 1);
	*path = p;
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static bool attr_same(const struct tcm_attr *x, const struct tcm_attr *y)
{
	return x->size == y->size && x->mtime_ns == y->mtime_ns;
}

/* Take nh off its node and the LRU list. Returns 1 and *c if nobody uses
 * it (the caller closes it), else its last unpin will. lock held. */
static int nh_detach(struct tcm_nodes *t, struct tcm_nh *nh, struct tcm_hclose *c)
{
	if (nh->prev)
		nh->prev->next = nh->next;
	else
		t->nh_head = nh->next;
	if (nh->next)
		nh->next->prev = nh->prev;
	else
		t->nh_tail = nh->prev;
	nh->prev = nh->next = NULL;
	nh->node->nh = NULL;
	nh->node = NULL;
	t->nh_count--;
	if (nh->pins)
		return 0;
	*c = (struct tcm_hclose){.tc = nh->tc, .h = nh->h};
	free(nh);
	return 1;
}

int tcm_nodes_link(struct tcm_nodes *t, uint64_t parent, const char *name,
		   const struct tcm_attr *a, uint64_t *ino, struct tcm_hclose *c)
{
	int rc = 0;
	char *path = NULL;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_name(t, parent, name);
	if (n && n->attr.type != a->type) {
		/* a file became a directory or back: the kernel must see a new
		 * inode (it refuses a type change); the old one lives until
		 * forgotten */
		remove_name(t, n);
		n = NULL;
	}
	if (!n) {
		struct tcm_node *dir = find_ino(t, parent);
		if (!dir) {
			rc = -ESTALE;
			goto out;
		}
		size_t pl = strlen(dir->path), nl = strlen(name);
		path = malloc(pl + 1 + nl + 1);
		if (!path) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(path, dir->path, pl);
		path[pl] = '/';
		memcpy(path + pl + 1, name, nl + 1);
		n = node_new(t->next_ino, parent, path, pl + 1);
		if (!n) {
			free(path);
			rc = -ENOMEM;
			goto out;
		}
		t->next_ino++;
		insert_ino(t, n);
		insert_name(t, n);
		t->count++;
		maybe_grow(t);
	}
	if (n->nh && !attr_same(&n->attr, a))
		rc = nh_detach(t, n->nh, c); /* a new version: reads open anew */
	n->attr = *a;
	n->nlookup++;
	*ino = n->ino;
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void tcm_nodes_unname(struct tcm_nodes *t, uint64_t ino)
{
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	if (n && n->named && ino != FUSE_ROOT_ID)
		remove_name(t, n);
	pthread_mutex_unlock(&t->lock);
}

int tcm_nodes_forget(struct tcm_nodes *t, uint64_t ino, uint64_t nl, struct tcm_hclose *c)
{
	int rc = 0;
	if (ino == FUSE_ROOT_ID)
		return 0;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	if (n) {
		n->nlookup = nl < n->nlookup ? n->nlookup - nl : 0;
		if (n->nlookup == 0) {
			if (n->nh)
				rc = nh_detach(t, n->nh, c);
			remove_name(t, n);
			remove_ino(t, n);
			t->count--;
			node_free(n);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static void nh_to_front(struct tcm_nodes *t, struct tcm_nh *nh)
{
	if (t->nh_head == nh)
		return;
	if (nh->prev)
		nh->prev->next = nh->next;
	if (nh->next)
		nh->next->prev = nh->prev;
	else if (t->nh_tail == nh)
		t->nh_tail = nh->prev;
	nh->prev = NULL;
	nh->next = t->nh_head;
	if (t->nh_head)
		t->nh_head->prev = nh;
	t->nh_head = nh;
	if (!t->nh_tail)
		t->nh_tail = nh;
}

struct tcm_nh *tcm_nodes_nh_pin(struct tcm_nodes *t, uint64_t ino)
{
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	struct tcm_nh *nh = n ? n->nh : NULL;
	if (nh) {
		nh->pins++;
		nh_to_front(t, nh);
	}
	pthread_mutex_unlock(&t->lock);
	return nh;
}

struct tcm_nh *tcm_nodes_nh_add(struct tcm_nodes *t, uint64_t ino, struct tiercache *tc, int h,
				struct tcm_hclose *c, size_t *nc)
{
	*nc = 0;
	struct tcm_nh *mine = calloc(1, sizeof(*mine));
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	struct tcm_nh *nh = n ? n->nh : NULL;
	if (nh || !n || !mine) {
		/* lost the race (use theirs), or nowhere to keep ours: the
		 * caller reads once through a handle of its own and closes it */
		c[(*nc)++] = (struct tcm_hclose){.tc = tc, .h = h};
		free(mine);
		if (nh) {
			nh->pins++;
			nh_to_front(t, nh);
		}
		pthread_mutex_unlock(&t->lock);
		return nh;
	}
	*mine = (struct tcm_nh){.tc = tc, .h = h, .pins = 1, .node = n};
	n->nh = mine;
	t->nh_count++;
	nh_to_front(t, mine);
	/* evict idle handles from the cold end, a few per call */
	struct tcm_nh *v = t->nh_tail;
	while (v && t->nh_count > t->nh_cap && *nc < TCM_HCLOSE_MAX) {
		struct tcm_nh *prev = v->prev;
		if (!v->pins && v != mine)
			(void)nh_detach(t, v, &c[(*nc)++]);
		v = prev;
	}
	pthread_mutex_unlock(&t->lock);
	return mine;
}

int tcm_nodes_nh_unpin(struct tcm_nodes *t, struct tcm_nh *nh, struct tcm_hclose *c)
{
	int rc = 0;
	pthread_mutex_lock(&t->lock);
	if (--nh->pins == 0 && !nh->node) {
		*c = (struct tcm_hclose){.tc = nh->tc, .h = nh->h};
		free(nh);
		rc = 1;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int tcm_nodes_nh_detach(struct tcm_nodes *t, uint64_t ino, struct tcm_hclose *c)
{
	int rc = 0;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	if (n && n->nh)
		rc = nh_detach(t, n->nh, c);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void tcm_nh_get(const struct tcm_nh *nh, struct tiercache **tc, int *h)
{
	*tc = nh->tc; /* immutable after creation */
	*h = nh->h;
}


int tcm_nodes_update(struct tcm_nodes *t, uint64_t ino, const struct tcm_attr *a)
{
	int rc;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	if (!n || n->attr.type != a->type) {
		rc = -ESTALE; /* gone, or a file became a directory: look it up again */
	} else {
		rc = !attr_same(&n->attr, a);
		n->attr = *a;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

uint64_t tcm_nodes_parent(struct tcm_nodes *t, uint64_t ino)
{
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	uint64_t parent = n && n->parent ? n->parent : FUSE_ROOT_ID;
	pthread_mutex_unlock(&t->lock);
	return parent;
}

uint64_t tcm_nodes_peek(struct tcm_nodes *t, uint64_t parent, const char *name)
{
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_name(t, parent, name);
	uint64_t ino = n ? n->ino : 0;
	pthread_mutex_unlock(&t->lock);
	return ino;
}

int tcm_nodes_open(struct tcm_nodes *t, uint64_t ino, const struct tcm_attr *a,
		   enum tcm_cache *mode)
{
	int rc;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	if (!n) {
		rc = -ESTALE;
		goto out;
	}
	rc = !attr_same(&n->attr, a);
	n->attr = *a;
	if (n->cache_set && attr_same(&n->cache, a)) {
		*mode = TCM_CACHE_KEEP;
		n->cache_opens++;
	} else if (n->cache_opens > 0) {
		*mode = TCM_CACHE_BYPASS;
	} else {
		*mode = TCM_CACHE_FRESH;
		n->cache_set = true;
		n->cache = *a;
		n->cache_opens = 1;
	}
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void tcm_nodes_release(struct tcm_nodes *t, uint64_t ino, enum tcm_cache mode)
{
	if (mode == TCM_CACHE_BYPASS)
		return;
	pthread_mutex_lock(&t->lock);
	struct tcm_node *n = find_ino(t, ino);
	if (n && n->cache_opens > 0)
		n->cache_opens--;
	pthread_mutex_unlock(&t->lock);
}
