/*
 * The FUSE low-level operations of tiercache-mount for names and files:
 * lookup / forget / getattr / open / read / release, the connection setup
 * (init), and EROFS for every operation that would change anything. The
 * directory operations are in dirs.c, statfs in statfs.c.
 *
 * Reads: the reply to a FUSE read is the chunk files themselves: a dup of
 * each chunk fd libtiercache holds (tiercache_chunk_fd), which libfuse
 * splices into /dev/fuse, so the bytes are copied once, in the kernel,
 * from the tier file's page cache into the mount's (no bytes through the
 * daemon, none through our memory). Without splice (-o no_splice, a
 * kernel without it, streamed handles) one tiercache_pread into a
 * per-thread buffer that is then written to /dev/fuse.
 *
 * Caching: the kernel keeps names and attributes for entry_timeout /
 * attr_timeout, and keeps file pages across opens while the version is the
 * same (see nodes.c). An open always asks the daemon (which revalidates
 * the source), so a changed file is noticed at open even while the kernel
 * still caches its old attributes; we then invalidate those.
 *
 * -o immutable: open answers ENOSYS once, after which the kernel sends no
 * open or release for files at all (half the requests of a small file, and
 * no daemon round trip for a file read from the page cache). Reads then
 * come with fh 0 and go through a handle the node keeps (nodes.c); a new
 * version is noticed only when lookup or getattr brings new attributes.
 *
 * Threads: called from libfuse's worker threads concurrently; state lives
 * in struct tcm (node table locked, pool thread-safe) and in the per-open
 * struct tcm_file, which the kernel never uses from two release calls.
 */
#include "tcmount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One open file: a libtiercache handle on one pool connection. */
struct tcm_file {
	struct tiercache *tc;
	int h;
	uint64_t ino;
	enum tcm_cache mode;
	bool pt_counted; /* in passthrough.c's inode table */
	bool pt;         /* the kernel reads the chunk file itself */
	bool dio;        /* direct I/O (dio.c): reads are the program's own */
	atomic_bool learnt; /* dio: the verdict on its reads was given */
	uint32_t pid;       /* dio: the thread that opened it */
	atomic_ulong reads, bytes; /* dio: READ requests and bytes asked */
	char *path; /* for messages */
};

static struct tcm *mount_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

void tcm_attr_owner(struct tcm_attr *a, uint32_t mode, uint32_t uid, uint32_t gid)
{
	a->owned = uid != TIERCACHE_OWNER_NONE && gid != TIERCACHE_OWNER_NONE;
	a->mode = mode & 07777u;
	a->uid = uid;
	a->gid = gid;
}

void tcm_attr_from_stat(struct tcm_attr *a, const struct tiercache_stat *st)
{
	a->type = st->type;
	a->size = st->type == TIERCACHE_FILE ? st->size : 0;
	a->mtime_ns = st->mtime_ns;
	tcm_attr_owner(a, st->mode, st->uid, st->gid);
}

void tcm_attr_to_stat(const struct tcm *m, uint64_t ino, const struct tcm_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = a->owned ? (uid_t)a->uid : m->uid;
	st->st_gid = a->owned ? (gid_t)a->gid : m->gid;
	st->st_blksize = TCM_BLKSIZE;
	/* the source's bits as they are (the mount is ro: writes fail with
	 * EROFS whatever they say), so that ls shows what is enforced */
	mode_t own = (mode_t)a->mode;
	if (a->type == TIERCACHE_DIR) {
		st->st_mode = S_IFDIR | (a->owned ? own : 0555);
		st->st_nlink = 2;
		st->st_mtim = m->dir_time;
	} else {
		st->st_mode = S_IFREG | (a->owned ? own : 0444);
		st->st_nlink = 1;
		st->st_size = (off_t)a->size;
		st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
		int64_t ns = a->mtime_ns;
		st->st_mtim.tv_sec = (time_t)(ns / 1000000000);
		st->st_mtim.tv_nsec = (long)(ns % 1000000000);
		if (st->st_mtim.tv_nsec < 0) {
			st->st_mtim.tv_sec--;
			st->st_mtim.tv_nsec += 1000000000;
		}
	}
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
}

void tcm_entry_fill(const struct tcm *m, uint64_t ino, const struct tcm_attr *a,
		    struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->generation = 1;
	tcm_attr_to_stat(m, ino, a, &e->attr);
	e->attr_timeout = m->o.attr_timeout;
	e->entry_timeout = m->o.entry_timeout;
}

/* Ask the daemon about path (after the outage gate), with the rights of
 * req's caller. 0 or a positive errno for the kernel. */
static int stat_path(fuse_req_t req, struct tcm *m, const char *op, const char *path,
		     struct tcm_attr *a)
{
	if (tcm_pool_gate(&m->pool) < 0)
		return ETIMEDOUT;
	struct tiercache *tc;
	int err = tcm_pool_for(&m->pool, req, &tc);
	if (err)
		return err;
	struct tiercache_stat st;
	if (tiercache_stat(tc, path, &st) < 0)
		return tcm_pool_errno(&m->pool, errno, op, path);
	tcm_pool_ok(&m->pool);
	tcm_attr_from_stat(a, &st);
	return 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct tcm *m = userdata;
	/* nothing is ever written: no writeback cache, and the kernel can do
	 * local locks (no lock requests reach us) */
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_POSIX_LOCKS |
				  FUSE_CAP_FLOCK_LOCKS);
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* The page cache is ours to manage (see nodes.c): open drops it for a
	 * new version, and only when no handle of the old one is open. The
	 * kernel must not drop it itself when refreshed attributes show a new
	 * mtime or size, or a handle of the old version would have to re-read
	 * bytes the daemon no longer has (ESTALE) instead of its own pages. */
	conn->want &= ~(unsigned)(FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_EXPLICIT_INVAL_DATA);
	if (m->o.immutable) {
		/* no opens to decide at: let the kernel drop the pages when
		 * refreshed attributes show another mtime or size */
		if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
			conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	} else if (conn->capable & FUSE_CAP_EXPLICIT_INVAL_DATA) {
		conn->want |= FUSE_CAP_EXPLICIT_INVAL_DATA;
	}
	/* Reads reply with chunk file descriptors that libfuse splices into
	 * /dev/fuse (reply_read_fds). libfuse splices only when its pipe
	 * holds the reply plus a page per buffer and two more, and a pipe
	 * grows to fs.pipe-max-size (1 MiB) at most without CAP_SYS_RESOURCE:
	 * a 1 MiB read would always fall back to a copy into a fresh malloc'd
	 * buffer. The kernel sizes reads by max_pages, which libfuse derives
	 * from max_write (nothing is written here), so cap that. */
	if (!m->o.no_splice && (conn->capable & FUSE_CAP_SPLICE_WRITE)) {
		conn->want |= FUSE_CAP_SPLICE_WRITE;
		if (conn->max_write > TCM_SPLICE_MAX_READ)
			conn->max_write = TCM_SPLICE_MAX_READ;
		m->splice = true;
	}
	/* the kernel keeps the smaller of this and the window main() set
	 * in sysfs (read_ahead_kb) before this INIT was answered */
	if (m->o.read_ahead_kb)
		conn->max_readahead = m->o.read_ahead_kb * 1024u;
	/* readahead requests in flight at once: several per reader */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->time_gran = 1;
	tcm_log(TCM_INFO, "source=%s proto=%u.%u max_read=%u max_readahead=%u max_write=%u",
		m->o.source, conn->proto_major, conn->proto_minor, conn->max_read,
		conn->max_readahead, conn->max_write);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tcm *m = mount_of(req);
	char *path = NULL;
	struct tcm_attr a;
	struct fuse_entry_param e;
	uint64_t ino;

	int rc = tcm_nodes_child_path(&m->nodes, parent, name, &path);
	if (rc < 0) {
		fuse_reply_err(req, rc == -EINVAL ? ENOENT : -rc);
		goto out;
	}
	int err = 0;
	if (tcm_pool_gate(&m->pool) < 0) {
		fuse_reply_err(req, ETIMEDOUT);
		goto out;
	}
	/* path is "DIR/name": DIR alone for the listing */
	size_t dl = strlen(path) - strlen(name) - 1;
	path[dl] = '\0';
	/* the listings are the mount's own: another user's lookup asks the
	 * daemon, which checks that user's rights */
	rc = tcm_pool_acts(&m->pool, req) ? -EAGAIN : tcm_dircache_lookup(m, parent, path, name, &a);
	path[dl] = '/';
	if (rc == 0)
		err = ENOENT;
	else if (rc < 0)
		err = stat_path(req, m, "lookup", path, &a);
	if (err == ENOENT && m->o.negative_timeout > 0) {
		/* a negative entry: the kernel remembers the miss for a while */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = m->o.negative_timeout;
		fuse_reply_entry(req, &e);
		goto out;
	}
	if (err) {
		fuse_reply_err(req, err);
		goto out;
	}
	struct tcm_hclose c;
	rc = tcm_nodes_link(&m->nodes, parent, name, &a, &ino, &c);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		goto out;
	}
	if (rc == 1)
		(void)tiercache_close(c.tc, c.h);
	tcm_entry_fill(m, ino, &a, &e);
	if (fuse_reply_entry(req, &e) != 0)
		tcm_forget(m, ino, 1); /* the kernel never got it */
out:
	free(path);
}

void tcm_forget(struct tcm *m, uint64_t ino, uint64_t n)
{
	struct tcm_hclose c;
	if (tcm_nodes_forget(&m->nodes, ino, n, &c))
		(void)tiercache_close(c.tc, c.h);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	tcm_forget(mount_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct tcm *m = mount_of(req);
	for (size_t i = 0; i < count; i++)
		tcm_forget(m, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tcm *m = mount_of(req);
	char *path = NULL;
	struct tcm_attr a;
	struct stat st;
	(void)fi;

	int rc = tcm_nodes_path(&m->nodes, ino, &path);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		goto out;
	}
	int err = stat_path(req, m, "getattr", path, &a);
	if (err) {
		fuse_reply_err(req, err);
		goto out;
	}
	rc = tcm_nodes_update(&m->nodes, ino, &a);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		goto out;
	}
	struct tcm_hclose c;
	if (rc == 1 && m->o.immutable && tcm_nodes_nh_detach(&m->nodes, ino, &c))
		(void)tiercache_close(c.tc, c.h); /* new version: reads open anew */
	tcm_attr_to_stat(m, ino, &a, &st);
	fuse_reply_attr(req, &st, m->o.attr_timeout);
out:
	free(path);
}

static void file_free(struct tcm_file *f)
{
	free(f->path);
	free(f);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tcm *m = mount_of(req);
	struct tcm_file *f = NULL;
	struct tiercache_stat st;
	struct tcm_attr a;
	int err = 0;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & (O_TRUNC | O_CREAT | O_APPEND))) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (m->o.immutable && !m->others) {
		/* the kernel stops sending open and release for good, keeps
		 * pages across opens, and reads come with fh 0 (op_read). Not
		 * when other users read: each open must reach the daemon, which
		 * checks the opener's rights (docs/mount.md) */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	f->ino = ino;
	f->h = -1;
	int rc = tcm_nodes_path(&m->nodes, ino, &f->path);
	if (rc < 0) {
		err = -rc;
		goto out;
	}
	if (tcm_pool_gate(&m->pool) < 0) {
		err = ETIMEDOUT;
		goto out;
	}
	err = tcm_pool_for_open(&m->pool, req, &f->tc);
	if (err)
		goto out;
	f->h = tiercache_open(f->tc, f->path, 0);
	if (f->h < 0) {
		err = tcm_pool_errno(&m->pool, errno, "open", f->path);
		goto out;
	}
	tcm_pool_ok(&m->pool);
	if (tiercache_fstat(f->tc, f->h, &st) < 0) { /* local: cannot fail on a live handle */
		err = tcm_pool_errno(&m->pool, errno, "fstat", f->path);
		goto out;
	}
	tcm_attr_from_stat(&a, &st);
	rc = tcm_nodes_open(&m->nodes, ino, &a, &f->mode);
	if (rc < 0) {
		err = -rc;
		goto out;
	}
	if (rc == 1) {
		/* the source changed since the kernel cached the attributes:
		 * attributes only (off < 0); the page cache follows f->mode */
		tcm_log(TCM_INFO, "path=%s size=%llu: new version at open", f->path,
			(unsigned long long)a.size);
		(void)fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
	}
	/* a BYPASS handle must not drop the old version's pages either: the
	 * kernel drops them at every open without keep_cache */
	/* a file that is one chunk file: the kernel may read it itself
	 * (passthrough.c); a BYPASS handle reads with direct I/O instead */
	int32_t bid = -1;
	rc = tcm_pt_open(m, ino, f->tc, f->h, &a, f->mode == TCM_CACHE_BYPASS, &bid);
	if (rc < 0) {
		tcm_nodes_release(&m->nodes, ino, f->mode);
		if (rc == -ESTALE) {
			/* the VFS looks the name up again and retries: the
			 * lookup then makes a new node for the new version */
			tcm_log(TCM_INFO, "path=%s: new version while the old one is passed "
					  "through: open again on a new inode", f->path);
			tcm_nodes_unname(&m->nodes, ino);
		}
		err = -rc;
		goto out;
	}
	f->pt_counted = rc != 2;
	f->pt = rc == 1;
	fi->keep_cache = f->mode != TCM_CACHE_FRESH;
	fi->direct_io = f->mode == TCM_CACHE_BYPASS;
	if (rc == 0) {
		/* a large file read through the mount: the program's reads
		 * may go straight to the tier file's pages (dio.c) */
		f->pid = (uint32_t)fuse_req_ctx(req)->pid;
		f->dio = tcm_dio_choose(&m->dio, f->pid, a.size);
		if (f->dio) {
			fi->direct_io = 1;
			atomic_fetch_add_explicit(&m->dio.opens, 1, memory_order_relaxed);
		}
	}
	fi->noflush = 1; /* nothing to flush: spares a request per close */
	fi->fh = (uint64_t)(uintptr_t)f;
	atomic_fetch_add_explicit(&m->pt.all_opens, 1, memory_order_relaxed);
	if (tcm_pt_reply_open(req, fi, bid, f->pt) != 0) {
		/* interrupted: no release will come for it */
		tcm_nodes_release(&m->nodes, ino, f->mode);
		if (f->pt_counted)
			tcm_pt_release(m, ino, f->pt);
		goto out_close;
	}
	return;
out:
	fuse_reply_err(req, err);
out_close:
	if (f->h >= 0)
		tiercache_close(f->tc, f->h);
	file_free(f);
}

/* A read buffer per worker thread, kept for its life: reads are up to
 * max_pages (1 MiB) and malloc/free of that much each time would mmap and
 * unmap. */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

struct rbuf {
	size_t cap;
	char data[];
};

static void buf_key_make(void)
{
	(void)pthread_key_create(&buf_key, free);
}

static char *read_buf(size_t n)
{
	pthread_once(&buf_once, buf_key_make);
	struct rbuf *b = pthread_getspecific(buf_key);
	if (b && b->cap >= n)
		return b->data;
	size_t cap = n < 128 * 1024 ? 128 * 1024 : n;
	struct rbuf *nb = malloc(sizeof(*nb) + cap);
	if (!nb)
		return NULL;
	nb->cap = cap;
	if (pthread_setspecific(buf_key, nb) != 0) {
		free(nb);
		return NULL;
	}
	free(b);
	return nb->data;
}

static void reply_read(fuse_req_t req, struct tcm *m, struct tiercache *tc, int h, size_t size,
		       off_t off, const char *path)
{
	char *buf = read_buf(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = tiercache_pread(tc, h, buf, size, (uint64_t)off);
	if (n < 0) {
		fuse_reply_err(req, tcm_pool_errno(&m->pool, errno, "read", path));
		return;
	}
	fuse_reply_buf(req, buf, (size_t)n);
}

/* Chunks one spliced reply may come from: a read spans at most two
 * chunks of the usual sizes (>= 1 MiB), five of 256 KiB; more fall back
 * to copying. libfuse splices only if its pipe estimate, a page per
 * buffer + 2 pages + the reply, fits the pipe (1 MiB): with reads of
 * TCM_SPLICE_MAX_READ that allows 5 buffers. */
#define TCM_SPLICE_BUFS 5

/* Answer a read with descriptors of the chunk files: libfuse splices the
 * page-cache pages of the chunk file into a pipe and on into /dev/fuse,
 * so the bytes are copied once, in the kernel, instead of pread into our
 * buffer and written out again (two copies through user memory). Returns
 * 0 once the request is answered, -ENOTSUP (not answered) when the bytes
 * must be copied instead: no descriptors (streamed), or too many chunks. */
static int reply_read_fds(fuse_req_t req, struct tcm *m, struct tiercache *tc, int h, size_t size,
			  off_t off, const char *path)
{
	struct {
		struct fuse_bufvec v;
		struct fuse_buf more[TCM_SPLICE_BUFS - 1];
	} bv;
	struct fuse_buf *b = bv.v.buf;
	size_t nb = 0, total = 0;
	int rc = 0;

	while (total < size) {
		uint64_t fd_off;
		size_t len;
		if (nb == TCM_SPLICE_BUFS) {
			rc = -ENOTSUP;
			goto out;
		}
		int fd = tiercache_chunk_fd(tc, h, (uint64_t)off + total, &fd_off, &len);
		if (fd < 0) {
			if (errno == ENXIO) /* end of the file: a short (or empty) reply */
				break;
			if (errno == ENOTSUP) {
				rc = -ENOTSUP;
				goto out;
			}
			rc = -tcm_pool_errno(&m->pool, errno, "read", path);
			goto out;
		}
		if (len > size - total)
			len = size - total;
		b[nb++] = (struct fuse_buf){
			.size = len,
			.flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK,
			.fd = fd,
			.pos = (off_t)fd_off,
		};
		total += len;
	}
	bv.v.count = nb;
	bv.v.idx = 0;
	bv.v.off = 0;
	if (nb == 0)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_data(req, &bv.v, 0);
out:
	for (size_t i = 0; i < nb; i++)
		close(b[i].fd);
	if (rc < 0 && rc != -ENOTSUP) {
		fuse_reply_err(req, -rc);
		return 0;
	}
	return rc;
}

static void reply_read_any(fuse_req_t req, struct tcm *m, struct tiercache *tc, int h,
			   size_t size, off_t off, const char *path)
{
	/* without splice, libfuse would read an fd buffer into a fresh
	 * malloc'd one per reply: our own buffer is cheaper */
	if (m->splice && reply_read_fds(req, m, tc, h, size, off, path) == 0)
		return;
	reply_read(req, m, tc, h, size, off, path);
}

/* -o immutable: no open came, so read through the node's own handle,
 * opened by the first read of the node. */
static void read_immutable(fuse_req_t req, struct tcm *m, fuse_ino_t ino, size_t size, off_t off)
{
	struct tcm_hclose c[TCM_HCLOSE_MAX];
	size_t nc = 0;
	char *path = NULL;
	struct tiercache *tc;
	int h;

	struct tcm_nh *nh = tcm_nodes_nh_pin(&m->nodes, ino);
	if (nh) {
		/* not seen by the daemon: the library holds the descriptors */
		atomic_fetch_add_explicit(&m->imm_reuse, 1, memory_order_relaxed);
		tcm_nh_get(nh, &tc, &h);
		reply_read_any(req, m, tc, h, size, off, "-");
		goto out;
	}
	int rc = tcm_nodes_path(&m->nodes, ino, &path);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		goto out;
	}
	if (tcm_pool_gate(&m->pool) < 0) {
		fuse_reply_err(req, ETIMEDOUT);
		goto out;
	}
	/* only the mount's own user reads here (op_open); with -o job on the
	 * connection that holds the files handed ahead of the plan */
	rc = tcm_pool_for_open(&m->pool, req, &tc);
	if (rc) {
		fuse_reply_err(req, rc);
		goto out;
	}
	h = tiercache_open(tc, path, 0);
	if (h < 0) {
		fuse_reply_err(req, tcm_pool_errno(&m->pool, errno, "open", path));
		goto out;
	}
	tcm_pool_ok(&m->pool);
	atomic_fetch_add_explicit(&m->imm_opens, 1, memory_order_relaxed);
	/* The daemon answers with the version it serves now (it revalidates
	 * the source after revalidate_after). If the kernel holds another
	 * (pages of an older version, its size), it must drop them: this
	 * read is answered from the new version, so are the next ones. */
	struct tiercache_stat st;
	if (tiercache_fstat(tc, h, &st) == 0) {
		struct tcm_attr a;
		tcm_attr_from_stat(&a, &st);
		if (tcm_nodes_update(&m->nodes, ino, &a) == 1) {
			tcm_log(TCM_INFO, "path=%s size=%llu: new version at a read (immutable)",
				path, (unsigned long long)a.size);
			tcm_inval_queue(m, ino);
		}
	}
	nh = tcm_nodes_nh_add(&m->nodes, ino, tc, h, c, &nc);
	if (nh)
		tcm_nh_get(nh, &tc, &h);
	/* else: kept nowhere (it is in c[]); this read still uses it */
	reply_read_any(req, m, tc, h, size, off, path);
out:
	if (nh && tcm_nodes_nh_unpin(&m->nodes, nh, &c[nc]))
		nc++;
	for (size_t i = 0; i < nc; i++)
		(void)tiercache_close(c[i].tc, c[i].h);
	free(path);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct tcm *m = mount_of(req);
	struct tcm_file *f = (struct tcm_file *)(uintptr_t)fi->fh;

	atomic_fetch_add_explicit(&m->pt.reads, 1, memory_order_relaxed);
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!f) {
		read_immutable(req, m, ino, size, off);
		return;
	}
	if (f->dio) {
		/* the program's own read sizes: after a few, tell dio.c */
		unsigned long n = atomic_fetch_add_explicit(&f->reads, 1, memory_order_relaxed) + 1;
		unsigned long b = atomic_fetch_add_explicit(&f->bytes, size, memory_order_relaxed) + size;
		if (n >= TCM_DIO_PROBE_READS && !atomic_exchange(&f->learnt, true))
			tcm_dio_learn(&m->dio, f->pid, n, b);
	}
	reply_read_any(req, m, f->tc, f->h, size, off, f->path);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tcm *m = mount_of(req);
	struct tcm_file *f = (struct tcm_file *)(uintptr_t)fi->fh;
	(void)ino;

	if (!f) { /* not ours (no open ran): nothing to release */
		fuse_reply_err(req, 0);
		return;
	}
	/* a few reads (a file of a few MiB) still tell how the thread reads */
	if (f->dio && atomic_load(&f->reads) >= 2 && !atomic_load(&f->learnt))
		tcm_dio_learn(&m->dio, f->pid, atomic_load(&f->reads), atomic_load(&f->bytes));
	/* a failed CLOSE only means the daemon already forgot the handle */
	(void)tiercache_close(f->tc, f->h);
	tcm_nodes_release(&m->nodes, f->ino, f->mode);
	if (f->pt_counted)
		tcm_pt_release(m, f->ino, f->pt);
	file_free(f);
	fuse_reply_err(req, 0);
}

/* ---- everything that would write: the mount is read-only ---- */

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	fuse_reply_err(req, EROFS);
}

static void op_remove(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	fuse_reply_err(req, EROFS);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	(void)ino, (void)mode, (void)offset, (void)length, (void)fi;
	fuse_reply_err(req, EROFS);
}

const struct fuse_lowlevel_ops tcm_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.opendir = tcm_opendir,
	.readdir = tcm_readdir,
	.readdirplus = tcm_readdirplus,
	.releasedir = tcm_releasedir,
	.statfs = tcm_statfs,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_remove,
	.rmdir = op_remove,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.write = op_write,
	.create = op_create,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
};
