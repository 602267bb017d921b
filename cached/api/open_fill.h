/*
 * One request per small miss: an OPEN with TC_F_FILL_CHUNK0 (protocol.h)
 * of a file of one chunk that is not resident waits for that chunk's fill
 * and is answered with its descriptor, as the OPEN of a resident file is,
 * so the client sends no CHUNK request for it. Loop thread only.
 */
#ifndef TIERCACHE_OPEN_FILL_H
#define TIERCACHE_OPEN_FILL_H

#include <stdbool.h>
#include <stdint.h>

#include "api.h"

/* OPENs of one connection that may wait for fills at once; past it an
 * OPEN is answered at once without the chunk (its CHUNK request waits) */
#define OPEN_FILL_MAX 32u

/* Park OPEN id of e (path: the request's "DATASET/PATH") until chunk 0 is
 * filled, if flags ask it and the file is one chunk that is not resident:
 * true if parked (the reply follows), false to answer now. */
bool open_fill_park(struct conn *c, uint32_t id, uint32_t flags, struct dataset *ds, struct mf_entry *e,
		    const char *path);

#endif
