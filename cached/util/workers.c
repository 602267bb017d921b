/*
 * Worker pool: see workers.h. Jobs go through a mutex-protected FIFO to the
 * threads; finished jobs go through a second list to the loop, which an
 * event made active from the worker wakes (libevent is set up for threads
 * with evthread_use_pthreads() in main.c).
 */
#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <event2/event.h>

#include "log.h"

struct workers {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail;     /* to run */
	struct job *done_head, *done_tail; /* to deliver on the loop */
	struct event *wake;
	pthread_t *threads;
	unsigned nthreads;
	unsigned busy;               /* queued + running + undelivered */
	bool stopping;
};

static void push(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->head && !w->stopping)
			pthread_cond_wait(&w->cv, &w->mu);
		struct job *j = w->head;
		if (!j)
			break; /* stopping and drained */
		w->head = j->next;
		if (!w->head)
			w->tail = NULL;
		pthread_mutex_unlock(&w->mu);
		j->work(j);
		pthread_mutex_lock(&w->mu);
		push(&w->done_head, &w->done_tail, j);
		event_active(w->wake, EV_READ, 0);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Loop thread: run the done() of every finished job. */
static void deliver(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct workers *w = arg;
	pthread_mutex_lock(&w->mu);
	struct job *j = w->done_head;
	w->done_head = w->done_tail = NULL;
	pthread_mutex_unlock(&w->mu);
	while (j) {
		struct job *next = j->next;
		pthread_mutex_lock(&w->mu);
		w->busy--;
		pthread_mutex_unlock(&w->mu);
		j->done(j);
		j = next;
	}
}

int workers_start(struct workers **out, struct event_base *base, unsigned n)
{
	struct workers *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->wake = event_new(base, -1, 0, deliver, w);
	w->threads = calloc(n, sizeof(*w->threads));
	if (!w->wake || !w->threads) {
		event_free(w->wake);
		free(w->threads);
		free(w);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		int rc = pthread_create(&w->threads[i], NULL, worker_main, w);
		if (rc) {
			log_err("op=workers_start err=\"cannot create thread\" errno=%d", rc);
			break;
		}
		w->nthreads++;
	}
	if (!w->nthreads) {
		event_free(w->wake);
		free(w->threads);
		free(w);
		return -EAGAIN;
	}
	*out = w;
	return 0;
}

void workers_submit(struct workers *w, struct job *j)
{
	pthread_mutex_lock(&w->mu);
	push(&w->head, &w->tail, j);
	w->busy++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void workers_post(struct workers *w, struct job *j)
{
	pthread_mutex_lock(&w->mu);
	push(&w->done_head, &w->done_tail, j);
	w->busy++;
	event_active(w->wake, EV_READ, 0);
	pthread_mutex_unlock(&w->mu);
}

unsigned workers_busy(const struct workers *w)
{
	return w->busy;
}

void workers_stop(struct workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	/* The threads are gone, but a done() run here may submit or post
	 * again (a fill that ends and starts the next): run such jobs on this
	 * thread until nothing is left, so none is lost with the pool. */
	for (;;) {
		pthread_mutex_lock(&w->mu);
		struct job *j = w->head;
		if (j) {
			w->head = j->next;
			if (!w->head)
				w->tail = NULL;
		}
		bool more = j || w->done_head;
		pthread_mutex_unlock(&w->mu);
		if (!more)
			break;
		if (j) {
			j->work(j);
			pthread_mutex_lock(&w->mu);
			push(&w->done_head, &w->done_tail, j);
			pthread_mutex_unlock(&w->mu);
		}
		deliver(-1, 0, w);
	}
	event_free(w->wake);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->threads);
	free(w);
}
