/*
 * A trace in memory: flat arrays, one entry per access, plus an object
 * table (size and policy key per object). Objects are dense ids so the
 * simulator indexes arrays instead of hashing on every access.
 *
 * CSV format (docs/simulator.md): one access per line, either positional
 *     object,size[,rank[,job[,epoch]]]
 * or, when the first line is a header (it starts with "object"), columns
 * by the header's names: object and size are required, rank, job, epoch
 * and time_us (microseconds; the timed prefetch model needs it) used when
 * present, result (hot, warm, miss or unkept: the daemon's; --explain
 * compares with it) kept when present, any other column (the daemon's dataset, chunk, result: `tierctl
 * trace`) ignored; every line then has the
 * header's number of fields. object is any token without a comma (a name,
 * a number, the daemon's escaped DATASET/PATH#CHUNK), size a byte count;
 * rank, job and epoch are small non-negative integers, or empty for
 * unknown (rank and job 0; epochs inferred unless every line has one).
 * Blank lines and lines starting with '#' are skipped. An object's size is
 * the one of its first line. Without epochs, a job's epoch advances when
 * it reads an object it already read in its current epoch.
 *
 * A `tierctl trace` file also has prefetch load rows (result load, landed,
 * landed_late, load_lost: the daemon's prefetcher issuing a load and the
 * load coming in). They are not accesses: they are kept apart as events,
 * each with the number of accesses read before it, so a replay can put
 * them back in the daemon's order (`--prefetch-rate trace`).
 *
 * Single-threaded; the reader bounds-checks every field and names the line
 * of the first error.
 */
#ifndef TIERCACHE_SIM_TRACE_H
#define TIERCACHE_SIM_TRACE_H

#include "keymap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TRACE_MAX_ACCESSES ((size_t)UINT32_MAX - 1)
#define TRACE_MAX_JOBS 4096
#define TRACE_CSV_FIELDS_MAX 32 /* columns a header may name */

struct trace {
	/* per access */
	uint32_t *obj;
	uint16_t *job;
	uint16_t *rank;
	uint32_t *epoch;
	uint64_t *time_us; /* NULL unless the header named time_us */
	uint8_t *result;   /* NULL unless the header named result: TRACE_RES_* */
	size_t n, cap;
	/* per object */
	uint64_t *size;
	uint64_t *key;
	uint32_t nobj, capobj;
	struct keymap names; /* CSV: name hash -> object id */
	uint32_t njobs;      /* max job + 1 */
	uint32_t nranks;     /* max rank + 1 */
	uint32_t nepochs;    /* max epoch + 1 */
	uint64_t dataset_bytes; /* sum of every object's size */
	bool has_epochs;
	bool has_time; /* time_us per access (set before the first push) */
	bool has_result; /* the daemon's outcome per access (set before the first push) */
	/* prefetch load events (TRACE_EV_*), in the file's order */
	uint32_t *ev_obj;
	uint32_t *ev_at;   /* accesses before it: it happened before access ev_at */
	uint8_t *ev_kind;
	size_t nev, capev;
};

/* The daemon's outcome of an access (`tierctl trace`'s result column). */
enum { TRACE_RES_MISS, TRACE_RES_HOT, TRACE_RES_WARM, TRACE_RES_UNKEPT };
/* A prefetch load's event (the daemon's load, landed, landed_late, load_lost). */
enum { TRACE_EV_LOAD, TRACE_EV_LANDED, TRACE_EV_LANDED_LATE, TRACE_EV_LOST };

void trace_init(struct trace *t);
void trace_free(struct trace *t);
/* A new object of the given size; its id, or -ENOMEM / -E2BIG. */
int64_t trace_object_add(struct trace *t, uint64_t size);
/* Append one access. 0, -ENOMEM or -E2BIG. */
int trace_push(struct trace *t, uint32_t obj, uint32_t job, uint32_t rank, uint32_t epoch);
/* The same with its time, kept when has_time is set. */
int trace_push_at(struct trace *t, uint32_t obj, uint32_t job, uint32_t rank, uint32_t epoch,
		  uint64_t time_us);
/* The same with the daemon's outcome (TRACE_RES_*), kept when has_result is set. */
int trace_push_full(struct trace *t, uint32_t obj, uint32_t job, uint32_t rank, uint32_t epoch,
		    uint64_t time_us, uint8_t result);
/* Append a prefetch load event of obj (TRACE_EV_*) before the next access.
 * 0, -ENOMEM or -E2BIG. */
int trace_event_push(struct trace *t, uint32_t obj, uint8_t kind);
/* After the last push: totals, and epochs for traces that had none. */
void trace_finish(struct trace *t);

/* Read a CSV trace. 0, or -errno with "FILE:LINE: reason" in err. */
int trace_read_csv(struct trace *t, const char *path, char *err, size_t errlen);
int trace_read_csv_stream(struct trace *t, FILE *f, const char *name, char *err, size_t errlen);
/* Write it back (objects named by id: o<id>). 0 or -EIO. */
int trace_write_csv(const struct trace *t, FILE *f);

#endif
