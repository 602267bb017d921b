/*
 * Unit tests of libtiercache against a small fake daemon: threads in this
 * process that speak the protocol over a real Unix socket in a temp dir,
 * pass real chunk fds with SCM_RIGHTS, check that every request the
 * library sends decodes exactly, and can be stopped, restarted, changed
 * under the client, or told to misbehave.
 *
 * Covered: open/pread/read/lseek/fstat/close, chunk fd cache and RELEASE
 * of the least recently used, NOREPLY frames, streamed fallback (env and
 * fd-less CHUNK replies), stat, paged listing, tiercache_call, error
 * details, path and flag checks, malformed replies, unexpected fds,
 * short chunk files, concurrent readers, fork, daemon restart and ESTALE.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto.h"
#include "tiercache.h"
#include "fake_daemon.h"

/* A request/reply round trip: every NOREPLY frame sent before it has been
 * handled by the daemon when it returns (one connection is in order). */
static void sync_daemon(struct tiercache *tc)
{
	struct tiercache_stat st;
	assert_int_equal(tiercache_stat(tc, "ds", &st), 0);
}

static void check_bytes(int fi, const uint8_t *buf, size_t n, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != fake_pattern(fi, off + i))
			fail_msg("byte %zu (file offset %llu) differs", i,
				 (unsigned long long)(off + i));
}

/* ---- tests ---- */

static void test_connect_failures(void **state)
{
	struct fake *f = *state;
	char path[200];
	snprintf(path, sizeof(path), "%s/nothing.sock", f->dir);
	errno = 0;
	assert_null(tiercache_connect(path));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(tiercache_last_error(), "not running"));

	/* a socket file nobody listens on */
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	assert_null(tiercache_connect(path));
	assert_int_equal(errno, ECONNREFUSED);
	assert_non_null(strstr(tiercache_strerror(ECONNREFUSED), "not running"));
	unlink(path);

	/* $TIERCACHE_SOCKET is used when no path is given */
	setenv("TIERCACHE_SOCKET", f->sock, 1);
	struct tiercache *tc = tiercache_connect(NULL);
	unsetenv("TIERCACHE_SOCKET");
	assert_non_null(tc);
	assert_int_equal(fake_counter(f, &f->n_hello), 1);
	tiercache_disconnect(tc);
}

static void test_open_read_whole_file(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	assert_non_null(tc);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	assert_true(f->last_open_flags & TC_F_WANT_CHUNK0);

	struct tiercache_stat st;
	assert_int_equal(tiercache_fstat(tc, h, &st), 0);
	assert_int_equal(st.type, TIERCACHE_FILE);
	assert_true(st.size == A_SIZE);
	assert_true(st.mtime_ns == MTIME0);
	assert_int_equal(st.chunk_size, CS);

	/* odd-sized reads that straddle chunk boundaries */
	uint8_t *buf = malloc(A_SIZE + 100);
	size_t got = 0;
	for (;;) {
		ssize_t n = tiercache_read(tc, h, buf + got, 1000);
		assert_true(n >= 0);
		if (n == 0)
			break;
		got += (size_t)n;
	}
	assert_int_equal(got, A_SIZE);
	check_bytes(1, buf, got, 0);
	/* chunk 0 came with OPEN: 20 more fetched, none twice */
	assert_int_equal(fake_counter(f, &f->n_chunk), 20);
	assert_int_equal(fake_counter(f, &f->n_read), 0);

	/* one pread over the whole file, across cached and evicted chunks */
	memset(buf, 0, A_SIZE);
	assert_int_equal(tiercache_pread(tc, h, buf, A_SIZE + 100, 0), A_SIZE);
	check_bytes(1, buf, A_SIZE, 0);

	assert_int_equal(tiercache_pread(tc, h, buf, 10, A_SIZE), 0); /* at EOF */
	assert_int_equal(tiercache_pread(tc, h, buf, 10, A_SIZE + 5000), 0);
	assert_int_equal(tiercache_pread(tc, h, buf, 100, A_SIZE - 7), 7);
	check_bytes(1, buf, 7, A_SIZE - 7);

	assert_int_equal(tiercache_lseek(tc, h, -10, SEEK_END), A_SIZE - 10);
	assert_int_equal(tiercache_read(tc, h, buf, 100), 10);
	check_bytes(1, buf, 10, A_SIZE - 10);
	assert_int_equal(tiercache_read(tc, h, buf, 100), 0);
	assert_int_equal(tiercache_lseek(tc, h, 0, SEEK_CUR), A_SIZE);
	assert_int_equal(tiercache_lseek(tc, h, CS - 1, SEEK_SET), CS - 1);
	assert_int_equal(tiercache_read(tc, h, buf, 2), 2);
	check_bytes(1, buf, 2, CS - 1);
	assert_int_equal(tiercache_lseek(tc, h, -1, SEEK_SET), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(tiercache_lseek(tc, h, 0, 42), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(tiercache_lseek(tc, h, INT64_MAX, SEEK_END), -1);
	assert_int_equal(errno, EOVERFLOW);

	assert_int_equal(tiercache_close(tc, h), 0);
	assert_int_equal(tiercache_close(tc, h), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(tiercache_pread(tc, h, buf, 1, 0), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(tiercache_fstat(tc, 12345, &st), -1);
	assert_int_equal(errno, EBADF);
	sync_daemon(tc);
	assert_int_equal(fake_counter(f, &f->n_close), 1);
	free(buf);
	tiercache_disconnect(tc);
}

static void test_lru_release(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	uint8_t b[4];
	/* chunk 0 is cached by OPEN; chunks 1..7 fill the cache to 8 */
	for (uint32_t i = 1; i < 8; i++)
		assert_int_equal(tiercache_pread(tc, h, b, 4, (uint64_t)i * CS), 4);
	sync_daemon(tc);
	assert_int_equal(fake_counter(f, &f->n_release), 0);
	/* touch chunk 0 so chunk 1 is now the least recently used */
	assert_int_equal(tiercache_pread(tc, h, b, 4, 0), 4);
	assert_int_equal(tiercache_pread(tc, h, b, 4, 8 * CS), 4);
	assert_int_equal(tiercache_pread(tc, h, b, 4, 9 * CS), 4);
	sync_daemon(tc);
	assert_int_equal(fake_counter(f, &f->n_release), 2);
	assert_int_equal(f->released[0], 1);
	assert_int_equal(f->released[1], 2);
	/* re-reading an evicted chunk fetches it again, a cached one does not */
	unsigned before = fake_counter(f, &f->n_chunk);
	assert_int_equal(tiercache_pread(tc, h, b, 4, 9 * CS + 1), 4);
	assert_int_equal(fake_counter(f, &f->n_chunk), before);
	assert_int_equal(tiercache_pread(tc, h, b, 4, 1 * CS), 4);
	check_bytes(1, b, 4, CS);
	assert_int_equal(fake_counter(f, &f->n_chunk), before + 1);
	assert_int_equal(tiercache_close(tc, h), 0);
	tiercache_disconnect(tc);
}

static void test_streamed_env(void **state)
{
	struct fake *f = *state;
	setenv("TIERCACHE_NO_FD_PASSING", "1", 1);
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	assert_false(f->last_open_flags & TC_F_WANT_CHUNK0);
	uint8_t *buf = malloc(A_SIZE);
	assert_int_equal(tiercache_pread(tc, h, buf, A_SIZE, 0), A_SIZE);
	check_bytes(1, buf, A_SIZE, 0);
	assert_int_equal(fake_counter(f, &f->n_chunk), 0);
	assert_int_equal(fake_counter(f, &f->n_read), 21); /* one READ per chunk piece */
	free(buf);
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
}

static void test_streamed_when_no_fd(void **state)
{
	struct fake *f = *state;
	f->no_fd = true;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/sub/b.txt", 0);
	assert_true(h >= 0);
	uint8_t buf[1000];
	assert_int_equal(tiercache_pread(tc, h, buf, sizeof(buf), 0), 1000);
	check_bytes(4, buf, 1000, 0);
	assert_int_equal(fake_counter(f, &f->n_chunk), 1); /* asked once, then streams */
	assert_true(fake_counter(f, &f->n_read) >= 1);
	assert_int_equal(tiercache_pread(tc, h, buf, 10, 990), 10);
	check_bytes(4, buf, 10, 990);
	assert_int_equal(fake_counter(f, &f->n_chunk), 1);
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
}

static void test_empty_file(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/empty", 0);
	assert_true(h >= 0);
	uint8_t b[8];
	assert_int_equal(tiercache_pread(tc, h, b, sizeof(b), 0), 0);
	assert_int_equal(tiercache_read(tc, h, b, sizeof(b)), 0);
	assert_int_equal(fake_counter(f, &f->n_chunk), 0);
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
}

static void test_open_errors(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	assert_int_equal(tiercache_open(tc, "ds/missing", 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(tiercache_last_error(), "no such file: ds/missing");
	/* the detail survives later successful calls */
	sync_daemon(tc);
	assert_string_equal(tiercache_last_error(), "no such file: ds/missing");

	unsigned opens = fake_counter(f, &f->n_open);
	static const int wflags[] = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND};
	for (size_t i = 0; i < sizeof(wflags) / sizeof(wflags[0]); i++) {
		assert_int_equal(tiercache_open(tc, "ds/a.bin", wflags[i]), -1);
		assert_int_equal(errno, EROFS);
	}
	char *longp = malloc(TC_PATH_MAX + 1);
	memset(longp, 'a', TC_PATH_MAX);
	longp[TC_PATH_MAX] = '\0'; /* 4096 bytes: one too many */
	assert_int_equal(tiercache_open(tc, longp, 0), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	struct tiercache_stat st;
	assert_int_equal(tiercache_stat(tc, longp, &st), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_null(tiercache_opendir(tc, longp));
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(fake_counter(f, &f->n_open), opens); /* nothing was sent */
	longp[TC_PATH_MAX - 1] = '\0'; /* 4095 bytes: sent, and not found */
	assert_int_equal(tiercache_open(tc, longp, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fake_counter(f, &f->n_open), opens + 1);
	free(longp);
	assert_int_equal(tiercache_open(tc, "ds/sub", 0), -1);
	assert_int_equal(errno, EISDIR);
	tiercache_disconnect(tc);
}

static void test_stat_and_listing(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	struct tiercache_stat st;
	assert_int_equal(tiercache_stat(tc, "ds", &st), 0);
	assert_int_equal(st.type, TIERCACHE_DIR);
	assert_int_equal(tiercache_stat(tc, "ds/sub/b.txt", &st), 0);
	assert_int_equal(st.type, TIERCACHE_FILE);
	assert_true(st.size == 1000 && st.mtime_ns == MTIME0 && st.chunk_size == CS);
	assert_int_equal(tiercache_stat(tc, "ds/nope", &st), -1);
	assert_int_equal(errno, ENOENT);

	struct tiercache_dir *d = tiercache_opendir(tc, "ds");
	assert_non_null(d);
	assert_int_equal(fake_counter(f, &f->n_listdir), 1); /* first page at opendir */
	static const char *want[] = {"a.bin", "empty", "sub", "f0", "f1",
				     "f2",    "f3",    "f4",  "f5", "f6"};
	const struct tiercache_dirent *e;
	size_t n = 0;
	while ((e = tiercache_readdir(d))) {
		assert_true(n < 10);
		assert_string_equal(e->name, want[n]);
		assert_int_equal(e->type, n == 2 ? TIERCACHE_DIR : TIERCACHE_FILE);
		n++;
	}
	assert_int_equal(errno, 0);
	assert_int_equal(n, 10);
	assert_int_equal(fake_counter(f, &f->n_listdir), 4); /* 3 + 3 + 3 + 1 */
	assert_null(tiercache_readdir(d)); /* stays at the end */
	assert_int_equal(errno, 0);
	tiercache_closedir(d);

	assert_null(tiercache_opendir(tc, "ds/a.bin"));
	assert_int_equal(errno, ENOTDIR);
	assert_null(tiercache_opendir(tc, "zz"));
	assert_int_equal(errno, ENOENT);
	tiercache_disconnect(tc);
}

static void test_call(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	void *rep = NULL;
	size_t len = 0;
	assert_int_equal(tiercache_call(tc, TC_OP_STATUS, NULL, 0, &rep, &len), 0);
	struct proto_recset rs;
	assert_int_equal(proto_recset_parse(rep, len, &rs), 0);
	const struct proto_section *s = proto_recset_find(&rs, "daemon");
	assert_non_null(s);
	assert_string_equal(proto_record_find(&s->records[0], "version")->v.s, "fake-0");
	proto_recset_free(&rs);
	free(rep);

	uint8_t req[6] = {2, 0, 0, 0, 'd', 's'};
	assert_int_equal(tiercache_call(tc, TC_OP_REFRESH, req, sizeof(req), &rep, &len), 0);
	assert_int_equal(len, 24);
	free(rep);
	req[4] = 'x';
	assert_int_equal(tiercache_call(tc, TC_OP_REFRESH, req, sizeof(req), &rep, &len), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(tiercache_last_error(), "no such dataset");
	assert_null(rep);
	assert_int_equal(tiercache_call(tc, 200, NULL, 0, &rep, &len), -1);
	assert_int_equal(errno, ENOSYS);
	assert_int_equal(tiercache_call(tc, 0, NULL, 0, &rep, &len), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(tiercache_call(tc, TC_OP_STATUS, req, TC_FRAME_MAX + 1, &rep, &len), -1);
	assert_int_equal(errno, EMSGSIZE);
	tiercache_disconnect(tc);
}

static void test_malformed_replies(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	struct tiercache_stat st;
	static const struct {
		enum misbehave mb;
		int err;
	} cases[] = {
		{MB_BAD_ID, EPROTO},
		{MB_HUGE_LEN, EMSGSIZE},
		{MB_SHORT_STAT, EPROTO},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned hellos = fake_counter(f, &f->n_hello);
		f->mb = cases[i].mb;
		assert_int_equal(tiercache_stat(tc, "ds", &st), -1);
		assert_int_equal(errno, cases[i].err);
		f->mb = MB_NONE;
		/* the connection was dropped: the next call makes a new one */
		assert_int_equal(tiercache_stat(tc, "ds", &st), 0);
		assert_int_equal(fake_counter(f, &f->n_hello), hellos + 1);
	}
	tiercache_disconnect(tc);
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_unexpected_fd_closed(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	struct tiercache_stat st;
	sync_daemon(tc);
	int before = count_fds();
	f->mb = MB_STAT_FD;
	assert_int_equal(tiercache_stat(tc, "ds", &st), 0);
	f->mb = MB_NONE;
	sync_daemon(tc); /* the daemon has closed its copy by now */
	assert_int_equal(count_fds(), before);
	tiercache_disconnect(tc);
}

static void test_short_chunk_is_eio(void **state)
{
	struct fake *f = *state;
	f->mb = MB_SHORT_CHUNK;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	uint8_t b[CS];
	assert_int_equal(tiercache_pread(tc, h, b, 10, 0), 10); /* the start is there */
	assert_int_equal(tiercache_pread(tc, h, b, CS, 0), -1);  /* the end is not */
	assert_int_equal(errno, EIO);
	assert_non_null(strstr(tiercache_last_error(), "shorter"));
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
}

struct reader {
	struct tiercache *tc;
	int h;
	unsigned seed;
	int bad;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint8_t buf[3 * CS];
	for (int i = 0; i < 300; i++) {
		r->seed = r->seed * 1103515245u + 12345u;
		uint64_t off = (r->seed >> 4) % A_SIZE;
		size_t n = (r->seed >> 8) % sizeof(buf) + 1;
		ssize_t got = tiercache_pread(r->tc, r->h, buf, n, off);
		size_t want = off + n > A_SIZE ? A_SIZE - off : n;
		if (got != (ssize_t)want) {
			r->bad++;
			continue;
		}
		for (size_t k = 0; k < want; k++)
			if (buf[k] != fake_pattern(1, off + k)) {
				r->bad++;
				break;
			}
	}
	return NULL;
}

static void *churn_main(void *arg)
{
	struct reader *r = arg;
	uint8_t b[16];
	for (int i = 0; i < 100; i++) {
		int h = tiercache_open(r->tc, "ds/sub/b.txt", 0);
		if (h < 0 || tiercache_pread(r->tc, h, b, 16, 500) != 16 ||
		    tiercache_close(r->tc, h) != 0)
			r->bad++;
	}
	return NULL;
}

static void test_concurrent_readers(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	pthread_t t[5];
	struct reader r[5];
	for (int i = 0; i < 5; i++) {
		r[i] = (struct reader){.tc = tc, .h = h, .seed = (unsigned)i * 7919u + 1};
		pthread_create(&t[i], NULL, i == 4 ? churn_main : reader_main, &r[i]);
	}
	for (int i = 0; i < 5; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].bad, 0);
	}
	sync_daemon(tc);
	assert_true(fake_counter(f, &f->n_release) > 0); /* evictions happened */
	assert_int_equal(fake_counter(f, &f->n_close), 100);
	assert_int_equal(tiercache_close(tc, h), 0);
	tiercache_disconnect(tc);
}

static void test_fork_child_reconnects(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	uint8_t b[CS];
	assert_int_equal(tiercache_pread(tc, h, b, CS, CS), CS); /* chunk 1 cached */
	unsigned hellos = fake_counter(f, &f->n_hello), opens = fake_counter(f, &f->n_open);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child: the inherited handle works, on its own connection */
		int ok = tiercache_pread(tc, h, b, CS, CS) == CS;
		for (uint32_t i = 0; ok && i < CS; i++)
			ok = b[i] == fake_pattern(1, CS + i);
		ok = ok && tiercache_pread(tc, h, b, 100, 5 * CS) == 100;
		for (uint32_t i = 0; ok && i < 100; i++)
			ok = b[i] == fake_pattern(1, 5 * CS + i);
		struct tiercache_stat st;
		ok = ok && tiercache_stat(tc, "ds", &st) == 0;
		ok = ok && tiercache_close(tc, h) == 0;
		tiercache_disconnect(tc);
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fake_counter(f, &f->n_hello), hellos + 1); /* child's own */
	assert_int_equal(fake_counter(f, &f->n_open), opens + 1);   /* re-opened by path */

	/* the parent's connection and handle are untouched by the child */
	assert_int_equal(tiercache_pread(tc, h, b, 100, 7 * CS), 100);
	check_bytes(1, b, 100, 7 * CS);
	assert_int_equal(fake_counter(f, &f->n_hello), hellos + 1);
	assert_int_equal(tiercache_close(tc, h), 0);
	tiercache_disconnect(tc);
}

static void *restart_main(void *arg)
{
	struct fake *f = arg;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 150 * 1000 * 1000};
	nanosleep(&ts, NULL);
	fake_start(f);
	return NULL;
}

static void test_reconnect_after_restart(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	uint8_t b[64];
	assert_int_equal(tiercache_pread(tc, h, b, 64, CS), 64);
	unsigned hellos = fake_counter(f, &f->n_hello);

	fake_stop(f);
	/* cached chunk fds are plain fake_files: they outlive the daemon */
	assert_int_equal(tiercache_pread(tc, h, b, 64, CS + 10), 64);
	check_bytes(1, b, 64, CS + 10);

	pthread_t t;
	pthread_create(&t, NULL, restart_main, f);
	/* an uncached chunk needs the daemon: waits for it to come back */
	assert_int_equal(tiercache_pread(tc, h, b, 64, 3 * CS), 64);
	check_bytes(1, b, 64, 3 * CS);
	pthread_join(t, NULL);
	assert_int_equal(fake_counter(f, &f->n_hello), hellos + 1);
	struct tiercache_stat st;
	assert_int_equal(tiercache_stat(tc, "ds", &st), 0);
	assert_int_equal(tiercache_close(tc, h), 0);
	tiercache_disconnect(tc);
}

static void test_reconnect_timeout_zero(void **state)
{
	struct fake *f = *state;
	setenv("TIERCACHE_RECONNECT_TIMEOUT", "0", 1);
	struct tiercache *tc = tiercache_connect(f->sock);
	assert_non_null(tc);
	fake_stop(f);
	struct tiercache_stat st;
	assert_int_equal(tiercache_stat(tc, "ds", &st), -1);
	assert_true(errno == ENOENT || errno == ECONNREFUSED);
	assert_non_null(strstr(tiercache_last_error(), "not running"));
	fake_start(f);
	/* the daemon is back: the next call reconnects at once */
	assert_int_equal(tiercache_stat(tc, "ds", &st), 0);
	tiercache_disconnect(tc);
}

static void test_restart_with_changed_source_is_estale(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	int h2 = tiercache_open(tc, "ds/sub/b.txt", 0);
	assert_true(h >= 0 && h2 >= 0);
	fake_stop(f);
	f->mtime_bump = 1; /* a.bin and b.txt now have another version */
	fake_start(f);
	uint8_t b[16];
	assert_int_equal(tiercache_pread(tc, h, b, 16, 2 * CS), -1);
	assert_int_equal(errno, ESTALE);
	assert_non_null(strstr(tiercache_last_error(), "ds/a.bin"));
	/* stays stale, even for bytes it had cached */
	assert_int_equal(tiercache_pread(tc, h, b, 16, 0), -1);
	assert_int_equal(errno, ESTALE);
	assert_int_equal(tiercache_close(tc, h), 0);
	assert_int_equal(tiercache_close(tc, h2), 0);
	/* a new open sees the new version */
	h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	struct tiercache_stat st;
	assert_int_equal(tiercache_fstat(tc, h, &st), 0);
	assert_true(st.mtime_ns == MTIME0 + 1);
	assert_int_equal(tiercache_pread(tc, h, b, 16, 2 * CS), 16);
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
}

static int log_calls;
static void log_hook(int level, const char *msg, void *arg)
{
	(void)level;
	(void)msg;
	(void)arg;
	log_calls++;
}

static void test_log_hook(void **state)
{
	struct fake *f = *state;
	log_calls = 0;
	tiercache_set_log(log_hook, NULL);
	struct tiercache *tc = tiercache_connect(f->sock);
	tiercache_set_log(NULL, NULL);
	assert_non_null(tc);
	assert_true(log_calls > 0);
	int before = log_calls;
	tiercache_disconnect(tc);
	assert_int_equal(log_calls, before);
	assert_string_equal(tiercache_strerror(ENOENT), "No such file or directory");
	assert_non_null(tiercache_strerror(99999));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fake_setup, fake_teardown)
	const struct CMUnitTest tests[] = {
		T(test_connect_failures),
		T(test_open_read_whole_file),
		T(test_lru_release),
		T(test_streamed_env),
		T(test_streamed_when_no_fd),
		T(test_empty_file),
		T(test_open_errors),
		T(test_stat_and_listing),
		T(test_call),
		T(test_malformed_replies),
		T(test_unexpected_fd_closed),
		T(test_short_chunk_is_eio),
		T(test_concurrent_readers),
		T(test_fork_child_reconnects),
		T(test_reconnect_after_restart),
		T(test_reconnect_timeout_zero),
		T(test_restart_with_changed_source_is_estale),
		T(test_log_hook),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
