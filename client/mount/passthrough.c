/*
 * FUSE passthrough for tiercache-mount: the kernel reads a small file's
 * chunk file itself, with no READ request and no second page cache.
 *
 * The kernel (>= 6.9) can do it, Debian's libfuse 3.14 cannot ask for it:
 * it builds the INIT reply itself and knows neither the flag nor the
 * backing ids. So when we are root we mount ourselves (open /dev/fuse,
 * mount(2)) and hand the descriptor to libfuse with
 * fuse_session_custom_io(): every request then comes through our read and
 * every reply through our writev, where we
 *   - note the INIT request's flags (did the kernel offer passthrough?),
 *   - patch the INIT reply to ask for it (FUSE_INIT_EXT, the flags2 bit,
 *     max_stack_depth 1: the chunk files are on a plain file system),
 *   - patch an OPEN reply that op_open marked (tcm_pt_reply_open): set
 *     FOPEN_PASSTHROUGH and the backing id registered for the chunk file
 *     with FUSE_DEV_IOC_BACKING_OPEN,
 *   - and, for dio.c, ask in the INIT reply that files opened with direct
 *     I/O may still be mmapped (FUSE_DIRECT_IO_ALLOW_MMAP), which libfuse
 *     3.14 cannot ask for either. So we also mount ourselves with
 *     -o passthrough=off as long as direct I/O is wanted.
 * Replies are spliced as before (splice_send is plain splice(2)).
 *
 * Only a file that is one whole chunk file (every small file) can be
 * passed through: the kernel reads the backing file at the file's own
 * offsets, up to the backing file's end.
 *
 * The kernel allows one backing file per inode while descriptors of it are
 * open, and refuses an open that mixes modes: while a passthrough open of
 * an inode is live, a cached open of it fails (ETXTBSY -> EIO to the
 * program), and the other way round. So the table below keeps, per inode
 * with open descriptors, its backing id (shared by every open of that
 * version, closed with the last descriptor) and how its descriptors read.
 * Descriptors opened while an older version is open use direct I/O
 * (nodes.c, TCM_CACHE_BYPASS) and are not counted here, except when the
 * older version is passed through: the kernel allows no other kind of open
 * of that inode, so the open fails with ESTALE after the node lost its
 * name; the VFS retries an open that failed so once, with a fresh lookup,
 * which makes a new node, a new kernel inode, and the new version is
 * passed through there while the old descriptors keep theirs. The kernel also
 * refuses FOPEN_KEEP_CACHE with passthrough: it is cleared (the inode has
 * no pages of its own then).
 *
 * Anything that fails (not root, options we cannot put in mount(2), no
 * CAP_SYS_ADMIN, a kernel that does not offer passthrough or refuses a
 * backing file) falls back to reads through the mount, logged once.
 *
 * Threads: read / writev run on libfuse's worker threads; the OPEN reply
 * to patch is passed in a thread-local (fuse_reply_open writes from the
 * calling thread). The inode table has its own mutex.
 */
#include "tcmount.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- the kernel's FUSE ABI: Debian 12's linux/fuse.h is 6.1's, so the
 * passthrough parts are defined here (include/uapi/linux/fuse.h, 7.40) ---- */

#define PT_OP_INIT 26u
#define PT_INIT_EXT (1u << 30)             /* flags: flags2 is valid */
#define PT_FLAGS2_PASSTHROUGH (1u << 5)    /* FUSE_PASSTHROUGH, bit 37 */
#define PT_FLAGS2_DIO_MMAP (1u << 4)       /* FUSE_DIRECT_IO_ALLOW_MMAP, bit 36 (6.6) */
#define PT_FLAGS_WRITEBACK_CACHE (1u << 16) /* excludes passthrough */
#define PT_FOPEN_KEEP_CACHE (1u << 1)
#ifndef FOPEN_PASSTHROUGH
#define FOPEN_PASSTHROUGH (1u << 7)
#endif

struct pt_in_header {
	uint32_t len;
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen;
	uint16_t padding;
};

struct pt_out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

struct pt_init_in {
	uint32_t major, minor, max_readahead, flags, flags2;
	uint32_t unused[11];
};

/* the prefix of fuse_init_out up to max_stack_depth (7.40) */
struct pt_init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2;
	uint32_t max_stack_depth;
};

struct pt_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

struct pt_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};

static_assert(sizeof(struct pt_in_header) == 40, "fuse_in_header");
static_assert(sizeof(struct pt_init_in) == 64, "fuse_init_in");
static_assert(sizeof(struct pt_init_out) == 40, "fuse_init_out prefix");
static_assert(sizeof(struct pt_open_out) == 16, "fuse_open_out");

#define PT_IOC_MAGIC 229
#ifndef FUSE_DEV_IOC_BACKING_OPEN
#define FUSE_DEV_IOC_BACKING_OPEN _IOW(PT_IOC_MAGIC, 1, struct pt_backing_map)
#define FUSE_DEV_IOC_BACKING_CLOSE _IOW(PT_IOC_MAGIC, 2, uint32_t)
#endif

/* A kernel inode with open descriptors: its backing file if they are
 * passed through (the kernel refuses any other for the inode meanwhile),
 * and how many descriptors read in which mode. */
struct pt_inode {
	struct pt_inode *next;
	uint64_t ino;
	int32_t id;         /* backing id, -1: none */
	uint64_t size;      /* the version the backing file holds */
	int64_t mtime_ns;
	unsigned pt_opens;     /* passthrough descriptors */
	unsigned cached_opens; /* through the mount and its page cache */
};

#define PT_BUCKETS 1024u

/* The OPEN reply this thread is about to send, to patch in writev. */
static _Thread_local struct {
	uint64_t fh;
	int32_t id;
} pt_pending;

static unsigned pt_bucket(uint64_t ino)
{
	return (unsigned)((ino * 0x9e3779b97f4a7c15ull) >> 40) % PT_BUCKETS;
}

int tcm_pt_init(struct tcm_pt *pt, bool want, bool want_dio)
{
	memset(pt, 0, sizeof(*pt));
	pt->want = want;
	pt->want_dio = want_dio;
	pt->devfd = -1;
	pt->buckets = calloc(PT_BUCKETS, sizeof(*pt->buckets));
	if (!pt->buckets)
		return -ENOMEM;
	if (pthread_mutex_init(&pt->lock, NULL) != 0) {
		free(pt->buckets);
		pt->buckets = NULL;
		return -ENOMEM;
	}
	return 0;
}

void tcm_pt_free(struct tcm_pt *pt)
{
	if (!pt->buckets)
		return;
	for (unsigned i = 0; i < PT_BUCKETS; i++) {
		struct pt_inode *e = pt->buckets[i];
		while (e) {
			struct pt_inode *next = e->next;
			free(e);
			e = next;
		}
	}
	free(pt->buckets);
	pt->buckets = NULL;
	pthread_mutex_destroy(&pt->lock);
}

/* ---- custom I/O: libfuse reads requests and writes replies through these ---- */

static ssize_t pt_read(int fd, void *buf, size_t len, void *userdata)
{
	struct tcm *m = userdata;
	ssize_t n = read(fd, buf, len);
	if (n < (ssize_t)sizeof(struct pt_in_header))
		return n;
	const struct pt_in_header *in = buf;
	if (in->opcode == PT_OP_INIT && !atomic_load(&m->pt.init_seen) &&
	    (size_t)n >= sizeof(*in) + offsetof(struct pt_init_in, unused)) {
		const struct pt_init_in *ii = (const void *)(in + 1);
		bool ext = ii->flags & PT_INIT_EXT;
		m->pt.offered = ext && (ii->flags2 & PT_FLAGS2_PASSTHROUGH);
		m->pt.dio_offered = ext && (ii->flags2 & PT_FLAGS2_DIO_MMAP);
		m->pt.init_unique = in->unique;
		atomic_store(&m->pt.init_seen, true);
	}
	return n;
}

/* What this mount wanted of our own INIT reply and goes without, for the
 * log lines that say why. */
static const char *pt_wanted(const struct tcm_pt *pt)
{
	if (pt->want && pt->want_dio)
		return "passthrough=off direct_io=off";
	return pt->want ? "passthrough=off" : "direct_io=off";
}

/* The INIT reply: ask for passthrough, and for mmap of direct I/O files,
 * where wanted and offered. */
static void pt_patch_init(struct tcm *m, struct iovec *iov, int count)
{
	struct tcm_pt *pt = &m->pt;
	struct pt_init_out out;
	if (count < 2 || iov[1].iov_len < sizeof(out)) {
		tcm_log(TCM_INFO, "source=%s %s reason=\"short INIT reply\"", m->o.source,
			pt_wanted(pt));
		return;
	}
	memcpy(&out, iov[1].iov_base, sizeof(out));
	if (pt->want_dio && pt->dio_offered) {
		out.flags |= PT_INIT_EXT;
		out.flags2 |= PT_FLAGS2_DIO_MMAP;
		atomic_store(&m->dio.on, true);
		tcm_log(TCM_INFO, "source=%s direct_io=on", m->o.source);
	} else if (pt->want_dio) {
		tcm_log(TCM_INFO, "source=%s direct_io=off reason=\"the kernel does not allow mmap "
				  "of direct I/O files\"", m->o.source);
	}
	if (pt->want && !pt->offered) {
		tcm_log(TCM_INFO, "source=%s passthrough=off reason=\"the kernel does not offer it\"",
			m->o.source);
	} else if (pt->want && !(out.flags & PT_FLAGS_WRITEBACK_CACHE)) { /* never asked for */
		out.flags |= PT_INIT_EXT;
		out.flags2 |= PT_FLAGS2_PASSTHROUGH;
		out.max_stack_depth = 1; /* backing files are on a plain fs */
		atomic_store(&pt->on, true);
		tcm_log(TCM_INFO, "source=%s passthrough=on", m->o.source);
	}
	/* libfuse's own reply buffer, sent right after this */
	memcpy(iov[1].iov_base, &out, sizeof(out));
}

static ssize_t pt_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct tcm *m = userdata;
	struct pt_open_out open;

	if (count >= 1 && iov[0].iov_len >= sizeof(struct pt_out_header)) {
		const struct pt_out_header *out = iov[0].iov_base;
		if (pt_pending.fh && count == 2 && out->error == 0 &&
		    iov[1].iov_len == sizeof(open)) {
			memcpy(&open, iov[1].iov_base, sizeof(open));
			if (open.fh == pt_pending.fh) {
				/* the kernel fails a passthrough open that
				 * also keeps the page cache (EIO); it has no
				 * pages of its own for this file anyway */
				open.open_flags &= ~PT_FOPEN_KEEP_CACHE;
				open.open_flags |= FOPEN_PASSTHROUGH;
				open.backing_id = pt_pending.id;
				iov[1].iov_base = &open;
			}
		} else if (!atomic_load(&m->pt.init_done) && atomic_load(&m->pt.init_seen) &&
			   out->unique == m->pt.init_unique && out->error == 0) {
			atomic_store(&m->pt.init_done, true);
			pt_patch_init(m, iov, count);
		}
	}
	return writev(fd, iov, count);
}

static ssize_t pt_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			      unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

static ssize_t pt_splice_receive(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
				 unsigned int flags, void *userdata)
{
	/* libfuse splices requests in only with FUSE_CAP_SPLICE_READ, which
	 * it asks for only for write_buf (we have none), and never the
	 * INIT request (before it, the protocol version is 0): pt_read sees
	 * INIT either way */
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

static const struct fuse_custom_io pt_io = {
	.read = pt_read,
	.writev = pt_writev,
	.splice_send = pt_splice_send,
	.splice_receive = pt_splice_receive,
};

/* ---- mounting ourselves ---- */

/* The kernel mount options of the command line, as mount(2) takes them.
 * Anything we do not know how to pass makes us leave mounting to libfuse. */
struct pt_mount_opts {
	char data[512];
	size_t len;
	char *fsname;
	char *subtype;
	unsigned long flags;
	const char *unknown;
	char unknown_buf[64];
};

static void mo_add(struct pt_mount_opts *mo, const char *opt)
{
	int n = snprintf(mo->data + mo->len, sizeof(mo->data) - mo->len, ",%s", opt);
	if (n < 0 || (size_t)n >= sizeof(mo->data) - mo->len) {
		mo->unknown = "(too many options)";
		return;
	}
	mo->len += (size_t)n;
}

static int mo_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct pt_mount_opts *mo = data;
	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT)
		return 0;
	static const char *const kernel[] = {"default_permissions", "allow_other"};
	for (size_t i = 0; i < sizeof(kernel) / sizeof(kernel[0]); i++)
		if (strcmp(arg, kernel[i]) == 0) {
			mo_add(mo, arg);
			return 0;
		}
	if (strncmp(arg, "max_read=", 9) == 0) {
		mo_add(mo, arg);
		return 0;
	}
	if (strcmp(arg, "ro") == 0 || strcmp(arg, "nosuid") == 0 || strcmp(arg, "nodev") == 0 ||
	    strcmp(arg, "-d") == 0 || strcmp(arg, "--debug") == 0 || strcmp(arg, "debug") == 0)
		return 0; /* always set, or not a mount option */
	if (strcmp(arg, "noexec") == 0) {
		mo->flags |= MS_NOEXEC;
		return 0;
	}
	if (strcmp(arg, "noatime") == 0) {
		mo->flags |= MS_NOATIME;
		return 0;
	}
	if (strncmp(arg, "fsname=", 7) == 0) {
		free(mo->fsname);
		mo->fsname = strdup(arg + 7);
		return 0;
	}
	if (strncmp(arg, "subtype=", 8) == 0) {
		free(mo->subtype);
		mo->subtype = strdup(arg + 8);
		return 0;
	}
	if (!mo->unknown) {
		snprintf(mo->unknown_buf, sizeof(mo->unknown_buf), "%s", arg);
		mo->unknown = mo->unknown_buf;
	}
	return 0;
}

int tcm_pt_mount(struct tcm *m, const struct fuse_args *args, const char *mountpoint)
{
	struct tcm_pt *pt = &m->pt;
	struct pt_mount_opts mo = {0};
	struct fuse_args copy = FUSE_ARGS_INIT(0, NULL);
	char *type = NULL;
	int fd = -1, rc;

	if (!pt->want && !pt->want_dio)
		return -ENOTSUP;
	if (geteuid() != 0) {
		tcm_log(TCM_INFO, "source=%s %s reason=\"not root: mounted by libfuse, which "
				  "cannot ask for it\"", m->o.source, pt_wanted(pt));
		return -ENOTSUP;
	}
	for (int i = 0; i < args->argc; i++)
		if (fuse_opt_add_arg(&copy, args->argv[i]) != 0) {
			rc = -ENOMEM;
			goto out;
		}
	if (fuse_opt_parse(&copy, &mo, NULL, mo_proc) != 0) {
		rc = -EINVAL;
		goto out;
	}
	if (mo.unknown) {
		tcm_log(TCM_WARN, "source=%s %s reason=\"option %s: mounted by libfuse, which "
				  "cannot ask for it\"", m->o.source, pt_wanted(pt), mo.unknown);
		rc = -ENOTSUP;
		goto out;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		tcm_log(TCM_WARN, "source=%s %s reason=\"/dev/fuse: %s\"", m->o.source,
			pt_wanted(pt), strerror(-rc));
		goto out;
	}
	char data[sizeof(mo.data) + 96];
	snprintf(data, sizeof(data), "fd=%d,rootmode=40000,user_id=%u,group_id=%u%s", fd,
		 (unsigned)m->uid, (unsigned)m->gid, mo.data);
	size_t tl = strlen("fuse.") + (mo.subtype ? strlen(mo.subtype) : 0) + 1;
	type = malloc(tl);
	if (!type) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(type, tl, "fuse%s%s", mo.subtype ? "." : "", mo.subtype ? mo.subtype : "");
	if (mount(mo.fsname ? mo.fsname : "tiercache", mountpoint, type,
		  MS_RDONLY | MS_NOSUID | MS_NODEV | mo.flags, data) != 0) {
		rc = -errno;
		tcm_log(TCM_WARN, "source=%s mountpoint=%s %s reason=\"mount: %s: mounted by "
				  "libfuse\"", m->o.source, mountpoint, pt_wanted(pt), strerror(-rc));
		goto out;
	}
	if (fuse_session_custom_io(m->se, &pt_io, fd) != 0) {
		(void)umount2(mountpoint, MNT_DETACH);
		rc = -EIO;
		tcm_log(TCM_WARN, "source=%s %s reason=\"libfuse refused our /dev/fuse I/O: "
				  "mounted by libfuse\"", m->o.source, pt_wanted(pt));
		goto out;
	}
	pt->devfd = fd; /* the session owns it now */
	fd = -1;
	pt->mountpoint = strdup(mountpoint);
	rc = pt->mountpoint ? 0 : -ENOMEM;
out:
	if (fd >= 0)
		close(fd);
	free(type);
	free(mo.fsname);
	free(mo.subtype);
	fuse_opt_free_args(&copy);
	return rc;
}

void tcm_pt_unmount(struct tcm *m)
{
	struct tcm_pt *pt = &m->pt;
	if (!pt->mountpoint)
		return;
	/* gone already (fusermount3 -u, umount): the device reports an
	 * error; do not unmount whatever may be mounted there now */
	struct pollfd p = {.fd = pt->devfd, .events = 0};
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
		goto out;
	if (umount2(pt->mountpoint, MNT_DETACH) != 0 && errno != EINVAL)
		tcm_log(TCM_WARN, "mountpoint=%s op=umount err=\"%s\"", pt->mountpoint,
			strerror(errno));
out:
	free(pt->mountpoint);
	pt->mountpoint = NULL;
}

/* ---- opens ---- */

static struct pt_inode **pt_find(struct tcm_pt *pt, uint64_t ino)
{
	struct pt_inode **pp = &pt->buckets[pt_bucket(ino)];
	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

/* A backing file errno that will not change for this mount: stop trying. */
static bool pt_err_final(int err)
{
	return err == EPERM || err == EINVAL || err == ENOTTY || err == EOPNOTSUPP ||
	       err == ELOOP;
}

/* Is fd a chunk file of a tier (TIER/chunks/XX/KEY.chunk)? */
static bool pt_is_chunk_file(int fd)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || (size_t)n >= sizeof(path) - 1)
		return false;
	path[n] = '\0';
	static const char suffix[] = ".chunk";
	return (size_t)n > sizeof(suffix) - 1 && strcmp(path + n - (sizeof(suffix) - 1), suffix) == 0;
}

/* The chunk file of a one-chunk file, or -1 (then: no passthrough). */
static int pt_chunk_fd(struct tiercache *tc, int h, uint64_t size)
{
	uint64_t fd_off;
	size_t len;
	if (size == 0)
		return -1;
	int fd = tiercache_chunk_fd(tc, h, 0, &fd_off, &len);
	if (fd < 0)
		return -1;
	struct stat st;
	/* the kernel reads the backing file at the file's offsets, to the
	 * backing file's end: it must be exactly the file, and stay so. A
	 * segment (the daemon's packed small chunks, docs/architecture.md)
	 * whose first item is this file has its size now, but grows as
	 * items are appended: reads would run on into the next item. Only a
	 * chunk file (named *.chunk, never written again) is passed through. */
	if (fd_off != 0 || len != size || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size || !pt_is_chunk_file(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

int tcm_pt_open(struct tcm *m, uint64_t ino, struct tiercache *tc, int h,
		const struct tcm_attr *a, bool bypass, int32_t *id)
{
	struct tcm_pt *pt = &m->pt;
	int rc;
	if (!atomic_load(&pt->on))
		return bypass ? 2 : 0;
	/* before the lock: may ask the daemon (usually the OPEN brought it) */
	int fd = atomic_load(&pt->failed) || bypass ? -1 : pt_chunk_fd(tc, h, a->size);

	pthread_mutex_lock(&pt->lock);
	struct pt_inode **pp = pt_find(pt, ino);
	struct pt_inode *e = *pp;
	if (e && e->pt_opens > 0) {
		if (!bypass && e->size == a->size && e->mtime_ns == a->mtime_ns) {
			e->pt_opens++; /* the inode's backing file, this version */
			*id = e->id;
			rc = 1;
		} else {
			/* while an inode is passed through, the kernel fails
			 * any open of it without the same backing file (EIO) */
			rc = -ESTALE;
		}
		goto out;
	}
	if (bypass) {
		rc = 2;
		goto out;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			rc = -ENOMEM;
			goto out;
		}
		e->ino = ino;
		e->id = -1;
		*pp = e;
	}
	rc = 0;
	if (e->cached_opens == 0 && fd >= 0) {
		struct pt_backing_map map = {.fd = fd};
		int bid = ioctl(pt->devfd, FUSE_DEV_IOC_BACKING_OPEN, &map);
		if (bid >= 0) {
			e->id = bid;
			e->size = a->size;
			e->mtime_ns = a->mtime_ns;
			e->pt_opens = 1;
			*id = bid;
			rc = 1;
			goto out;
		}
		int err = errno;
		if (pt_err_final(err) && !atomic_exchange(&pt->failed, true))
			tcm_log(TCM_WARN, "source=%s passthrough=off reason=\"the kernel refused a "
					  "backing file: %s\": reads go through the mount",
				m->o.source, strerror(err));
		else if (!pt_err_final(err))
			tcm_log(TCM_WARN, "source=%s op=backing_open err=\"%s\": read through the "
					  "mount", m->o.source, strerror(err));
	}
	e->cached_opens++;
out:
	pthread_mutex_unlock(&pt->lock);
	if (fd >= 0)
		close(fd); /* the kernel holds its own reference */
	if (rc == 1)
		atomic_fetch_add_explicit(&pt->opens, 1, memory_order_relaxed);
	return rc;
}

/* Drop e and its backing id: no descriptor of the inode is open. Called
 * with the lock held. */
static void pt_inode_drop(struct tcm *m, struct pt_inode **pp)
{
	struct pt_inode *e = *pp;
	if (e->id >= 0) {
		uint32_t bid = (uint32_t)e->id;
		if (ioctl(m->pt.devfd, FUSE_DEV_IOC_BACKING_CLOSE, &bid) != 0)
			tcm_log(TCM_WARN, "source=%s op=backing_close id=%u err=\"%s\"",
				m->o.source, bid, strerror(errno));
	}
	*pp = e->next;
	free(e);
}

void tcm_pt_release(struct tcm *m, uint64_t ino, bool passthrough)
{
	struct tcm_pt *pt = &m->pt;
	if (!atomic_load(&pt->on))
		return;
	pthread_mutex_lock(&pt->lock);
	struct pt_inode **pp = pt_find(pt, ino);
	struct pt_inode *e = *pp;
	if (!e)
		goto out;
	if (passthrough && e->pt_opens > 0)
		e->pt_opens--;
	else if (!passthrough && e->cached_opens > 0)
		e->cached_opens--;
	/* the kernel dropped the inode's backing file with its last
	 * descriptor (before sending this RELEASE): the id goes too, and with
	 * it the chunk file, which the daemon may have evicted meanwhile */
	if (e->pt_opens == 0 && e->cached_opens == 0)
		pt_inode_drop(m, pp);
out:
	pthread_mutex_unlock(&pt->lock);
}

int tcm_pt_reply_open(fuse_req_t req, struct fuse_file_info *fi, int32_t id, bool passthrough)
{
	if (passthrough) {
		pt_pending.fh = fi->fh;
		pt_pending.id = id;
	}
	int rc = fuse_reply_open(req, fi);
	pt_pending.fh = 0;
	return rc;
}
