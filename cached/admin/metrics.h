/*
 * The Prometheus endpoint: GET /metrics on daemon.metrics_listen, served on
 * the daemon's loop (so every number is read on the loop thread that owns
 * it) by a small HTTP/1.1 server with bounds: daemon.metrics_max_clients
 * connections, a few seconds for a request, one reply per connection.
 * Text exposition format 0.0.4; the metric list is in docs/operations.md.
 * Off when metrics_listen is empty.
 */
#ifndef TIERCACHE_METRICS_H
#define TIERCACHE_METRICS_H

#include <stddef.h>

#include "status.h"

struct evbuffer;

/* Bind and serve (no-op when metrics_listen is empty). On failure a
 * message in err and -errno. */
struct metrics;

/* The HTTP endpoint (daemon.metrics_listen); *out stays NULL when off. */
int metrics_start(struct metrics **out, struct status *st, char *err, size_t errlen);
void metrics_stop(struct metrics *m);
/* Connections open now (0 when off). */
unsigned metrics_clients(const struct metrics *m);

/* Write every metric in the text format (the endpoint's body). */
int metrics_render(struct status *st, struct evbuffer *out);
/* The counter table's families alone (part of metrics_render). */
void metrics_render_counters(const struct status *st, struct evbuffer *out);

#endif
