/*
 * The chunk checksum's XXH3-64 (seed 0), computed with the widest vector
 * unit the CPU has. Debian's libxxhash is built for the x86-64 baseline
 * (SSE2); it also exports runtime-dispatched entry points
 * (xxh_x86dispatch.h) that pick AVX2 or AVX-512 when present. Same value
 * either way (XXH3 does not depend on the vector width); on the 2-core
 * test VM (AVX-512) 100 KB takes 4-5 us instead of 10 us, on the
 * completion thread of every small miss. Other architectures use the
 * plain functions. Pure: any thread.
 */
#ifndef TIERCACHE_CHUNK_SUM_H
#define TIERCACHE_CHUNK_SUM_H

#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
#define XXH_DISPATCH_DISABLE_REPLACE 1 /* name the dispatch calls, replace nothing */
#include <xxh_x86dispatch.h>
#define CHUNK_SUM_ONESHOT XXH3_64bits_dispatch
#define CHUNK_SUM_UPDATE XXH3_64bits_update_dispatch
#else
#define CHUNK_SUM_ONESHOT XXH3_64bits
#define CHUNK_SUM_UPDATE XXH3_64bits_update
#endif

/* chunk_checksum(buf, len) */
static inline uint64_t chunk_sum(const void *buf, size_t len)
{
	return CHUNK_SUM_ONESHOT(buf, len);
}

/* Streaming: reset, update piece by piece, digest (the same value as
 * chunk_sum of the concatenation). */
static inline int chunk_sum_update(XXH3_state_t *st, const void *p, size_t n)
{
	return CHUNK_SUM_UPDATE(st, p, n) == XXH_OK ? 0 : -1;
}

#endif
