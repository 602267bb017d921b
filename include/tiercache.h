/*
 * libtiercache: read datasets through the node's tiercached.
 *
 * POSIX-like calls over a Unix socket to the daemon. Paths are
 * "DATASET/PATH/IN/DATASET". Every call returns -1 (or NULL) and sets errno
 * on failure; tiercache_strerror() turns an errno into a message, and
 * tiercache_last_error() gives the daemon's detail for the calling thread's
 * last failure.
 *
 * Reads of cached data do not cross the socket: the daemon hands the client
 * a read-only descriptor of the (immutable) chunk file and the library
 * preads from it. An open handle reads one version of the file: if the source
 * changes, handles opened before keep reading the old bytes, consistently.
 *
 * Threads: a connection may be used from several threads at once.
 * fork(): a child that uses a connection inherited from its parent gets its
 * own new connection transparently (its handles are re-opened by path on
 * first use), as PyTorch DataLoader workers need.
 *
 * The library never prints. Set a log hook to see its diagnostics.
 */
#ifndef TIERCACHE_H
#define TIERCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIERCACHE_DEFAULT_SOCKET "/run/tiercache/tiercached.sock"
#define TIERCACHE_SOCKET_ENV "TIERCACHE_SOCKET"

struct tiercache;
struct tiercache_dir;

enum tiercache_type {
	TIERCACHE_FILE = 1,
	TIERCACHE_DIR = 2,
};

/* Owner and mode (the fields after chunk_size / name, added in 0.2; a
 * program built against the older, shorter struct tiercache_stat keeps
 * calling the TIERCACHE_0 versions of tiercache_stat / tiercache_fstat,
 * which fill only its fields): for a dataset with access = source on the
 * posix backend, the source's permission bits, uid and gid; otherwise
 * 0444 (files) or 0555 (directories) and TIERCACHE_OWNER_NONE, which
 * means "whoever reads" (tiercache-mount shows the mounter). An open
 * handle's tiercache_fstat always reports the defaults. */
#define TIERCACHE_OWNER_NONE 0xffffffffu

struct tiercache_stat {
	int type;            /* TIERCACHE_FILE or TIERCACHE_DIR */
	uint64_t size;       /* bytes (0 for a directory) */
	int64_t mtime_ns;    /* source modification time, ns since the epoch */
	uint32_t chunk_size; /* the dataset's chunk size */
	uint32_t mode;       /* permission bits (07777), see above */
	uint32_t uid, gid;   /* TIERCACHE_OWNER_NONE: none reported */
};

struct tiercache_dirent {
	int type;
	uint64_t size;
	int64_t mtime_ns;
	char name[256];
	uint32_t mode;       /* as in struct tiercache_stat */
	uint32_t uid, gid;
};

/* Connect to the daemon. socket_path NULL: $TIERCACHE_SOCKET, else
 * TIERCACHE_DEFAULT_SOCKET. Fails fast (ENOENT / ECONNREFUSED) when no
 * daemon listens. */
struct tiercache *tiercache_connect(const char *socket_path);
void tiercache_disconnect(struct tiercache *tc);

/* Open "DATASET/PATH" for reading. flags: 0 (O_RDONLY implied; any write
 * flag fails with EROFS). Returns a handle >= 0. */
int tiercache_open(struct tiercache *tc, const char *path, int flags);
/* Open n files ("DATASET/PATH" each) with one round trip per 64 of them
 * (TC_OPEN_MANY_MAX): for a batch of small files, what n tiercache_open
 * calls do without a round trip each. The first chunk of each resident
 * file comes with the reply, so a read of a small cached file then costs
 * no further request; a file not resident yet is opened and its fill
 * started at once. Files fail one by one: handles[i] is a handle >= 0 and
 * errs[i] 0, or handles[i] -1 and errs[i] the errno tiercache_open would
 * have set for that file (ENOENT, EISDIR, EACCES, EMFILE past the
 * connection's handle limit, ENAMETOOLONG, ...). Returns how many were
 * opened, or -1 with errno if nothing could be asked (EINVAL: bad
 * arguments; EROFS: a write flag; the daemon unreachable: errno as for
 * tiercache_open, and every errs[i] set to it). flags as for
 * tiercache_open. On a connection tagged with a job whose plan the daemon
 * knows (tiercache_set_job), the files handed ahead of that plan are
 * opened from the library's open-ahead table as tiercache_open would open
 * them, and only the others are sent: a batch held whole costs no round
 * trip. Close each handle with tiercache_close (or tiercache_close_many). */
int tiercache_open_many(struct tiercache *tc, const char *const paths[], size_t n, int handles[],
			int errs[], int flags);
ssize_t tiercache_pread(struct tiercache *tc, int h, void *buf, size_t n, uint64_t off);
/* Reads at the handle's position and advances it. */
ssize_t tiercache_read(struct tiercache *tc, int h, void *buf, size_t n);
/* whence: SEEK_SET, SEEK_CUR, SEEK_END. Returns the new position. */
int64_t tiercache_lseek(struct tiercache *tc, int h, int64_t off, int whence);
int tiercache_fstat(struct tiercache *tc, int h, struct tiercache_stat *st);
int tiercache_close(struct tiercache *tc, int h);
/* Close n handles, as n tiercache_close calls would, telling the daemon
 * in one send rather than one per handle (the end of a batch opened with
 * tiercache_open_many). Every valid handle is closed; returns 0, or -1
 * with errno EBADF if any handle was not open (the others are still
 * closed), EINVAL for handles NULL with n > 0. */
int tiercache_close_many(struct tiercache *tc, const int handles[], size_t n);

/* Zero-copy reads: a new descriptor (O_CLOEXEC; the caller closes it) of
 * the immutable chunk file that holds byte off of handle h, fetched from
 * the daemon if the handle does not hold it. *fd_off is that byte's offset
 * in the descriptor, *len the bytes from there to the end of the chunk
 * (never past the end of the file): read them with pread, splice or
 * sendfile at *fd_off, never with read (the offset is shared). Returns
 * the descriptor, or -1 with errno: ENOTSUP when descriptors are not
 * passed (TIERCACHE_NO_FD_PASSING, or the daemon streams: use
 * tiercache_pread), ENXIO for off at or past the end of the file, ESTALE,
 * EBADF and the errors of tiercache_pread. */
int tiercache_chunk_fd(struct tiercache *tc, int h, uint64_t off, uint64_t *fd_off, size_t *len);

/* "DATASET" alone is the dataset's root directory. */
int tiercache_stat(struct tiercache *tc, const char *path, struct tiercache_stat *st);

struct tiercache_dir *tiercache_opendir(struct tiercache *tc, const char *path);
/* Next entry, or NULL at the end (errno 0) or on error (errno set). The
 * entry stays valid until the next call on the same dir. */
const struct tiercache_dirent *tiercache_readdir(struct tiercache_dir *d);
int tiercache_closedir(struct tiercache_dir *d);

/*
 * Plans: the order in which a job will read a dataset's files, so the daemon
 * can prefetch just ahead of the job and keep what it will read soonest.
 *
 * A plan belongs to (job, rank) on this node: any id the job's processes
 * agree on (for example a hash of the job's name) and the process's rank in
 * world_size. Registering again replaces that rank's plan, or extends it
 * with TIERCACHE_PLAN_APPEND (publish epoch after epoch). The daemon follows
 * the plan from the reads it sees on any connection (DataLoader workers read
 * what the main process planned), tolerating reordering and skipped items.
 * A plan ends when cancelled, when fully read, or when the connection that
 * registered it has been gone longer than the daemon's plan grace period.
 *
 * Paths are relative to the dataset ("train/0001.tar"). Indices are
 * positions in the dataset's file list sorted by path bytes (strcmp order),
 * which is also the order of a walk that sorts each directory's full paths.
 * A plan of any length is accepted: the library sends it in frames.
 * Failures: ENOENT (no such dataset, or a path not in it: nothing is
 * registered), EINVAL, and the usual connection errors. A plan is advice:
 * reads work the same without one.
 */
struct tiercache_plan {
	uint64_t job;        /* shared by the job's ranks */
	uint32_t rank;       /* 0 .. world_size-1 */
	uint32_t world_size; /* >= 1 */
	uint32_t epoch;      /* shown in status; not interpreted */
};
#define TIERCACHE_PLAN_APPEND 0x1u /* add after the current plan instead of replacing it */
/* The list is the whole job's sample order, registered once by any rank:
 * rank r reads entries i with i % world_size == r (torch's
 * DistributedSampler). Every node that serves a rank of the job (a
 * connection tagged with it, tiercache_set_job) prefetches that rank's
 * share; with [cluster] the plan reaches every node through Redis. Replaces
 * the job's plan, or with TIERCACHE_PLAN_APPEND extends it (an order
 * registered in pieces; on the node that registered it, same world_size);
 * cancel with any rank. */
#define TIERCACHE_PLAN_JOB 0x2u

int tiercache_plan_paths(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
			 const char *const *paths, size_t n, unsigned flags);
int tiercache_plan_indices(struct tiercache *tc, const char *dataset, const struct tiercache_plan *p,
			   const uint64_t *indices, size_t n, unsigned flags);
/* Drop (job, rank)'s plan on dataset. ENOENT if there was none. */
int tiercache_plan_cancel(struct tiercache *tc, const char *dataset, uint64_t job, uint32_t rank);

/*
 * Plans survive a daemon restart: the library keeps each plan this
 * connection registered (the last registration and the append after it:
 * 8 bytes per index, path length + 1 per path; a plan above
 * TIERCACHE_PLAN_KEEP_MAX bytes is not kept) until it is cancelled or
 * replaced, and re-registers it on the next connection before the request
 * that found the old one gone. The daemon resumes the plan at the first
 * read of it it sees. A forked child does not inherit them (its parent
 * re-registers them). The registering process must talk to the daemon for
 * that to happen: a process that only registers plans while others read
 * calls tiercache_ping() now and then (the Python PlanSampler does).
 */
#define TIERCACHE_PLAN_KEEP_MAX (256u << 20)
/* A cheap round trip (HELLO): reconnects if the daemon restarted, which
 * re-sends the job tag and the kept plans. 0 or -1 with errno. */
int tiercache_ping(struct tiercache *tc);

/*
 * Job tags: reads on a tagged connection advance only the plans of that
 * job (and of that rank, unless rank is TIERCACHE_RANK_ANY), so two jobs
 * whose plans overlap on one dataset do not move each other's positions.
 * Untagged connections advance every plan that expects the read. The tag
 * follows the connection into forked children and onto new connections
 * after a daemon restart. $TIERCACHE_JOB="JOB" or "JOB:RANK" (JOB a 64-bit
 * number, decimal or 0x hex) tags every connection the process opens;
 * a malformed value fails tiercache_connect with EINVAL. ENOSYS: the
 * daemon predates job tags (the tag is not set).
 */
#define TIERCACHE_JOB_ENV "TIERCACHE_JOB"
#define TIERCACHE_RANK_ANY 0xffffffffu
int tiercache_set_job(struct tiercache *tc, uint64_t job, uint32_t rank);
int tiercache_clear_job(struct tiercache *tc);
/* Open-ahead for one of several readers of a plan that share its files
 * batch by batch (a DataLoader's workers: batch b goes to worker
 * b % workers): this connection is handed only the plan's samples i with
 * (i / batch) % workers == index, the batches this reader will open (i
 * counts from the first sample of the plan's epoch, repeats and empty
 * files included).
 * workers 1: every file (the default). Advice: a daemon that predates it
 * hands nothing ahead on this connection. EINVAL: batch or workers 0 or
 * past 65536, index >= workers. */
int tiercache_set_ahead_stride(struct tiercache *tc, uint32_t batch, uint32_t workers,
			       uint32_t index);

/*
 * Act for another user (a FUSE mount run by root that serves other users):
 * from now on the daemon checks this connection's opens, stats and
 * listings against uid, gid and the supplementary groups (at most 256)
 * instead of the caller's own credentials: the datasets' allow_users /
 * allow_groups and, with access = source, the source files' modes
 * (docs/operations.md, "Access control"). Reads on handles opened before
 * keep going. The credentials follow the connection onto new connections
 * after a daemon restart; if the daemon refuses them there, requests fail
 * rather than run with the caller's own rights. EPERM: the caller is not
 * root or an admin of the daemon; EINVAL: a uid or gid of -1, too many
 * groups; ENOSYS: the daemon predates it.
 */
int tiercache_act_as(struct tiercache *tc, uid_t uid, gid_t gid, const gid_t *groups,
		     size_t ngroups);

/*
 * Datasets still loading: a daemon that has just started lists remote
 * datasets (RADOS) in the background, minutes for millions of objects.
 * Opens, stats and listings of a dataset whose first listing is under way
 * wait for it (the daemon holds the request and answers when the listing
 * ends) for up to the connection's wait: $TIERCACHE_LOAD_TIMEOUT seconds,
 * else TIERCACHE_LOAD_TIMEOUT_DEFAULT; tiercache_set_wait() changes it
 * (0: fail at once with EIO, the daemon's detail saying it is loading; at
 * most 65535). A call that waited in vain fails with ETIMEDOUT; a listing
 * that fails answers with its error (EIO and what to do). A daemon that
 * predates it fails at once. 0, or -1 with EINVAL.
 */
#define TIERCACHE_LOAD_TIMEOUT_ENV "TIERCACHE_LOAD_TIMEOUT"
#define TIERCACHE_LOAD_TIMEOUT_DEFAULT 600u
int tiercache_set_wait(struct tiercache *tc, unsigned seconds);

/* Message for an errno value, including tiercache-specific meanings. */
const char *tiercache_strerror(int errnum);
/* The daemon's detail for this thread's last failed call ("" if none). */
const char *tiercache_last_error(void);

/* Diagnostics hook (level: 0 error, 1 warn, 2 info, 3 debug). */
typedef void (*tiercache_log_fn)(int level, const char *msg, void *arg);
void tiercache_set_log(tiercache_log_fn fn, void *arg);

/* Send a request and wait for its reply: the building block of tierctl and
 * of admin tools. op is a TC_OP_* value; req/reqlen the payload. On success
 * *rep (malloc'd, caller frees) and *replen hold the reply payload. Returns
 * 0 or -1 with errno (a daemon error's errno, detail in
 * tiercache_last_error()). */
int tiercache_call(struct tiercache *tc, unsigned op, const void *req, size_t reqlen,
		   void **rep, size_t *replen);
/* The same with request flags (TC_F_* in tiercache/protocol.h, e.g.
 * TC_F_CLUSTER); TC_F_NOREPLY and the wait bits are refused (EINVAL). */
int tiercache_call_flags(struct tiercache *tc, unsigned op, uint32_t flags, const void *req,
			 size_t reqlen, void **rep, size_t *replen);

#ifdef __cplusplus
}
#endif

#endif
