/*
 * A manifest as it is published through Redis (manifest_share.h): the
 * encoded manifest (manifest_encode) compressed with zstd, cut into
 * pieces of at most MFP_PIECE_MAX bytes, and the meta that describes one
 * generation of it. Pure: no I/O, so that tests can feed it anything.
 *
 * Every number a reader takes from Redis is bounded here before anything
 * is allocated from it: the raw size by MFP_RAW_MAX, the compressed size
 * by what zstd can make of that, the piece count by the compressed size,
 * each piece's length exactly.
 */
#ifndef TIERCACHE_MANIFEST_PIECES_H
#define TIERCACHE_MANIFEST_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MFP_PIECE_MAX (1024u * 1024u)           /* bytes of one piece */
#define MFP_RAW_MAX (512ull * 1024u * 1024u)    /* encoded manifest: larger is not published */
#define MFP_SOURCE_MAX 4200u                    /* the source identity: backend and a path */
#define MFP_NODE_MAX 64u

struct mfp_meta {
	uint64_t gen;        /* generation, > 0 */
	uint64_t pieces;     /* pieces of this generation */
	uint64_t raw;        /* bytes of the encoded manifest */
	uint64_t zsize;      /* bytes compressed (all pieces together) */
	uint64_t xxh3;       /* XXH3-64 of the encoded manifest */
	uint64_t listed_ms;  /* Redis' clock when it was published */
	char source[MFP_SOURCE_MAX + 1]; /* backend and location: "posix:/path" */
	char node[MFP_NODE_MAX + 1];     /* who listed it */
};

/* Compress raw[0..n) into a new buffer (*z, *zn) and fill m's sizes,
 * pieces and checksum (gen, listed_ms, source and node are the caller's).
 * 0, -EFBIG (n above MFP_RAW_MAX or 0) or -ENOMEM. */
int mfp_pack(const void *raw, size_t n, int level, void **z, size_t *zn, struct mfp_meta *m);

/* Pieces for zsize compressed bytes. */
uint64_t mfp_piece_count(uint64_t zsize);
/* The length piece i of m must have (0 when i is out of range). */
size_t mfp_piece_len(const struct mfp_meta *m, uint64_t i);

/* Is m whole and within bounds (gen > 0, raw in 1..MFP_RAW_MAX, zsize
 * within what zstd can make of raw, pieces = mfp_piece_count(zsize))?
 * 0, or -EINVAL with what is wrong in why. */
int mfp_meta_check(const struct mfp_meta *m, char *why, size_t whyn);

/* Take one field of the meta hash (as HGETALL gives it) into m. Unknown
 * fields are ignored (a newer writer); a known one with a bad value is
 * -EINVAL. Numbers are decimal, xxh3 16 hex digits. */
int mfp_meta_field(struct mfp_meta *m, const char *f, size_t fn, const char *v, size_t vn);

/* Decompress z[0..zn) as m describes it into a new buffer of m->raw
 * bytes (*raw) and check its XXH3. 0, -EINVAL (not m's: wrong size, not
 * zstd, wrong checksum; why says which) or -ENOMEM. */
int mfp_unpack(const void *z, size_t zn, const struct mfp_meta *m, void **raw, char *why, size_t whyn);

#endif
