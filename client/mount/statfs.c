/*
 * statfs for tiercache-mount: the mounted dataset's file count and bytes,
 * from the daemon's "datasets" record set (TC_OP_DATASETS), so `df` shows
 * the dataset's size. Nothing is free: the mount is read-only.
 *
 * Threads: any FUSE worker; only locals and the thread-safe pool.
 */
#include "tcmount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "proto.h"
#include "tiercache/protocol.h"

#define STATFS_BSIZE 4096u

struct ds_totals {
	uint64_t files;
	uint64_t bytes;
};

/* The "datasets" record named name: its files and bytes. */
static int datasets_find(const void *p, size_t len, const char *name, struct ds_totals *out)
{
	struct proto_recset rs;
	int rc = proto_recset_parse(p, len, &rs);
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	const struct proto_section *sec = proto_recset_find(&rs, "datasets");
	for (uint32_t i = 0; sec && i < sec->nrecords; i++) {
		const struct proto_record *r = &sec->records[i];
		const struct proto_field *n = proto_record_find(r, "name");
		if (!n || n->type != TC_VAL_STR || strcmp(n->v.s, name) != 0)
			continue;
		const struct proto_field *f = proto_record_find(r, "files");
		const struct proto_field *b = proto_record_find(r, "bytes");
		out->files = f && f->type == TC_VAL_U64 ? f->v.u : 0;
		out->bytes = b && b->type == TC_VAL_U64 ? b->v.u : 0;
		rc = 0;
		break;
	}
	proto_recset_free(&rs);
	return rc;
}

void tcm_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct tcm *m = fuse_req_userdata(req);
	struct ds_totals t = {0};
	void *rep = NULL;
	size_t replen = 0;
	(void)ino;

	if (tcm_pool_gate(&m->pool) < 0) {
		fuse_reply_err(req, ETIMEDOUT);
		return;
	}
	if (tiercache_call(tcm_pool_pick(&m->pool), TC_OP_DATASETS, NULL, 0, &rep, &replen) < 0) {
		fuse_reply_err(req, tcm_pool_errno(&m->pool, errno, "statfs", m->dataset));
		return;
	}
	tcm_pool_ok(&m->pool);
	int rc = datasets_find(rep, replen, m->dataset, &t);
	if (rc < 0)
		tcm_log(TCM_WARN, "op=statfs dataset=%s err=\"%s\"", m->dataset,
			rc == -ENOENT ? "not in the daemon's dataset list" : "malformed datasets reply");
	free(rep);

	struct statvfs st = {
		.f_bsize = STATFS_BSIZE,
		.f_frsize = STATFS_BSIZE,
		.f_blocks = (fsblkcnt_t)((t.bytes + STATFS_BSIZE - 1) / STATFS_BSIZE),
		.f_files = (fsfilcnt_t)t.files,
		.f_namemax = TC_NAME_MAX,
	};
	fuse_reply_statfs(req, &st);
}
