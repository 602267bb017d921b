/*
 * The last close of a segment that is gone, on a worker: see seg_close.h.
 */
#include "seg_close.h"

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

void seg_close_start(struct cache *cache)
{
	for (int t = 0; t < TIER_COUNT; t++) {
		cache->segs[t].close_fd = seg_close_fd;
		cache->segs[t].close_arg = cache;
	}
}
