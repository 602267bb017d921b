/*
 * Asking other daemons for chunks (peer_proto.h). Per peer, up to
 * cluster.peer_conns authenticated connections, each with one request in
 * flight, and a bounded queue of requests waiting for one. Every request
 * has deadlines: a connection (connect and handshake) within
 * cluster.peer_connect_timeout, the first reply byte within
 * cluster.peer_first_byte_timeout of sending it, the last within
 * cluster.peer_transfer_timeout. A peer that misses one, refuses the
 * handshake or drops the connection is marked suspect for
 * cluster.peer_suspect: its queued requests fail at once and new ones are
 * refused, so a read falls back to the cold store instead of waiting for
 * the dead peer's lease to run out. Loop thread only.
 */
#ifndef TIERCACHE_PEER_CLIENT_H
#define TIERCACHE_PEER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "peer_auth.h"

/* Why a request was not answered with data (fallback_total{reason}). */
enum peer_fail {
	PEER_FAIL_NONE = 0,
	PEER_FAIL_CONNECT,    /* no connection or handshake in time, or refused */
	PEER_FAIL_AUTH,       /* the handshake failed (keys, cluster, node id) */
	PEER_FAIL_FIRST_BYTE, /* no reply within the first-byte deadline */
	PEER_FAIL_TRANSFER,   /* the reply did not end within the transfer deadline */
	PEER_FAIL_CLOSED,     /* the connection broke with the request in flight */
	PEER_FAIL_STALE,      /* the peer has another version of the file */
	PEER_FAIL_ERROR,      /* the peer answered with an error */
	PEER_FAIL_BAD,        /* a reply that does not decode or does not fit the request */
	PEER_FAIL_SUSPECT,    /* the peer failed recently: not asked */
	PEER_FAIL_BUSY,       /* its queue is full */
	PEER_FAIL_CANCELED,   /* the daemon is stopping */
	PEER_FAIL_COUNT
};

const char *peer_fail_name(enum peer_fail f);

struct peer_client;

/* The answer to peer_client_get: rr->result 0 (rr->buf holds rr->len
 * bytes and rr->checksum is set) or -errno with why. */
typedef void (*peer_done_fn)(void *arg, struct remote_read *rr, enum peer_fail why);

int peer_client_new(struct event_base *base, const struct cluster_conf *cc, const struct peer_keys *keys,
		    peer_done_fn done, void *arg, struct peer_client **out);
/* Ask node `id` at addr for rr. 0: done() follows, later, on the loop;
 * else the reason it was not asked (SUSPECT, BUSY; -1 for no memory). */
int peer_client_get(struct peer_client *pc, const char *id, const char *addr, struct remote_read *rr);
/* Is node id suspect now? */
bool peer_client_suspect(struct peer_client *pc, const char *id);
/* Close the connections to nodes that are not in ids[0..n) (they left). */
void peer_client_keep(struct peer_client *pc, const char *const *ids, size_t n);
/* Requests sent, and bytes received. */
void peer_client_counts(const struct peer_client *pc, uint64_t *gets, uint64_t *bytes);
/* Fail every request (PEER_FAIL_CANCELED) and close every connection. */
void peer_client_cancel_all(struct peer_client *pc);
void peer_client_free(struct peer_client *pc);

#endif
