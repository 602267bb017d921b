/*
 * The loop thread's identity: see loop.h. Written once before other threads
 * start, read from any thread.
 */
#include "loop.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_t owner;
static atomic_bool owner_set;

void loop_owner_set(void)
{
	owner = pthread_self();
	atomic_store(&owner_set, true);
}

bool loop_is_owner(void)
{
	return !atomic_load(&owner_set) || pthread_equal(owner, pthread_self());
}
