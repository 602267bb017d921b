/*
 * A small pool of threads for blocking work (cold reads, tier file copies,
 * fsync, directory scans), and the way results get back to the loop.
 *
 * A job's work() runs on a worker thread and must not touch daemon state;
 * its done() then runs on the loop thread, where it may. The pool never
 * drops a job: workers_stop() runs every queued job before the threads end.
 */
#ifndef TIERCACHE_WORKERS_H
#define TIERCACHE_WORKERS_H

#include <stdbool.h>

struct event_base;
struct workers;

struct job {
	void (*work)(struct job *j);  /* worker thread */
	void (*done)(struct job *j);  /* loop thread; may free j */
	struct job *next;             /* owned by the pool */
};

/* Start n threads whose done() callbacks are delivered on base's loop. */
int workers_start(struct workers **out, struct event_base *base, unsigned n);
/* Queue a job. Thread-safe. */
void workers_submit(struct workers *w, struct job *j);
/* Hand a job straight to the loop (skip work()): for completions that
 * arrive on other threads, e.g. librados callbacks. Thread-safe. */
void workers_post(struct workers *w, struct job *j);
/* Jobs queued or running. Loop thread. */
unsigned workers_busy(const struct workers *w);
/* Finish all queued work, deliver the completions, join the threads; jobs
 * the last completions submit or post run on the calling thread. Call it
 * only when nothing on another thread can submit any more (the daemon
 * quiesces its async cold backends first). */
void workers_stop(struct workers *w);

#endif
