/*
 * The last close of a segment that is gone, on a worker: see seg_close.h.
 */
#include "seg_close.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "loop.h"
#include "workers.h"

struct fd_close {
	struct job job; /* first: the job is the close */
	int fd;
};

/* Worker. */
static void close_work(struct job *j)
{
	close(((struct fd_close *)j)->fd);
}

static void close_done(struct job *j)
{
	free(j);
}

static void seg_close_fd(void *arg, int fd)
{
	loop_assert();
	struct cache *cache = arg;
	struct fd_close *fc = NULL;
	/* stopping: the workers are being joined, close here */
	if (cache->workers && !cache->stopping)
		fc = malloc(sizeof(*fc));
	if (!fc) {
		close(fd);
		return;
	}
	fc->job = (struct job){.work = close_work, .done = close_done};
	fc->fd = fd;
	workers_submit(cache->workers, &fc->job);
}

/* A spare segment file created ahead (segment.h "spare"). */
struct seg_spare_job {
	struct job job; /* first */
	struct cache *cache;
	int t;
	uint64_t id;
	int rc, wfd, rfd;
	char dir[PATH_MAX];
	char path[PATH_MAX + 64];
};

/* Worker: the file system only. */
static void spare_work(struct job *j)
{
	struct seg_spare_job *sj = (struct seg_spare_job *)j;
	sj->rc = segment_file_create(sj->dir, sj->path, &sj->wfd, &sj->rfd);
}

/* Loop (also from workers_stop at a stop: the store is freed after it,
 * and segstore_free deletes the spare). */
static void spare_done(struct job *j)
{
	struct seg_spare_job *sj = (struct seg_spare_job *)j;
	segstore_spare_done(&sj->cache->segs[sj->t], sj->id, sj->rc, sj->wfd, sj->rfd);
	free(sj);
}

static bool seg_spare_make(void *arg, struct segstore *s, uint64_t id)
{
	loop_assert();
	struct cache *cache = arg;
	if (!cache->workers || cache->stopping)
		return false;
	struct seg_spare_job *sj = calloc(1, sizeof(*sj));
	if (!sj)
		return false;
	sj->job = (struct job){.work = spare_work, .done = spare_done};
	sj->cache = cache;
	sj->t = (int)(s - cache->segs);
	sj->id = id;
	sj->wfd = sj->rfd = -1;
	snprintf(sj->dir, sizeof(sj->dir), "%s", s->dir);
	segment_path(s, id, sj->path, sizeof(sj->path));
	workers_submit(cache->workers, &sj->job);
	return true;
}

void seg_close_start(struct cache *cache)
{
	for (int t = 0; t < TIER_COUNT; t++) {
		cache->segs[t].close_fd = seg_close_fd;
		cache->segs[t].close_arg = cache;
		cache->segs[t].spare_make = seg_spare_make;
		cache->segs[t].spare_arg = cache;
	}
}
