/*
 * Trace generators for the workloads training data sees (docs/simulator.md):
 *   shuffle   one job, N objects, E epochs, a new permutation per epoch
 *   ddp       P ranks, DistributedSampler: one permutation per epoch, padded
 *             to a multiple of P, rank r reads positions r, r+P, r+2P, ...;
 *             one node's view (rank R only) or all ranks interleaved
 *   multijob  J jobs, each shuffling the same data set, reads interleaved
 *             at random (jobs run at the same average speed)
 *   zipf      M independent reads, popularity ~ 1/rank^alpha
 *   shards    S shards of K chunks: shards in random order per epoch,
 *             chunks in order inside a shard, W shards read at once
 * Sizes: fixed, uniform in [lo, hi], or lognormal (median, sigma), drawn
 * once per object. Deterministic for a seed. Single-threaded.
 */
#ifndef TIERCACHE_SIM_GEN_H
#define TIERCACHE_SIM_GEN_H

#include "trace.h"

enum gen_kind { GEN_SHUFFLE, GEN_DDP, GEN_MULTIJOB, GEN_ZIPF, GEN_SHARDS };
enum gen_size_kind { GEN_SIZE_FIXED, GEN_SIZE_UNIFORM, GEN_SIZE_LOGNORMAL };

struct gen_opts {
	enum gen_kind kind;
	uint64_t objects;  /* N (shards: S x K, set from shards and chunks) */
	uint32_t epochs;   /* E */
	uint32_t ranks;    /* ddp: P */
	int32_t view;      /* ddp: the rank whose node is simulated, -1 = all */
	uint32_t jobs;     /* multijob: J */
	uint64_t accesses; /* zipf: M (0: N x E) */
	double alpha;      /* zipf exponent */
	uint32_t shards, chunks, readers; /* shards: S, K, W */
	enum gen_size_kind size_kind;
	uint64_t size_a, size_b; /* fixed: a; uniform: [a, b]; lognormal: median a */
	double sigma;            /* lognormal */
	uint64_t seed;
};

void gen_opts_default(struct gen_opts *o);
/* Parse "shuffle" etc. -1 if unknown. */
int gen_kind_parse(const char *s);
const char *gen_kind_name(enum gen_kind k);
/* Parse a size distribution: "4096", "1M", "uniform:1K:1M", "lognormal:1M:1.0". */
int gen_size_parse(struct gen_opts *o, const char *s, char *err, size_t errlen);
/* Parse "64K", "12M", "3G", "100" into bytes; false if not a size. */
bool gen_parse_bytes(const char *s, uint64_t *out);

/* Fill an empty trace. 0, -EINVAL (err says why) or -ENOMEM. */
int gen_trace(const struct gen_opts *o, struct trace *t, char *err, size_t errlen);

#endif
