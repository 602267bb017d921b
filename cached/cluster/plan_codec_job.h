/*
 * A whole-job plan's encode or decode (plan_codec.h) on a worker thread
 * (util/workers.h). For a million-entry plan, zstd, XXH3 and the parse
 * take tens to hundreds of milliseconds of CPU, which the loop must not
 * spend in one go: plan_share.c hands them here and carries on.
 *
 * The job owns its inputs (a copy of the plan's paths, or the compressed
 * bytes), so nothing the loop changes or frees meanwhile is read on the
 * worker. done() runs on the loop thread; the caller decides there whether
 * the result is still wanted (a newer registration or a cancel may have
 * come meanwhile) and frees the job with plan_codec_job_free().
 */
#ifndef TIERCACHE_PLAN_CODEC_JOB_H
#define TIERCACHE_PLAN_CODEC_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan_codec.h"
#include "workers.h"

struct plan_codec_job {
	struct job job;
	void (*done)(struct plan_codec_job *cj); /* loop thread */
	void *arg;
	bool decode;
	struct plan_doc doc; /* encode: the input (blob/off owned); decode: the result */
	uint8_t *enc;	     /* encode: the result; decode: the input (owned) */
	size_t enclen;
	uint64_t rawlen, hash;
	int rc; /* 0 or -errno (decode: -EBADMSG with the reason in why) */
	char why[160];
	uint64_t cpu_us;   /* the worker's CPU time for it */
	unsigned delay_ms; /* tests: held this long first (plan_share.c) */
};

/* delay_ms: tests only (0: none), the worker waits that long first. */
/* Encode a copy of d on a worker; done(cj) follows on the loop with
 * cj->enc, enclen, rawlen, hash (or cj->rc < 0). 0 or -ENOMEM. Loop
 * thread. */
int plan_codec_job_encode(struct workers *w, const struct plan_doc *d, unsigned delay_ms,
			  void (*done)(struct plan_codec_job *cj), void *arg);
/* Decode enc (taken over, also on error) on a worker; done(cj) follows on
 * the loop with cj->doc (or cj->rc < 0 and cj->why). 0 or -ENOMEM. Loop
 * thread. */
int plan_codec_job_decode(struct workers *w, uint8_t *enc, size_t enclen, uint64_t rawlen,
			  uint64_t hash, unsigned delay_ms, void (*done)(struct plan_codec_job *cj),
			  void *arg);
/* Free cj and whatever it still owns (set doc.blob/off or enc to NULL to
 * keep them). */
void plan_codec_job_free(struct plan_codec_job *cj);

/* Tests only: TIERCACHE_PLAN_CODEC_DELAY_MS (0..10000 ms; else 0, with a
 * warning), the delay_ms plan_share.c passes. */
unsigned plan_codec_job_test_delay_ms(void);

#endif
