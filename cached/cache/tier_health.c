/*
 * Watching the tier disks: see tier_health.h.
 */
#include "tier_health.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <event2/event.h>

#include "chunk.h"
#include "index.h"
#include "log.h"
#include "loop.h"
#include "mover.h"
#include "workers.h"

#define TIER_ID_NS "tier_id"

struct tier_look {
	bool present, failed, gone;
	char path[PATH_MAX];
	const char *name;
	dev_t dev;          /* of the tier directory at start */
	/* results */
	int layout_err;     /* tier_check_layout */
	bool statvfs_ok, ro;
	uint64_t avail;
	int probe_err;      /* failed tiers only; 1: not probed */
	int reinit_err;     /* 1: not tried */
	char new_id[TIER_ID_LEN + 1];
};

struct health_job {
	struct job job;
	struct cache *cache;
	struct tier_look t[TIER_COUNT];
};

struct tier_health {
	struct event *tick;
	bool inflight, again;
	bool gone[TIER_COUNT];     /* failed because its directory went: chunks dropped */
	bool limited[TIER_COUNT];  /* room below capacity (logged once) */
	dev_t dev[TIER_COUNT];
};

bool tier_health_is_tier_error(int err)
{
	return err < 0 && err != -ENOMEM && err != -EMFILE && err != -ENFILE && err != -EBADMSG &&
	       err != -ESTALE;
}

int tier_health_init(struct cache *cache)
{
	struct tier_health *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	cache->health = h;
	for (int t = 0; t < TIER_COUNT; t++) {
		struct stat st;
		if (cache->tiers[t].present && stat(cache->tiers[t].path, &st) == 0)
			h->dev[t] = st.st_dev;
	}
	return 0;
}

void tier_health_record_id(struct cache *cache, enum tier_id t, const char *id, bool expected)
{
	void *v = NULL;
	size_t n = 0;
	const char *name = cache->tiers[t].name;
	if (!id[0])
		return;
	if (index_kv_get(cache->ix, TIER_ID_NS, name, &v, &n) == 0) {
		bool same = n == strlen(id) && memcmp(v, id, n) == 0;
		free(v);
		if (same)
			return;
		if (!expected)
			log_warn("tier=%s path=%s op=marker id=%s err=\"the directory is not the one "
				 "this state_dir last used (another marker id): chunks the index names "
				 "that are not in it are dropped\"", name, cache->tiers[t].path, id);
	}
	int rc = index_kv_put(cache->ix, TIER_ID_NS, name, id, strlen(id));
	if (rc < 0)
		log_warn("tier=%s op=marker err=\"cannot record the marker id in the index: %s\"", name,
			 strerror(-rc));
}

/* Worker: look at each tier (touches only the job). */
static void look_work(struct job *j)
{
	struct health_job *hj = (struct health_job *)j;
	for (int t = 0; t < TIER_COUNT; t++) {
		struct tier_look *l = &hj->t[t];
		struct statvfs sv;
		struct stat st;
		l->probe_err = 1;
		l->reinit_err = 1;
		if (!l->present)
			continue;
		l->layout_err = tier_check_layout(l->path, l->name);
		if (l->layout_err == -ENOENT && l->gone && stat(l->path, &st) == 0 &&
		    S_ISDIR(st.st_mode)) {
			/* recreated by an admin: take it back only on the file system
			 * it was on (an unmounted disk leaves an empty mount point
			 * on the root file system: never fill that) */
			if (st.st_dev == l->dev) {
				l->reinit_err = tier_reinit(l->path, l->name, l->new_id);
				if (l->reinit_err == 0)
					l->layout_err = tier_check_layout(l->path, l->name);
			} else {
				l->reinit_err = -EXDEV;
			}
		}
		if (l->layout_err == 0 && statvfs(l->path, &sv) == 0) {
			l->statvfs_ok = true;
			l->ro = (sv.f_flag & ST_RDONLY) != 0;
			l->avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		}
		if (l->layout_err == 0 && (l->failed || l->reinit_err == 0) && !l->ro)
			l->probe_err = tier_probe(l->path);
	}
}

/* Loop: its chunks are gone with the directory: drop them from the table,
 * the index and the accounting (files clients hold stay counted until
 * released). */
static unsigned drop_tier_chunks(struct cache *cache, enum tier_id t)
{
	unsigned n = 0;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (c->tier == t) {
			chunk_drop(cache, c, "tier_gone");
			n++;
		}
	}
	return n;
}

static void mark_failed(struct cache *cache, enum tier_id t, const char *reason)
{
	struct tier *tr = &cache->tiers[t];
	bool was = tr->failed;
	tier_set_failed(tr, reason);
	if (!was)
		log_err("tier=%s path=%s op=health state=failed reason=\"%s\" action=\"new chunks go "
			"to the other tier or are served unkept; the daemon probes the tier every %u s "
			"and takes it back when it can be written\"",
			tr->name, tr->path, reason, TIER_CHECK_MS / 1000);
}

static void look_apply(struct cache *cache, struct health_job *hj)
{
	struct tier_health *h = cache->health;
	char reason[sizeof(cache->tiers[0].fail_reason)];
	for (int t = 0; t < TIER_COUNT; t++) {
		struct tier *tr = &cache->tiers[t];
		struct tier_look *l = &hj->t[t];
		if (!tr->present || !l->present)
			continue;
		if (l->reinit_err == 0) {
			log_info("tier=%s path=%s op=health action=reinitialised marker_id=%s "
				 "reason=\"the removed tier directory was recreated\"", tr->name, tr->path,
				 l->new_id);
			tier_health_record_id(cache, (enum tier_id)t, l->new_id, true);
			h->gone[t] = false;
		} else if (l->reinit_err == -EXDEV || l->reinit_err == -ENOTEMPTY) {
			snprintf(reason, sizeof(reason), "directory removed; recreated %s",
				 l->reinit_err == -EXDEV ? "on another file system than at start "
							   "(restart the daemon to use it)"
							 : "but not empty (empty it)");
			if (strcmp(reason, tr->fail_reason) != 0)
				log_warn("tier=%s path=%s op=health state=failed reason=\"%s\"", tr->name,
					 tr->path, reason);
			tier_set_failed(tr, reason);
		}
		if (l->layout_err < 0) {
			if (!h->gone[t]) {
				snprintf(reason, sizeof(reason), "tier directory or its %s is gone (%s): "
					 "removed while running? recreate %s (empty) to take it back",
					 TIER_MARKER, strerror(-l->layout_err), tr->path);
				mark_failed(cache, (enum tier_id)t, reason);
				h->gone[t] = true;
				unsigned n = drop_tier_chunks(cache, (enum tier_id)t);
				log_warn("tier=%s op=health action=dropped_chunks chunks=%u reason=\"the "
					 "tier directory is gone\"", tr->name, n);
			}
			continue;
		}
		if (l->statvfs_ok) {
			uint64_t room = tr->used + l->avail;
			tier_set_room(tr, room);
			bool limited = room < tr->capacity;
			if (limited != h->limited[t]) {
				if (limited)
					log_warn("tier=%s path=%s op=health capacity=%llu room=%llu "
						 "reason=\"the file system has less room than the tier's "
						 "capacity: using what it has\"", tr->name, tr->path,
						 (unsigned long long)tr->capacity, (unsigned long long)room);
				else
					log_info("tier=%s op=health capacity=%llu reason=\"the file system "
						 "has room for the whole capacity again\"", tr->name,
						 (unsigned long long)tr->capacity);
				h->limited[t] = limited;
			}
		}
		if (l->ro) {
			mark_failed(cache, (enum tier_id)t, "read-only file system");
			continue;
		}
		if (tr->failed && l->probe_err == 0) {
			log_info("tier=%s path=%s op=health state=ok was=\"%s\" reason=\"a probe write "
				 "succeeded: the tier takes new chunks again\"", tr->name, tr->path,
				 tr->fail_reason);
			tier_set_ok(tr);
		}
	}
	mover_kick(cache); /* a smaller room may put a tier past its high mark */
}

static void look_done(struct job *j)
{
	struct health_job *hj = (struct health_job *)j;
	struct cache *cache = hj->cache;
	struct tier_health *h = cache->health;
	h->inflight = false;
	if (!cache->stopping)
		look_apply(cache, hj);
	free(hj);
	if (h->again && !cache->stopping) {
		h->again = false;
		event_active(h->tick, EV_TIMEOUT, 0);
	}
}

static struct health_job *look_new(struct cache *cache)
{
	struct health_job *hj = calloc(1, sizeof(*hj));
	if (!hj)
		return NULL;
	hj->cache = cache;
	hj->job.work = look_work;
	hj->job.done = look_done;
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier *tr = &cache->tiers[t];
		struct tier_look *l = &hj->t[t];
		l->present = tr->present;
		l->failed = tr->failed;
		l->gone = cache->health->gone[t];
		l->name = tr->name;
		l->dev = cache->health->dev[t];
		snprintf(l->path, sizeof(l->path), "%s", tr->path);
	}
	return hj;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct cache *cache = arg;
	struct tier_health *h = cache->health;
	if (cache->stopping || !cache->workers)
		return;
	for (int t = 0; t < TIER_COUNT; t++)
		segstore_idle_close(&cache->segs[t]); /* see segment.h */
	if (h->inflight) {
		h->again = true;
		return;
	}
	struct health_job *hj = look_new(cache);
	if (!hj)
		return;
	h->inflight = true;
	workers_submit(cache->workers, &hj->job);
}

int tier_health_start(struct cache *cache)
{
	struct tier_health *h = cache->health;
	struct health_job *hj = look_new(cache);
	if (!hj)
		return -ENOMEM;
	/* at start, before any client: room and state are known from the start */
	look_work(&hj->job);
	h->inflight = true;
	look_done(&hj->job);
	h->tick = event_new(cache->base, -1, EV_PERSIST, on_tick, cache);
	struct timeval tv = {.tv_sec = TIER_CHECK_MS / 1000, .tv_usec = TIER_CHECK_MS % 1000 * 1000};
	if (!h->tick || event_add(h->tick, &tv) < 0)
		return -ENOMEM;
	return 0;
}

void tier_health_stop(struct cache *cache)
{
	struct tier_health *h = cache->health;
	if (h && h->tick)
		event_del(h->tick);
}

void tier_health_free(struct cache *cache)
{
	struct tier_health *h = cache->health;
	if (!h)
		return;
	if (h->tick)
		event_free(h->tick);
	free(h);
	cache->health = NULL;
}

void tier_health_write_error(struct cache *cache, enum tier_id t, int err, const char *path)
{
	loop_assert();
	struct tier *tr = &cache->tiers[t];
	char reason[sizeof(tr->fail_reason)];
	if (err == -ENOSPC || err == -EDQUOT) {
		/* the disk is fuller than the accounting thought: nothing more
		 * fits than what is there now, until the next look says how
		 * much it has */
		uint64_t now = tr->used + tr->reserved;
		if (now < tier_capacity_now(tr)) {
			log_warn("tier=%s path=%s op=write err=\"%s\" room=%llu capacity=%llu "
				 "action=\"the file system is fuller than the tier's accounting: room "
				 "shrunk to what is on the tier\"", tr->name, path, strerror(-err),
				 (unsigned long long)now, (unsigned long long)tr->capacity);
			tier_set_room(tr, now);
		}
		cache->health->limited[t] = true;
		mover_kick(cache);
	} else {
		snprintf(reason, sizeof(reason), "write error: %s", strerror(-err));
		mark_failed(cache, t, reason);
	}
	if (cache->health->tick && !cache->stopping)
		on_tick(-1, 0, cache);
}
