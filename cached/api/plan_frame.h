/*
 * PLAN_SET frames (include/tiercache/protocol.h): decoding and checking a
 * frame's header and resolving its entries to manifest indices, apart from
 * the connection so that the fuzz target (tests/fuzz/fuzz_plan_stage.c)
 * drives the same code as handlers_plan.c. Every error is -errno with the
 * message the client is to see in msg.
 *
 * Loop thread only (the manifest is the loop's).
 */
#ifndef TIERCACHE_PLAN_FRAME_H
#define TIERCACHE_PLAN_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"
#include "proto.h"

#define PLAN_FRAME_MSG 512 /* bytes of a message */

struct plan_frame {
	char dataset[TC_DATASET_NAME_MAX + 1];
	uint64_t job;
	uint32_t rank, world_size, epoch;
	uint8_t flags, kind;
	uint32_t n; /* entries that follow */
};

/* Decode the header, up to and with n. 0 or -EBADMSG / -EINVAL. */
int plan_frame_head(struct proto_rd *r, struct plan_frame *f, char *msg);
/* Check its values, staged being the entries this registration already
 * has. 0, -EINVAL (rank, flags, kind, too many entries) or -EBADMSG (n
 * entries cannot fit in the r->left bytes that follow). */
int plan_frame_check(const struct plan_frame *f, size_t left, size_t staged, char *msg);
/* Resolve the n entries against mf into ix[0..n) (live files only),
 * adding plan_stage_fp() of each path to *fp; the payload must end there.
 * 0, -ENOENT (no such file: nothing registered), -EINVAL (an invalid
 * path) or -EBADMSG. */
int plan_frame_entries(struct proto_rd *r, const struct plan_frame *f, const struct manifest *mf,
		       uint32_t *ix, uint64_t *fp, char *msg);

#endif
