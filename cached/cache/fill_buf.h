/*
 * Fill buffers kept for the next fills. Every miss needs a buffer of a
 * chunk's size for the bytes on their way from the cold store or a peer to
 * the tier file. A fresh malloc of 1 MiB per chunk comes back from the
 * kernel as untouched pages (glibc returns freed heap tops and mmapped
 * blocks), and the first write into each page faults: on the development
 * VM the copy into a fresh fill buffer was about a quarter of the loop
 * thread's time in a peer read (docs/cluster.md "Measured"). So the
 * buffers of finished fills are kept, up to FILL_SPARE_MAX of them and
 * FILL_SPARE_BYTES in all, and handed to the next fills of the same size
 * class (sizes are rounded up to a power of two, at least 4 KiB). Loop
 * thread only (fills are started and finished there).
 */
#ifndef TIERCACHE_FILL_BUF_H
#define TIERCACHE_FILL_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"

/* A buffer for len bytes, and its capacity in *cap (pass it back to
 * fill_buf_put). NULL: no memory. */
void *fill_buf_get(struct fill_table *t, size_t len, size_t *cap);
/* Done with buf (of capacity cap, from fill_buf_get; NULL is ignored):
 * kept for a later fill, or freed if the spares are full. */
void fill_buf_put(struct fill_table *t, void *buf, size_t cap);
/* The spares kept now, and their bytes (tierctl status, metrics): at most
 * FILL_SPARE_MAX and FILL_SPARE_BYTES. */
static inline unsigned fill_buf_spare_count(const struct fill_table *t)
{
	return t->nspare;
}
static inline uint64_t fill_buf_spare_bytes(const struct fill_table *t)
{
	return t->spare_bytes;
}
/* Free every spare (shutdown). */
void fill_buf_free_all(struct fill_table *t);

#endif
