/*
 * The access recorder behind `tierctl trace start/stop`: one CSV row per
 * chunk access the daemon serves, in the format `tiercache-sim --trace`
 * reads (docs/simulator.md, "Daemon traces"), so an admin can replay the
 * daemon's own workload against every policy.
 *
 * Columns (the file's first line names them):
 *     object,size,rank,job,epoch,time_us,dataset,chunk,result
 * object "DATASET/PATH#CHUNK" and dataset are percent-escaped (',', '%',
 * '#', '"', bytes up to ' ' and 0x7f become %XX), so a path with commas or
 * newlines stays one field; rank and job are small integers (job: the
 * order in which tagged jobs first appeared, from 0) or empty when the
 * connection is untagged; epoch is always empty (the simulator infers it);
 * result is hot, warm (a hit on that tier), miss (read from the cold store
 * and kept) or unkept (read from the cold store, served without keeping).
 *
 * Prefetch loads (the plan prefetcher, readahead, open-ahead) add rows of
 * their own, in the same columns, so a trace stays one time-ordered list
 * of events: result load (a load was issued; time_us is when), landed (it
 * came in and was kept, no read asked for it meanwhile), landed_late (it
 * came in and was kept, and a read asked for it while it was in flight:
 * that read waited, a miss) or load_lost (it came in but was not kept, or
 * failed). rank and job are empty on these rows. They are not accesses:
 * the hit counters do not count them, `tiercache-sim --prefetch-rate
 * trace` replays them (the daemon's own load timing).
 *
 * Cost: off, one predictable branch per access (trace_rec_on). On, a row
 * is formatted by hand into a 1 MiB buffer on the loop thread and the
 * buffer is written in one append when full. A write that fails (full
 * disk) or takes longer than TRACE_REC_SLOW_MS stops the trace with the
 * reason in status and the log: tracing never stalls clients for long.
 * The trace stops itself at its byte bound (the file never exceeds it).
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_TRACE_REC_H
#define TIERCACHE_TRACE_REC_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"

#define TRACE_REC_DEFAULT_BYTES (1ull << 30) /* --max-bytes default: 1 GiB */
#define TRACE_REC_MAX_BYTES (64ull << 30)    /* hard cap on --max-bytes */
#define TRACE_REC_SLOW_MS 1000u              /* one append slower than this stops the trace */
#define TRACE_REC_JOBS_MAX 4096u             /* distinct tagged jobs numbered; later ones: empty */

enum trace_result {
	TRACE_HOT = 0,
	TRACE_WARM = 1,
	TRACE_MISS = 2,
	TRACE_UNKEPT = 3,
	/* prefetch load rows, not accesses (above) */
	TRACE_LOAD = 4,
	TRACE_LANDED = 5,
	TRACE_LANDED_LATE = 6,
	TRACE_LOAD_LOST = 7,
};

/* What status and TRACE_STOP report. */
struct trace_rec_info {
	bool ever;                /* a trace was started since the daemon started */
	bool on;                  /* recording now */
	char path[PATH_MAX];
	char dataset[128];        /* the filter, "" = every dataset */
	uint64_t records, bytes;  /* rows (without the header) and bytes in the file */
	uint64_t accesses;        /* of the rows: accesses (hot..unkept); the rest are load rows */
	uint64_t max_bytes;
	int64_t started_s, stopped_s; /* wall clock; stopped_s 0 while on */
	char reason[256];         /* why it stopped ("" while on) */
};

/* Start recording into fd (open for writing, empty; ownership passes in
 * either way) named path, accesses of dataset only unless it is "" or
 * NULL, at most max_bytes bytes (header included). -EBUSY when a trace
 * runs (err names its file), -EINVAL for a bound out of range, -ENOMEM,
 * or -errno writing the header; a message in err. */
int trace_rec_start(struct cache *cache, int fd, const char *path, const char *dataset,
		    uint64_t max_bytes, char *err, size_t errlen);
/* Stop the trace that runs (flush, close) for reason why; its final
 * numbers in *out (may be NULL). -ENOENT when none runs (*out: the last
 * one's, if any). */
int trace_rec_stop(struct cache *cache, const char *why, struct trace_rec_info *out);
/* The trace running, or the last one (info->ever false: none yet). */
void trace_rec_info(const struct cache *cache, struct trace_rec_info *info);
/* Fields of one record about the trace running or the last one: state
 * ("recording", "stopped", "none"), file, dataset, records (every row),
 * accesses, load_rows (records = accesses + load_rows), file_bytes,
 * max_bytes, started_s, stopped_s, reason (status and tierctl trace). */
struct proto_rs;
void trace_rec_report(const struct trace_rec_info *info, struct proto_rs *rs);
/* The daemon is stopping: stop and free the recorder. */
void trace_rec_free(struct cache *cache);

/* One access served: chunk idx (len bytes) of dataset/path, result, and
 * who read it (NULL or untagged: no job); or, result TRACE_LOAD and up, a
 * prefetch load's event (job NULL). Call only when trace_rec_on. */
void trace_rec_note(struct cache *cache, const char *dataset, const char *path, uint32_t idx,
		    uint32_t len, enum trace_result result, const struct tc_job_tag *job);

static inline bool trace_rec_on(const struct cache *cache)
{
	return __builtin_expect(cache->tracing, 0);
}

#endif
