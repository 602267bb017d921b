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

int server_loop(struct event_base *base, struct server *s, uint64_t poll_ns)
{
	if (!poll_ns || !s)
		return event_base_dispatch(base) < 0 ? -EIO : 0;
	for (;;) {
		uint64_t seen = server_frames(s);
		int r = event_base_loop(base, EVLOOP_ONCE);
		if (r < 0)
			return -EIO;
		if (r == 1 || stopped(base))
			return 0;
		if (server_frames(s) == seen)
			continue; /* a timer or a fill, not a client: sleep again */
		seen = server_frames(s);
		uint64_t until = mono_ns() + poll_ns;
		while (!stopped(base)) {
			if (event_base_loop(base, EVLOOP_NONBLOCK) < 0)
				return -EIO;
			uint64_t now = mono_ns();
			if (server_frames(s) != seen) {
				seen = server_frames(s);
				until = now + poll_ns;
			} else if (now >= until) {
				break;
			}
			sched_yield();
		}
		if (stopped(base))
			return 0;
	}
}
