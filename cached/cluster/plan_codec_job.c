/*
 * A plan document's encode or decode on a worker: see plan_codec_job.h.
 * work() runs on a worker thread and reads only the job; done() runs on
 * the loop thread.
 */
#include "plan_codec_job.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

static uint64_t thread_cpu_us(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static struct plan_codec_job *of_job(struct job *j)
{
	return (struct plan_codec_job *)((char *)j - offsetof(struct plan_codec_job, job));
}

/* worker thread */
static void codec_work(struct job *j)
{
	struct plan_codec_job *cj = of_job(j);
	if (cj->delay_ms) {
		struct timespec ts = {.tv_sec = cj->delay_ms / 1000,
				      .tv_nsec = (long)(cj->delay_ms % 1000) * 1000000};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	uint64_t t0 = thread_cpu_us();
	if (cj->decode) {
		cj->rc = plan_codec_decode(cj->enc, cj->enclen, cj->rawlen, cj->hash, &cj->doc,
					   cj->why, sizeof(cj->why));
	} else {
		cj->rc = plan_codec_encode(&cj->doc, &cj->enc, &cj->enclen, &cj->rawlen, &cj->hash);
		/* the copy is not needed any more: freed here, off the loop */
		free(cj->doc.blob);
		free(cj->doc.off);
		cj->doc.blob = NULL;
		cj->doc.off = NULL;
	}
	cj->cpu_us = thread_cpu_us() - t0;
}

/* loop thread */
static void codec_done(struct job *j)
{
	struct plan_codec_job *cj = of_job(j);
	cj->done(cj);
}

/* Hand cj to a worker; done(cj) on the loop when it ends. */
static int cj_submit(struct workers *w, struct plan_codec_job *cj, unsigned delay_ms,
		     void (*done)(struct plan_codec_job *cj), void *arg)
{
	cj->delay_ms = delay_ms;
	cj->done = done;
	cj->arg = arg;
	cj->job.work = codec_work;
	cj->job.done = codec_done;
	workers_submit(w, &cj->job);
	return 0;
}

int plan_codec_job_encode(struct workers *w, const struct plan_doc *d, unsigned delay_ms,
			  void (*done)(struct plan_codec_job *cj), void *arg)
{
	struct plan_codec_job *cj = calloc(1, sizeof(*cj));
	if (!cj)
		return -ENOMEM;
	cj->doc = *d;
	cj->doc.blob = malloc(d->bloblen ? d->bloblen : 1);
	cj->doc.off = malloc((d->n ? d->n : 1) * sizeof(*d->off));
	if (!cj->doc.blob || !cj->doc.off) {
		plan_codec_job_free(cj);
		return -ENOMEM;
	}
	memcpy(cj->doc.blob, d->blob, d->bloblen);
	memcpy(cj->doc.off, d->off, (size_t)d->n * sizeof(*d->off));
	return cj_submit(w, cj, delay_ms, done, arg);
}

int plan_codec_job_decode(struct workers *w, uint8_t *enc, size_t enclen, uint64_t rawlen,
			  uint64_t hash, unsigned delay_ms, void (*done)(struct plan_codec_job *cj),
			  void *arg)
{
	struct plan_codec_job *cj = calloc(1, sizeof(*cj));
	if (!cj) {
		free(enc);
		return -ENOMEM;
	}
	cj->decode = true;
	cj->enc = enc;
	cj->enclen = enclen;
	cj->rawlen = rawlen;
	cj->hash = hash;
	return cj_submit(w, cj, delay_ms, done, arg);
}

void plan_codec_job_free(struct plan_codec_job *cj)
{
	if (!cj)
		return;
	free(cj->doc.blob);
	free(cj->doc.off);
	free(cj->enc);
	free(cj);
}

/* Tests only: TIERCACHE_PLAN_CODEC_DELAY_MS (0..10000) holds each encode
 * and decode that long on its worker, so that a test can overtake one
 * with a newer registration, a cancel or a kill. */
unsigned plan_codec_job_test_delay_ms(void)
{
	const char *e = getenv("TIERCACHE_PLAN_CODEC_DELAY_MS");
	if (!e || !*e)
		return 0;
	char *end;
	unsigned long v = strtoul(e, &end, 10);
	if (*end || v > 10000) {
		log_warn("op=config TIERCACHE_PLAN_CODEC_DELAY_MS=%s is not 0..10000 ms; ignored",
			 e);
		return 0;
	}
	log_warn("op=config TIERCACHE_PLAN_CODEC_DELAY_MS=%lu: every plan encode and decode is "
		 "held "
		 "that long (for tests only)",
		 v);
	return (unsigned)v;
}
