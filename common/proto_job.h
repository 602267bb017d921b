/*
 * The TC_OP_CONN_JOB payload (include/tiercache/protocol.h): one encoder
 * for libtiercache, one decoder for tiercached, so both sides agree on it
 * and the unit tests and the fuzzer drive the same code. No state.
 */
#ifndef TIERCACHE_PROTO_JOB_H
#define TIERCACHE_PROTO_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

/* A connection's job tag. */
struct tc_job_tag {
	bool set;      /* false: untagged (job and rank unused) */
	uint64_t job;
	uint32_t rank; /* TC_JOB_RANK_ANY: every rank of the job */
};

/* Append the payload (after proto_wr_begin). */
void proto_job_encode(struct proto_wr *w, const struct tc_job_tag *t);
/* Decode a whole payload. 0, -EBADMSG (truncated or trailing bytes) or
 * -EINVAL (unknown flags); *t is untouched on error. An untagging payload
 * decodes to set = false, job = 0, rank = 0. */
int proto_job_decode(const void *p, size_t n, struct tc_job_tag *t);

#endif
