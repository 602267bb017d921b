/*
 * libtiercache: hand out a chunk file's descriptor for a file offset, so a
 * caller that moves bytes into another descriptor (the FUSE mount splicing
 * into /dev/fuse) can do it without a copy through its own memory.
 *
 * The caller gets a dup of the descriptor the handle's chunk cache holds,
 * never that descriptor itself: another thread may evict the cache entry
 * (and close its fd) while the caller still splices. Chunk files are
 * immutable once published, so the dup reads the right bytes for as long
 * as it is open, even after the daemon evicts the chunk.
 *
 * A consumer that splices gets no error for a short file, only fewer
 * bytes (which a FUSE reply passes on as an early end of file), so the
 * descriptor's size is checked here, as pread_full checks every read: a
 * chunk file shorter than its chunk is EIO, never short data.
 *
 * Threads: like tiercache_pread (any thread, the chunk pinned while dup'd).
 */
#include "libtc_private.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int tiercache_chunk_fd(struct tiercache *tc, int h, uint64_t off, uint64_t *fd_off, size_t *len)
{
	tc_err_begin();
	if (!tc || !fd_off || !len)
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	struct tc_handle *hd = tc_handle_get(tc, h);
	if (!hd)
		return tc_err_fail(-EBADF);
	int rc = 0;
	pthread_mutex_lock(&tc->tbl_lock);
	bool stale = hd->stale;
	bool streamed = hd->streamed;
	pthread_mutex_unlock(&tc->tbl_lock);
	if (stale) {
		tc_err_detail("%s changed in its source since it was opened", hd->path);
		rc = -ESTALE;
		goto out;
	}
	if (tc->no_fd_passing || streamed) {
		tc_err_detail("%s: descriptors are not passed on this connection; use pread",
			      hd->path);
		rc = -ENOTSUP;
		goto out;
	}
	/* size and chunk_size never change after open */
	uint64_t size = hd->size, cs = hd->chunk_size;
	if (off >= size) {
		tc_err_detail("%s: offset %llu is at or past the end (%llu bytes)", hd->path,
			      (unsigned long long)off, (unsigned long long)size);
		rc = -ENXIO;
		goto out;
	}
	uint64_t idx = off / cs, start = idx * cs;
	uint64_t clen = size - start < cs ? size - start : cs;
	struct tc_chunk *c;
	rc = tc_chunk_get(tc, hd, (uint32_t)idx, (uint32_t)clen, &c);
	if (rc < 0)
		goto out;
	if (!c) { /* the daemon answered without a descriptor */
		tc_err_detail("%s: the daemon streams this file; use pread", hd->path);
		rc = -ENOTSUP;
		goto out;
	}
	struct stat st;
	int fd = -1;
	for (int attempt = 0;; attempt++) {
		fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
		} else if (fstat(fd, &st) < 0) {
			rc = -errno;
		} else if ((uint64_t)st.st_size < c->base + clen) {
			tc_err_detail("%s chunk %llu: cached file shorter than its %llu bytes", hd->path,
				      (unsigned long long)idx, (unsigned long long)clen);
			rc = -EIO;
		}
		if (rc != -EIO || attempt)
			break;
		/* truncated on the daemon's disk: it checks the file and reads
		 * the chunk again; once */
		close(fd);
		fd = -1;
		struct tc_chunk *again = NULL;
		rc = tc_chunk_recheck(tc, hd, c, (uint32_t)clen, &again);
		tc_chunk_put(tc, hd, c);
		c = again;
		if (rc < 0)
			goto out;
		if (!c) {
			tc_err_detail("%s: the daemon streams this file; use pread", hd->path);
			rc = -ENOTSUP;
			goto out;
		}
	}
	uint64_t base = c->base; /* c may be freed by the put */
	tc_chunk_put(tc, hd, c);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	*fd_off = base + (off - start);
	*len = (size_t)(clen - (off - start));
	tc_handle_put(tc, hd);
	return fd;
out:
	tc_handle_put(tc, hd);
	return tc_err_fail(rc);
}
