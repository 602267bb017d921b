/*
 * Job tags and liveness: tiercache_set_job / tiercache_clear_job (the
 * TC_OP_CONN_JOB request, include/tiercache/protocol.h), $TIERCACHE_JOB,
 * and tiercache_ping.
 *
 * The tag is connection state in the daemon, so the library keeps it in
 * struct tiercache and sends it again on every new connection: after a
 * daemon restart (tc_conn_restore) and in a forked child, whose first
 * request opens its own connection (DataLoader workers inherit the tag).
 *
 * Threads: tc->job changes and is sent with io_lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libtc_private.h"

int tc_job_send(struct tiercache *tc)
{
	struct proto_wr w;
	struct tc_msg m;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_job_encode(&w, &tc->job);
	int rc = w.oom ? -ENOMEM : tc_xfer(tc, TC_OP_CONN_JOB, 0, &w, &m);
	proto_wr_free(&w);
	if (rc == 0)
		tc_msg_free(&m);
	return rc;
}

struct job_arg {
	const struct tc_job_tag *t;
};

static int job_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	(void)tc;
	const struct job_arg *a = arg;
	proto_job_encode(w, a->t);
	return 0;
}

/* Set the tag and tell the daemon; the old tag stays if it refuses. */
static int job_change(struct tiercache *tc, const struct tc_job_tag *t)
{
	tc_enter(tc);
	tc_io_lock(tc);
	tc_ahead_reset(tc); /* handed for the old job's plans */
	struct tc_job_tag old = tc->job;
	tc->job = *t; /* a reconnect inside the request sends the new tag already */
	struct job_arg a = {.t = t};
	struct tc_req rq = {.op = TC_OP_CONN_JOB, .build = job_build, .arg = &a};
	struct tc_msg m;
	int rc = tc_request_locked(tc, &rq, &m);
	if (rc < 0) {
		tc->job = old;
		if (rc == -ENOSYS)
			tc_err_detail("tiercached at %s is older than job tags (TC_OP_CONN_JOB): "
				      "upgrade it, or read untagged",
				      tc->path);
	} else {
		tc_msg_free(&m);
	}
	tc_io_unlock(tc);
	return rc;
}

int tiercache_set_job(struct tiercache *tc, uint64_t job, uint32_t rank)
{
	tc_err_begin();
	if (!tc)
		return tc_err_fail(-EINVAL);
	struct tc_job_tag t = {.set = true, .job = job, .rank = rank};
	int rc = job_change(tc, &t);
	return rc < 0 ? tc_err_fail(rc) : 0;
}

int tiercache_clear_job(struct tiercache *tc)
{
	tc_err_begin();
	if (!tc)
		return tc_err_fail(-EINVAL);
	struct tc_job_tag t = {.set = false};
	int rc = job_change(tc, &t);
	return rc < 0 ? tc_err_fail(rc) : 0;
}

/* "JOB" or "JOB:RANK": JOB a number (decimal, 0x hex), RANK decimal. */
int tc_job_from_env(struct tiercache *tc)
{
	const char *s = getenv(TIERCACHE_JOB_ENV);
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	unsigned long long job = strtoull(s, &end, 0);
	bool bad = errno || end == s || *s == '-';
	unsigned long rank = TIERCACHE_RANK_ANY;
	if (!bad && *end == ':') {
		const char *r = end + 1;
		errno = 0;
		rank = strtoul(r, &end, 10);
		bad = errno || end == r || *r == '-' || rank >= TIERCACHE_RANK_ANY;
	}
	if (bad || *end) {
		tc_err_detail("%s=\"%.64s\" is not JOB or JOB:RANK (JOB a 64-bit number, decimal or 0x "
			      "hex: python3 -c 'import tiercache; print(tiercache.job_id(\"NAME\"))' gives "
			      "a name's; RANK a decimal rank)",
			      TIERCACHE_JOB_ENV, s);
		return -EINVAL;
	}
	tc->job = (struct tc_job_tag){.set = true, .job = job, .rank = (uint32_t)rank};
	return 0;
}

static int ping_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	(void)tc;
	(void)arg;
	proto_wr_u32(w, TC_PROTO_VERSION); /* HELLO: the protocol spoken */
	return 0;
}

int tiercache_ping(struct tiercache *tc)
{
	tc_err_begin();
	if (!tc)
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	struct tc_req rq = {.op = TC_OP_HELLO, .build = ping_build};
	struct tc_msg m;
	int rc = tc_request(tc, &rq, &m);
	if (rc < 0)
		return tc_err_fail(rc);
	tc_msg_free(&m);
	return 0;
}
