/*
 * Which chunks become segment items (store/segment.h), and in which
 * segment. A client handed a segment's descriptor can read every byte of
 * the segment, not only its own item, so a segment holds the items of one
 * dataset only (the dataset's allow_users / allow_groups then cover every
 * byte of it), and a dataset with `access = source` (each file readable by
 * whom its source file says) keeps a file per chunk. Loop thread.
 */
#ifndef TIERCACHE_SEG_PLACE_H
#define TIERCACHE_SEG_PLACE_H

#include "cache.h"

/* Does a chunk of ds of len bytes go into a segment? */
bool seg_place_wanted(const struct cache *cache, const struct dataset *ds, uint64_t len);
/* If so, assign it a place on tier t (segstore_assign, in ds's segment):
 * true and *seg, *off set; false: a file of its own. */
bool seg_place(struct cache *cache, const struct dataset *ds, int t, uint32_t len,
	       struct segment **seg, uint64_t *off);

#endif
