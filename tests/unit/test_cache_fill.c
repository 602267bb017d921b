/*
 * The engine without the daemon: a real struct cache (cache_init on a
 * config loaded from a temp file, a posix dataset over a temp cold
 * directory, the index in a temp state_dir, the real worker pool) driven
 * through fill.h on a real libevent base. No api/, plan/ or root code is
 * linked in the path under test: the engine's hooks are installed by the
 * test itself and count what the engine reports.
 *
 * Covers the miss path's contract: one cold read however many waiters
 * (single flight), every waiter answered exactly once with the same
 * resident chunk whose tier file holds the source bytes, a resident chunk
 * answered at once, a prefetch that is no read (read_seen stays silent), a
 * changed source that can never be served from old bytes, a missing source
 * that fails every waiter and leaves nothing behind, and chunk_drop
 * reporting through chunk_dropped.
 *
 * Threads: the test runs the loop on its own thread; fills run on the
 * engine's workers and come back through the loop. The loop runs one
 * EVLOOP_ONCE step at a time until the callbacks expected have arrived; a
 * watchdog timer and an iteration cap fail the test instead of hanging.
 * Nothing asserts on time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "cache.h"
#include "chunk.h"
#include "config_fixture.h"
#include "dataset.h"
#include "fill.h"
#include "log.h"

#define CS (64u * 1024u)	  /* the dataset's chunk_size (the smallest allowed) */
#define SRC_LEN (3u * CS + 1000u) /* four chunks, the last one partial */
#define NWAIT 5
#define LOOP_STEPS_MAX 100000 /* far beyond what any test needs */
#define WATCHDOG_S 60	      /* a step never blocks longer than this */

/* One engine on its own temp dirs: built by eng_setup, torn down by
 * eng_teardown (which asserts a clean stop). */
struct eng {
	struct fx *fx;
	char cold[PATH_MAX + 16];
	struct config *cfg;
	struct event_base *base;
	struct event *watchdog;
	bool watchdog_fired;
	struct cache cache;
	struct dataset *ds;
	/* what the hooks saw */
	unsigned read_seen, prefetch_seen, dropped;
	uint64_t last_seen_key, last_dropped_key;
	unsigned answers; /* waiter callbacks so far */
};

/* A waiter that records its one answer. */
struct tw {
	struct waiter w; /* first: the callback gets &w */
	struct eng *e;
	unsigned calls;
	struct chunk *c;
	int err;
};

static void tw_cb(struct cache *cache, struct waiter *w, struct chunk *c, int err)
{
	(void)cache;
	struct tw *t = (struct tw *)w;
	t->calls++;
	t->e->answers++;
	t->c = c;
	t->err = err;
}

static void hook_read_seen(void *arg, uint64_t key, const struct read_ctx *rc)
{
	struct eng *e = arg;
	e->read_seen++;
	if (rc && (rc->flags & READ_PREFETCH))
		e->prefetch_seen++;
	e->last_seen_key = key;
}

static void hook_chunk_dropped(void *arg, const struct chunk *c)
{
	struct eng *e = arg;
	e->dropped++;
	e->last_dropped_key = c->key;
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct eng *e = arg;
	e->watchdog_fired = true;
}

/* The byte at offset o of version v of a source file. */
static uint8_t pattern(unsigned v, uint64_t o)
{
	return (uint8_t)(o * 31u + (o >> 9) + v * 101u);
}

static void write_source(const char *path, unsigned v, size_t len, int64_t mtime_s)
{
	uint8_t *buf = malloc(len);
	assert_non_null(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(v, i);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	/* an explicit mtime: the new version differs in it too, whatever the
	 * file system's timestamp granularity */
	struct timespec ts[2] = {{.tv_sec = mtime_s}, {.tv_sec = mtime_s}};
	assert_int_equal(futimens(fd, ts), 0);
	assert_int_equal(close(fd), 0);
	free(buf);
}

static int eng_setup(void **state)
{
	struct eng *e = calloc(1, sizeof(*e));
	char err[512] = "";
	char text[6 * PATH_MAX + 512];
	char p[PATH_MAX + 64];
	assert_non_null(e);
	*state = e;
	void *fxs = NULL;
	assert_int_equal(fx_setup(&fxs), 0);
	e->fx = fxs;
	const char *sub[] = {"hot", "warm", "cold", "state"};
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", e->fx->dir, sub[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	snprintf(e->cold, sizeof(e->cold), "%s/cold", e->fx->dir);
	snprintf(p, sizeof(p), "%s/a.bin", e->cold);
	write_source(p, 1, SRC_LEN, 1700000000);
	snprintf(text, sizeof(text),
		 "[daemon]\nsocket = %s/s.sock\nstate_dir = %s/state\nlog_level = error\nworkers = "
		 "2\n"
		 /* a file per chunk: the checks below read the chunk's own file */
		 "segment_threshold = 0\n"
		 "[tier hot]\npath = %s/hot\ncapacity = 64M\n"
		 "[tier warm]\npath = %s/warm\ncapacity = 64M\n"
		 "[dataset d]\nbackend = posix\npath = %s\nchunk_size = 64K\n",
		 e->fx->dir, e->fx->dir, e->fx->dir, e->fx->dir, e->cold);
	e->cfg = load_ok(write_conf(e->fx, "t.conf", text));
	log_set_level(e->cfg->log_level);

	e->base = event_base_new();
	assert_non_null(e->base);
	e->watchdog = evtimer_new(e->base, on_watchdog, e);
	assert_non_null(e->watchdog);

	/* as daemon_init composes it, minus every layer above the engine */
	struct cache *cache = &e->cache;
	int rc = cache_init(cache, e->cfg, e->base, err, sizeof(err));
	if (rc < 0)
		print_error("cache_init: %s\n", err);
	assert_int_equal(rc, 0);
	cache->hooks = (struct cache_hooks){
		.arg = e,
		.read_seen = hook_read_seen,
		.chunk_dropped = hook_chunk_dropped,
	};
	assert_int_equal(e->cfg->ndatasets, 1);
	assert_int_equal(dataset_new(cache, &e->cfg->datasets[0], &cache->ds[0], err, sizeof(err)),
			 0);
	cache->nds = 1;
	e->ds = cache->ds[0];
	assert_int_equal(cache_load(cache, err, sizeof(err)), 0);
	assert_int_equal(cache_start(cache, err, sizeof(err)), 0);
	dataset_load(cache, e->ds); /* posix: inline, before the loop runs */
	assert_true(e->ds->opened);
	assert_true(e->ds->available);
	return 0;
}

static int eng_teardown(void **state)
{
	struct eng *e = *state;
	/* nothing may be left in flight by a test */
	assert_int_equal(fill_inflight(&e->cache), 0);
	cache_stop(&e->cache);
	cache_free(&e->cache);
	event_free(e->watchdog);
	event_base_free(e->base);
	config_free(e->cfg);
	void *fxs = e->fx;
	int rc = fx_teardown(&fxs);
	free(e);
	return rc;
}

/* Run the loop until *count reaches want: one step at a time, each step
 * bounded by the watchdog, the number of steps bounded too. */
static void run_until(struct eng *e, const unsigned *count, unsigned want)
{
	struct timeval tv = {.tv_sec = WATCHDOG_S};
	for (unsigned i = 0; i < LOOP_STEPS_MAX && *count < want && !e->watchdog_fired; i++) {
		assert_int_equal(evtimer_add(e->watchdog, &tv), 0);
		assert_true(event_base_loop(e->base, EVLOOP_ONCE) >= 0);
	}
	evtimer_del(e->watchdog);
	if (*count < want)
		fail_msg("the loop stopped with %u of %u callbacks (watchdog %s)", *count, want,
			 e->watchdog_fired ? "fired" : "did not fire");
}

/* A waiter of e, not queued yet. */
static struct waiter *tw_init(struct eng *e, struct tw *t)
{
	*t = (struct tw){.w.cb = tw_cb, .e = e};
	return &t->w;
}

static struct cold_stat source_stat(struct eng *e, const char *path)
{
	struct cold_stat st;
	assert_int_equal(cold_stat(&e->ds->cold, path, &st), 0);
	return st;
}

/* The chunk's tier file holds exactly bytes [idx*CS, +len) of version v. */
static void assert_chunk_bytes(struct eng *e, const struct chunk *c, unsigned v)
{
	uint64_t off = (uint64_t)c->idx * CS;
	uint8_t *got = malloc(c->len + 1u);
	assert_non_null(got);
	int fd = chunk_open_fd(&e->cache, c);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, c->len);
	/* one byte more than the chunk: the file must end where it does */
	assert_int_equal(pread(fd, got, c->len + 1u, 0), (ssize_t)c->len);
	assert_int_equal(close(fd), 0);
	for (uint32_t i = 0; i < c->len; i++)
		if (got[i] != pattern(v, off + i))
			fail_msg("chunk %u byte %u: 0x%02x, source has 0x%02x", c->idx, i, got[i],
				 pattern(v, off + i));
	free(got);
}

/* Five clients miss on one chunk before the loop runs: one fill, one cold
 * read, five answers with the same resident chunk. */
static void single_flight(void **state)
{
	struct eng *e = *state;
	struct cache *cache = &e->cache;
	struct cold_stat st = source_stat(e, "a.bin");
	struct tw w[NWAIT];
	struct chunk *out = NULL;
	uint64_t key = chunk_key("d", "a.bin", &st, 1);

	for (int i = 0; i < NWAIT; i++) {
		assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 1, READ_CTX_ANY,
					  tw_init(e, &w[i]), &out),
				 0);
	}
	assert_int_equal(fill_inflight(cache), 1);
	assert_int_equal(cache->ctr.cold_reads, 1);
	assert_null(chunk_find(&cache->chunks, key));

	run_until(e, &e->answers, NWAIT);
	struct chunk *c = chunk_find(&cache->chunks, key);
	assert_non_null(c);
	for (int i = 0; i < NWAIT; i++) {
		assert_int_equal(w[i].calls, 1);
		assert_int_equal(w[i].err, 0);
		assert_ptr_equal(w[i].c, c);
	}
	assert_int_equal(c->state, CHUNK_RESIDENT);
	assert_int_equal(c->idx, 1);
	assert_int_equal(c->len, CS);
	assert_true(cold_stat_same(&c->src, &st));
	assert_int_equal(fill_inflight(cache), 0);
	/* one cold read; the engine counts no hits or misses (the api does) */
	assert_int_equal(cache->ctr.cold_reads, 1);
	assert_int_equal(cache->ctr.bytes_from_cold, CS);
	assert_int_equal(cache->ctr.misses, 0);
	assert_int_equal(cache->ctr.cold_errors, 0);
	assert_int_equal(e->ds->bytes_from_cold, CS);
	assert_int_equal(e->read_seen, NWAIT); /* every client read heard, once */
	assert_chunk_bytes(e, c, 1);

	/* resident now: answered at once, no waiter queued, no cold read */
	struct tw again;
	assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 1, READ_CTX_ANY, tw_init(e, &again),
				  &out),
			 1);
	assert_ptr_equal(out, c);
	assert_int_equal(again.calls, 0);
	assert_int_equal(fill_inflight(cache), 0);
	assert_int_equal(cache->ctr.cold_reads, 1);
	assert_int_equal(e->read_seen, NWAIT + 1);
}

/* The last chunk of a file is shorter than chunk_size: its file holds just
 * the source's tail. */
static void partial_last_chunk(void **state)
{
	struct eng *e = *state;
	struct cold_stat st = source_stat(e, "a.bin");
	struct tw w[NWAIT];
	struct chunk *out = NULL;
	assert_int_equal(fill_get(&e->cache, e->ds, "a.bin", &st, 3, READ_CTX_ANY,
				  tw_init(e, &w[0]), &out),
			 0);
	run_until(e, &e->answers, 1);
	assert_int_equal(w[0].err, 0);
	assert_non_null(w[0].c);
	assert_int_equal(w[0].c->len, SRC_LEN - 3 * CS);
	assert_chunk_bytes(e, w[0].c, 1);
	/* a chunk past the end is no chunk */
	struct tw past;
	assert_int_equal(fill_get(&e->cache, e->ds, "a.bin", &st, 4, READ_CTX_ANY,
				  tw_init(e, &past), &out),
			 -EINVAL);
	assert_int_equal(past.calls, 0);
	assert_int_equal(e->cache.ctr.cold_reads, 1);
}

/* A prefetch is no read: read_seen hears client fills only, and the
 * prefetched chunk lands on hot. */
static void prefetch_is_not_a_read(void **state)
{
	struct eng *e = *state;
	struct cache *cache = &e->cache;
	struct cold_stat st = source_stat(e, "a.bin");
	const struct read_ctx pf = {.flags = READ_PREFETCH};
	const struct read_ctx client = {0};
	struct tw w[NWAIT];
	struct chunk *out = NULL;

	assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 0, &pf, tw_init(e, &w[0]), &out), 0);
	run_until(e, &e->answers, 1);
	assert_int_equal(w[0].err, 0);
	assert_non_null(w[0].c);
	assert_int_equal(w[0].c->tier, TIER_HOT);
	assert_int_equal(e->read_seen, 0);
	/* resident now, and a prefetch of it is still no read */
	assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 0, &pf, tw_init(e, &w[1]), &out), 1);
	assert_int_equal(e->read_seen, 0);

	/* a client's fill of another chunk is heard, with its key */
	assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 2, &client, tw_init(e, &w[1]), &out),
			 0);
	assert_int_equal(e->read_seen, 1);
	assert_int_equal(e->last_seen_key, chunk_key("d", "a.bin", &st, 2));
	run_until(e, &e->answers, 2);
	assert_int_equal(w[1].err, 0);
	/* and a client's hit on the prefetched chunk too */
	assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 0, &client, tw_init(e, &w[2]), &out),
			 1);
	assert_int_equal(e->read_seen, 2);
	assert_int_equal(e->prefetch_seen, 0);
	assert_int_equal(cache->ctr.cold_reads, 2);
}

/* A changed source (new size and mtime: a new cold_stat) is a new key and
 * a new fill with the new bytes; a read of the old version fails -ESTALE
 * rather than caching bytes under a version they are not. */
static void changed_source_new_fill(void **state)
{
	struct eng *e = *state;
	struct cache *cache = &e->cache;
	struct cold_stat old = source_stat(e, "a.bin");
	struct tw w[NWAIT];
	struct chunk *out = NULL;
	char p[PATH_MAX + 32];

	assert_int_equal(fill_get(cache, e->ds, "a.bin", &old, 0, READ_CTX_ANY, tw_init(e, &w[0]),
				  &out),
			 0);
	run_until(e, &e->answers, 1);
	assert_int_equal(w[0].err, 0);
	struct chunk *c_old = w[0].c;
	assert_non_null(c_old);

	snprintf(p, sizeof(p), "%s/a.bin", e->cold);
	write_source(p, 2, SRC_LEN + 7, 1700000100);
	struct cold_stat now = source_stat(e, "a.bin");
	assert_false(cold_stat_same(&old, &now));
	uint64_t knew = chunk_key("d", "a.bin", &now, 0);
	assert_int_not_equal(knew, c_old->key);

	assert_int_equal(fill_get(cache, e->ds, "a.bin", &now, 0, READ_CTX_ANY, tw_init(e, &w[1]),
				  &out),
			 0);
	assert_int_equal(cache->ctr.cold_reads, 2);
	run_until(e, &e->answers, 2);
	assert_int_equal(w[1].err, 0);
	assert_non_null(w[1].c);
	assert_ptr_not_equal(w[1].c, c_old);
	assert_int_equal(w[1].c->key, knew);
	assert_chunk_bytes(e, w[1].c, 2);

	/* the old version's next chunk is not in the source any more */
	assert_int_equal(fill_get(cache, e->ds, "a.bin", &old, 1, READ_CTX_ANY, tw_init(e, &w[2]),
				  &out),
			 0);
	run_until(e, &e->answers, 3);
	assert_int_equal(w[2].err, -ESTALE);
	assert_null(w[2].c);
	assert_null(chunk_find(&cache->chunks, chunk_key("d", "a.bin", &old, 1)));
	assert_int_equal(cache->ctr.stale_reads, 1);
	assert_int_equal(cache->ctr.cold_reads, 3);
}

/* A source file that does not exist: every waiter gets the error, nothing
 * becomes resident, the tier's reservation is returned, and the error is
 * not remembered (the next request reads again). */
static void missing_source_fails_every_waiter(void **state)
{
	struct eng *e = *state;
	struct cache *cache = &e->cache;
	struct cold_stat st = {.size = 1000, .mtime_ns = 1700000000000000000LL};
	struct tw w[NWAIT];
	struct chunk *out = NULL;
	uint64_t key = chunk_key("d", "nope.bin", &st, 0);

	for (int i = 0; i < 3; i++) {
		assert_int_equal(fill_get(cache, e->ds, "nope.bin", &st, 0, READ_CTX_ANY,
					  tw_init(e, &w[i]), &out),
				 0);
	}
	assert_int_equal(cache->ctr.cold_reads, 1);
	run_until(e, &e->answers, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(w[i].calls, 1);
		assert_int_equal(w[i].err, -ENOENT);
		assert_null(w[i].c);
	}
	assert_null(chunk_find(&cache->chunks, key));
	assert_int_equal(chunk_table_count(&cache->chunks), 0);
	assert_int_equal(cache->ctr.cold_errors, 1);
	assert_int_equal(cache->ctr.bytes_from_cold, 0);
	for (int t = 0; t < TIER_COUNT; t++) {
		assert_int_equal(cache->tiers[t].reserved, 0);
		assert_int_equal(cache->tiers[t].used, 0);
	}
	assert_int_equal(fill_inflight(cache), 0);

	assert_int_equal(fill_get(cache, e->ds, "nope.bin", &st, 0, READ_CTX_ANY, tw_init(e, &w[3]),
				  &out),
			 0);
	assert_int_equal(cache->ctr.cold_reads, 2);
	run_until(e, &e->answers, 4);
	assert_int_equal(w[3].err, -ENOENT);
}

/* chunk_drop tells the layers above through chunk_dropped, then the chunk
 * is gone from the table and its file from the tier. */
static void drop_reports_through_hook(void **state)
{
	struct eng *e = *state;
	struct cache *cache = &e->cache;
	struct cold_stat st = source_stat(e, "a.bin");
	struct tw w[NWAIT];
	struct chunk *out = NULL;
	char path[PATH_MAX + 64];

	assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 2, READ_CTX_ANY, tw_init(e, &w[0]),
				  &out),
			 0);
	run_until(e, &e->answers, 1);
	struct chunk *c = w[0].c;
	assert_non_null(c);
	uint64_t key = c->key;
	tier_chunk_path(&cache->tiers[c->tier], key, path, sizeof(path));
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(e->dropped, 0);

	chunk_drop(cache, c, "test");
	assert_int_equal(e->dropped, 1);
	assert_int_equal(e->last_dropped_key, key);
	assert_null(chunk_find(&cache->chunks, key));
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(errno, ENOENT);

	/* dropped means a miss again: a new fill */
	assert_int_equal(fill_get(cache, e->ds, "a.bin", &st, 2, READ_CTX_ANY, tw_init(e, &w[1]),
				  &out),
			 0);
	run_until(e, &e->answers, 2);
	assert_int_equal(w[1].err, 0);
	assert_int_equal(cache->ctr.cold_reads, 2);
	assert_chunk_bytes(e, w[1].c, 1);
}

int main(void)
{
	/* the workers hand completions to the loop from their threads */
	if (evthread_use_pthreads() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(single_flight, eng_setup, eng_teardown),
		cmocka_unit_test_setup_teardown(partial_last_chunk, eng_setup, eng_teardown),
		cmocka_unit_test_setup_teardown(prefetch_is_not_a_read, eng_setup, eng_teardown),
		cmocka_unit_test_setup_teardown(changed_source_new_fill, eng_setup, eng_teardown),
		cmocka_unit_test_setup_teardown(missing_source_fails_every_waiter, eng_setup,
						eng_teardown),
		cmocka_unit_test_setup_teardown(drop_reports_through_hook, eng_setup, eng_teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	libevent_global_shutdown();
	return rc;
}
