/*
 * net/busy_poll: the daemon's event loop. After a wakeup that answered a
 * client it keeps polling (non-blocking, yielding the CPU each turn) until
 * poll_ns pass without a new reply, or until a turn took requests and
 * answered none (the clients wait on fills), then sleeps in the loop again:
 * a client's next request then finds the daemon awake instead of paying a
 * CPU wakeup (tens of microseconds on a VM whose idle vCPUs halt). The
 * price is up to poll_ns of daemon CPU after each burst of requests.
 */
#ifndef TC_NET_BUSY_POLL_H
#define TC_NET_BUSY_POLL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "server.h"

struct event_base;

/* Default window, microseconds; $TIERCACHE_DAEMON_POLL_US overrides (0: off). */
#define SERVER_POLL_US_DEFAULT 50u
#define SERVER_POLL_US_MAX 1000u

/* Run base until loopbreak/loopexit (like event_base_dispatch), polling
 * for poll_ns after each wakeup that answered clients of s. 0: no polling.
 * Returns 0 or -EIO. */
int server_loop(struct event_base *base, struct server *s, uint64_t poll_ns);

#endif
