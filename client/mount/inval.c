/*
 * Page-cache invalidations sent from a thread of their own.
 *
 * With -o immutable the kernel sends no open, so the mount learns of a new
 * version of a file only from an answer of the daemon: the attributes of a
 * lookup or getattr (the kernel then drops the pages itself, auto_inval_data)
 * or the handle the first read of a node opens, which may name a newer
 * version than the pages and the size the kernel holds. In that last case
 * the kernel must drop the node's pages and attributes
 * (fuse_lowlevel_notify_inval_inode), but not from the read request: the
 * kernel holds the page locks of that read, and the invalidation waits for
 * them, so a notification from the request that holds them never returns
 * (libfuse: "do not call it from a filesystem operation"). The reads queue
 * the node here; this thread sends the notification once the read is
 * answered.
 *
 * Threads: tcm_inval_queue from any worker thread; one notifier thread.
 */
#include "tcmount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* nodes waiting at most; past it a queued invalidation is dropped (logged):
 * the kernel then keeps the old pages until attr_timeout, as without this */
#define TCM_INVAL_MAX 4096u

struct tcm_inval {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running, stop;
	uint64_t q[TCM_INVAL_MAX];
	unsigned head, n;
	struct fuse_session *se;
	atomic_ulong sent;
};

static void *inval_main(void *arg)
{
	struct tcm_inval *v = arg;
	pthread_mutex_lock(&v->lock);
	for (;;) {
		while (!v->stop && v->n == 0)
			pthread_cond_wait(&v->cond, &v->lock);
		if (v->stop) /* the session ends: its kernel inodes go with it */
			break;
		uint64_t ino = v->q[v->head];
		v->head = (v->head + 1) % TCM_INVAL_MAX;
		v->n--;
		pthread_mutex_unlock(&v->lock);
		/* the pages (off 0, len 0: all of them) and the attributes */
		int rc = fuse_lowlevel_notify_inval_inode(v->se, ino, 0, 0);
		if (rc < 0 && rc != -ENOENT) /* ENOENT: the kernel forgot the inode */
			tcm_log(TCM_WARN, "ino=%llu op=notify_inval_inode err=\"%s\"",
				(unsigned long long)ino, strerror(-rc));
		atomic_fetch_add_explicit(&v->sent, 1, memory_order_relaxed);
		pthread_mutex_lock(&v->lock);
	}
	pthread_mutex_unlock(&v->lock);
	return NULL;
}

int tcm_inval_start(struct tcm *m)
{
	struct tcm_inval *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->cond, NULL);
	v->se = m->se;
	int rc = pthread_create(&v->thread, NULL, inval_main, v);
	if (rc != 0) {
		tcm_log(TCM_ERR, "op=pthread_create what=invalidation_thread err=\"%s\"", strerror(rc));
		pthread_cond_destroy(&v->cond);
		pthread_mutex_destroy(&v->lock);
		free(v);
		return -rc;
	}
	v->running = true;
	m->inval = v;
	return 0;
}

void tcm_inval_queue(struct tcm *m, uint64_t ino)
{
	struct tcm_inval *v = m->inval;
	if (!v)
		return;
	pthread_mutex_lock(&v->lock);
	bool full = v->n == TCM_INVAL_MAX;
	if (!full) {
		v->q[(v->head + v->n) % TCM_INVAL_MAX] = ino;
		v->n++;
		pthread_cond_signal(&v->cond);
	}
	pthread_mutex_unlock(&v->lock);
	if (full)
		tcm_log(TCM_WARN, "ino=%llu: %u page-cache invalidations already waiting; this one "
			"is dropped (old pages stay until attr_timeout)", (unsigned long long)ino,
			TCM_INVAL_MAX);
}

unsigned long tcm_inval_stop(struct tcm *m)
{
	struct tcm_inval *v = m->inval;
	if (!v)
		return 0;
	pthread_mutex_lock(&v->lock);
	v->stop = true;
	pthread_cond_signal(&v->cond);
	pthread_mutex_unlock(&v->lock);
	if (v->running)
		pthread_join(v->thread, NULL);
	unsigned long sent = atomic_load(&v->sent);
	pthread_cond_destroy(&v->cond);
	pthread_mutex_destroy(&v->lock);
	free(v);
	m->inval = NULL;
	return sent;
}
