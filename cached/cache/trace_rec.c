/*
 * The access recorder: see trace_rec.h for the format, the cost and the
 * bounds. Loop thread only.
 *
 * Rows are formatted by hand (no printf) straight into the buffer, the
 * bound checked per row before the row is kept, so the file ends on a
 * whole row at or under max_bytes. Writes happen on the loop thread in
 * 1 MiB appends: to a local file system that is a copy into the page
 * cache; one that is slower than TRACE_REC_SLOW_MS ends the trace.
 */
#include "trace_rec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "proto.h"

#define TRACE_BUF (1u << 20)
/* the longest row: two escaped names, an escaped path, numbers, commas */
#define TRACE_ROW_MAX (3u * (2u * TC_DATASET_NAME_MAX + TC_PATH_MAX) + 160u)
#define TRACE_HEADER "object,size,rank,job,epoch,time_us,dataset,chunk,result\n"

struct trace_rec {
	struct trace_rec_info info;
	int fd;
	uint64_t start_ns;
	char *buf;
	size_t len;
	uint64_t jobs[TRACE_REC_JOBS_MAX]; /* job ids in the order first seen */
	uint32_t njobs;
};

static const char *const result_name[] = {"hot",  "warm",   "miss",        "unkept",
					  "load", "landed", "landed_late", "load_lost"};

void trace_rec_info(const struct cache *cache, struct trace_rec_info *info)
{
	if (cache->trace)
		*info = cache->trace->info;
	else
		memset(info, 0, sizeof(*info));
}

void trace_rec_report(const struct trace_rec_info *info, struct proto_rs *rs)
{
	proto_rs_str(rs, "state", info->on ? "recording" : info->ever ? "stopped" : "none");
	proto_rs_str(rs, "file", info->path);
	proto_rs_str(rs, "dataset", info->dataset);
	proto_rs_u64(rs, "records", info->records);
	proto_rs_u64(rs, "accesses", info->accesses);
	proto_rs_u64(rs, "load_rows", info->records - info->accesses);
	proto_rs_u64(rs, "file_bytes", info->bytes);
	proto_rs_u64(rs, "max_bytes", info->max_bytes);
	proto_rs_i64(rs, "started_s", info->started_s);
	proto_rs_i64(rs, "stopped_s", info->stopped_s);
	proto_rs_str(rs, "reason", info->reason);
}

/* Write the buffer out. 0, or -errno with the reason set (the trace must
 * stop). */
static int trace_flush(struct trace_rec *tr)
{
	size_t done = 0;
	uint64_t t0 = cache_now_ns();
	while (done < tr->len) {
		ssize_t n = write(tr->fd, tr->buf + done, tr->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : ENOSPC;
			snprintf(tr->info.reason, sizeof(tr->info.reason),
				 "stopped: writing the trace file failed: %s (is its file system full?)",
				 strerror(err));
			tr->len = 0;
			return -err;
		}
		done += (size_t)n;
	}
	tr->len = 0;
	uint64_t ms = (cache_now_ns() - t0) / 1000000u;
	if (ms > TRACE_REC_SLOW_MS) {
		snprintf(tr->info.reason, sizeof(tr->info.reason),
			 "stopped: the trace file's file system is too slow (one %zu KiB write took "
			 "%llu ms); trace to a local disk or tmpfs",
			 done >> 10, (unsigned long long)ms);
		return -ETIMEDOUT;
	}
	return 0;
}

/* End the running trace: flush (unless the flush is what failed), close.
 * reason: why, unless one is set already. */
static void trace_end(struct cache *cache, const char *reason)
{
	struct trace_rec *tr = cache->trace;
	if (!tr->info.reason[0] && tr->len)
		(void)trace_flush(tr);
	if (!tr->info.reason[0])
		snprintf(tr->info.reason, sizeof(tr->info.reason), "%s", reason);
	if (close(tr->fd) < 0 && !strstr(tr->info.reason, "failed"))
		snprintf(tr->info.reason, sizeof(tr->info.reason),
			 "stopped: closing the trace file failed: %s", strerror(errno));
	tr->fd = -1;
	tr->len = 0;
	tr->info.on = false;
	tr->info.stopped_s = cache_wall_s();
	cache->tracing = false;
	free(tr->buf);
	tr->buf = NULL;
	log_info("op=trace_stop file=%s records=%llu accesses=%llu load_rows=%llu bytes=%llu "
		 "reason=\"%s\"",
		 tr->info.path, (unsigned long long)tr->info.records,
		 (unsigned long long)tr->info.accesses,
		 (unsigned long long)(tr->info.records - tr->info.accesses),
		 (unsigned long long)tr->info.bytes, tr->info.reason);
}

int trace_rec_start(struct cache *cache, int fd, const char *path, const char *dataset,
		    uint64_t max_bytes, char *err, size_t errlen)
{
	loop_assert();
	struct trace_rec *tr = cache->trace;
	int rc;
	if (tr && tr->info.on) {
		snprintf(err, errlen, "a trace is already recording into %s (tierctl trace stop ends it)",
			 tr->info.path);
		rc = -EBUSY;
		goto fail;
	}
	if (max_bytes == 0)
		max_bytes = TRACE_REC_DEFAULT_BYTES;
	if (max_bytes > TRACE_REC_MAX_BYTES || max_bytes < sizeof(TRACE_HEADER)) {
		snprintf(err, errlen, "max bytes %llu is out of range (%zu to %llu)",
			 (unsigned long long)max_bytes, sizeof(TRACE_HEADER),
			 (unsigned long long)TRACE_REC_MAX_BYTES);
		rc = -EINVAL;
		goto fail;
	}
	if (!dataset)
		dataset = "";
	if (strlen(path) >= sizeof(tr->info.path) || strlen(dataset) >= sizeof(tr->info.dataset)) {
		snprintf(err, errlen, "path or dataset name too long");
		rc = -ENAMETOOLONG;
		goto fail;
	}
	if (!tr && !(tr = cache->trace = calloc(1, sizeof(*tr)))) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	char *buf = malloc(TRACE_BUF);
	if (!buf) {
		snprintf(err, errlen, "out of memory for the trace buffer");
		rc = -ENOMEM;
		goto fail;
	}
	memset(&tr->info, 0, sizeof(tr->info));
	tr->buf = buf;
	tr->fd = fd;
	tr->njobs = 0;
	tr->info.ever = true;
	snprintf(tr->info.path, sizeof(tr->info.path), "%s", path);
	snprintf(tr->info.dataset, sizeof(tr->info.dataset), "%s", dataset);
	tr->info.max_bytes = max_bytes;
	tr->info.started_s = cache_wall_s();
	memcpy(tr->buf, TRACE_HEADER, sizeof(TRACE_HEADER) - 1);
	tr->len = sizeof(TRACE_HEADER) - 1;
	tr->info.bytes = tr->len;
	rc = trace_flush(tr);
	if (rc < 0) {
		snprintf(err, errlen, "%s", tr->info.reason);
		tr->info.ever = false;
		tr->buf = NULL;
		free(buf);
		goto fail;
	}
	tr->start_ns = cache_now_ns();
	tr->info.on = true;
	cache->tracing = true;
	return 0;
fail:
	close(fd);
	return rc;
}

int trace_rec_stop(struct cache *cache, const char *why, struct trace_rec_info *out)
{
	loop_assert();
	struct trace_rec_info dummy;
	if (!out)
		out = &dummy;
	if (!cache->tracing) {
		trace_rec_info(cache, out);
		return -ENOENT;
	}
	trace_end(cache, why);
	*out = cache->trace->info;
	return 0;
}

void trace_rec_free(struct cache *cache)
{
	if (!cache->trace)
		return;
	if (cache->tracing)
		trace_end(cache, "stopped: the daemon stopped");
	free(cache->trace);
	cache->trace = NULL;
}

/* Append s percent-escaped (trace_rec.h names the bytes). */
static char *put_escaped(char *p, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch <= ' ' || ch == 0x7f || ch == ',' || ch == '%' || ch == '#' || ch == '"') {
			*p++ = '%';
			*p++ = hex[ch >> 4];
			*p++ = hex[ch & 15];
		} else {
			*p++ = (char)ch;
		}
	}
	return p;
}

static char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* The small number of a job id: its order of first appearance; -1 when
 * the table is full. */
static int64_t trace_job_no(struct trace_rec *tr, uint64_t job)
{
	for (uint32_t i = 0; i < tr->njobs; i++)
		if (tr->jobs[i] == job)
			return i;
	if (tr->njobs == TRACE_REC_JOBS_MAX)
		return -1;
	tr->jobs[tr->njobs] = job;
	return tr->njobs++;
}

void trace_rec_note(struct cache *cache, const char *dataset, const char *path, uint32_t idx,
		    uint32_t len, enum trace_result result, const struct tc_job_tag *job)
{
	struct trace_rec *tr = cache->trace;
	if (tr->info.dataset[0] && strcmp(tr->info.dataset, dataset) != 0)
		return;
	if (strlen(dataset) > TC_DATASET_NAME_MAX || strlen(path) > TC_PATH_MAX)
		return; /* never from the daemon's own names; keeps TRACE_ROW_MAX true */
	if (TRACE_BUF - tr->len < TRACE_ROW_MAX && trace_flush(tr) < 0) {
		trace_end(cache, "");
		return;
	}
	char *row = tr->buf + tr->len, *p = row;
	p = put_escaped(p, dataset);
	*p++ = '/';
	p = put_escaped(p, path);
	*p++ = '#';
	p = put_u64(p, idx);
	*p++ = ',';
	p = put_u64(p, len);
	*p++ = ',';
	if (job && job->set && job->rank <= UINT16_MAX)
		p = put_u64(p, job->rank);
	*p++ = ',';
	int64_t jn = job && job->set ? trace_job_no(tr, job->job) : -1;
	if (jn >= 0)
		p = put_u64(p, (uint64_t)jn);
	*p++ = ',';
	*p++ = ','; /* epoch: the simulator infers it */
	p = put_u64(p, (cache_now_ns() - tr->start_ns) / 1000u);
	*p++ = ',';
	p = put_escaped(p, dataset);
	*p++ = ',';
	p = put_u64(p, idx);
	*p++ = ',';
	unsigned ri = (unsigned)result < 8 ? (unsigned)result : TRACE_MISS;
	const char *r = result_name[ri];
	size_t rn = strlen(r);
	memcpy(p, r, rn);
	p += rn;
	*p++ = '\n';
	size_t n = (size_t)(p - row);
	if (tr->info.bytes + n > tr->info.max_bytes) {
		snprintf(tr->info.reason, sizeof(tr->info.reason),
			 "stopped: max bytes reached (%llu)", (unsigned long long)tr->info.max_bytes);
		if (tr->len)
			(void)trace_flush(tr); /* the rows before this one: the reason stays */
		trace_end(cache, "");
		return;
	}
	tr->len += n;
	tr->info.bytes += n;
	tr->info.records++;
	tr->info.accesses += ri < TRACE_LOAD;
}
