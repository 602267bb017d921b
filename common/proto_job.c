/*
 * The TC_OP_CONN_JOB payload: see proto_job.h.
 */
#include "proto_job.h"

#include <errno.h>

void proto_job_encode(struct proto_wr *w, const struct tc_job_tag *t)
{
	proto_wr_u8(w, t->set ? TC_JOB_F_SET : 0);
	proto_wr_u64(w, t->set ? t->job : 0);
	proto_wr_u32(w, t->set ? t->rank : 0);
}

int proto_job_decode(const void *p, size_t n, struct tc_job_tag *t)
{
	struct proto_rd r;
	proto_rd_init(&r, p, n);
	uint8_t flags = proto_rd_u8(&r);
	uint64_t job = proto_rd_u64(&r);
	uint32_t rank = proto_rd_u32(&r);
	if (!proto_rd_done(&r))
		return -EBADMSG;
	if (flags & ~TC_JOB_F_SET)
		return -EINVAL;
	bool set = flags & TC_JOB_F_SET;
	*t = (struct tc_job_tag){.set = set, .job = set ? job : 0, .rank = set ? rank : 0};
	return 0;
}
