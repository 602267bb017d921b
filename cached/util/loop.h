/*
 * Which thread is the loop's. The daemon's state (the index, the tables,
 * the tiers, the policies, the connections) belongs to the one libevent
 * loop thread; workers and librados completions hand their results back to
 * it. loop_assert() states that at a function's entry and checks it in
 * builds without NDEBUG (every build of this project): a call from another
 * thread aborts at once instead of racing silently.
 */
#ifndef TIERCACHE_LOOP_H
#define TIERCACHE_LOOP_H

#include <assert.h>
#include <stdbool.h>

/* The calling thread runs the loop from now on (cache_init). */
void loop_owner_set(void);
/* True on the loop thread, and before any loop was set up. */
bool loop_is_owner(void);

#define loop_assert() assert(loop_is_owner())

#endif
