/*
 * PLAN_SET frames: see plan_frame.h. Loop thread only.
 */
#include "plan_frame.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan_stage.h"

int plan_frame_head(struct proto_rd *r, struct plan_frame *f, char *msg)
{
	memset(f, 0, sizeof(*f));
	if (!proto_rd_str_copy(r, f->dataset, sizeof(f->dataset))) {
		bool short_frame = r->left < 4; /* what the reader left: as in every handler */
		snprintf(msg, PLAN_FRAME_MSG,
			 "malformed request: a dataset name of at most %u bytes comes first",
			 TC_DATASET_NAME_MAX);
		return short_frame ? -EBADMSG : -EINVAL;
	}
	f->job = proto_rd_u64(r);
	f->rank = proto_rd_u32(r);
	f->world_size = proto_rd_u32(r);
	f->epoch = proto_rd_u32(r);
	f->flags = proto_rd_u8(r);
	f->kind = proto_rd_u8(r);
	f->n = proto_rd_u32(r);
	if (!proto_rd_ok(r)) {
		snprintf(msg, PLAN_FRAME_MSG, "malformed PLAN_SET header");
		return -EBADMSG;
	}
	return 0;
}

int plan_frame_check(const struct plan_frame *f, size_t left, size_t staged, char *msg)
{
	if (f->world_size == 0 || f->rank >= f->world_size) {
		snprintf(msg, PLAN_FRAME_MSG,
			 "rank %u of world_size %u: need world_size >= 1 and rank < world_size", f->rank,
			 f->world_size);
		return -EINVAL;
	}
	if (f->flags & ~(TC_PLAN_APPEND | TC_PLAN_MORE | TC_PLAN_CONT | TC_PLAN_RESUME | TC_PLAN_JOB) ||
	    (f->kind != TC_PLAN_PATHS && f->kind != TC_PLAN_INDICES)) {
		snprintf(msg, PLAN_FRAME_MSG, "unknown plan flags 0x%x or kind %u (paths 1, indices 2)",
			 f->flags, f->kind);
		return -EINVAL;
	}
	/* each entry takes at least 8 bytes (index) or 4 + 1 (path) */
	if (f->n > left / (f->kind == TC_PLAN_INDICES ? 8 : 5)) {
		snprintf(msg, PLAN_FRAME_MSG, "malformed PLAN_SET: %u entries announced in %zu bytes", f->n,
			 left);
		return -EBADMSG;
	}
	if (staged > TC_PLAN_ENTRIES_MAX || f->n > TC_PLAN_ENTRIES_MAX - staged) {
		snprintf(msg, PLAN_FRAME_MSG,
			 "plan too long: at most %u files per registration (register the rest with append)",
			 TC_PLAN_ENTRIES_MAX);
		return -EINVAL;
	}
	return 0;
}

int plan_frame_entries(struct proto_rd *r, const struct plan_frame *f, const struct manifest *mf,
		       uint32_t *ix, uint64_t *fp, char *msg)
{
	for (uint32_t i = 0; i < f->n; i++) {
		const struct mf_entry *e = NULL;
		if (f->kind == TC_PLAN_INDICES) {
			uint64_t x = proto_rd_u64(r);
			if (!proto_rd_ok(r))
				break;
			if (x < mf->n && x < UINT32_MAX && !mf->v[x].gone)
				e = &mf->v[x];
			if (!e) {
				snprintf(msg, PLAN_FRAME_MSG,
					 "index %llu is not a file of dataset %s (it has %zu files); nothing "
					 "was registered",
					 (unsigned long long)x, f->dataset, mf->n);
				return -ENOENT;
			}
		} else {
			size_t len;
			const char *s = proto_rd_str(r, TC_PATH_MAX, &len);
			if (!s)
				break;
			char path[TC_PATH_MAX + 1];
			memcpy(path, s, len);
			path[len] = '\0';
			if (!manifest_path_valid(path, len)) {
				snprintf(msg, PLAN_FRAME_MSG,
					 "plan entry %u: invalid path \"%.200s\" (relative to the dataset, no "
					 "empty, \".\" or \"..\" components); nothing was registered",
					 i, path);
				return -EINVAL;
			}
			e = manifest_find(mf, path);
			if (!e || (size_t)(e - mf->v) >= UINT32_MAX) {
				snprintf(msg, PLAN_FRAME_MSG,
					 "no file \"%.200s\" in dataset %s; nothing was registered", path,
					 f->dataset);
				return -ENOENT;
			}
		}
		ix[i] = (uint32_t)(e - mf->v);
		*fp += plan_stage_fp(e->path);
	}
	if (!proto_rd_done(r)) {
		snprintf(msg, PLAN_FRAME_MSG,
			 "malformed PLAN_SET: the payload does not hold the %u entries it announces", f->n);
		return -EBADMSG;
	}
	return 0;
}
