/*
 * Unit tests of tiercache_chunk_fd (client/lib/chunkfd.c) against the fake
 * daemon of fake_daemon.c: the descriptor it hands out reads the file's
 * bytes at *fd_off for *len bytes, chunk boundaries and the file's end
 * are honoured, chunks come from the handle's cache (chunk 0 from OPEN)
 * or one CHUNK request, the descriptor outlives the handle, a short chunk
 * file is EIO, and streamed connections and bad arguments fail with the
 * documented errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_daemon.h"
#include "proto.h"
#include "tiercache.h"

/* Read len bytes at fd_off of fd and compare with file fi from off. */
static void check_fd_bytes(int fd, uint64_t fd_off, size_t len, int fi, uint64_t off)
{
	uint8_t *buf = malloc(len + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, len + 1, (off_t)fd_off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		if (buf[i] != fake_pattern(fi, off + i))
			fail_msg("byte %zu (file offset %llu) differs", i,
				 (unsigned long long)(off + i));
	free(buf);
}

static void test_chunk_fd_bytes(void **state)
{
	struct fake *f = *state;
	struct tiercache *tc = tiercache_connect(f->sock);
	assert_non_null(tc);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	uint64_t fd_off;
	size_t len;

	/* chunk 0 came with OPEN: no CHUNK request */
	int fd = tiercache_chunk_fd(tc, h, 100, &fd_off, &len);
	assert_true(fd >= 0);
	assert_true(fd_off == FAKE_BASE + 100);
	assert_true(len == CS - 100);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	check_fd_bytes(fd, fd_off, len, 1, 100);
	close(fd);
	assert_int_equal(fake_counter(f, &f->n_chunk), 0);

	/* chunk 5: fetched once, then from the handle's cache */
	for (int i = 0; i < 2; i++) {
		fd = tiercache_chunk_fd(tc, h, 5 * CS, &fd_off, &len);
		assert_true(fd >= 0);
		assert_true(fd_off == FAKE_BASE && len == CS);
		check_fd_bytes(fd, fd_off, len, 1, 5 * CS);
		close(fd);
		assert_int_equal(fake_counter(f, &f->n_chunk), 1);
	}

	/* the last chunk holds 123 bytes: len stops at the end of the file */
	fd = tiercache_chunk_fd(tc, h, 20 * CS + 3, &fd_off, &len);
	assert_true(fd >= 0);
	assert_true(fd_off == FAKE_BASE + 3 && len == 120);
	check_fd_bytes(fd, fd_off, len, 1, 20 * CS + 3);

	/* at or past the end of the file */
	assert_int_equal(tiercache_chunk_fd(tc, h, A_SIZE, &fd_off, &len), -1);
	assert_int_equal(errno, ENXIO);
	assert_int_equal(tiercache_chunk_fd(tc, h, A_SIZE + CS, &fd_off, &len), -1);
	assert_int_equal(errno, ENXIO);

	/* the descriptor stays valid after the handle is closed */
	assert_int_equal(tiercache_close(tc, h), 0);
	check_fd_bytes(fd, FAKE_BASE + 3, 120, 1, 20 * CS + 3);
	close(fd);

	/* bad handle, bad arguments */
	assert_int_equal(tiercache_chunk_fd(tc, h, 0, &fd_off, &len), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(tiercache_chunk_fd(tc, 12345, 0, &fd_off, &len), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(tiercache_chunk_fd(tc, 0, 0, NULL, &len), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(tiercache_chunk_fd(NULL, 0, 0, &fd_off, &len), -1);
	assert_int_equal(errno, EINVAL);
	tiercache_disconnect(tc);
}

/* Descriptors cannot be handed out: ENOTSUP, and pread still works. */
static void test_chunk_fd_streamed(void **state)
{
	struct fake *f = *state;
	uint64_t fd_off;
	size_t len;
	uint8_t buf[1000];

	setenv("TIERCACHE_NO_FD_PASSING", "1", 1);
	struct tiercache *tc = tiercache_connect(f->sock);
	unsetenv("TIERCACHE_NO_FD_PASSING");
	assert_non_null(tc);
	int h = tiercache_open(tc, "ds/sub/b.txt", 0);
	assert_true(h >= 0);
	assert_int_equal(tiercache_chunk_fd(tc, h, 0, &fd_off, &len), -1);
	assert_int_equal(errno, ENOTSUP);
	assert_non_null(strstr(tiercache_last_error(), "pread"));
	assert_int_equal(tiercache_pread(tc, h, buf, sizeof(buf), 0), 1000);
	tiercache_close(tc, h);
	tiercache_disconnect(tc);

	/* the daemon answers CHUNK without a descriptor */
	f->no_fd = true;
	tc = tiercache_connect(f->sock);
	assert_non_null(tc);
	h = tiercache_open(tc, "ds/sub/b.txt", 0);
	assert_true(h >= 0);
	assert_int_equal(tiercache_chunk_fd(tc, h, 10, &fd_off, &len), -1);
	assert_int_equal(errno, ENOTSUP);
	assert_int_equal(fake_counter(f, &f->n_chunk), 1);
	assert_int_equal(tiercache_pread(tc, h, buf, sizeof(buf), 0), 1000);
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], fake_pattern(4, i));
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
}

/* A chunk file shorter than its chunk: EIO, never a descriptor that
 * would splice fewer bytes than promised. */
static void test_chunk_fd_short_file_is_eio(void **state)
{
	struct fake *f = *state;
	uint64_t fd_off;
	size_t len;
	f->mb = MB_SHORT_CHUNK;
	struct tiercache *tc = tiercache_connect(f->sock);
	assert_non_null(tc);
	int h = tiercache_open(tc, "ds/a.bin", 0);
	assert_true(h >= 0);
	assert_int_equal(tiercache_chunk_fd(tc, h, 0, &fd_off, &len), -1);
	assert_int_equal(errno, EIO);
	assert_non_null(strstr(tiercache_last_error(), "shorter"));
	assert_int_equal(tiercache_chunk_fd(tc, h, 3 * CS + 5, &fd_off, &len), -1);
	assert_int_equal(errno, EIO);
	tiercache_close(tc, h);
	tiercache_disconnect(tc);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fake_setup, fake_teardown)
	const struct CMUnitTest tests[] = {
		T(test_chunk_fd_bytes),
		T(test_chunk_fd_streamed),
		T(test_chunk_fd_short_file_is_eio),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
