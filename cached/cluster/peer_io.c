/*
 * Peer frames on bufferevents: see peer_io.h.
 */
#include "peer_io.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

void peer_io_tune(struct bufferevent *bev, size_t max_read)
{
	int one = 1;
	evutil_socket_t fd = bufferevent_getfd(bev);
	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* best effort */
	if (max_read)
		(void)bufferevent_set_max_single_read(bev, max_read);
}

int peer_io_hdr(struct evbuffer *in, struct peer_hdr *h)
{
	uint8_t raw[PEER_HDR_SIZE];
	if (evbuffer_get_length(in) < PEER_HDR_SIZE)
		return 0;
	if (evbuffer_copyout(in, raw, sizeof(raw)) != (ev_ssize_t)sizeof(raw))
		return 0;
	int rc = peer_hdr_decode(raw, h);
	return rc < 0 ? rc : 1;
}

const uint8_t *peer_io_payload(struct evbuffer *in, const struct peer_hdr *h)
{
	size_t need = PEER_HDR_SIZE + (size_t)h->len;
	if (evbuffer_get_length(in) < need)
		return NULL;
	const uint8_t *p = evbuffer_pullup(in, (ev_ssize_t)need);
	return p ? p + PEER_HDR_SIZE : NULL;
}

void peer_io_drain(struct evbuffer *in, const struct peer_hdr *h)
{
	evbuffer_drain(in, PEER_HDR_SIZE + (size_t)h->len);
}

int peer_io_send(struct bufferevent *bev, const struct proto_wr *w)
{
	return bufferevent_write(bev, w->buf, w->len) < 0 ? -ENOMEM : 0;
}

int peer_io_addr(const char *hostport, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	if (!colon || colon == hostport || !colon[1])
		return -EINVAL;
	size_t hn = (size_t)(colon - hostport);
	if (hostport[0] == '[' && hn >= 2 && hostport[hn - 1] == ']') {
		hostport++;
		hn -= 2;
	}
	if (hn >= sizeof(host))
		return -EINVAL;
	memcpy(host, hostport, hn);
	host[hn] = '\0';
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV | AI_NUMERICHOST}; /* never a lookup on the loop */
	struct addrinfo *ai = NULL;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
		return -EINVAL;
	if (ai->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(ai);
		return -EINVAL;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}
