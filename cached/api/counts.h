/*
 * Counting what a client's reads were: a hit on a tier (counters, the
 * dataset's, a trace row, the policy's hit and a promotion it asks for) or
 * a miss. A read of a chunk whose fill its own open started is that miss,
 * even if the chunk landed first (struct handle's own_fill0). Loop thread.
 */
#ifndef TIERCACHE_COUNTS_H
#define TIERCACHE_COUNTS_H

#include <stdint.h>

#include "api.h"
#include "trace_rec.h"

/* An access served to c, for a trace that records (trace_rec.h). */
void counts_trace(struct conn *c, const struct chunk *ch, enum trace_result res);
/* A hit on ch (resident, or being moved). */
void counts_hit(struct conn *c, struct chunk *ch);
void counts_miss(struct cache *cache, struct dataset *ds);
/* Chunk idx of hd found resident for a read: a hit, unless hd's open
 * started this very fill. */
void counts_resident(struct conn *c, struct handle *hd, uint32_t idx, struct chunk *ch);
/* Chunk idx of hd is being read from the cold store for a read: a miss. */
void counts_filling(struct conn *c, struct handle *hd, uint32_t idx);

#endif
