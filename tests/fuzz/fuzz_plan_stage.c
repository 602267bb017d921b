/*
 * libFuzzer target for the plan stager: PLAN_SET payloads decoded and
 * resolved by cached/api/plan_frame.c against a real manifest
 * (store/manifest.c), staged by cached/plan/plan_stage.c, in the sequence
 * handlers_plan.c runs them, on up to four connections.
 *
 * Input: records of { u8 control, u16 len, len bytes of PLAN_SET payload }.
 * control & 3: the connection; 0x4: it disconnects after the frame; 0x8:
 * the dataset is refreshed first (a new manifest: stages of the old one
 * are refused at their next frame, ESTALE).
 *
 * Checked after every frame: a connection never has more than
 * PLAN_STAGE_CONN_MAX stages or PLAN_STAGE_CONN_ENTRIES entries staged; a
 * stage's indices all name files of its manifest and their fingerprint is
 * the stage's; a commit sees exactly the staged entries; ASan/UBSan watch
 * the rest (every frame's memory is freed: leaks are errors at exit).
 *
 * Build and run: tests/fuzz/build.sh fuzz_plan_stage.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "plan_frame.h"
#include "plan_stage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const paths[] = {
	"a", "b/c", "b/d/e", "dir/file one", "z", "zz/top", "x/y/z/w", "m.bin",
};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

/* A manifest of the paths above; gen picks which are gone. */
static struct manifest *mf_make(unsigned gen)
{
	struct manifest *m = calloc(1, sizeof(*m));
	assert(m);
	for (size_t i = 0; i < NPATHS; i++) {
		struct cold_stat st = {.size = 1000 * (i + 1), .mtime_ns = (int64_t)gen};
		if ((gen + i) % 5 == 0 && gen)
			continue; /* a different file list after a refresh */
		assert(manifest_add(m, paths[i], &st, 0) == 0);
	}
	manifest_sort(m);
	if (gen && m->n)
		m->v[gen % m->n].gone = true;
	return m;
}

/* What plans_stage_commit checks: every index in range, the fingerprint. */
static void stage_verify(const struct plan_stage *st)
{
	const struct manifest *mf = st->mf;
	uint64_t fp = 0;
	assert(st->n <= st->cap && st->n <= PLAN_STAGE_CONN_ENTRIES);
	for (size_t i = 0; i < st->n; i++) {
		assert(st->ix[i] < mf->n);
		fp += plan_stage_fp(mf->v[st->ix[i]].path);
	}
	assert(fp == st->fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int conns[4];
	struct plan_stages stages = {0};
	unsigned gen = 0;
	/* every manifest lives to the end of the input, so no stage's manifest
	 * address comes back for another (the commit's fingerprint covers that
	 * case in the daemon) */
	struct manifest *mfs[32];
	struct manifest *mf = mfs[0] = mf_make(gen);
	const void *ds = &stages;    /* a dataset token */
	char msg[PLAN_FRAME_MSG];

	while (size >= 3) {
		uint8_t ctl = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		const void *c = &conns[ctl & 3];
		if ((ctl & 0x8) && gen + 1 < sizeof(mfs) / sizeof(mfs[0])) {
			gen++;
			mf = mfs[gen] = mf_make(gen);
		}
		struct proto_rd r;
		proto_rd_init(&r, data, len);
		data += len;
		size -= len;

		struct plan_frame q;
		if (plan_frame_head(&r, &q, msg) < 0 || strcmp(q.dataset, "ds") != 0)
			goto next;
		struct plan_stage *st = plan_stage_get(&stages, c, ds, q.job, q.rank);
		if ((q.flags & TC_PLAN_CONT) && !st)
			goto next;
		if (!(q.flags & TC_PLAN_CONT) && st) {
			plan_stage_drop(&stages, st);
			st = NULL;
		}
		uint32_t *ix = NULL;
		uint64_t fp = 0;
		int rc = plan_frame_check(&q, r.left, st ? st->n : 0, msg);
		if (rc == 0 && st && st->mf != mf)
			rc = -ESTALE;
		if (rc == 0) {
			ix = malloc((q.n ? q.n : 1) * sizeof(*ix));
			assert(ix);
			rc = plan_frame_entries(&r, &q, mf, ix, &fp, msg);
		}
		if (rc == 0) {
			for (uint32_t i = 0; i < q.n; i++)
				assert(ix[i] < mf->n && !mf->v[ix[i]].gone);
			if (q.flags & TC_PLAN_MORE) {
				if (!st)
					rc = plan_stage_start(&stages, c, ds, mf, q.job, q.rank,
							      q.flags & (TC_PLAN_APPEND | TC_PLAN_RESUME), &st);
				if (rc == 0) {
					size_t before = st->n;
					rc = plan_stage_add(&stages, st, ix, q.n, fp);
					assert(rc < 0 ? st->n == before : st->n == before + q.n);
					stage_verify(st);
				}
				assert(rc == 0 || rc == -EBUSY || rc == -E2BIG);
				if (rc < 0 && st) {
					plan_stage_drop(&stages, st);
					st = NULL;
				}
			} else if (st) {
				/* the commit: the staged entries, then this frame's */
				stage_verify(st);
				plan_stage_drop(&stages, st);
				st = NULL;
			}
		} else {
			assert(msg[0] != '\0');
			if (st)
				plan_stage_drop(&stages, st);
		}
		free(ix);
	next:
		if (ctl & 0x4)
			plan_stage_drop_conn(&stages, c);
		for (int k = 0; k < 4; k++) {
			unsigned n = 0;
			for (const struct plan_stage *s = stages.list; s; s = s->next)
				n += s->c == &conns[k];
			assert(n <= PLAN_STAGE_CONN_MAX);
			assert(plan_stage_conn_entries(&stages, &conns[k]) <= PLAN_STAGE_CONN_ENTRIES);
		}
		for (const struct plan_stage *s = stages.list; s; s = s->next)
			stage_verify(s);
	}
	plan_stages_free(&stages);
	for (unsigned i = 0; i <= gen; i++)
		manifest_free(mfs[i]);
	return 0;
}
