/*
 * What the peer server and the peer client share: reading one frame header
 * off a bufferevent's input, sending an encoded frame, and turning a
 * "HOST:PORT" into an address. Loop thread only.
 */
#ifndef TIERCACHE_PEER_IO_H
#define TIERCACHE_PEER_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "peer_proto.h"

struct evbuffer;
struct bufferevent;

/* The next frame's header, if its 16 bytes are in: 1 (h set, checked by
 * peer_hdr_decode), 0 (not yet), or -EPROTO / -EMSGSIZE. */
int peer_io_hdr(struct evbuffer *in, struct peer_hdr *h);
/* The whole frame (header and payload) is in: a pointer to its payload,
 * made contiguous, else NULL. */
const uint8_t *peer_io_payload(struct evbuffer *in, const struct peer_hdr *h);
/* Drop the frame whose header is h from in. */
void peer_io_drain(struct evbuffer *in, const struct peer_hdr *h);
/* Queue w's frame on bev's output: 0 or -ENOMEM. */
int peer_io_send(struct bufferevent *bev, const struct proto_wr *w);
/* A peer socket once it has a descriptor: no Nagle delay between a small
 * frame and what follows it; max_read (0: libevent's default) bytes taken
 * off the socket per read, so that a chunk's reply arrives in few reads. */
void peer_io_tune(struct bufferevent *bev, size_t max_read);
/* "IP:PORT" or "[IPv6]:PORT" into ss: 0 or -EINVAL (a host name too:
 * nothing is looked up). */
int peer_io_addr(const char *hostport, struct sockaddr_storage *ss, socklen_t *len);

#endif
