/*
 * Waiting for a dataset that is still loading (a daemon that has just
 * started lists remote datasets in the background): the library asks the
 * daemon to hold its OPEN, STAT, LISTDIR and OPEN_MANY requests until the
 * listing ends, up to a timeout (TC_F_WAIT_S in the request flags), rather
 * than fail them. The daemon answers when the listing ends, so waiting
 * costs no frames and no polling here.
 *
 * Threads: the timeout is read with every request and set from any thread.
 */
#include "libtc_private.h"

#include <errno.h>
#include <stdlib.h>

unsigned tc_wait_from_env(void)
{
	const char *s = getenv(TIERCACHE_LOAD_TIMEOUT_ENV);
	if (!s || !*s)
		return TIERCACHE_LOAD_TIMEOUT_DEFAULT;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || *s == '-' || v > TC_F_WAIT_MAX_S) {
		tc_log(1, "%s=\"%s\" is not 0..%u seconds; using %u", TIERCACHE_LOAD_TIMEOUT_ENV, s,
		       TC_F_WAIT_MAX_S, TIERCACHE_LOAD_TIMEOUT_DEFAULT);
		return TIERCACHE_LOAD_TIMEOUT_DEFAULT;
	}
	return (unsigned)v;
}

uint32_t tc_wait_flags(struct tiercache *tc, uint8_t op)
{
	if (op != TC_OP_OPEN && op != TC_OP_STAT && op != TC_OP_LISTDIR && op != TC_OP_OPEN_MANY)
		return 0;
	return TC_F_WAIT(__atomic_load_n(&tc->load_wait_s, __ATOMIC_RELAXED));
}

int tiercache_set_wait(struct tiercache *tc, unsigned seconds)
{
	tc_err_begin();
	if (!tc)
		return tc_err_fail(-EINVAL);
	if (seconds > TC_F_WAIT_MAX_S) {
		tc_err_detail("a wait of %u s is longer than the %u s the protocol carries", seconds,
			      TC_F_WAIT_MAX_S);
		return tc_err_fail(-EINVAL);
	}
	__atomic_store_n(&tc->load_wait_s, seconds, __ATOMIC_RELAXED);
	return 0;
}
