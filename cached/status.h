/*
 * What `tierctl status` and `tierctl datasets` show, as protocol record
 * sets. Loop thread.
 */
#ifndef TIERCACHE_STATUS_H
#define TIERCACHE_STATUS_H

#include "daemon.h"
#include "proto.h"

void status_fill(struct daemon *d, struct proto_rs *rs);
void status_datasets(struct daemon *d, struct proto_rs *rs);

#endif
