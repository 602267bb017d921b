/*
 * The fake daemon: see fake_daemon.h.
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

const struct ffile fake_files[] = {
	{"ds", TC_TYPE_DIR, 0},
	{"ds/a.bin", TC_TYPE_FILE, 20 * CS + 123},
	{"ds/empty", TC_TYPE_FILE, 0},
	{"ds/sub", TC_TYPE_DIR, 0},
	{"ds/sub/b.txt", TC_TYPE_FILE, 1000},
	{"ds/f0", TC_TYPE_FILE, 10},
	{"ds/f1", TC_TYPE_FILE, 11},
	{"ds/f2", TC_TYPE_FILE, 12},
	{"ds/f3", TC_TYPE_FILE, 13},
	{"ds/f4", TC_TYPE_FILE, 14},
	{"ds/f5", TC_TYPE_FILE, 15},
	{"ds/f6", TC_TYPE_FILE, 16},
};
const size_t fake_nfiles = sizeof(fake_files) / sizeof(fake_files[0]);
/* here the table is complete: a constant count, usable for array sizes */
#undef NFILES
#define NFILES (sizeof(fake_files) / sizeof(fake_files[0]))

uint8_t fake_pattern(int fi, uint64_t o)
{
	return (uint8_t)(o * 131 + (o >> 9) + (uint64_t)fi * 17);
}

static int find_file(const char *p, size_t n)
{
	for (size_t i = 0; i < NFILES; i++)
		if (strlen(fake_files[i].path) == n && memcmp(fake_files[i].path, p, n) == 0)
			return (int)i;
	return -1;
}

static int recv_all(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = recv(fd, p, n, 0);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void send_frame(int fd, const uint8_t *p, size_t n, int pass_fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (pass_fd >= 0) {
		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = sizeof(cbuf.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL);
	if (r > 0 && (size_t)r < n)
		(void)!send(fd, p + r, n - (size_t)r, MSG_NOSIGNAL);
}

static void reply(struct fconn *c, const struct tc_hdr *rq, struct proto_wr *w, uint32_t aux,
		  int pass_fd)
{
	if (rq->aux & TC_F_NOREPLY)
		return;
	proto_wr_finish(w, rq->op, rq->id, aux);
	send_frame(c->fd, w->buf, w->len, pass_fd);
}

static void reply_err(struct fconn *c, const struct tc_hdr *rq, int err, const char *detail)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, detail);
	reply(c, rq, &w, (uint32_t)err, -1);
	proto_wr_free(&w);
}

/* A chunk file on disk with the right bytes (or one short). */
static int chunk_fd(struct fake *f, int fi, uint32_t idx, uint32_t len)
{
	char path[160];
	bool short_ = f->mb == MB_SHORT_CHUNK;
	snprintf(path, sizeof(path), "%s/c%d_%u%s", f->dir, fi, idx, short_ ? "_s" : "");
	pthread_mutex_lock(&f->lock);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* the chunk's bytes start at FAKE_BASE, as in a segment */
		uint8_t *b = malloc(FAKE_BASE + len);
		memset(b, 0xee, FAKE_BASE);
		for (uint32_t i = 0; i < len; i++)
			b[FAKE_BASE + i] = fake_pattern(fi, (uint64_t)idx * CS + i);
		int w = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		(void)!write(w, b, FAKE_BASE + (short_ ? len - 1 : len));
		close(w);
		free(b);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&f->lock);
	return fd;
}

static int handle_file(struct fconn *c, uint64_t dh)
{
	uint32_t slot = (uint32_t)dh;
	if ((dh >> 32) != c->no || slot >= MAXH)
		return -1;
	return c->hfile[slot];
}

static void recset_reply(struct fconn *c, const struct tc_hdr *rq, bool status)
{
	struct proto_wr w;
	struct proto_rs rs;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	if (status) {
		proto_rs_section(&rs, "daemon", TC_SHAPE_OBJECT);
		proto_rs_record(&rs);
		proto_rs_str(&rs, "version", "fake-0");
		proto_rs_u64(&rs, "uptime_s", 5);
	}
	proto_rs_section(&rs, "datasets", TC_SHAPE_ARRAY);
	proto_rs_record(&rs);
	proto_rs_str(&rs, "name", "ds");
	proto_rs_u64(&rs, "bytes", A_SIZE);
	proto_rs_bool(&rs, "available", true);
	proto_rs_end(&rs);
	reply(c, rq, &w, 0, -1);
	proto_wr_free(&w);
}

static void handle_listdir(struct fconn *c, const struct tc_hdr *rq, const char *p, size_t n,
			   uint32_t cookie)
{
	struct fake *f = c->f;
	int fi = find_file(p, n);
	if (fi < 0 || fake_files[fi].type != TC_TYPE_DIR) {
		reply_err(c, rq, fi < 0 ? ENOENT : ENOTDIR, "not a directory");
		return;
	}
	int kids[NFILES], nk = 0;
	for (size_t i = 0; i < NFILES; i++) {
		const char *q = fake_files[i].path;
		if (strlen(q) > n + 1 && memcmp(q, p, n) == 0 && q[n] == '/' &&
		    !strchr(q + n + 1, '/'))
			kids[nk++] = (int)i;
	}
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	uint32_t end = cookie + f->page_size < (uint32_t)nk ? cookie + f->page_size : (uint32_t)nk;
	proto_wr_u32(&w, end < (uint32_t)nk ? end : 0);
	proto_wr_u32(&w, end > cookie ? end - cookie : 0);
	for (uint32_t i = cookie; i < end; i++) {
		const struct ffile *e = &fake_files[kids[i]];
		proto_wr_u8(&w, (uint8_t)e->type);
		proto_wr_u64(&w, e->size);
		proto_wr_i64(&w, MTIME0 + f->mtime_bump);
		proto_wr_str(&w, strrchr(e->path, '/') + 1);
	}
	reply(c, rq, &w, 0, -1);
	proto_wr_free(&w);
}

static void handle_stat(struct fconn *c, const struct tc_hdr *rq, int fi)
{
	struct fake *f = c->f;
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u8(&w, (uint8_t)fake_files[fi].type);
	proto_wr_u64(&w, fake_files[fi].size);
	proto_wr_i64(&w, MTIME0 + f->mtime_bump);
	if (f->mb != MB_SHORT_STAT)
		proto_wr_u32(&w, CS);
	struct tc_hdr h = *rq;
	int pass = -1;
	if (f->mb == MB_BAD_ID)
		h.id++;
	if (f->mb == MB_STAT_FD)
		pass = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	reply(c, &h, &w, 0, pass);
	if (pass >= 0)
		close(pass);
	proto_wr_free(&w);
}

static void dispatch(struct fconn *c, const struct tc_hdr *rq, const uint8_t *p)
{
	struct fake *f = c->f;
	struct proto_rd r;
	struct proto_wr w;
	size_t n;
	proto_rd_init(&r, p, rq->len);
	proto_wr_init(&w);
	proto_wr_begin(&w);

	pthread_mutex_lock(&f->lock);
	if ((rq->op == TC_OP_RELEASE || rq->op == TC_OP_CLOSE) && !(rq->aux & TC_F_NOREPLY))
		f->n_noreply_missing++;
	pthread_mutex_unlock(&f->lock);

	switch (rq->op) {
	case TC_OP_HELLO: {
		uint32_t v = proto_rd_u32(&r);
		if (!proto_rd_done(&r) || v != TC_PROTO_VERSION)
			goto bad;
		pthread_mutex_lock(&f->lock);
		f->n_hello++;
		pthread_mutex_unlock(&f->lock);
		proto_wr_u32(&w, TC_PROTO_VERSION);
		proto_wr_u32(&w, TC_FRAME_MAX);
		proto_wr_str(&w, "fake-0");
		reply(c, rq, &w, 0, -1);
		break;
	}
	case TC_OP_OPEN: {
		const char *s = proto_rd_str(&r, TC_PATH_MAX, &n);
		if (!proto_rd_done(&r))
			goto bad;
		pthread_mutex_lock(&f->lock);
		f->n_open++;
		f->last_open_flags = rq->aux;
		pthread_mutex_unlock(&f->lock);
		int fi = find_file(s, n);
		if (fi < 0 || fake_files[fi].type != TC_TYPE_FILE) {
			char d[64];
			snprintf(d, sizeof(d), "no such file: %.*s", (int)(n < 40 ? n : 40), s);
			reply_err(c, rq, fi < 0 ? ENOENT : EISDIR, d);
			break;
		}
		uint32_t slot = 0;
		while (slot < MAXH && c->hfile[slot] >= 0)
			slot++;
		if (slot == MAXH) {
			reply_err(c, rq, EMFILE, "too many handles");
			break;
		}
		c->hfile[slot] = fi;
		uint64_t size = fake_files[fi].size;
		bool has = (rq->aux & TC_F_WANT_CHUNK0) && size > 0 && !f->no_fd;
		uint32_t len = size < CS ? (uint32_t)size : CS;
		proto_wr_u64(&w, (uint64_t)c->no << 32 | slot);
		proto_wr_u64(&w, size);
		proto_wr_i64(&w, MTIME0 + f->mtime_bump);
		proto_wr_u32(&w, CS);
		proto_wr_u8(&w, has);
		int fd = -1;
		if (has) {
			proto_wr_u32(&w, 0);
			proto_wr_u64(&w, 0);
			proto_wr_u32(&w, len);
			proto_wr_u64(&w, FAKE_BASE);
			proto_wr_u8(&w, TC_TIER_HOT);
			fd = chunk_fd(f, fi, 0, len);
		}
		reply(c, rq, &w, 0, fd);
		if (fd >= 0)
			close(fd);
		break;
	}
	case TC_OP_CHUNK: {
		uint64_t dh = proto_rd_u64(&r);
		uint32_t idx = proto_rd_u32(&r);
		if (!proto_rd_done(&r))
			goto bad;
		int fi = handle_file(c, dh);
		if (fi < 0) {
			reply_err(c, rq, EBADF, "unknown handle");
			break;
		}
		uint64_t off = (uint64_t)idx * CS, size = fake_files[fi].size;
		if (off >= size) {
			reply_err(c, rq, EINVAL, "chunk past EOF");
			break;
		}
		pthread_mutex_lock(&f->lock);
		f->n_chunk++;
		pthread_mutex_unlock(&f->lock);
		uint32_t len = size - off < CS ? (uint32_t)(size - off) : CS;
		proto_wr_u32(&w, idx);
		proto_wr_u64(&w, off);
		proto_wr_u32(&w, len);
		proto_wr_u64(&w, FAKE_BASE);
		proto_wr_u8(&w, TC_TIER_WARM);
		int fd = f->no_fd ? -1 : chunk_fd(f, fi, idx, len);
		reply(c, rq, &w, 0, fd);
		if (fd >= 0)
			close(fd);
		break;
	}
	case TC_OP_READ: {
		uint64_t dh = proto_rd_u64(&r);
		uint64_t off = proto_rd_u64(&r);
		uint32_t len = proto_rd_u32(&r);
		if (!proto_rd_done(&r) || len > TC_READ_MAX)
			goto bad;
		int fi = handle_file(c, dh);
		if (fi < 0) {
			reply_err(c, rq, EBADF, "unknown handle");
			break;
		}
		pthread_mutex_lock(&f->lock);
		f->n_read++;
		pthread_mutex_unlock(&f->lock);
		uint64_t size = fake_files[fi].size;
		uint64_t nb = off >= size ? 0 : (size - off < len ? size - off : len);
		uint8_t *d = proto_wr_reserve(&w, nb);
		for (uint64_t i = 0; i < nb; i++)
			d[i] = fake_pattern(fi, off + i);
		reply(c, rq, &w, 0, -1);
		break;
	}
	case TC_OP_RELEASE: {
		uint64_t dh = proto_rd_u64(&r);
		uint32_t idx = proto_rd_u32(&r);
		if (!proto_rd_done(&r) || handle_file(c, dh) < 0)
			goto bad;
		pthread_mutex_lock(&f->lock);
		if (f->n_release < 256)
			f->released[f->n_release] = idx;
		f->n_release++;
		pthread_mutex_unlock(&f->lock);
		break;
	}
	case TC_OP_CLOSE: {
		uint64_t dh = proto_rd_u64(&r);
		if (!proto_rd_done(&r) || handle_file(c, dh) < 0)
			goto bad;
		c->hfile[(uint32_t)dh] = -1;
		pthread_mutex_lock(&f->lock);
		f->n_close++;
		pthread_mutex_unlock(&f->lock);
		reply(c, rq, &w, 0, -1);
		break;
	}
	case TC_OP_STAT: {
		const char *s = proto_rd_str(&r, TC_PATH_MAX, &n);
		if (!proto_rd_done(&r))
			goto bad;
		pthread_mutex_lock(&f->lock);
		f->n_stat++;
		pthread_mutex_unlock(&f->lock);
		int fi = find_file(s, n);
		if (fi < 0) {
			reply_err(c, rq, ENOENT, "no such file");
			break;
		}
		if (f->mb == MB_HUGE_LEN) {
			struct tc_hdr h = {.magic = TC_PROTO_MAGIC,
					   .version = TC_PROTO_VERSION,
					   .op = rq->op,
					   .id = rq->id,
					   .len = TC_FRAME_MAX + 1};
			uint8_t hb[TC_HDR_SIZE];
			proto_hdr_encode(hb, &h);
			send_frame(c->fd, hb, sizeof(hb), -1);
			break;
		}
		handle_stat(c, rq, fi);
		break;
	}
	case TC_OP_LISTDIR: {
		const char *s = proto_rd_str(&r, TC_PATH_MAX, &n);
		uint32_t cookie = proto_rd_u32(&r);
		if (!proto_rd_done(&r))
			goto bad;
		pthread_mutex_lock(&f->lock);
		f->n_listdir++;
		pthread_mutex_unlock(&f->lock);
		handle_listdir(c, rq, s, n, cookie);
		break;
	}
	case TC_OP_STATUS:
	case TC_OP_DATASETS:
		if (rq->len)
			goto bad;
		recset_reply(c, rq, rq->op == TC_OP_STATUS);
		break;
	case TC_OP_REFRESH: {
		const char *s = proto_rd_str(&r, TC_DATASET_NAME_MAX, &n);
		if (!proto_rd_done(&r))
			goto bad;
		if (n != 2 || memcmp(s, "ds", 2) != 0) {
			reply_err(c, rq, ENOENT, "no such dataset");
			break;
		}
		proto_wr_u64(&w, 3);
		proto_wr_u64(&w, 1234);
		proto_wr_u64(&w, 1);
		reply(c, rq, &w, 0, -1);
		break;
	}
	default:
		reply_err(c, rq, ENOSYS, "unknown op");
	}
	proto_wr_free(&w);
	return;
bad:
	pthread_mutex_lock(&f->lock);
	f->n_bad_req++;
	pthread_mutex_unlock(&f->lock);
	reply_err(c, rq, EBADMSG, "request does not decode");
	proto_wr_free(&w);
}

static void *conn_main(void *arg)
{
	struct fconn *c = arg;
	for (;;) {
		uint8_t hb[TC_HDR_SIZE];
		struct tc_hdr h;
		if (recv_all(c->fd, hb, sizeof(hb)) < 0 || proto_hdr_decode(hb, &h) < 0)
			break;
		uint8_t *p = malloc(h.len ? h.len : 1);
		if (recv_all(c->fd, p, h.len) < 0) {
			free(p);
			break;
		}
		dispatch(c, &h, p);
		free(p);
	}
	return NULL; /* the fd is closed by fake_stop, after the join */
}

static void *accept_main(void *arg)
{
	struct fake *f = arg;
	for (;;) {
		int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		pthread_mutex_lock(&f->lock);
		if (f->nconns == MAXCONN) {
			pthread_mutex_unlock(&f->lock);
			close(fd);
			continue;
		}
		struct fconn *c = calloc(1, sizeof(*c));
		c->f = f;
		c->fd = fd;
		c->no = f->nconns + 1;
		for (int i = 0; i < MAXH; i++)
			c->hfile[i] = -1;
		f->conns[f->nconns++] = c;
		pthread_create(&c->thread, NULL, conn_main, c);
		pthread_mutex_unlock(&f->lock);
	}
	return NULL;
}

void fake_start(struct fake *f)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	assert_true(strlen(f->sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, f->sock, strlen(f->sock) + 1);
	unlink(f->sock);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 16), 0);
	f->running = true;
	assert_int_equal(pthread_create(&f->acceptor, NULL, accept_main, f), 0);
}

/* Stop like a crashed daemon: socket gone, every connection hung up. */
void fake_stop(struct fake *f)
{
	if (!f->running)
		return;
	f->running = false;
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->acceptor, NULL);
	close(f->lfd);
	unlink(f->sock);
	pthread_mutex_lock(&f->lock);
	unsigned n = f->nconns;
	for (unsigned i = 0; i < n; i++)
		shutdown(f->conns[i]->fd, SHUT_RDWR);
	pthread_mutex_unlock(&f->lock);
	for (unsigned i = 0; i < n; i++) {
		pthread_join(f->conns[i]->thread, NULL);
		close(f->conns[i]->fd);
		free(f->conns[i]);
	}
	f->nconns = 0;
}

int fake_setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/tctest.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/sock", f->dir);
	pthread_mutex_init(&f->lock, NULL);
	f->page_size = 3;
	fake_start(f);
	unsetenv("TIERCACHE_NO_FD_PASSING");
	setenv("TIERCACHE_RECONNECT_TIMEOUT", "10", 1);
	*state = f;
	return 0;
}

int fake_teardown(void **state)
{
	struct fake *f = *state;
	fake_stop(f);
	assert_int_equal(f->n_bad_req, 0); /* every request decoded exactly */
	assert_int_equal(f->n_noreply_missing, 0);
	DIR *d = opendir(f->dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char p[400];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(f->dir);
	pthread_mutex_destroy(&f->lock);
	free(f);
	unsetenv("TIERCACHE_NO_FD_PASSING");
	unsetenv("TIERCACHE_RECONNECT_TIMEOUT");
	return 0;
}

unsigned fake_counter(struct fake *f, const unsigned *field)
{
	pthread_mutex_lock(&f->lock);
	unsigned v = *field;
	pthread_mutex_unlock(&f->lock);
	return v;
}

