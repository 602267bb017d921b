/*
 * Tier directories and their files: see tier.h. Accounting helpers run on
 * the loop; tier_file_* on workers; tier_reconcile at startup, before the
 * loop serves anyone.
 */
#include "tier.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "segment.h"

static const char *const tier_names[TIER_COUNT] = {"hot", "warm"};

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static uint64_t pct_of(uint64_t v, unsigned pct)
{
	return v / 100 * pct + v % 100 * pct / 100;
}

/* The watermarks of the capacity the tier works with now. */
static void tier_watermarks(struct tier *t)
{
	uint64_t cap = tier_capacity_now(t);
	t->high_bytes = pct_of(cap, t->high_pct);
	t->low_bytes = pct_of(cap, t->low_pct);
}

void tier_set_limits(struct tier *t, const struct tier_conf *tc)
{
	t->capacity = tc->capacity;
	t->high_pct = tc->high_water;
	t->low_pct = tc->low_water;
	tier_watermarks(t);
}

void tier_set_room(struct tier *t, uint64_t room)
{
	t->room = room;
	tier_watermarks(t);
}

void tier_set_failed(struct tier *t, const char *reason)
{
	if (!t->failed)
		t->fail_count++;
	t->failed = true;
	snprintf(t->fail_reason, sizeof(t->fail_reason), "%s", reason);
}

void tier_set_ok(struct tier *t)
{
	t->failed = false;
	t->fail_reason[0] = '\0';
}

/* ---- the marker ---- */

static void random_id(char out[TIER_ID_LEN + 1])
{
	unsigned char b[TIER_ID_LEN / 2];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t r = getrandom(b + got, sizeof(b) - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) { /* no entropy source: time and pid still tell installs apart */
			uint64_t x = (uint64_t)time(NULL) * 6364136223846793005ull ^ (uint64_t)getpid();
			for (; got < sizeof(b); got++, x = x * 6364136223846793005ull + 1442695040888963407ull)
				b[got] = (unsigned char)(x >> 56);
			break;
		}
		got += (size_t)r;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Write DIR/.tiercache-tier atomically (temp name, fsync, rename). */
/* Write PATH (created or truncated, never through a symlink) with BUF and
 * fsync it. 0 or -errno; the file may be left behind on error. */
static int write_synced(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	int rc = tier_write_all(fd, buf, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int marker_write(const char *dir, const char *name, char id[TIER_ID_LEN + 1])
{
	char tmp[PATH_MAX + 64], fin[PATH_MAX + 64], text[256];
	random_id(id);
	snprintf(tmp, sizeof(tmp), "%s/%s.new", dir, TIER_MARKER);
	snprintf(fin, sizeof(fin), "%s/%s", dir, TIER_MARKER);
	int n = snprintf(text, sizeof(text),
			 "%s\ntier=%s\nid=%s\n# written by tiercached: this directory holds its chunk "
			 "files; do not put anything else here\n",
			 TIER_MARKER_MAGIC, name, id);
	int rc = write_synced(tmp, text, (size_t)n);
	if (rc == 0 && rename(tmp, fin) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/* Read DIR's marker: 0 with its tier name and id, -ENOENT (none),
 * -EBADMSG (a file of that name that is no marker), -errno. */
static int marker_read(const char *dir, char name[16], char id[TIER_ID_LEN + 1])
{
	char path[PATH_MAX + 64], text[512];
	snprintf(path, sizeof(path), "%s/%s", dir, TIER_MARKER);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EBADMSG : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EBADMSG;
	}
	ssize_t r = read(fd, text, sizeof(text) - 1);
	int rc = r < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return rc;
	text[r] = '\0';
	size_t ml = strlen(TIER_MARKER_MAGIC);
	if (strncmp(text, TIER_MARKER_MAGIC, ml) != 0 || text[ml] != '\n')
		return -EBADMSG;
	const char *tn = strstr(text, "\ntier="), *ti = strstr(text, "\nid=");
	if (!tn || !ti)
		return -EBADMSG;
	tn += 6;
	ti += 4;
	size_t nl = strcspn(tn, "\n"), il = strcspn(ti, "\n");
	if (nl == 0 || nl >= 16 || il != TIER_ID_LEN || strspn(ti, "0123456789abcdef") < il)
		return -EBADMSG;
	memcpy(name, tn, nl);
	name[nl] = '\0';
	memcpy(id, ti, il);
	id[il] = '\0';
	return 0;
}

/* What DIR holds besides ".", ".." and "lost+found" (a fresh ext4 file
 * system's): nothing (1), only the daemon's chunks/, tmp/ and segments/ (2), anything
 * else (0); -errno. */
static int dir_contents(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int kind = 1;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "lost+found"))
			continue;
		if (!strcmp(n, "chunks") || !strcmp(n, "tmp") || !strcmp(n, SEGMENT_DIR)) {
			struct stat st;
			if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
				kind = 2;
				continue;
			}
		}
		kind = 0;
		break;
	}
	closedir(d);
	return kind;
}

/* chunks/, chunks/00..ff, tmp/ under DIR. */
static int make_layout(const char *dir, const char *name, char *err, size_t n)
{
	char sub[PATH_MAX + 32];
	static const char *const subs[] = {"/chunks", "/tmp"};
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		snprintf(sub, sizeof(sub), "%s%s", dir, subs[i]);
		if (mkdir(sub, 0750) < 0 && errno != EEXIST) {
			int rc = -errno;
			snprintf(err, n, "tier %s: cannot create %s: %s", name, sub, strerror(errno));
			return rc;
		}
	}
	for (unsigned i = 0; i < 256; i++) {
		snprintf(sub, sizeof(sub), "%s/chunks/%02x", dir, i);
		if (mkdir(sub, 0750) < 0 && errno != EEXIST) {
			int rc = -errno;
			snprintf(err, n, "tier %s: cannot create %s: %s", name, sub, strerror(errno));
			return rc;
		}
	}
	return 0;
}

/* Claim DIR for tier NAME (see tier.h): check its marker or write one. */
static int claim_dir(const char *dir, const char *name, char id[TIER_ID_LEN + 1], char *err, size_t n)
{
	char mname[16];
	int rc = marker_read(dir, mname, id);
	if (rc == 0) {
		if (strcmp(mname, name) != 0) {
			snprintf(err, n, "tier %s: %s is the %s tier's directory (its %s says so); give "
				 "each tier its own directory", name, dir, mname, TIER_MARKER);
			return -EEXIST;
		}
		return 0;
	}
	if (rc == -EBADMSG) {
		snprintf(err, n, "tier %s: %s/%s is not a tiercache marker; refusing to touch %s; "
			 "point %s.path at an empty directory or move its contents", name, dir,
			 TIER_MARKER, dir, name);
		return -EEXIST;
	}
	if (rc != -ENOENT) {
		snprintf(err, n, "tier %s: cannot read %s/%s: %s", name, dir, TIER_MARKER, strerror(-rc));
		return rc;
	}
	int kind = dir_contents(dir);
	if (kind < 0) {
		snprintf(err, n, "tier %s: cannot list %s: %s", name, dir, strerror(-kind));
		return kind;
	}
	if (kind == 0) {
		snprintf(err, n, "%s is not empty and has no tiercache marker; refusing to touch it; "
			 "point %s.path at an empty directory or move its contents", dir, name);
		return -EEXIST;
	}
	rc = marker_write(dir, name, id);
	if (rc < 0) {
		snprintf(err, n, "tier %s: cannot write %s/%s: %s", name, dir, TIER_MARKER, strerror(-rc));
		return rc;
	}
	if (kind == 2) /* chunks/ and tmp/ but no marker: an install from before markers */
		log_info("tier=%s path=%s op=marker action=written reason=\"a tier directory of an "
			 "earlier version (chunks/ and tmp/ only)\"", name, dir);
	return 0;
}

int tier_setup(struct tier *t, enum tier_id id, const struct tier_conf *tc, char id_out[TIER_ID_LEN + 1],
	       char *err, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->name = tier_names[id];
	t->room = UINT64_MAX;
	id_out[0] = '\0';
	if (!tc->present)
		return 0;
	t->present = true;
	snprintf(t->path, sizeof(t->path), "%s", tc->path);
	tier_set_limits(t, tc);
	int rc = mkdir_p(t->path, 0750);
	if (rc < 0) {
		snprintf(err, n, "tier %s: cannot create %s: %s", t->name, t->path, strerror(-rc));
		return rc;
	}
	rc = claim_dir(t->path, t->name, id_out, err, n);
	if (rc < 0)
		return rc;
	return make_layout(t->path, t->name, err, n);
}

int tier_probe(const char *tier_path)
{
	char path[PATH_MAX + 64];
	static const char pattern[4096] = {'t', 'i', 'e', 'r', 'c', 'a', 'c', 'h', 'e'};
	snprintf(path, sizeof(path), "%s/tmp/probe.%d.tmp", tier_path, (int)getpid());
	int rc = write_synced(path, pattern, sizeof(pattern));
	if (unlink(path) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int tier_check_layout(const char *dir, const char *name)
{
	char mname[16], id[TIER_ID_LEN + 1], sub[PATH_MAX + 32];
	struct stat st;
	int rc = marker_read(dir, mname, id);
	if (rc == -EBADMSG || (rc == 0 && strcmp(mname, name) != 0))
		return -ENOENT; /* not ours any more */
	if (rc < 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s/chunks", dir);
	if (stat(sub, &st) < 0)
		return -errno;
	snprintf(sub, sizeof(sub), "%s/tmp", dir);
	if (stat(sub, &st) < 0)
		return -errno;
	return 0;
}

int tier_reinit(const char *dir, const char *name, char id_out[TIER_ID_LEN + 1])
{
	char err[PATH_MAX + 128];
	int kind = dir_contents(dir);
	if (kind < 0)
		return kind;
	if (kind != 1)
		return -ENOTEMPTY;
	int rc = make_layout(dir, name, err, sizeof(err));
	if (rc == 0)
		rc = marker_write(dir, name, id_out);
	return rc;
}

void tier_chunk_path(const struct tier *t, uint64_t key, char *buf, size_t n)
{
	snprintf(buf, n, "%s/chunks/%02x/%016" PRIx64 ".chunk", t->path, (unsigned)(key >> 56), key);
}

void tier_tmp_path(const struct tier *t, uint64_t key, char *buf, size_t n)
{
	static atomic_uint_fast64_t seq;
	uint64_t s = atomic_fetch_add(&seq, 1);
	snprintf(buf, n, "%s/tmp/%016" PRIx64 ".%d.%" PRIu64 ".tmp", t->path, key, (int)getpid(), s);
}

int tier_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int tier_file_write(const char *tmp, const char *final, const void *buf, size_t len, int *fd)
{
	int rc = 0;
	int wfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (wfd < 0)
		return -errno;
	rc = tier_write_all(wfd, buf, len);
	if (rc < 0)
		goto fail;
	if (fdatasync(wfd) < 0) {
		rc = -errno;
		goto fail;
	}
	if (rename(tmp, final) < 0) {
		rc = -errno;
		goto fail;
	}
	close(wfd);
	*fd = open(final, O_RDONLY | O_CLOEXEC);
	return *fd < 0 ? -errno : 0;
fail:
	close(wfd);
	unlink(tmp);
	return rc;
}

int tier_file_write_pieces(const char *tmp, const char *final, const void *buf, size_t len,
			   bool sync, void (*each)(void *arg, const void *p, size_t n), void *arg,
			   int *fd)
{
	int rc = 0;
	*fd = -1;
	int wfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (wfd < 0)
		return -errno;
	for (size_t at = 0; at < len && rc == 0;) {
		size_t n = len - at < TIER_PIECE ? len - at : TIER_PIECE;
		each(arg, (const char *)buf + at, n);
		rc = tier_write_all(wfd, (const char *)buf + at, n);
		at += n;
	}
	if (rc < 0)
		goto fail;
	if (sync && fdatasync(wfd) < 0) {
		rc = -errno;
		goto fail;
	}
	if (rename(tmp, final) < 0) {
		rc = -errno;
		goto fail;
	}
	*fd = wfd;
	return 0;
fail:
	close(wfd);
	unlink(tmp);
	return rc;
}

int tier_file_write_unlinked(const char *tmp, const void *buf, size_t len, int *fd)
{
	int rc = 0;
	*fd = -1;
	int wfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (wfd < 0)
		return -errno;
	rc = tier_write_all(wfd, buf, len);
	if (rc < 0)
		goto out;
	/* no fdatasync: nothing refers to these bytes after a crash */
	*fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		rc = -errno;
out:
	close(wfd);
	unlink(tmp);
	return rc;
}

int tier_file_pread(const char *path, void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	int rc = 0;
	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0) {
			rc = -EIO; /* shorter than the index says */
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	return rc;
}

int tier_file_read(const char *path, void *buf, size_t len)
{
	return tier_file_pread(path, buf, len, 0);
}

/* Remove dir's regular files named *.tmp (the daemon's temp names). */
static void remove_tmp_files(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		struct stat st;
		if (de->d_name[0] == '.' || l < 5 || strcmp(de->d_name + l - 4, ".tmp") != 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			(*count)++;
	}
	closedir(d);
}

static bool parse_chunk_name(const char *name, uint64_t *key)
{
	char *end;
	if (strlen(name) != 16 + 6 || strcmp(name + 16, ".chunk") != 0)
		return false;
	if (strspn(name, "0123456789abcdef") != 16)
		return false;
	errno = 0;
	unsigned long long v = strtoull(name, &end, 16);
	if (errno || end != name + 16)
		return false;
	*key = v;
	return true;
}

int tier_reconcile(struct tier *t, bool (*known)(void *arg, struct tier *t, uint64_t key, uint64_t size),
		   void *arg, unsigned *orphans)
{
	char dir[PATH_MAX + 32];
	unsigned tmp_removed = 0;
	*orphans = 0;
	if (!t->present)
		return 0;
	snprintf(dir, sizeof(dir), "%s/tmp", t->path);
	remove_tmp_files(dir, &tmp_removed);
	for (unsigned i = 0; i < 256; i++) {
		snprintf(dir, sizeof(dir), "%s/chunks/%02x", t->path, i);
		DIR *d = opendir(dir);
		if (!d)
			return -errno;
		struct dirent *de;
		while ((de = readdir(d))) {
			uint64_t key;
			struct stat st;
			/* only files of the daemon's own naming, in the right
			 * folder: anything else is not ours to delete */
			if (!parse_chunk_name(de->d_name, &key) || (unsigned)(key >> 56) != i ||
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			if (!known(arg, t, key, (uint64_t)st.st_size) &&
			    unlinkat(dirfd(d), de->d_name, 0) == 0)
				(*orphans)++;
		}
		closedir(d);
	}
	if (tmp_removed)
		log_info("tier=%s op=reconcile tmp_removed=%u", t->name, tmp_removed);
	return 0;
}
