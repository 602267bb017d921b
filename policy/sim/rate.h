/*
 * The cold store's speed per epoch, measured from a recorded trace, for the
 * timed prefetch model (`--prefetch-rate epoch`). The daemon's prefetcher
 * keeps prefetch_inflight cold reads going at once, each about as long as
 * a demand read of the same size, so the model wants one read's speed (per
 * stream), not the epoch's throughput (that is the readers' pace, whatever
 * held them back: a training step, the CPU). A demand miss shows it:
 * `tierctl trace` records a miss when its chunk has come in, so the gap
 * from the same (job, rank)'s access before to the miss is one cold read
 * of that size plus the client's own time between reads; the client's
 * time is the epoch's median gap before a hit (hot or warm), taken off.
 * Per epoch, the rate is the median of size / (gap - that) over the
 * epoch's misses (result column; a gap that spans two epochs, or is no
 * longer than a hit's, does not count). An epoch without such a miss gets
 * the median over the whole trace.
 *
 * Needs each (job, rank) to be one reader at a time (a DDP rank, a tagged
 * connection): readers that share an untagged stream interleave, and their
 * gaps measure nothing.
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
