/*
 * Segment files: see segment.h.
 */
#include "segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

void segment_path(const struct segstore *s, uint64_t id, char *buf, size_t n)
{
	snprintf(buf, n, "%s/seg-%s-%016" PRIx64, s->dir, s->tier_name, id);
}

static uint64_t align_up(uint64_t x)
{
	return (x + SEGMENT_ALIGN - 1) / SEGMENT_ALIGN * SEGMENT_ALIGN;
}

static uint64_t align_down(uint64_t x)
{
	return x / SEGMENT_ALIGN * SEGMENT_ALIGN;
}

/* The id of a file named like one of this store's segments, or 0. */
static uint64_t seg_name_id(const struct segstore *s, const char *name)
{
	char want[64];
	int n = snprintf(want, sizeof(want), "seg-%s-", s->tier_name);
	if (n <= 0 || (size_t)n >= sizeof(want) || strncmp(name, want, (size_t)n) != 0)
		return 0;
	const char *hex = name + n;
	if (strlen(hex) != 16)
		return 0;
	uint64_t id = 0;
	for (int i = 0; i < 16; i++) {
		char c = hex[i];
		unsigned v;
		if (c >= '0' && c <= '9')
			v = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = (unsigned)(c - 'a' + 10);
		else
			return 0;
		id = (id << 4) | v;
	}
	return id;
}

int segstore_init(struct segstore *s, const char *tier_path, const char *tier_name, uint64_t seg_size)
{
	memset(s, 0, sizeof(*s));
	if ((size_t)snprintf(s->dir, sizeof(s->dir), "%s/" SEGMENT_DIR, tier_path) >= sizeof(s->dir))
		return -ENAMETOOLONG;
	snprintf(s->tier_name, sizeof(s->tier_name), "%s", tier_name);
	s->seg_size = seg_size ? seg_size : SEGMENT_SIZE_DEFAULT;
	s->next_id = 1;
	s->spare = (struct seg_spare){.wfd = -1, .rfd = -1};
	if (mkdir(s->dir, 0750) < 0 && errno != EEXIST)
		return -errno;
	segstore_probe_punch(s);
	return 0;
}

uint64_t segment_size_for(uint64_t configured, uint64_t capacity)
{
	uint64_t size = configured ? configured : SEGMENT_SIZE_DEFAULT;
	uint64_t part = capacity / SEGMENT_TIER_SHARE;
	if (part < SEGMENT_SIZE_MIN)
		part = SEGMENT_SIZE_MIN;
	return size < part ? size : part;
}

static void seg_close_fds(struct segment *g)
{
	if (g->wfd >= 0)
		close(g->wfd);
	if (g->rfd >= 0)
		close(g->rfd);
	g->wfd = g->rfd = -1;
}

/* g is gone: its descriptors go through the store's closer */
static void seg_drop_fds(struct segstore *s, struct segment *g)
{
	int fds[2] = {g->wfd, g->rfd};
	g->wfd = g->rfd = -1;
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		if (s->close_fd)
			s->close_fd(s->close_arg, fds[i]);
		else
			close(fds[i]);
	}
}

static void seg_spare_drop(struct segstore *s);

void segstore_free(struct segstore *s)
{
	seg_spare_drop(s);
	struct segment *g = s->list;
	while (g) {
		struct segment *next = g->next;
		seg_close_fds(g);
		free(g);
		g = next;
	}
	s->list = s->opens = NULL;
}

static struct segment *seg_new(struct segstore *s, uint64_t id)
{
	struct segment *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->id = id;
	g->store = s;
	g->named = true;
	g->wfd = g->rfd = -1;
	seg_link_init(&g->items_live);
	segment_path(s, id, g->path, sizeof(g->path));
	g->next = s->list;
	s->list = g;
	s->nsegs++;
	if (id >= s->next_id)
		s->next_id = id + 1;
	return g;
}

static void seg_remove_from_list(struct segstore *s, struct segment *g)
{
	for (struct segment **p = &s->list; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			return;
		}
}

int segment_file_create(const char *dir, const char *path, int *wfd, int *rfd)
{
	/* O_EXCL: never append to a file we did not start */
	int w = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (w < 0 && errno == ENOENT && mkdir(dir, 0750) == 0) {
		/* the tier directory was removed and recreated while running
		 * (tier_health re-made chunks/ and tmp/): segments/ too */
		w = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	}
	if (w < 0)
		return -errno;
	int r = open(path, O_RDONLY | O_CLOEXEC);
	if (r < 0) {
		int rc = -errno;
		unlink(path);
		close(w);
		return rc;
	}
	*wfd = w;
	*rfd = r;
	return 0;
}

/* Give up the spare: close it, delete its file (empty, unrecorded). */
static void seg_spare_drop(struct segstore *s)
{
	struct seg_spare *sp = &s->spare;
	if (sp->id && !sp->pending) {
		char path[PATH_MAX + 64];
		segment_path(s, sp->id, path, sizeof(path));
		if (sp->rfd >= 0) /* still its file (not a recreated one's) */
			unlink(path);
		if (sp->wfd >= 0)
			close(sp->wfd);
		if (sp->rfd >= 0)
			close(sp->rfd);
		*sp = (struct seg_spare){.wfd = -1, .rfd = -1};
	}
}

/* Ask for the next spare if there is none. */
static void seg_spare_ask(struct segstore *s)
{
	struct seg_spare *sp = &s->spare;
	if (!s->spare_make || sp->id || sp->pending)
		return;
	uint64_t id = s->next_id++; /* taken: no segment of the loop's gets it */
	*sp = (struct seg_spare){.id = id, .wfd = -1, .rfd = -1, .pending = true};
	if (!s->spare_make(s->spare_arg, s, id))
		*sp = (struct seg_spare){.wfd = -1, .rfd = -1};
}

void segstore_spare_done(struct segstore *s, uint64_t id, int rc, int wfd, int rfd)
{
	struct seg_spare *sp = &s->spare;
	if (!sp->pending || sp->id != id) { /* not asked for (cannot happen): not kept */
		if (rc == 0) {
			char path[PATH_MAX + 64];
			segment_path(s, id, path, sizeof(path));
			unlink(path);
			close(wfd);
			close(rfd);
		}
		return;
	}
	sp->pending = false;
	if (rc < 0) {
		s->spare_errors++;
		*sp = (struct seg_spare){.wfd = -1, .rfd = -1};
		return;
	}
	sp->wfd = wfd;
	sp->rfd = rfd;
}

/* Take the spare as segment g's file, if there is one still named (its
 * directory not removed meanwhile) and it can be opened for appends. */
static bool seg_spare_take(struct segstore *s, struct segment *g)
{
	struct seg_spare *sp = &s->spare;
	if (!sp->id || sp->pending || sp->id != g->id)
		return false;
	struct stat st;
	if (fstat(sp->rfd, &st) < 0 || st.st_nlink == 0 || st.st_size != 0) {
		seg_spare_drop(s);
		return false;
	}
	if (sp->wfd < 0) /* closed while idle (segstore_idle_close) */
		sp->wfd = open(g->path, O_WRONLY | O_CLOEXEC);
	if (sp->wfd < 0) {
		seg_spare_drop(s);
		return false;
	}
	g->wfd = sp->wfd;
	g->rfd = sp->rfd;
	*sp = (struct seg_spare){.wfd = -1, .rfd = -1};
	s->spares_used++;
	return true;
}

static int seg_create(struct segstore *s, uint64_t domain, struct segment **out)
{
	struct seg_spare *sp = &s->spare;
	bool spare = sp->id && !sp->pending;
	uint64_t id = spare ? sp->id : s->next_id;
	struct segment *g = seg_new(s, id);
	if (!g)
		return -ENOMEM;
	if (!spare || !seg_spare_take(s, g)) {
		/* (a spare given up was deleted: its name is free again) */
		int rc = segment_file_create(s->dir, g->path, &g->wfd, &g->rfd);
		if (rc < 0) {
			seg_remove_from_list(s, g);
			s->nsegs--;
			free(g);
			return rc;
		}
		s->created_on_loop++;
	}
	s->created++;
	seg_spare_ask(s); /* for the next one */
	g->aligned = true;
	g->domain = domain;
	g->next_open = s->opens;
	s->opens = g;
	*out = g;
	return 0;
}

static void seg_seal(struct segstore *s, struct segment *g)
{
	if (g->sealed)
		return;
	g->sealed = true;
	s->sealed++;
	for (struct segment **p = &s->opens; *p; p = &(*p)->next_open)
		if (*p == g) {
			*p = g->next_open;
			break;
		}
	g->next_open = NULL;
	if (!g->writers && g->wfd >= 0) {
		close(g->wfd);
		g->wfd = -1;
	}
}

void segstore_seal_open(struct segstore *s)
{
	while (s->opens)
		seg_seal(s, s->opens);
}

int segstore_assign(struct segstore *s, uint64_t domain, uint32_t len, struct segment **seg,
		    uint64_t *off)
{
	struct segment *g = s->opens;
	while (g && g->domain != domain)
		g = g->next_open;
	if (g && align_up(g->end) + len > s->seg_size && g->size > 0) {
		seg_seal(s, g);
		g = NULL;
	}
	if (g && g->wfd < 0) {
		/* closed while idle (segstore_idle_close): open it again; if that
		 * fails (removed, read-only), seal it and start a new one, whose
		 * creation reports the error if the tier cannot be written */
		g->wfd = open(g->path, O_WRONLY | O_CLOEXEC);
		if (g->wfd < 0) {
			seg_seal(s, g);
			g = NULL;
		}
	}
	if (!g) {
		int rc = seg_create(s, domain, &g);
		if (rc < 0)
			return rc;
	}
	*seg = g;
	*off = align_up(g->end); /* the padding is a hole: never written */
	g->end = *off + len;
	g->size += len;
	g->writers++;
	s->bytes_dead += len; /* dead until written and live */
	return 0;
}

void segstore_set_size(struct segstore *s, uint64_t seg_size)
{
	s->seg_size = seg_size;
}

void segstore_idle_close(struct segstore *s)
{
	for (struct segment *g = s->opens; g; g = g->next_open)
		if (!g->writers && g->wfd >= 0) {
			close(g->wfd);
			g->wfd = -1;
		}
	if (s->spare.id && !s->spare.pending && s->spare.wfd >= 0) {
		close(s->spare.wfd); /* seg_spare_take opens it again */
		s->spare.wfd = -1;
	}
}

static bool seg_empty_sealed(const struct segment *g)
{
	return g->named && g->sealed && !g->writers && !g->items;
}

bool segment_write_end(struct segstore *s, struct segment *g, uint32_t len, bool ok)
{
	g->writers--;
	if (ok) {
		g->live += len;
		g->items++;
		s->bytes_dead -= len;
		s->bytes_live += len;
	}
	if (g->sealed && !g->writers && g->wfd >= 0) {
		close(g->wfd);
		g->wfd = -1;
	}
	if (seg_empty_sealed(g)) {
		segment_unlink(s, g);
		return true;
	}
	return false;
}

bool segment_item_dead(struct segstore *s, struct segment *g, uint32_t len)
{
	g->live -= len;
	g->items--;
	if (g->named) {
		s->bytes_live -= len;
		s->bytes_dead += len;
	}
	if (seg_empty_sealed(g)) {
		segment_unlink(s, g);
		return true;
	}
	return false;
}

void segment_unlink(struct segstore *s, struct segment *g)
{
	if (!g->named)
		return;
	if (!g->sealed)
		seg_seal(s, g);
	if (unlink(g->path) < 0 && errno != ENOENT)
		log_warn("op=segment_unlink path=%s err=\"%s\"", g->path, strerror(errno));
	g->named = false;
	s->nsegs--;
	s->bytes_live -= g->live;
	s->bytes_dead -= segment_disk_bytes(g) - g->live;
	s->punched_bytes -= g->punched;
	s->reclaimed++;
	if (!g->refs && !g->writers) {
		seg_remove_from_list(s, g);
		seg_drop_fds(s, g);
		free(g);
	}
}

void segment_hold(struct segment *g)
{
	if (g->holds++ == 0)
		g->store->held++;
}

bool segment_unhold(struct segment *g)
{
	if (!g->holds || --g->holds)
		return false;
	g->store->held--;
	return true;
}

void segment_ref(struct segment *g)
{
	g->refs++;
}

bool segment_unref(struct segstore *s, struct segment *g)
{
	if (--g->refs || g->named || g->writers)
		return false;
	seg_remove_from_list(s, g);
	seg_drop_fds(s, g);
	free(g);
	return true;
}

/* g may be reclaimed with at most max_live_pct % of it live. */
static bool reclaimable(const struct segment *g, unsigned max_live_pct)
{
	if (!g->named || g->writers || !g->size)
		return false;
	/* a held one would give nothing back until its holders let go, while
	 * the copies of its live items take room now: the tier could pass its
	 * high mark on the reclaim's own account */
	if (g->holds)
		return false;
	/* an open one too, if it has dead bytes: on a small tier (or one
	 * whose capacity a reload lowered) its dead bytes could otherwise
	 * hold the tier over its marks; it is sealed when chosen */
	uint64_t disk = segment_disk_bytes(g);
	if (!g->sealed && (disk == g->live || !g->items))
		return false; /* (an empty one goes with its next item's death) */
	return disk > g->live && g->live * 100 <= disk * max_live_pct;
}

/* Its dead bytes on disk: what reclaiming it gives back. */
static uint64_t dead_on_disk(const struct segment *g)
{
	return segment_disk_bytes(g) - g->live;
}

struct segment *segstore_reclaim_candidate(struct segstore *s, unsigned max_live_pct)
{
	struct segment *best = NULL;
	if (segstore_reclaim_candidates(s, max_live_pct, &best, 1))
		segment_seal(s, best);
	return best;
}

size_t segstore_reclaim_candidates(struct segstore *s, unsigned max_live_pct, struct segment **out,
				   size_t k)
{
	size_t n = 0;
	for (struct segment *g = s->list; g && k; g = g->next) {
		if (!reclaimable(g, max_live_pct))
			continue;
		/* insert by dead bytes, most first (the first of equals
		 * first); the k deadest stay */
		uint64_t dead = dead_on_disk(g);
		if (n == k) {
			if (dead <= dead_on_disk(out[k - 1]))
				continue;
			n--;
		}
		size_t i = n++;
		while (i > 0 && dead_on_disk(out[i - 1]) < dead) {
			out[i] = out[i - 1];
			i--;
		}
		out[i] = g;
	}
	return n;
}

void segment_seal(struct segstore *s, struct segment *g)
{
	seg_seal(s, g);
}

struct segment *segstore_find(const struct segstore *s, uint64_t id)
{
	for (struct segment *g = s->list; g; g = g->next)
		if (g->id == id && g->named)
			return g;
	return NULL;
}

int segment_open_fd(const struct segment *g)
{
	int fd = g->rfd >= 0 ? fcntl(g->rfd, F_DUPFD_CLOEXEC, 0) : open(g->path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int segstore_load(struct segstore *s, bool (*keep)(void *arg, uint64_t id, uint64_t size), void *arg,
		  unsigned *removed)
{
	*removed = 0;
	DIR *d = opendir(s->dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t id = seg_name_id(s, de->d_name);
		if (!id)
			continue;
		char path[PATH_MAX + 64];
		segment_path(s, id, path, sizeof(path));
		struct stat st;
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (!keep(arg, id, (uint64_t)st.st_size)) {
			if (unlink(path) == 0)
				(*removed)++;
			continue;
		}
		struct segment *g = seg_new(s, id);
		if (!g) {
			closedir(d);
			return -ENOMEM;
		}
		g->size = g->end = (uint64_t)st.st_size;
		g->aligned = true; /* until an item that is not (segment_adopt_item) */
		g->found = g->gaps = true;
		g->sealed = true; /* never appended to again */
		g->rfd = open(path, O_RDONLY | O_CLOEXEC);
		/* its holes (padding, punched items) take no room */
		if (g->rfd >= 0)
			g->punched = g->size - segment_data_bytes(g->rfd, 0, g->size);
		s->sealed++;
		s->punched_bytes += g->punched;
		s->bytes_dead += segment_disk_bytes(g);
	}
	closedir(d);
	return 0;
}

void segment_adopt_item(struct segstore *s, struct segment *g, uint64_t off, uint32_t len)
{
	if (off % SEGMENT_ALIGN)
		g->aligned = false;
	g->live += len;
	g->items++;
	s->bytes_dead -= len;
	s->bytes_live += len;
}

void segstore_load_done(struct segstore *s)
{
	struct segment *g = s->list;
	while (g) {
		struct segment *next = g->next;
		if (seg_empty_sealed(g))
			segment_unlink(s, g);
		g = next;
	}
	s->reclaimed = 0; /* not reclaims of this run */
}

int segment_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

bool segment_punch_range(const struct segment *g, uint64_t off, uint32_t len, uint64_t *lo,
			 uint64_t *hi, uint64_t *acct)
{
	if (g->aligned && off % SEGMENT_ALIGN == 0) {
		/* up to the next boundary: no item starts before it */
		*lo = off;
		*hi = align_up(off + len);
		*acct = !g->found ? len : (*hi < g->size ? *hi : g->size) - off;
	} else {
		/* the blocks inside it: its neighbours may share the others */
		*lo = align_up(off);
		*hi = align_down(off + len);
		*acct = *hi > *lo ? *hi - *lo : 0;
	}
	return *hi > *lo && *acct;
}

void segment_punched(struct segstore *s, struct segment *g, uint64_t acct)
{
	g->punched += acct;
	s->bytes_dead -= acct;
	s->punched_bytes += acct;
	s->punches++;
}

void segment_unpunched(struct segstore *s, struct segment *g, uint64_t acct)
{
	g->punched -= acct;
	s->bytes_dead += acct;
	s->punched_bytes -= acct;
}

int segment_sync(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fdatasync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int segment_punch(int fd, uint64_t lo, uint64_t hi)
{
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)lo, (off_t)(hi - lo)) < 0
		       ? -errno
		       : 0;
}

uint64_t segment_data_bytes(int fd, uint64_t lo, uint64_t hi)
{
	uint64_t data = 0, off = lo;
	while (off < hi) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA);
		if (d < 0) /* ENXIO: no data past off; else: count it all */
			return errno == ENXIO ? data : data + (hi - off);
		if ((uint64_t)d >= hi)
			break;
		off_t h = lseek(fd, d, SEEK_HOLE);
		uint64_t e = h < 0 ? hi : (uint64_t)h < hi ? (uint64_t)h : hi;
		data += e - (uint64_t)d;
		off = e;
	}
	return data;
}

void segstore_probe_punch(struct segstore *s)
{
	char path[PATH_MAX + 64];
	char buf[2 * SEGMENT_ALIGN];
	snprintf(path, sizeof(path), "%s/.punch-probe", s->dir);
	memset(buf, 0x5a, sizeof(buf));
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	int rc = fd < 0 ? -errno : segment_pwrite(fd, buf, sizeof(buf), 0);
	if (rc == 0)
		rc = segment_punch(fd, 0, SEGMENT_ALIGN);
	/* the bytes past the hole stay, the hole reads zeros */
	if (rc == 0 && (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) || buf[0] != 0 ||
			buf[SEGMENT_ALIGN] != 0x5a))
		rc = -EIO;
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	s->punch = rc == 0;
	if (rc < 0)
		snprintf(s->punch_why, sizeof(s->punch_why), "the tier's file system cannot punch "
			 "holes (%s)", strerror(-rc));
	else
		s->punch_why[0] = '\0';
}
