/*
 * Segment placement: see seg_place.h.
 */
#include "seg_place.h"

#include <string.h>
#include <xxhash.h>

bool seg_place_wanted(const struct cache *cache, const struct dataset *ds, uint64_t len)
{
	if (!cache->seg_threshold || len > cache->seg_threshold)
		return false;
	/* per-file permissions need a descriptor per file (api/access.c) */
	return !(strcmp(ds->conf.access, "source") == 0 && strcmp(ds->conf.backend, "posix") == 0);
}

/* The domain of ds's items: its name (stable across reloads and restarts;
 * never 0, which segments found at start have). */
static uint64_t seg_domain(const struct dataset *ds)
{
	return XXH3_64bits(ds->name, strlen(ds->name)) | 1;
}

bool seg_place(struct cache *cache, const struct dataset *ds, int t, uint32_t len,
	       struct segment **seg, uint64_t *off)
{
	if (!seg_place_wanted(cache, ds, len))
		return false;
	return segstore_assign(&cache->segs[t], seg_domain(ds), len, seg, off) == 0;
}
