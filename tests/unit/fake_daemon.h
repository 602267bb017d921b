/*
 * A fake tiercached for the client library's unit tests: threads in the
 * test process that speak the protocol over a real Unix socket in a temp
 * dir, pass real chunk fds with SCM_RIGHTS, count what they see, and can be
 * stopped, restarted, changed under the client, or told to misbehave.
 * Not a mock of any real component: the library is the thing under test.
 */
#ifndef TIERCACHE_TEST_FAKE_DAEMON_H
#define TIERCACHE_TEST_FAKE_DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define CS 4096u /* the fake dataset's chunk size */
/* Junk ahead of every chunk's bytes in its file: the client must read
 * from the record's base, as it does from a segment. */
#define FAKE_BASE 7u
#define MTIME0 1700000000123456789LL
#define MAXCONN 32
#define MAXH 64

enum misbehave {
	MB_NONE,
	MB_BAD_ID,     /* STAT reply with the wrong id */
	MB_HUGE_LEN,   /* STAT reply header claims more than TC_FRAME_MAX */
	MB_SHORT_STAT, /* STAT reply payload cut short */
	MB_STAT_FD,    /* STAT reply with an fd nobody asked for */
	MB_SHORT_CHUNK /* chunk fds of fake_files one byte shorter than len */
};

struct ffile {
	const char *path;
	int type;
	uint64_t size;
};

extern const struct ffile fake_files[];
extern const size_t fake_nfiles;
#define NFILES fake_nfiles
#define A_SIZE (20 * CS + 123)

struct fake;

struct fconn {
	struct fake *f;
	int fd;
	uint32_t no;
	pthread_t thread;
	int hfile[MAXH]; /* daemon handle slot -> file index, -1 free */
};

struct fake {
	char dir[64];
	char sock[128];
	int lfd;
	pthread_t acceptor;
	bool running;
	pthread_mutex_t lock;
	struct fconn *conns[MAXCONN];
	unsigned nconns;
	/* knobs */
	bool no_fd;
	enum misbehave mb;
	int64_t mtime_bump;
	uint32_t page_size;
	/* what the daemon saw */
	unsigned n_hello, n_open, n_chunk, n_read, n_release, n_close, n_stat, n_listdir;
	unsigned n_bad_req, n_noreply_missing;
	uint32_t last_open_flags;
	uint32_t released[256];
};

void fake_start(struct fake *f);
/* Stop like a crashed daemon: socket gone, every connection hung up. */
void fake_stop(struct fake *f);
/* cmocka group fixtures: a running fake daemon in a temp dir as *state;
 * teardown asserts every request the library sent decoded exactly. */
int fake_setup(void **state);
int fake_teardown(void **state);
/* Read one of the fake's counters under its lock. */
unsigned fake_counter(struct fake *f, const unsigned *field);
/* The byte at offset off of file index fi. */
uint8_t fake_pattern(int fi, uint64_t o);

#endif
