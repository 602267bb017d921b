/*
 * rados_direct: the baseline of bench/rados.sh. Reads the files of a RADOS
 * dataset straight from librados, the way tiercached's cold misses read them
 * when N reader threads each read one file after another: N streams, each
 * reading one file sequentially in --chunk pieces with one aio read in
 * flight, taking the next file when it is done. So N reads are in flight
 * at all times, as with N tiercache readers that each wait for one fill.
 *
 *   rados_direct --conf CONF --pool POOL [--prefix P] [--namespace NS]
 *                [--chunk BYTES] [--streams N] [--reps R] [--through DIR]
 *                [--segment CAPACITY [--punch BYTES] [--sync BYTES]]
 *                [--via SOCKET [--verify]]
 *   rados_direct --conf CONF --pool POOL --serve SOCKET --through DIR
 *                [--serve-mode aio|inline|sync] [--chunk BYTES]
 *
 * A file is an object whose name starts with P, or a libradosstriper file:
 * its objects NAME.%016x are read in index order, each in --chunk pieces
 * (this equals reading the file when the stripe count is 1, which is what
 * `tierctl import` writes). Prints one line per repetition: bytes, seconds,
 * MB/s, and the process's context switches during it (every thread's,
 * voluntary + involuntary; the listing is not in it). Exit 1 on any read
 * error or short read.
 *
 * --through DIR: the floor of any cache that keeps a copy of what it reads
 * in a file and hands the bytes out from there: each piece read is written
 * to a new file in DIR and read back from it (one copy into the page
 * cache, one out of it), as a cache's fill and its reader do, without the
 * checksum, the index or the protocol. The files are removed after each
 * repetition, outside its timing.
 *
 * --segment CAPACITY (with --through): the floor of a cache that packs
 * small items into segments, as tiercached does below segment_threshold,
 * and whose tiers hold CAPACITY bytes in all. Each stream appends its
 * pieces to one file of its own in DIR (DIR/segment.N: written at the end,
 * read back from there), and once the bytes it holds pass its share of
 * CAPACITY (CAPACITY / streams) it gives the oldest back with one
 * fallocate(PUNCH_HOLE) over them, as a cache punches its evicted items:
 * with CAPACITY at least the data, nothing is punched (the `fit` case);
 * smaller, every piece past the first CAPACITY bytes costs one punch (the
 * `evict` case), or one per --punch BYTES (punched in larger runs: a
 * cheaper floor, what a cache reclaiming whole regions would pay).
 * --sync BYTES: also fdatasync the file each time BYTES were appended
 * since its last sync (default 0: never; tiercached syncs its fills
 * lazily, `sync_backlog`). The files are removed after each repetition,
 * outside its timing.
 *
 * --serve SOCKET --through DIR [--serve-mode aio|inline|sync]: the floor of
 * any cache that is a separate process (the IPC floor): a server listening
 * on the Unix stream socket SOCKET. For each request (object, offset,
 * length) it reads the bytes from RADOS, appends them to its segment file
 * for that connection in DIR (punching the oldest bytes once it holds more
 * than the connection's share of the capacity, as --segment does) and
 * replies with where they are; its first reply on a connection carries the
 * segment's descriptor (SCM_RIGHTS), later ones only offset + length. No
 * index, checksum store or policy: what is left is the process boundary
 * and the hand-offs between threads. The three forms:
 *   aio     one event loop thread takes the requests and submits an aio
 *           read; librados' completion thread writes the segment and hands
 *           the reply to the loop through an eventfd (tiercached's path);
 *   inline  as aio, but the completion thread sends the reply itself;
 *   sync    a thread per connection: recv, a blocking rados_read, write,
 *           reply.
 * Runs until killed; needs --conf and --pool, not the listing.
 * --via SOCKET (with --segment CAPACITY): the reader of the IPC floor:
 * --streams threads, each with its own connection, ask the server for one
 * piece after another (the same files, in the same order, as the direct
 * read) and pread each from the segment descriptor; a reply whose length
 * differs is an error. --verify: the server sends an FNV-1a 64 checksum of
 * the bytes it read from RADOS, the reader checks the bytes it preads
 * against it and prints the sum of all pieces' checksums per repetition
 * (order-independent: a test compares it with the source's).
 *
 * Threads: the main thread submits reads; librados' completion callbacks
 * only mark their stream done and signal the main thread (under one lock).
 * With --through, N threads instead, each a stream of synchronous reads
 * (the same N reads in flight), so the copies run in parallel as a
 * cache's would; they share the next file to take under the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rados/librados.h>

#include "lib_bench.h"
#include "lib_ipcfloor.h"

#define STRIPE_SUFFIX_LEN 17 /* ".%016x" */
#define MAX_STREAMS 256

struct object {
	char *oid;
	uint64_t size;
};

/* One file: its objects in read order. */
struct file {
	struct object *obj;
	size_t nobj;
};

struct stream {
	struct bench_ctx *bc;
	rados_completion_t comp;
	char *buf;
	size_t file, obj; /* what is being read */
	uint64_t off;     /* within the object */
	uint32_t len;
	bool busy, done;
};

struct bench_ctx {
	rados_ioctx_t io;
	struct file *files;
	size_t nfiles;
	uint32_t chunk;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ndone; /* streams whose read completed, not yet handled */
	const char *through; /* --through DIR, or NULL */
	size_t next_file;    /* --through: the next file a thread takes (lock) */
	unsigned copies;     /* --through: files written this repetition (lock) */
	unsigned nstreams;
	uint64_t punches, syncs; /* --segment: this repetition's */
	uint64_t seg_cap;    /* --segment: capacity of all streams together, or 0 */
	uint64_t punch_unit; /* --punch: punch once this much is over the share (0: at once) */
	uint64_t sync_every; /* --sync: fdatasync after this much appended (0: never) */
	const char *via;     /* --via SOCKET, or NULL */
	bool verify;         /* --verify */
	uint64_t sums;       /* --verify: this repetition's sum of the pieces' checksums (lock) */
};

static void read_done(rados_completion_t c, void *arg)
{
	(void)c;
	struct stream *s = arg;
	pthread_mutex_lock(&s->bc->lock);
	s->done = true;
	s->bc->ndone++;
	pthread_cond_signal(&s->bc->cond);
	pthread_mutex_unlock(&s->bc->lock);
}

static int is_stripe_piece(const char *oid, size_t n, size_t *base)
{
	if (n <= STRIPE_SUFFIX_LEN || oid[n - STRIPE_SUFFIX_LEN] != '.')
		return 0;
	for (size_t i = n - STRIPE_SUFFIX_LEN + 1; i < n; i++)
		if (!((oid[i] >= '0' && oid[i] <= '9') || (oid[i] >= 'a' && oid[i] <= 'f')))
			return 0;
	*base = n - STRIPE_SUFFIX_LEN;
	return 1;
}

static int obj_cmp(const void *a, const void *b)
{
	return strcmp(((const struct object *)a)->oid, ((const struct object *)b)->oid);
}

/* Name and size of every object under prefix, grouped into files. */
static int list_files(struct bench_ctx *bc, const char *prefix)
{
	rados_list_ctx_t lc;
	struct object *v = NULL;
	size_t n = 0, cap = 0;
	size_t plen = strlen(prefix);
	int rc = rados_nobjects_list_open(bc->io, &lc);
	if (rc < 0)
		return rc;
	const char *oid;
	while ((rc = rados_nobjects_list_next(lc, &oid, NULL, NULL)) == 0) {
		if (strncmp(oid, prefix, plen) != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct object *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n].oid = strdup(oid);
		if (!v[n].oid) {
			rc = -ENOMEM;
			break;
		}
		n++;
	}
	rados_nobjects_list_close(lc);
	if (rc != -ENOENT)
		goto out;
	rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		time_t mtime;
		rc = rados_stat(bc->io, v[i].oid, &v[i].size, &mtime);
		if (rc < 0)
			fprintf(stderr, "rados_direct: stat %s: %s\n", v[i].oid, strerror(-rc));
	}
	if (rc < 0)
		goto out;
	/* sorted, a striped file's pieces are adjacent and in index order */
	qsort(v, n, sizeof(*v), obj_cmp);
	bc->files = calloc(n ? n : 1, sizeof(*bc->files));
	if (!bc->files) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n;) {
		size_t base, other, j = i + 1, len = strlen(v[i].oid);
		if (is_stripe_piece(v[i].oid, len, &base))
			while (j < n && strlen(v[j].oid) == len && strncmp(v[j].oid, v[i].oid, base + 1) == 0 &&
			       is_stripe_piece(v[j].oid, len, &other))
				j++;
		bc->files[bc->nfiles].obj = &v[i];
		bc->files[bc->nfiles].nobj = j - i;
		bc->nfiles++;
		i = j;
	}
	v = NULL; /* owned by files[] now (files[0].obj is the array) */
out:
	if (v) {
		for (size_t i = 0; i < n; i++)
			free(v[i].oid);
		free(v);
	}
	return rc;
}

/* Next piece for stream s: the rest of its object, its file's next object,
 * or the next file (*next_file). Returns false when nothing is left. */
static bool stream_advance(struct bench_ctx *bc, struct stream *s, size_t *next_file)
{
	for (;;) {
		if (s->file < bc->nfiles) {
			const struct file *f = &bc->files[s->file];
			while (s->obj < f->nobj) {
				uint64_t size = f->obj[s->obj].size;
				if (s->off < size) {
					uint64_t left = size - s->off;
					s->len = left < bc->chunk ? (uint32_t)left : bc->chunk;
					return true;
				}
				s->obj++;
				s->off = 0;
			}
		}
		if (*next_file >= bc->nfiles)
			return false;
		s->file = (*next_file)++;
		s->obj = 0;
		s->off = 0;
	}
}

static int stream_submit(struct bench_ctx *bc, struct stream *s)
{
	const struct object *o = &bc->files[s->file].obj[s->obj];
	int rc = rados_aio_create_completion2(s, read_done, &s->comp);
	if (rc < 0)
		return rc;
	s->busy = true;
	s->done = false;
	rc = rados_aio_read(bc->io, o->oid, s->comp, s->buf, s->len, s->off);
	if (rc < 0) {
		rados_aio_release(s->comp);
		s->busy = false;
	}
	return rc;
}

/* Context switches of every thread of this process so far. */
static long self_switches(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

/* One pass over every file. Returns bytes read or -errno. */
static int64_t read_all(struct bench_ctx *bc, struct stream *st, unsigned nstreams)
{
	size_t next_file = 0;
	uint64_t bytes = 0;
	unsigned busy = 0;
	int err = 0;
	bc->ndone = 0;
	for (unsigned i = 0; i < nstreams; i++) {
		st[i].file = SIZE_MAX;
		if (stream_advance(bc, &st[i], &next_file)) {
			int rc = stream_submit(bc, &st[i]);
			if (rc < 0)
				return rc;
			busy++;
		}
	}
	pthread_mutex_lock(&bc->lock);
	while (busy > 0) {
		while (bc->ndone == 0)
			pthread_cond_wait(&bc->cond, &bc->lock);
		for (unsigned i = 0; i < nstreams; i++) {
			struct stream *s = &st[i];
			if (!s->busy || !s->done)
				continue;
			bc->ndone--;
			s->busy = false;
			busy--;
			int r = rados_aio_get_return_value(s->comp);
			rados_aio_release(s->comp);
			if (r != (int)s->len) {
				fprintf(stderr, "rados_direct: read %s at %llu: %s\n",
					bc->files[s->file].obj[s->obj].oid, (unsigned long long)s->off,
					r < 0 ? strerror(-r) : "short read");
				err = r < 0 ? r : -EIO;
				continue;
			}
			bytes += (uint64_t)r;
			s->off += (uint64_t)r;
			if (err == 0 && stream_advance(bc, s, &next_file)) {
				pthread_mutex_unlock(&bc->lock); /* submit may call back inline */
				int rc = stream_submit(bc, s);
				pthread_mutex_lock(&bc->lock);
				if (rc < 0)
					err = rc;
				else
					busy++;
			}
		}
	}
	pthread_mutex_unlock(&bc->lock);
	return err < 0 ? err : (int64_t)bytes;
}

/* All of buf written to (or read from) fd at off. 0 or -errno. */
static int full_io_at(int fd, char *buf, size_t len, uint64_t off, bool write)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write ? pwrite(fd, buf + done, len - done, (off_t)(off + done))
				  : pread(fd, buf + done, len - done, (off_t)(off + done));
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* --through: write the piece in s->buf to file number n in the DIR, and read it back. */
static int copy_through(struct bench_ctx *bc, struct stream *s, unsigned n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/piece.%u", bc->through, n);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = full_io_at(fd, s->buf, s->len, 0, true);
	if (rc == 0)
		rc = full_io_at(fd, s->buf, s->len, 0, false);
	close(fd);
	return rc;
}

struct through_arg {
	struct bench_ctx *bc;
	struct stream *s;
	unsigned id;
	uint64_t bytes;
	int err;
	/* --segment: this stream's file */
	int fd;
	uint64_t wpos;     /* where the next piece is appended */
	uint64_t kept;     /* start of what is not punched yet (block aligned) */
	uint64_t unsynced; /* appended since the last fdatasync */
	uint64_t punches, syncs;
};

/* --segment: append the piece in s->buf to the stream's file, read it back,
 * then give back the oldest bytes over the stream's share of the capacity
 * (whole 4 KiB blocks: the partial one stays, as a cache's would). */
static int copy_segment(struct bench_ctx *bc, struct through_arg *a)
{
	struct stream *s = a->s;
	uint64_t at = a->wpos;
	int rc = full_io_at(a->fd, s->buf, s->len, at, true);
	if (rc == 0)
		rc = full_io_at(a->fd, s->buf, s->len, at, false);
	if (rc < 0)
		return rc;
	a->wpos += s->len;
	a->unsynced += s->len;
	if (bc->sync_every && a->unsynced >= bc->sync_every) {
		if (fdatasync(a->fd) < 0)
			return -errno;
		a->unsynced = 0;
		a->syncs++;
	}
	uint64_t share = bc->seg_cap / bc->nstreams;
	if (a->wpos - a->kept <= share + bc->punch_unit)
		return 0;
	uint64_t to = (a->wpos - share) & ~(uint64_t)4095;
	if (to <= a->kept)
		return 0;
	if (fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a->kept,
		      (off_t)(to - a->kept)) < 0)
		return -errno;
	a->kept = to;
	a->punches++;
	return 0;
}

static void *through_stream(void *p)
{
	struct through_arg *a = p;
	struct bench_ctx *bc = a->bc;
	struct stream *s = a->s;
	for (;;) {
		pthread_mutex_lock(&bc->lock);
		bool more = stream_advance(bc, s, &bc->next_file);
		unsigned n = more ? bc->copies++ : 0;
		pthread_mutex_unlock(&bc->lock);
		if (!more)
			return NULL;
		const struct object *o = &bc->files[s->file].obj[s->obj];
		int r = rados_read(bc->io, o->oid, s->buf, s->len, s->off);
		if (r != (int)s->len) {
			fprintf(stderr, "rados_direct: read %s at %llu: %s\n", o->oid,
				(unsigned long long)s->off, r < 0 ? strerror(-r) : "short read");
			a->err = r < 0 ? r : -EIO;
			return NULL;
		}
		int rc = bc->seg_cap ? copy_segment(bc, a) : copy_through(bc, s, n);
		if (rc < 0) {
			fprintf(stderr, "rados_direct: --through %s: %s\n", bc->through, strerror(-rc));
			a->err = rc;
			return NULL;
		}
		a->bytes += (uint64_t)r;
		s->off += (uint64_t)r;
	}
}

/* read_all() for --through. Returns bytes read or -errno. */
static int64_t read_all_through(struct bench_ctx *bc, struct stream *st, unsigned nstreams)
{
	struct through_arg a[MAX_STREAMS];
	pthread_t t[MAX_STREAMS];
	unsigned started = 0;
	int err = 0;
	uint64_t bytes = 0;
	bc->next_file = 0;
	bc->copies = 0;
	bc->punches = 0;
	bc->syncs = 0;
	bc->nstreams = nstreams;
	for (unsigned i = 0; i < nstreams; i++) {
		st[i].file = SIZE_MAX;
		a[i] = (struct through_arg){.bc = bc, .s = &st[i], .id = i, .fd = -1};
		if (bc->seg_cap) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/segment.%u", bc->through, i);
			a[i].fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (a[i].fd < 0) {
				err = -errno;
				fprintf(stderr, "rados_direct: --segment: cannot create %s: %s\n", path,
					strerror(errno));
				break;
			}
		}
		if (pthread_create(&t[i], NULL, through_stream, &a[i]) != 0) {
			err = -EAGAIN;
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		bytes += a[i].bytes;
		bc->punches += a[i].punches;
		bc->syncs += a[i].syncs;
		if (a[i].err < 0 && err == 0)
			err = a[i].err;
	}
	for (unsigned i = 0; i < nstreams; i++)
		if (a[i].fd >= 0)
			close(a[i].fd);
	return err < 0 ? err : (int64_t)bytes;
}

struct via_arg {
	struct bench_ctx *bc;
	struct stream *s;
	uint64_t bytes;
	int err;
};

/* --via: one stream, one connection to the server. */
static void *via_stream(void *p)
{
	struct via_arg *a = p;
	struct bench_ctx *bc = a->bc;
	struct stream *s = a->s;
	struct ipcfloor_conn c;
	uint64_t share = bc->seg_cap / bc->nstreams, sums = 0;
	a->err = ipcfloor_connect(&c, bc->via);
	if (a->err < 0) {
		fprintf(stderr, "rados_direct: --via %s: %s\n", bc->via, strerror(-a->err));
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&bc->lock);
		bool more = stream_advance(bc, s, &bc->next_file);
		pthread_mutex_unlock(&bc->lock);
		if (!more)
			break;
		const struct object *o = &bc->files[s->file].obj[s->obj];
		uint64_t sum;
		int64_t r = ipcfloor_get(&c, o->oid, s->off, s->len, share, bc->verify, s->buf, &sum);
		if (r != (int64_t)s->len) {
			fprintf(stderr, "rados_direct: --via: %s at %llu: %s\n", o->oid,
				(unsigned long long)s->off, r < 0 ? strerror((int)-r) : "short read");
			a->err = r < 0 ? (int)r : -EIO;
			break;
		}
		sums += sum;
		a->bytes += (uint64_t)r;
		s->off += (uint64_t)r;
	}
	ipcfloor_close(&c);
	pthread_mutex_lock(&bc->lock);
	bc->sums += sums;
	pthread_mutex_unlock(&bc->lock);
	return NULL;
}

/* read_all() for --via. Returns bytes read or -errno. */
static int64_t read_all_via(struct bench_ctx *bc, struct stream *st, unsigned nstreams)
{
	struct via_arg a[MAX_STREAMS];
	pthread_t t[MAX_STREAMS];
	unsigned started = 0;
	int err = 0;
	uint64_t bytes = 0;
	bc->next_file = 0;
	bc->nstreams = nstreams;
	bc->sums = 0;
	for (unsigned i = 0; i < nstreams; i++) {
		st[i].file = SIZE_MAX;
		a[i] = (struct via_arg){.bc = bc, .s = &st[i]};
		if (pthread_create(&t[i], NULL, via_stream, &a[i]) != 0) {
			err = -EAGAIN;
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		bytes += a[i].bytes;
		if (a[i].err < 0 && err == 0)
			err = a[i].err;
	}
	return err < 0 ? err : (int64_t)bytes;
}

/* Remove the repetition's files from DIR (outside the timing). */
static void through_clean(const struct bench_ctx *bc)
{
	char path[4096];
	if (bc->seg_cap) {
		for (unsigned n = 0; n < bc->nstreams; n++) {
			snprintf(path, sizeof(path), "%s/segment.%u", bc->through, n);
			(void)unlink(path);
		}
		return;
	}
	for (unsigned n = 0; n < bc->copies; n++) {
		snprintf(path, sizeof(path), "%s/piece.%u", bc->through, n);
		(void)unlink(path);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: rados_direct --conf CONF --pool POOL [--prefix P] [--namespace NS]\n"
			"                    [--chunk BYTES] [--streams N] [--reps R] [--through DIR]\n"
			"                    [--segment CAPACITY [--punch BYTES] [--sync BYTES]]\n"
			"                    [--via SOCKET [--verify]]\n"
			"       rados_direct --conf CONF --pool POOL --serve SOCKET --through DIR\n"
			"                    [--serve-mode aio|inline|sync] [--chunk BYTES]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"conf", required_argument, NULL, 'c'},   {"pool", required_argument, NULL, 'p'},
		{"prefix", required_argument, NULL, 'x'}, {"namespace", required_argument, NULL, 'n'},
		{"chunk", required_argument, NULL, 'k'},  {"streams", required_argument, NULL, 's'},
		{"reps", required_argument, NULL, 'r'},   {"through", required_argument, NULL, 't'},
		{"segment", required_argument, NULL, 'g'}, {"punch", required_argument, NULL, 'u'},
		{"sync", required_argument, NULL, 'y'},   {"serve", required_argument, NULL, 'S'},
		{"serve-mode", required_argument, NULL, 'M'}, {"via", required_argument, NULL, 'V'},
		{"verify", no_argument, NULL, 'v'},       {NULL, 0, NULL, 0},
	};
	const char *conf = NULL, *pool = NULL, *prefix = "", *ns = NULL, *through = NULL;
	const char *serve = NULL, *via = NULL;
	enum ipcfloor_mode mode = IPCFLOOR_AIO;
	bool verify = false;
	long chunk = 4L << 20, nstreams = 8, reps = 1;
	long long seg_cap = 0, punch_unit = 0, sync_every = 0;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf = optarg; break;
		case 'p': pool = optarg; break;
		case 'x': prefix = optarg; break;
		case 'n': ns = optarg; break;
		case 'k': chunk = strtol(optarg, NULL, 10); break;
		case 's': nstreams = strtol(optarg, NULL, 10); break;
		case 'r': reps = strtol(optarg, NULL, 10); break;
		case 't': through = optarg; break;
		case 'g': seg_cap = strtoll(optarg, NULL, 10); break;
		case 'u': punch_unit = strtoll(optarg, NULL, 10); break;
		case 'y': sync_every = strtoll(optarg, NULL, 10); break;
		case 'S': serve = optarg; break;
		case 'V': via = optarg; break;
		case 'v': verify = true; break;
		case 'M':
			if (ipcfloor_mode_parse(optarg, &mode) < 0) {
				usage();
				return 2;
			}
			break;
		default: usage(); return 2;
		}
	}
	if (!conf || !pool || optind != argc || chunk < 4096 || chunk > (256L << 20) ||
	    nstreams < 1 || nstreams > MAX_STREAMS || reps < 1 || reps > 1000) {
		usage();
		return 2;
	}
	if ((serve && (!through || via || seg_cap)) || (via && through) || (verify && !via)) {
		fprintf(stderr, "rados_direct: --serve needs --through DIR (its segments) and no "
				"--segment or --via; --via takes no --through; --verify needs --via\n");
		usage();
		return 2;
	}
	if (seg_cap < 0 || punch_unit < 0 || sync_every < 0 || (seg_cap && !through && !via) ||
	    (via && (punch_unit || sync_every)) ||
	    ((punch_unit || sync_every) && !seg_cap) || (seg_cap && seg_cap < nstreams * chunk)) {
		fprintf(stderr, "rados_direct: --segment CAPACITY needs --through DIR and at least "
				"--chunk bytes per stream; --punch and --sync need --segment and --through\n");
		usage();
		return 2;
	}

	rados_t cl;
	struct bench_ctx bc = {.chunk = (uint32_t)chunk,
			       .through = through,
			       .seg_cap = (uint64_t)seg_cap,
			       .punch_unit = (uint64_t)punch_unit,
			       .sync_every = (uint64_t)sync_every,
			       .via = via,
			       .verify = verify};
	struct stream *st = NULL;
	int rc = rados_create2(&cl, "ceph", "client.admin", 0);
	if (rc < 0) {
		fprintf(stderr, "rados_direct: rados_create2: %s\n", strerror(-rc));
		return 1;
	}
	int exit_code = 1;
	if ((rc = rados_conf_read_file(cl, conf)) < 0 ||
	    (rc = rados_conf_set(cl, "rados_osd_op_timeout", "60")) < 0 ||
	    (rc = rados_conf_set(cl, "rados_mon_op_timeout", "60")) < 0 ||
	    (rc = rados_conf_set(cl, "client_mount_timeout", "60")) < 0 ||
	    (rc = rados_connect(cl)) < 0) {
		fprintf(stderr, "rados_direct: cannot connect with %s: %s\n", conf, strerror(-rc));
		goto out_shutdown;
	}
	if ((rc = rados_ioctx_create(cl, pool, &bc.io)) < 0) {
		fprintf(stderr, "rados_direct: pool %s: %s\n", pool, strerror(-rc));
		goto out_shutdown;
	}
	if (ns)
		rados_ioctx_set_namespace(bc.io, ns);
	pthread_mutex_init(&bc.lock, NULL);
	pthread_cond_init(&bc.cond, NULL);
	if (serve) {
		rc = ipcfloor_serve(bc.io, serve, through, mode, (uint32_t)chunk);
		fprintf(stderr, "rados_direct: --serve %s: %s\n", serve, strerror(-rc));
		goto out;
	}
	if ((rc = list_files(&bc, prefix)) < 0) {
		fprintf(stderr, "rados_direct: listing %s: %s\n", pool, strerror(-rc));
		goto out;
	}
	st = calloc((size_t)nstreams, sizeof(*st));
	if (!st)
		goto out;
	for (long i = 0; i < nstreams; i++) {
		st[i].bc = &bc;
		st[i].buf = malloc((size_t)chunk);
		if (!st[i].buf)
			goto out;
	}
	printf("%zu files under \"%s\", %ld streams, %ld-byte reads%s%s", bc.nfiles, prefix,
	       nstreams, chunk, through ? ", each written to and read back from a file in " : "",
	       through ? through : "");
	if (via)
		printf(", each asked of the server on %s (a connection per stream)", via);
	if (seg_cap)
		printf(" (one segment file per stream, %lld bytes held in all, punched over it)", seg_cap);
	printf("\n");
	printf("%4s %14s %9s %9s\n", "rep", "bytes", "wall_s", "MB/s");
	for (long r = 1; r <= reps; r++) {
		long sw0 = self_switches();
		double t0 = bench_now();
		int64_t got = via       ? read_all_via(&bc, st, (unsigned)nstreams)
			      : through ? read_all_through(&bc, st, (unsigned)nstreams)
					: read_all(&bc, st, (unsigned)nstreams);
		double dt = bench_now() - t0;
		if (through)
			through_clean(&bc);
		if (got < 0)
			goto out;
		printf("%4ld %14lld %9.3f %9.1f", r, (long long)got, dt, (double)got / 1e6 / dt);
		if (seg_cap && !via)
			printf("  punches %llu syncs %llu", (unsigned long long)bc.punches,
			       (unsigned long long)bc.syncs);
		if (verify)
			printf("  sum %016llx", (unsigned long long)bc.sums);
		printf("  switches %ld", self_switches() - sw0);
		printf("\n");
		fflush(stdout);
	}
	exit_code = 0;
out:
	if (st)
		for (long i = 0; i < nstreams; i++)
			free(st[i].buf);
	free(st);
	if (bc.files) {
		size_t total = 0;
		for (size_t f = 0; f < bc.nfiles; f++)
			total += bc.files[f].nobj;
		for (size_t i = 0; i < total; i++)
			free(bc.files[0].obj[i].oid);
		free(bc.nfiles ? bc.files[0].obj : NULL);
		free(bc.files);
	}
	rados_ioctx_destroy(bc.io);
out_shutdown:
	rados_shutdown(cl);
	return exit_code;
}
