/*
 * The form in which a whole-job plan (plan/job_plans.h) travels through
 * Redis: a small binary document (dataset, job, world_size, epoch,
 * registering rank, uid, then the entries as paths: manifest indices differ
 * between nodes), compressed with zstd, and its 64-bit hash (XXH3 of the
 * uncompressed form). plan_share.c cuts the compressed bytes into pieces of
 * at most PLAN_CODEC_PIECE_MAX.
 *
 * Redis is shared with anything that can reach it, so decoding checks like
 * a socket parser: every length and count is bounded, the decompressed size
 * must be the announced one and the hash must match before anything is
 * parsed. Pure: no I/O, any thread.
 */
#ifndef TIERCACHE_PLAN_CODEC_H
#define TIERCACHE_PLAN_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define PLAN_CODEC_PIECE_MAX (1u << 20)     /* bytes of one Redis value */
#define PLAN_CODEC_ENCODED_MAX (64u << 20)  /* compressed bytes of one plan */
#define PLAN_CODEC_PIECES_MAX (PLAN_CODEC_ENCODED_MAX / PLAN_CODEC_PIECE_MAX)
#define PLAN_CODEC_RAW_MAX (320u << 20)     /* uncompressed bytes of one plan */

struct plan_doc {
	char dataset[CONFIG_NAME_MAX + 1];
	uint64_t job;
	uint32_t world_size, epoch, reg_rank, uid;
	char *blob;      /* the paths, NUL-terminated one after the other */
	size_t bloblen;
	uint32_t *off;   /* entry i is blob + off[i] */
	uint32_t n;
};

/* Encode d: *out (malloc'd, *outlen bytes) is the compressed form, *rawlen
 * its size uncompressed, *hash its hash. 0, -EFBIG (compressed above
 * PLAN_CODEC_ENCODED_MAX or a path too long), -EINVAL or -ENOMEM. */
int plan_codec_encode(const struct plan_doc *d, uint8_t **out, size_t *outlen, uint64_t *rawlen,
		      uint64_t *hash);
/* Decode enc (enclen bytes, announced rawlen and hash) into *d (blob and
 * off malloc'd: the caller frees them, or passes them on). 0, or -EBADMSG
 * with the reason in why. */
int plan_codec_decode(const uint8_t *enc, size_t enclen, uint64_t rawlen, uint64_t hash,
		      struct plan_doc *d, char *why, size_t whylen);

#endif
