/*
 * libFuzzer target for the TC_OP_CONN_JOB payload decoder
 * (common/proto_job.c): any input decodes or is refused without reading
 * past it; a payload that decodes is encoded again and must decode to the
 * same tag.
 *
 * Build and run: tests/fuzz/build.sh fuzz_proto_job.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tc_job_tag t = {.set = true, .job = 1, .rank = 2};
	int rc = proto_job_decode(data, size, &t);
	assert(rc == 0 || rc == -EBADMSG || rc == -EINVAL);
	if (rc < 0) {
		assert(t.set && t.job == 1 && t.rank == 2); /* untouched on error */
		return 0;
	}
	assert(size == 13);
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_job_encode(&w, &t);
	struct tc_job_tag again;
	assert(proto_job_decode(w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE, &again) == 0);
	assert(again.set == t.set && again.job == t.job && again.rank == t.rank);
	proto_wr_free(&w);
	return 0;
}
