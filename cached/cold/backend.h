/*
 * Cold backends: where a dataset's source of truth lives (a directory, a
 * RADOS pool). One const ops table per backend, one backend per file,
 * picked by name from a registry when a dataset is configured.
 *
 * Threads: open/list/stat and a non-async read block, so the daemon calls
 * them on worker threads (or at startup, before the loop runs). A backend
 * with COLD_CAP_ASYNC starts a read and returns; its completion runs
 * io->done on a backend thread, which must not touch daemon state (the fill
 * code hands the result to the loop).
 */
#ifndef TIERCACHE_BACKEND_H
#define TIERCACHE_BACKEND_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dataset_conf;

#define COLD_CAP_ASYNC 0x1u   /* read() completes through io->done */
#define COLD_CAP_VERSION 0x2u /* cold_stat.version is meaningful */
#define COLD_CAP_CHEAP_STAT 0x4u /* stat() is a local syscall: the loop may call it inline */

/* The source version of a file: a cached chunk is valid only for the exact
 * version it was read from. */
struct cold_stat {
	uint64_t size;
	int64_t mtime_ns;
	uint64_t version; /* backend object version, 0 where there is none */
};

static inline int cold_stat_same(const struct cold_stat *a, const struct cold_stat *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns && a->version == b->version;
}

struct cold_io {
	/* in */
	const char *path;       /* relative to the dataset root, no leading '/' */
	struct cold_stat expect; /* fail with -ESTALE if the source differs */
	uint64_t off;
	size_t len;             /* bytes wanted; fewer only at EOF */
	void *buf;
	/* out */
	ssize_t result;         /* bytes read or -errno */
	/* async backends: called once when the read ends, on any thread */
	void (*done)(struct cold_io *io);
	void *arg;
};

/* An async stat (backends with stat_async). */
struct cold_statio {
	/* in */
	const char *path;
	/* out */
	struct cold_stat st;
	int result; /* 0 or -errno (-ENOENT: no such file) */
	/* called once when the stat ends, on any thread */
	void (*done)(struct cold_statio *sio);
	void *arg;
};

/* Called once per file by list(); return non-zero to stop. */
typedef int (*cold_list_fn)(void *arg, const char *path, const struct cold_stat *st);

struct cold;

/* Errors every backend gives alike (tests/unit/test_cold_contract.c checks
 * them on each): -ENOENT only for "no such file", a directory included,
 * since the daemon drops a file from its manifest on -ENOENT and on nothing
 * else; a special file (FIFO, socket, device) where a file was is -EINVAL,
 * refused before any read; a file the backend's identity may not read is
 * -EACCES (posix, the kernel's word) or -EPERM (rados, missing cephx caps),
 * never -ENOENT. A path leading out of the dataset fails (posix: -EXDEV,
 * rados: -ENOENT); the daemon rejects those first. A symlink on the path
 * is -ELOOP (posix): a dataset is what list() walks, and it follows none.
 *
 * Whose fault: an error is about one file unless the store itself is down.
 * cold_err_is_store() names the errors that always mean the store (the
 * network ones, -ENODEV); for the others the daemon asks probe(), where
 * the backend has one, whether the store still answers. */
struct cold_backend_ops {
	const char *name;
	unsigned caps;
	/* Connect / check the source. On failure -errno and a reason in err. */
	int (*open)(struct cold *c, const struct dataset_conf *dc, char *err, size_t errlen);
	/* Every regular file of the dataset, once; fn returning non-zero
	 * stops the walk, and list still returns 0. */
	int (*list)(struct cold *c, cold_list_fn fn, void *arg);
	int (*stat)(struct cold *c, const char *path, struct cold_stat *st);
	/* Optional: start a stat that does not hold a thread while the source
	 * answers; 0 once started (done() follows, as for an async read), or
	 * -errno (then use stat() on a worker). quiesce() waits for these too. */
	int (*stat_async)(struct cold *c, struct cold_statio *sio);
	/* Without COLD_CAP_ASYNC: blocking, returns bytes or -errno.
	 * With it: returns 0 once started (done() follows) or -errno. */
	ssize_t (*read)(struct cold *c, struct cold_io *io);
	/* Async backends (optional): start no more reads and wait until every
	 * read started has ended; queued ones end with -ECANCELED, later ones
	 * fail with -ESHUTDOWN. Every done() has run when it returns. list and
	 * stat still work until close(). Blocks (up to the op timeout). */
	void (*quiesce)(struct cold *c);
	void (*close)(struct cold *c);
	/* Optional, cheap (the loop may call it): is the store itself there?
	 * 0, or -ENODEV with what is wrong in why. */
	int (*probe)(struct cold *c, char *why, size_t n);
};

struct cold {
	const struct cold_backend_ops *ops;
	void *priv;
	char dataset[72]; /* for log lines */
	/* names a list() in progress has found so far (a backend that probes
	 * them all before calling fn sets it as it goes; written with
	 * __atomic_store_n, read by the loop for status). */
	uint64_t list_progress;
};

const struct cold_backend_ops *cold_backend_find(const char *name);

static inline int cold_open(struct cold *c, const struct dataset_conf *dc, char *err, size_t n)
{
	return c->ops->open(c, dc, err, n);
}

static inline int cold_list(struct cold *c, cold_list_fn fn, void *arg)
{
	return c->ops->list(c, fn, arg);
}

static inline int cold_stat(struct cold *c, const char *path, struct cold_stat *st)
{
	return c->ops->stat(c, path, st);
}

/* -EOPNOTSUPP where the backend has no asynchronous stat: use cold_stat()
 * on a worker then. */
static inline int cold_stat_async(struct cold *c, struct cold_statio *sio)
{
	return c->ops->stat_async ? c->ops->stat_async(c, sio) : -EOPNOTSUPP;
}

/* True where reads complete through io->done() (COLD_CAP_ASYNC). */
static inline bool cold_is_async(const struct cold *c)
{
	return c->ops->caps & COLD_CAP_ASYNC;
}

/* True where stat() is one cheap local call, fine on the loop
 * (COLD_CAP_CHEAP_STAT). */
static inline bool cold_has_cheap_stat(const struct cold *c)
{
	return c->ops->caps & COLD_CAP_CHEAP_STAT;
}

static inline ssize_t cold_read(struct cold *c, struct cold_io *io)
{
	return c->ops->read(c, io);
}

/* An error that says the store itself is down, not one file: the network
 * errors a remote store gives, and -ENODEV (posix: the root is gone). */
static inline bool cold_err_is_store(int err)
{
	switch (-err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case ETIMEDOUT:
	case ENOTCONN:
	case EHOSTUNREACH:
	case EHOSTDOWN:
	case ENETUNREACH:
	case ENETDOWN:
	case ESHUTDOWN:
	case ENODEV:
		return true;
	default:
		return false;
	}
}

/* 0 where the backend has no probe or the store answers; else -ENODEV and
 * why. */
static inline int cold_probe(struct cold *c, char *why, size_t n)
{
	return c->ops->probe ? c->ops->probe(c, why, n) : 0;
}

static inline void cold_quiesce(struct cold *c)
{
	if (c->ops && c->ops->quiesce)
		c->ops->quiesce(c);
}

static inline void cold_close(struct cold *c)
{
	if (c->ops && c->ops->close)
		c->ops->close(c);
}

#endif
