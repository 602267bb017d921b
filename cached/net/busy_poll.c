/*
 * The daemon's event loop with a short busy poll after activity: see
 * busy_poll.h.
 *
 * Why: a hit is one request and one reply. When the daemon's CPU sleeps
 * between requests, every request first has to wake it, and on a virtual
 * machine whose idle vCPUs halt (the 2-core dev VM: cpuidle haltpoll with
 * guest_halt_poll_ns = 0) that wakeup costs tens of microseconds, more
 * than all the work of the request. The library's next request usually
 * comes a few microseconds after the reply (read the descriptor, close,
 * open the next file), so polling the sockets for a short window after the
 * last frame keeps the CPU awake for it. The window restarts with every
 * frame parsed and ends after poll_ns without one; the loop yields the CPU
 * on every turn so a client on the same CPU still runs.
 *
 * What starts and restarts the window is a reply, not a frame: a client
 * that was answered is the one about to ask again. A request answered
 * later (a miss: the reply waits for the cold store) starts none, and a
 * turn that took requests and answered none ends the window, since every
 * client that asked now waits on a fill whose completion wakes the loop
 * anyway. Polling on through a miss cost about 50 us of yields per cold
 * read, 40 % of the loop thread's samples in a small-file RADOS epoch
 * (docs/ceph.md, "Measured: small files from RADOS"). A fill's answer
 * does start the window: the client's next request follows it closely.
 */
#include "busy_poll.h"

#include <sched.h>
#include <time.h>

#include <event2/event.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool stopped(struct event_base *base)
{
	return event_base_got_break(base) || event_base_got_exit(base);
}

/* Counters of s at one moment (what a loop turn changed). */
struct poll_seen {
	uint64_t awaited, replies;
};

static struct poll_seen poll_seen_now(const struct server *s)
{
	return (struct poll_seen){.awaited = server_awaited(s), .replies = server_replies(s)};
}

int server_loop(struct event_base *base, struct server *s, uint64_t poll_ns)
{
	if (!poll_ns || !s)
		return event_base_dispatch(base) < 0 ? -EIO : 0;
	for (;;) {
		struct poll_seen seen = poll_seen_now(s);
		int r = event_base_loop(base, EVLOOP_ONCE);
		if (r < 0)
			return -EIO;
		if (r == 1 || stopped(base))
			return 0;
		if (server_replies(s) == seen.replies)
			continue; /* no answer: nobody is about to ask again; sleep */
		seen = poll_seen_now(s);
		uint64_t until = mono_ns() + poll_ns;
		while (!stopped(base)) {
			if (event_base_loop(base, EVLOOP_NONBLOCK) < 0)
				return -EIO;
			uint64_t now = mono_ns();
			struct poll_seen cur = poll_seen_now(s);
			if (cur.replies != seen.replies)
				until = now + poll_ns;
			else if (cur.awaited != seen.awaited)
				break; /* asked, nothing answered: the clients wait on a fill */
			else if (now >= until)
				break;
			seen = cur;
			sched_yield();
		}
		if (stopped(base))
			return 0;
	}
}
