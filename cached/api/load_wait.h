/*
 * Requests that wait for a dataset's first listing (no start-up race).
 *
 * A daemon that has just started lists each remote dataset on a worker;
 * until that ends the dataset has no manifest (unless an earlier run
 * persisted one) and an OPEN, STAT, LISTDIR or OPEN_MANY of it could only
 * fail. A request that carries a wait (TC_F_WAIT_S(aux) > 0, protocol.h) is
 * parked instead: a copy of its frame waits, holding its connection
 * (conn_get: it counts against SERVER_WAIT_MAX) and its bytes (counted
 * with conn_work_begin against SERVER_OUTQ_MAX), until the listing ends,
 * however it ends, and then runs as if it had just arrived: it gets its
 * reply, or the listing's error with what to do. Past its wait it is
 * answered ETIMEDOUT with the progress so far. A closed connection drops
 * its parked requests at once.
 *
 * Each parked request polls its dataset on a 50 ms timer rather than
 * hearing of the end from the cache (a lower layer): a start-up costs a
 * few wake-ups, and the cache needs no hook for it. Loop thread only.
 */
#ifndef TIERCACHE_LOAD_WAIT_H
#define TIERCACHE_LOAD_WAIT_H

#include <stdbool.h>

#include "api.h"

/* Called first for every frame: true if h was parked (nothing else to
 * do now), false to handle it now. */
bool load_wait_park(struct conn *c, const struct tc_hdr *h, const uint8_t *payload);
/* c closed: drop its parked requests unanswered. */
void load_wait_conn_closed(struct conn *c);

#endif
