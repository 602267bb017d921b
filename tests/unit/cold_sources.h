/*
 * The sources the cold backend contract (test_cold_contract.c) runs
 * against: a posix temp directory and a fresh RADOS namespace, made,
 * changed and restricted through each backend's own means (files,
 * librados), never through the backend under test.
 */
#ifndef TIERCACHE_COLD_SOURCES_H
#define TIERCACHE_COLD_SOURCES_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend.h"
#include "config.h"

struct src {
	struct dataset_conf dc;
	struct cold c;
	char base[PATH_MAX]; /* posix: the temp dir; the dataset is base/src */
	char prefix[128];    /* rados: this test's object-name prefix */
};

/* What a limited identity saw (filled in a child process for posix). */
struct limited_res {
	int stat_ok, stat_denied;
	ssize_t read_ok, read_denied;
	int bytes_ok; /* the readable file's bytes were the source's */
};

typedef void (*limited_fn)(struct cold *c, void *arg, struct limited_res *res);

struct src_ops {
	const char *name;
	int denied_errno;  /* what an unreadable file gives */
	int outside_errno; /* what a path out of the dataset gives */
	int (*init)(void); /* once; 0 or -1 with a message */
	void (*fini)(void);
	void (*make)(struct src *s, unsigned n); /* an empty dataset; fills s->dc */
	/* write (or rewrite) a file; a rewrite is a newer version */
	void (*put)(struct src *s, const char *path, const void *buf, size_t n);
	void (*del)(struct src *s, const char *path);
	/* optional: make a FIFO where a file could be */
	void (*fifo)(struct src *s, const char *path);
	/* run fn with a handle on the dataset as an identity that may read
	 * `allowed` and not `denied`; 0, or 1 if the setup cannot (skip) */
	int (*as_limited)(struct src *s, const char *allowed, const char *denied, limited_fn fn,
			  void *arg, struct limited_res *res);
	void (*destroy)(struct src *s);
};

extern const struct src_ops cold_src_posix, cold_src_rados;

/* A handle of the backend dc names on the dataset dc describes (fails the
 * test if it cannot be opened). */
void cold_src_open_handle(struct cold *c, const struct dataset_conf *dc);

/* posix: the full path of PATH in s's dataset (for what only a posix
 * test makes, such as symlinks). */
void cold_src_posix_path(const struct src *s, const char *path, char *out, size_t n);

#endif
