/*
 * The cold store's speed per epoch, measured from a recorded trace, for the
 * timed prefetch model (`--prefetch-rate epoch`). The daemon's prefetcher
 * keeps prefetch_inflight cold reads going at once, each as long as a
 * demand read of the same size, so the model wants one read's speed (per
 * stream), not the epoch's throughput (which is the readers' pace, whatever
 * held them back). A demand miss shows it: `tierctl trace` records a miss
 * when its chunk has come in, so the time from the same rank's previous
 * access to the miss is what one cold read of that size took (plus the
 * client's own time, which makes the model a little pessimistic). Per
 * epoch, the rate is the median of size / that time over the epoch's
 * misses (result column; an access whose rank's previous access was in
 * another epoch does not count). An epoch without such misses gets the
 * median over the whole trace.
 */
#ifndef TIERCACHE_SIM_RATE_H
#define TIERCACHE_SIM_RATE_H

#include "trace.h"

#include <stdint.h>

/* rates[e] in bytes/s per stream for every epoch (t->nepochs entries). 0;
 * -EINVAL when the trace lacks time_us or result, or has no miss to
 * measure; -ENOMEM. */
int sim_epoch_rates(const struct trace *t, uint64_t *rates);

#endif
