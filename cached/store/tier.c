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
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

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

void tier_set_limits(struct tier *t, const struct tier_conf *tc)
{
	t->capacity = tc->capacity;
	t->high_bytes = tc->capacity / 100 * tc->high_water + tc->capacity % 100 * tc->high_water / 100;
	t->low_bytes = tc->capacity / 100 * tc->low_water + tc->capacity % 100 * tc->low_water / 100;
}

int tier_setup(struct tier *t, enum tier_id id, const struct tier_conf *tc, char *err, size_t n)
{
	char sub[PATH_MAX + 32];
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->name = tier_names[id];
	if (!tc->present)
		return 0;
	t->present = true;
	snprintf(t->path, sizeof(t->path), "%s", tc->path);
	tier_set_limits(t, tc);
	static const char *const subs[] = {"", "/chunks", "/tmp"};
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		snprintf(sub, sizeof(sub), "%s%s", t->path, subs[i]);
		int rc = mkdir_p(sub, 0750);
		if (rc < 0) {
			snprintf(err, n, "tier %s: cannot create %s: %s", t->name, sub, strerror(-rc));
			return rc;
		}
	}
	for (unsigned i = 0; i < 256; i++) {
		snprintf(sub, sizeof(sub), "%s/chunks/%02x", t->path, i);
		if (mkdir(sub, 0750) < 0 && errno != EEXIST) {
			int rc = -errno;
			snprintf(err, n, "tier %s: cannot create %s: %s", t->name, sub, strerror(errno));
			return rc;
		}
	}
	return 0;
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

int tier_file_read(const char *path, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	int rc = 0;
	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)got);
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

static void remove_dir_files(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			(*count)++;
	}
	closedir(d);
}

static bool parse_chunk_name(const char *name, uint64_t *key)
{
	char *end;
	if (strlen(name) != 16 + 6 || strcmp(name + 16, ".chunk") != 0)
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
	remove_dir_files(dir, &tmp_removed);
	for (unsigned i = 0; i < 256; i++) {
		snprintf(dir, sizeof(dir), "%s/chunks/%02x", t->path, i);
		DIR *d = opendir(dir);
		if (!d)
			return -errno;
		struct dirent *de;
		while ((de = readdir(d))) {
			uint64_t key;
			struct stat st;
			if (de->d_name[0] == '.')
				continue;
			bool keep = parse_chunk_name(de->d_name, &key) &&
				    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISREG(st.st_mode) && known(arg, t, key, (uint64_t)st.st_size);
			if (!keep && unlinkat(dirfd(d), de->d_name, 0) == 0)
				(*orphans)++;
		}
		closedir(d);
	}
	if (tmp_removed)
		log_info("tier=%s op=reconcile tmp_removed=%u", t->name, tmp_removed);
	return 0;
}
