/*
 * What `tierctl status` and `tierctl datasets` show, as protocol record
 * sets. Loop thread.
 */
#ifndef TIERCACHE_STATUS_H
#define TIERCACHE_STATUS_H

#include "daemon.h"
#include "proto.h"

/* A 1 s timer samples each tier's read bytes: status shows the read rate
 * over the last 10 s. */
int status_init(struct daemon *d);
void status_free(struct daemon *d);

void status_fill(struct daemon *d, struct proto_rs *rs);
void status_datasets(struct daemon *d, struct proto_rs *rs);

#endif
