/*
 * tiercache-mount internals: a read-only FUSE view of one dataset (or a
 * directory of it), built on libtiercache with the libfuse3 low-level API.
 *
 *   main.c    command line, --help, startup checks, the FUSE session
 *   pool.c    the connections to tiercached, errno mapping, outage state
 *   dircache.c  directory listings that answer lookups without a STAT
 *   nodes.c   the inode table: FUSE node ids <-> dataset paths, attributes
 *             last told to the kernel, which version the page cache holds
 *   ops.c     lookup / getattr / open / read / release / statfs, and EROFS
 *             for every write
 *   dirs.c    opendir / readdir / readdirplus / releasedir
 *   readahead.c  the kernel readahead window of the mount (large reads)
 *   passthrough.c  mounting ourselves so the kernel reads small files'
 *             chunk files itself (FUSE passthrough), with libfuse 3.14
 *   dio.c     which opens of large files use direct I/O (no second page
 *             cache, one copy), learnt per reading thread
 *   log.c     one-line key=value messages to stderr or syslog
 *   inval.c   page-cache invalidations sent from their own thread
 *
 * Threads: libfuse's multithreaded loop calls the ops from several worker
 * threads at once. The node table has its own mutex; a directory handle has
 * a mutex; libtiercache connections are thread-safe. Nothing else is
 * shared and written after startup.
 */
#ifndef TIERCACHE_TCMOUNT_H
#define TIERCACHE_TCMOUNT_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tiercache.h"

/* ---- options (main.c) ---- */
struct tcm_opts {
	char *socket;            /* --socket, else $TIERCACHE_SOCKET, else default */
	char *source;            /* DATASET[/SUBDIR], no leading / trailing '/' */
	double reconnect_timeout; /* s: how long a request waits for the daemon */
	double load_timeout;     /* s: how long a request waits for a loading dataset */
	double entry_timeout;    /* s: kernel caches a name -> node */
	double attr_timeout;     /* s: kernel caches size / mtime */
	double negative_timeout; /* s: kernel caches "no such name" */
	unsigned connections;    /* libtiercache connections in the pool */
	int immutable;           /* no open/release round trips (see ops.c) */
	unsigned read_ahead_kb;  /* kernel readahead window, 0: kernel default */
	int no_splice;           /* copy read bytes through our memory (ops.c) */
	char *passthrough;       /* "auto" (default) or "off" (passthrough.c) */
	char *direct_io;         /* "auto" (default), "large" or "off" (dio.c) */
	char *job;               /* "JOB[:RANK]": the job whose plans open ahead (pool.c) */
	int debug;
	int foreground;
};

#define TCM_DEFAULT_RECONNECT 30.0
#define TCM_DEFAULT_LOAD ((double)TIERCACHE_LOAD_TIMEOUT_DEFAULT)
#define TCM_DEFAULT_ENTRY 60.0
#define TCM_DEFAULT_ATTR 60.0
#define TCM_DEFAULT_NEGATIVE 5.0
#define TCM_DEFAULT_CONNECTIONS 4u
#define TCM_MAX_CONNECTIONS 64u
#define TCM_DEFAULT_READ_AHEAD_KB 4096u
#define TCM_MAX_READ_AHEAD_KB (1u << 20)
/* Largest read the kernel sends when reads are spliced (ops.c): 992 KiB,
 * so a reply and libfuse's pipe overhead fit a 1 MiB pipe. */
#define TCM_SPLICE_MAX_READ (248u * 4096u)
/* st_blksize: what cp / cat take as a good read size */
#define TCM_BLKSIZE (1u << 20)

/* ---- readahead.c ---- */
/* Set the readahead window of the FUSE mount at mountpoint (root only). */
int tcm_readahead_set(const char *mountpoint, unsigned kb);

/* ---- dio.c ---- */
enum tcm_dio_mode { TCM_DIO_AUTO, TCM_DIO_LARGE, TCM_DIO_OFF };
/* files up to this size always read through the page cache */
#define TCM_DIO_MIN_SIZE (1u << 20)
/* auto: a thread whose direct reads average less reads cached */
#define TCM_DIO_SMALL_READ (128u * 1024u)
/* auto: the verdict on a handle comes after this many reads (or at close) */
#define TCM_DIO_PROBE_READS 16u
/* auto: a thread not seen before follows the last verdict, except every
 * this many, which are probed */
#define TCM_DIO_PROBE_EVERY 8u
#define TCM_DIO_PIDS 256u
#define TCM_DIO_FORGET_S 600.0

struct tcm_dio_pid {
	uint32_t pid;
	bool small; /* its direct reads were small: page cache from now on */
	double when;
};

struct tcm_dio {
	enum tcm_dio_mode mode;
	atomic_bool on; /* the kernel allows mmap of direct I/O files (INIT) */
	bool ready;
	pthread_mutex_t lock; /* pids */
	struct tcm_dio_pid pids[TCM_DIO_PIDS];
	bool last_small;    /* the last verdict, for threads not seen yet */
	double last_when;
	unsigned strangers; /* opens by such threads while last_small */
	atomic_ulong opens; /* opens answered with direct I/O */
};

int tcm_dio_init(struct tcm_dio *d, enum tcm_dio_mode mode);
void tcm_dio_free(struct tcm_dio *d);
/* Should an open of a file of size bytes by thread pid use direct I/O? */
bool tcm_dio_choose(struct tcm_dio *d, uint32_t pid, uint64_t size);
/* A direct handle opened by pid saw reads asking for bytes in all. */
void tcm_dio_learn(struct tcm_dio *d, uint32_t pid, uint64_t reads, uint64_t bytes);

/* ---- passthrough.c ---- */
struct pt_inode;
struct tcm;
struct tcm_pt {
	bool want;              /* -o passthrough=auto */
	bool want_dio;          /* -o direct_io=auto|large: INIT must allow mmap */
	int devfd;              /* /dev/fuse when we mounted (session owns it), else -1 */
	char *mountpoint;       /* set when we mounted: we unmount */
	atomic_bool init_seen;  /* the INIT request was read */
	atomic_bool init_done;  /* its reply was sent */
	bool offered;           /* the kernel offered passthrough in INIT */
	bool dio_offered;       /* ... and mmap of direct I/O files */
	uint64_t init_unique;
	atomic_bool on;         /* the INIT reply asked for it */
	atomic_bool failed;     /* the kernel refused a backing file: no new ones */
	pthread_mutex_t lock;   /* buckets */
	struct pt_inode **buckets;
	atomic_ulong opens;     /* opens passed through */
	atomic_ulong all_opens; /* opens answered (ops.c) */
	atomic_ulong reads;     /* READ requests (ops.c) */
};

int tcm_pt_init(struct tcm_pt *pt, bool want, bool want_dio);
void tcm_pt_free(struct tcm_pt *pt);
/* Mount at mountpoint ourselves, with the kernel options of args (before
 * fuse_session_new consumes them), and give libfuse the device through
 * our I/O hooks. 0, or -errno: then mount with fuse_session_mount (the
 * reason is logged). */
int tcm_pt_mount(struct tcm *m, const struct fuse_args *args, const char *mountpoint);
/* After the loop: unmount what tcm_pt_mount mounted, unless already gone. */
void tcm_pt_unmount(struct tcm *m);
/* An open of version a of ino on handle h (bypass: nodes.c chose direct
 * I/O). 1 and *id: the kernel is to read the chunk file itself; 0: it
 * reads through the mount (for both tcm_pt_release(passthrough = rc)
 * must follow); 2: direct I/O as chosen, not counted; -ESTALE: the
 * inode's open descriptors pass another version through, which the
 * kernel allows nothing else beside: open a new inode; -ENOMEM. */
struct tcm_attr;
int tcm_pt_open(struct tcm *m, uint64_t ino, struct tiercache *tc, int h,
		const struct tcm_attr *a, bool bypass, int32_t *id);
void tcm_pt_release(struct tcm *m, uint64_t ino, bool passthrough);
/* fuse_reply_open, with FOPEN_PASSTHROUGH and id if passthrough. */
int tcm_pt_reply_open(fuse_req_t req, struct fuse_file_info *fi, int32_t id, bool passthrough);

/* ---- log.c ---- */
enum tcm_level { TCM_ERR = 0, TCM_WARN = 1, TCM_INFO = 2, TCM_DEBUG = 3 };
/* to_syslog: once the mount runs in the background (stderr is gone). */
void tcm_log_setup(int max_level, bool to_syslog);
void tcm_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* libtiercache's log hook, routed to tcm_log */
void tcm_log_lib(int level, const char *msg, void *arg);

/* ---- pool.c ---- */
/* users of the mount it keeps a connection for at once (acting for them) */
#define TCM_IDS_MAX 64u
struct tcm_ident;
struct tcm_pool {
	struct tiercache **tc;
	unsigned n;
	atomic_uint next;   /* round robin */
	atomic_bool down;   /* a request gave up waiting for the daemon */
	char *socket;       /* resolved path, for the liveness probe */
	/* Requests of other users than the mount's own go on a connection
	 * that acts for them (tiercache_act_as), one per user and groups. */
	uid_t self_uid;
	atomic_int act;     /* 0: not tried yet, 1: the daemon lets us, -1: it does not */
	pthread_mutex_t ids_lock;
	struct tcm_ident *ids[TCM_IDS_MAX];
	unsigned nids;
	bool ahead;         /* -o job: the mount's own opens go on tc[0], whose
	                     * library holds the files handed ahead of the plan */
};

/* Connect n connections (fails fast, with a message, when no daemon). */
int tcm_pool_open(struct tcm_pool *p, const char *socket, unsigned n, double reconnect_timeout);
/* The connection for an OPEN of req's caller: tcm_pool_for's, except that
 * with -o job the mount's own opens all go on one connection (open-ahead
 * hands each connection different files of the plan). */
int tcm_pool_for_open(struct tcm_pool *p, fuse_req_t req, struct tiercache **tc);
void tcm_pool_close(struct tcm_pool *p);
struct tiercache *tcm_pool_pick(struct tcm_pool *p);
/* The connection for a request of req's caller: the pool for the mount's
 * own user; else one that acts for the caller's uid, gid and groups, so
 * that the daemon checks the caller's rights (made on first use, kept
 * until unmount, at most TCM_IDS_MAX). 0, or a positive errno for the
 * kernel (EUSERS: too many users at once). */
int tcm_pool_for(struct tcm_pool *p, fuse_req_t req, struct tiercache **tc);
/* Would req's caller get a connection of its own (not the mount's)? */
bool tcm_pool_acts(struct tcm_pool *p, fuse_req_t req);
/* Before a request that must reach the daemon: 0, or -ETIMEDOUT at once
 * while the daemon is known to be down and still does not answer. */
int tcm_pool_gate(struct tcm_pool *p);
/* Turn a failed libtiercache call's errno into the errno the reading
 * program sees (see docs/mount.md), log it, note an outage. Returns the
 * positive errno for fuse_reply_err. */
int tcm_pool_errno(struct tcm_pool *p, int err, const char *op, const char *path);
/* The call succeeded: the daemon is reachable again. */
void tcm_pool_ok(struct tcm_pool *p);

/* ---- nodes.c ---- */
struct tcm_node;

/* Attributes of a file or directory as the daemon describes it. */
struct tcm_attr {
	int type; /* TIERCACHE_FILE / TIERCACHE_DIR */
	uint64_t size;
	int64_t mtime_ns;
	/* the source's owner and mode (a dataset with access = source); else
	 * owned is false: the mounter's, r--r--r-- / r-xr-xr-x */
	bool owned;
	uint32_t mode, uid, gid;
};
/* Set a's owner from the daemon's fields (TIERCACHE_OWNER_NONE: none). */
void tcm_attr_owner(struct tcm_attr *a, uint32_t mode, uint32_t uid, uint32_t gid);

/* How an open file uses the kernel page cache (see nodes.c). */
enum tcm_cache {
	TCM_CACHE_KEEP,   /* same version as the cached pages: keep them */
	TCM_CACHE_FRESH,  /* another (or first) version: drop cached pages */
	TCM_CACHE_BYPASS, /* an older version is still open: direct I/O */
};

struct tcm_nh;

struct tcm_nodes {
	pthread_mutex_t lock;
	struct tcm_node **by_ino;  /* hash: ino -> node */
	struct tcm_node **by_name; /* hash: (parent, name) -> node */
	size_t nbuckets;
	size_t count;
	uint64_t next_ino;
	/* -o immutable: per-node read handles */
	struct tcm_nh *nh_head, *nh_tail; /* most / least recently used */
	size_t nh_count;
	size_t nh_cap; /* idle handles kept open at most */
};

/* A libtiercache handle the caller must close (outside the table lock). */
struct tcm_hclose {
	struct tiercache *tc;
	int h;
};
#define TCM_HCLOSE_MAX 4
/* -o immutable: idle per-node read handles kept open (each holds up to a
 * few chunk fds of the library) */
#define TCM_NH_CAP 1024u

int tcm_nodes_init(struct tcm_nodes *t, const char *root_path);
void tcm_nodes_free(struct tcm_nodes *t);
/* malloc'd dataset path of node ino (-ESTALE: unknown node). */
int tcm_nodes_path(struct tcm_nodes *t, uint64_t ino, char **path);
/* malloc'd dataset path of name in directory parent. */
int tcm_nodes_child_path(struct tcm_nodes *t, uint64_t parent, const char *name, char **path);
/* Find or make the node for name in parent with these attributes and add
 * one kernel lookup reference. Returns 0 and *ino, or 1 and *ino when
 * the node's read handle (-o immutable) is of an older version and *c
 * must be closed by the caller, or -errno. */
int tcm_nodes_link(struct tcm_nodes *t, uint64_t parent, const char *name,
		   const struct tcm_attr *a, uint64_t *ino, struct tcm_hclose *c);
/* The next lookup of ino's name makes a new node (a new kernel inode);
 * ino lives on for the descriptors open on it until forgotten. */
void tcm_nodes_unname(struct tcm_nodes *t, uint64_t ino);
/* Drop n kernel lookup references; the node goes at zero. Returns 1 if
 * the node's read handle must be closed by the caller (*c). */
int tcm_nodes_forget(struct tcm_nodes *t, uint64_t ino, uint64_t n, struct tcm_hclose *c);
/* Record fresh attributes of ino. Returns 1 if size or mtime differ from
 * what the kernel was last told, 0 if not, -ESTALE for an unknown node or
 * one whose type changed. */
int tcm_nodes_update(struct tcm_nodes *t, uint64_t ino, const struct tcm_attr *a);
/* Parent of ino (the root for the root or an unknown node). */
uint64_t tcm_nodes_parent(struct tcm_nodes *t, uint64_t ino);
/* Node id of name in parent if the kernel knows it, else 0 (no reference). */
uint64_t tcm_nodes_peek(struct tcm_nodes *t, uint64_t parent, const char *name);
/* An open of version a of ino: decide its page cache use (*mode) and count
 * it. Returns like tcm_nodes_update (1: the kernel's attributes are old). */
int tcm_nodes_open(struct tcm_nodes *t, uint64_t ino, const struct tcm_attr *a,
		   enum tcm_cache *mode);
/* The open counted by tcm_nodes_open is released. */
void tcm_nodes_release(struct tcm_nodes *t, uint64_t ino, enum tcm_cache mode);

/* -o immutable read handles. pin: ino's handle, pinned, or NULL (none
 * yet). add: make (tc, h) ino's handle and pin it; if another thread was
 * first, its handle is pinned instead and ours is in c[] to close, with
 * any idle handles evicted past nh_cap (*nc of them, <= TCM_HCLOSE_MAX).
 * unpin: returns 1 if the caller must close *c (it was detached).
 * detach: ino's version changed; returns 1 if *c must be closed now. */
struct tcm_nh *tcm_nodes_nh_pin(struct tcm_nodes *t, uint64_t ino);
struct tcm_nh *tcm_nodes_nh_add(struct tcm_nodes *t, uint64_t ino, struct tiercache *tc, int h,
				struct tcm_hclose *c, size_t *nc);
int tcm_nodes_nh_unpin(struct tcm_nodes *t, struct tcm_nh *nh, struct tcm_hclose *c);
int tcm_nodes_nh_detach(struct tcm_nodes *t, uint64_t ino, struct tcm_hclose *c);
void tcm_nh_get(const struct tcm_nh *nh, struct tiercache **tc, int *h);

/* ---- dircache.c ---- */
struct tcm_dircache;
struct tcm;
/* Listings answer for ttl seconds, "not there" for neg_ttl of them; ttl
 * <= 0: never answer from a listing. NULL: out of memory. */
struct tcm_dircache *tcm_dircache_new(double ttl, double neg_ttl);
void tcm_dircache_free(struct tcm_dircache *dc);
/* name in directory dir (dataset path dirpath): 1 and *a if listed, 0 if
 * the listing says it does not exist, -EAGAIN: no listing, ask with STAT. */
int tcm_dircache_lookup(struct tcm *m, uint64_t dir, const char *dirpath, const char *name,
			struct tcm_attr *a);
/* Forget dir's listing (it is being listed: lookups must agree). */
void tcm_dircache_drop(struct tcm *m, uint64_t dir);

/* ---- inval.c ---- */
struct tcm_inval;
/* Start the notifier thread (after fuse_daemonize: threads do not survive
 * the fork). 0 or -errno. */
int tcm_inval_start(struct tcm *m);
/* Drop ino's pages and attributes in the kernel, soon, from the notifier
 * thread (safe from a request handler of ino). */
void tcm_inval_queue(struct tcm *m, uint64_t ino);
/* Stop the thread; returns the invalidations it sent. */
unsigned long tcm_inval_stop(struct tcm *m);

/* ---- the mount (main.c fills it; ops get it as userdata) ---- */
struct tcm {
	struct tcm_opts o;
	struct tcm_pool pool;
	struct tcm_nodes nodes;
	struct tcm_dircache *dircache;
	struct fuse_session *se;
	uid_t uid;
	gid_t gid;
	struct timespec dir_time; /* directories have no mtime: the mount time */
	char *dataset;            /* the dataset's name (for statfs) */
	bool splice;              /* reads splice chunk fds (set by init) */
	struct tcm_pt pt;         /* FUSE passthrough (passthrough.c) */
	struct tcm_dio dio;       /* direct I/O for large files (dio.c) */
	bool others;              /* -o allow_other / allow_root: other users read */
	struct tcm_inval *inval;  /* -o immutable: invalidations (inval.c) */
	/* -o immutable: node handles opened (each an OPEN the daemon sees, or
	 * a file handed ahead) and reads through a handle already held (the
	 * daemon does not see those) */
	atomic_ulong imm_opens, imm_reuse;
};

/* ---- ops.c / dirs.c ---- */
extern const struct fuse_lowlevel_ops tcm_ops;
/* Drop n kernel references on ino, closing its read handle if it goes. */
void tcm_forget(struct tcm *m, uint64_t ino, uint64_t n);
void tcm_attr_to_stat(const struct tcm *m, uint64_t ino, const struct tcm_attr *a, struct stat *st);
void tcm_entry_fill(const struct tcm *m, uint64_t ino, const struct tcm_attr *a,
		    struct fuse_entry_param *e);
/* From a libtiercache stat/dirent type. */
void tcm_attr_from_stat(struct tcm_attr *a, const struct tiercache_stat *st);

void tcm_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void tcm_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void tcm_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi);
void tcm_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* statfs.c */
void tcm_statfs(fuse_req_t req, fuse_ino_t ino);

#endif
