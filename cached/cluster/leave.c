/*
 * Leaving the cluster promptly: see leave.h.
 *
 * The wait runs the loop one turn at a time (EVLOOP_ONCE) until the reply
 * or a timer a little past the command's own deadline. Its record is on
 * the heap: a reply that comes after the wait gave up (only at
 * redis_conn_free, as -ECANCELED) frees it.
 */
#include "leave.h"

#include <errno.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct leave_wait {
	bool done, abandoned;
	int err;
};

static void on_left(void *arg, struct redisReply *r, int err)
{
	(void)r;
	struct leave_wait *w = arg;
	if (w->abandoned) {
		free(w);
		return;
	}
	w->done = true;
	w->err = err;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(bool *)arg = true;
}

int leave_now(struct event_base *base, struct members *m, const char *self, uint64_t timeout_ms)
{
	struct leave_wait *w = calloc(1, sizeof(*w));
	bool expired = false;
	struct event *t = evtimer_new(base, on_deadline, &expired);
	if (!w || !t) {
		free(w);
		if (t)
			event_free(t);
		return -ENOMEM;
	}
	int rc = members_leave(m, on_left, w);
	if (rc < 0) {
		free(w);
		event_free(t);
		log_info("op=member_leave node=%s err=\"Redis is not reachable: the other nodes drop this "
			 "node when its lease ends\"", self);
		return rc;
	}
	uint64_t ms = timeout_ms + 200; /* the command's deadline answers first */
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(t, &tv);
	while (!w->done && !expired)
		if (event_base_loop(base, EVLOOP_ONCE) < 0)
			break;
	event_free(t);
	if (!w->done) {
		w->abandoned = true; /* freed by its callback, at the latest at redis_conn_free */
		log_info("op=member_leave node=%s err=\"no answer from Redis in time: the other nodes drop "
			 "this node when its lease ends\"", self);
		return -ETIMEDOUT;
	}
	rc = w->err;
	free(w);
	if (rc < 0)
		log_info("op=member_leave node=%s err=\"%s: the other nodes drop this node when its lease "
			 "ends\"", self, strerror(-rc));
	else
		log_info("op=member_leave node=%s result=removed", self);
	return rc;
}
