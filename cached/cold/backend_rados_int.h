/*
 * Private to the rados backend (backend_rados.c: open, close, reads;
 * backend_rados_list.c: list, stat, object probes, the striped-path map).
 * Threads: struct rados_ds is shared by every thread that calls the backend
 * and by librados' completion thread; the fields under `lock` need it.
 */
#ifndef TIERCACHE_BACKEND_RADOS_INT_H
#define TIERCACHE_BACKEND_RADOS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <rados/librados.h>

#include "backend.h"

struct striper_layout {
	uint64_t su; /* stripe unit */
	uint64_t sc; /* stripe count */
	uint64_t os; /* object size */
};

struct rreq;
struct smap_ent;

struct rados_ds {
	rados_t cluster;
	rados_ioctx_t ioctx;
	char name[72];
	char prefix[256];
	bool prefer_striper;
	unsigned op_timeout_s;
	unsigned max_inflight;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t idle;  /* inflight reached 0 */
	unsigned inflight;
	unsigned stats; /* async stats in flight (quiesce waits for them too) */
	struct rreq *qhead, *qtail;
	bool closing;
	bool unhealthy; /* last read ended with -ETIMEDOUT */
	struct smap_ent **sm_b;
	size_t sm_nb, sm_n;
};

/* What one stat + getxattrs op says about an object. */
struct objinfo {
	int rc; /* 0 or -errno (-ENOENT: no such object) */
	uint64_t size;
	time_t mtime;
	uint64_t version;
	bool striped; /* first object of a valid striped file */
	uint64_t logical_size;
	struct striper_layout lay;
};

struct probe {
	rados_read_op_t op;
	rados_completion_t comp;
	uint64_t size;
	time_t mtime;
	int stat_rv;
	int xattr_rv;
	rados_xattrs_iter_t iter;
};

/* "PREFIX" + path (+ ".0000000000000000" for a striped file's first
 * object); malloc'd, NULL when out of memory. */
char *rados_be_oid(const struct rados_ds *r, const char *path, bool head);
/* A clean relative path: no empty, "." or ".." component, no leading or
 * trailing '/', within the protocol's limits. */
bool rados_be_path_ok(const char *p);

/* The striped-path map; call with r->lock held. lay NULL: not striped. */
bool rados_be_smap_get(struct rados_ds *r, const char *path, struct striper_layout *lay);
void rados_be_smap_set(struct rados_ds *r, const char *path, const struct striper_layout *lay);
void rados_be_smap_clear(struct rados_ds *r);

/* One stat + getxattrs op, async: cb (on a librados thread) or, with cb
 * NULL, rados_aio_wait_for_complete(p->comp); then probe_finish. */
int rados_be_probe_start(struct rados_ds *r, struct probe *p, const char *oid, rados_callback_t cb,
			 void *arg);
void rados_be_probe_finish(struct probe *p, struct objinfo *oi);
/* Blocking: n probes, a window of them in flight at a time. */
void rados_be_probe_many(struct rados_ds *r, char *const *oids, struct objinfo *out, size_t n);

/* The ops (blocking; worker threads). */
int rados_be_list(struct cold *c, cold_list_fn fn, void *arg);
int rados_be_stat(struct cold *c, const char *path, struct cold_stat *st);
int rados_be_stat_async(struct cold *c, struct cold_statio *sio);

#endif
