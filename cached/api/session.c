/*
 * Sessions: the api's side of a connection (api.h), and the table through
 * which the transport reaches the ops. Loop thread only.
 *
 * A session lives as long as its connection's memory: requests in flight
 * (fills, reads on workers) hold the connection after the client went, and
 * find their handles there until the last of them ends.
 */
#include <stdlib.h>

#include "api.h"
#include "handlers.h"
#include "plans.h"

static void *sess_opened(void *arg, struct conn *c)
{
	(void)c;
	struct session *s = calloc(1, sizeof(*s));
	if (s)
		s->api = arg;
	return s;
}

static void sess_frame(void *arg, struct conn *c, const struct tc_hdr *h, const uint8_t *payload)
{
	(void)arg;
	handlers_dispatch(c, h, payload);
}

static void sess_closed(void *arg, struct conn *c)
{
	(void)arg;
	if (c->sess)
		handlers_conn_closed(c);
}

static void sess_release(void *arg, struct conn *c)
{
	(void)arg;
	struct session *s = c->sess;
	free(s->handles);
	free(s);
	c->sess = NULL;
}

/* Holds nothing the idle timeout would take: no handle (so no chunk file)
 * and no plan it registered (a staged registration is dropped). */
static bool sess_idle(void *arg, struct conn *c)
{
	struct session *s = c->sess;
	(void)arg;
	for (uint32_t i = 0; i < s->nhandles; i++)
		if (s->handles[i])
			return false;
	for (const struct dplan *p = s->api->plans->list; p; p = p->next)
		if (p->owner == c)
			return false;
	return true;
}

const struct server_ops api_server_ops = {
	.opened = sess_opened,
	.frame = sess_frame,
	.closed = sess_closed,
	.release = sess_release,
	.idle = sess_idle,
};
