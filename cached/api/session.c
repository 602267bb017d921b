/*
 * Sessions: the api's side of a connection (api.h), the table through which
 * the transport reaches the ops, and what a connection makes the daemon
 * keep for it: its open handles and the chunk files they hold. Loop thread
 * only.
 *
 * Everything a client can make the daemon hold is bounded per connection:
 * handles (SESSION_HANDLES_MAX, and SESSION_MEM_MAX bytes of handles, paths
 * and held lists together), chunk files per handle (SESSION_HELD_PER_HANDLE)
 * and the bytes of chunk files held through passed descriptors
 * (max_held_per_client). The last is also bounded per uid over all its
 * connections (max_held_per_user): a held chunk file cannot be evicted, so
 * without the caps one client could pin a whole tier and leave every other
 * client's miss without room.
 *
 * A session lives as long as its connection's memory: requests in flight
 * (fills, reads on workers) hold the connection after the client went, and
 * find their handles there until the last of them ends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "chunk.h"
#include "config_value.h"
#include "handlers.h"
#include "log.h"
#include "manifest.h"
#include "plans.h"

/* Held bytes of one uid over all its connections. */
struct user_held {
	struct user_held *next;
	uid_t uid;
	unsigned conns;
	uint64_t bytes;
};

static struct user_held *user_get(struct api *api, uid_t uid)
{
	struct user_held *u;
	for (u = api->users; u; u = u->next)
		if (u->uid == uid)
			break;
	if (!u) {
		if (!(u = calloc(1, sizeof(*u))))
			return NULL;
		u->uid = uid;
		u->next = api->users;
		api->users = u;
	}
	u->conns++;
	return u;
}

static void user_put(struct api *api, struct user_held *u)
{
	if (--u->conns)
		return;
	for (struct user_held **p = &api->users; *p; p = &(*p)->next) {
		if (*p == u) {
			*p = u->next;
			break;
		}
	}
	free(u);
}

/* ---- handles ---- */

static size_t handle_mem(const struct handle *hd)
{
	return sizeof(*hd) + strlen(hd->path) + 1 + (size_t)hd->capheld * sizeof(struct held);
}

struct handle *session_handle_get(struct conn *c, uint64_t hid)
{
	struct session *s = conn_sess(c);
	uint32_t slot = (uint32_t)hid - 1, gen = (uint32_t)(hid >> 32);
	if ((uint32_t)hid == 0 || slot >= s->nhandles)
		return NULL;
	struct handle *hd = s->handles[slot];
	return hd && hd->gen == gen ? hd : NULL;
}

static void held_drop(struct conn *c, struct handle *hd, uint32_t i)
{
	struct session *s = conn_sess(c);
	struct cfile *f = hd->held[i].f;
	s->held_bytes -= f->len;
	s->user->bytes -= f->len;
	s->api->cache->ctr.held_bytes -= f->len;
	hd->held[i] = hd->held[--hd->nheld];
	cfile_unref(s->api->cache, f);
}

void session_handle_free(struct conn *c, uint64_t hid)
{
	struct session *s = conn_sess(c);
	struct handle *hd = session_handle_get(c, hid);
	if (!hd)
		return;
	if (hd->ahead)
		ahead_handle_gone(c, hd);
	while (hd->nheld)
		held_drop(c, hd, hd->nheld - 1);
	uint32_t slot = (uint32_t)hid - 1;
	s->handles[slot] = NULL;
	if (slot < s->free_hint)
		s->free_hint = slot;
	s->nopen--;
	s->mem -= handle_mem(hd);
	free(hd->held);
	free(hd);
}

void session_handles_free_all(struct conn *c)
{
	struct session *s = conn_sess(c);
	for (uint32_t i = 0; i < s->nhandles; i++)
		if (s->handles[i])
			session_handle_free(c, session_handle_id(i, s->handles[i]->gen));
}

int session_handle_new(struct conn *c, struct dataset *ds, const struct mf_entry *e, uint64_t *hid)
{
	struct session *s = conn_sess(c);
	size_t plen = strlen(e->path);
	size_t need = sizeof(struct handle) + plen + 1;
	if (s->nopen >= SESSION_HANDLES_MAX || s->mem + need > SESSION_MEM_MAX)
		return -EMFILE;
	uint32_t slot = s->free_hint;
	while (slot < s->nhandles && s->handles[slot])
		slot++;
	if (slot == s->nhandles) {
		uint32_t n = s->nhandles ? s->nhandles * 2 : 16;
		if (n > SESSION_HANDLES_MAX)
			n = SESSION_HANDLES_MAX;
		struct handle **v = realloc(s->handles, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + s->nhandles, 0, (n - s->nhandles) * sizeof(*v));
		s->handles = v;
		s->nhandles = n;
	}
	struct handle *hd = malloc(need);
	if (!hd)
		return -ENOMEM;
	*hd = (struct handle){
		.gen = ++s->handle_gen,
		.chunk_size = ds->conf.chunk_size,
		.ds = ds,
		.src = e->st,
	};
	memcpy(hd->path, e->path, plen + 1);
	hd->nchunks = (uint32_t)((e->st.size + hd->chunk_size - 1) / hd->chunk_size);
	s->handles[slot] = hd;
	s->free_hint = slot + 1;
	s->nopen++;
	s->mem += need;
	*hid = session_handle_id(slot, hd->gen);
	return 0;
}

/* ---- held chunk files ---- */

int session_hold(struct conn *c, struct handle *hd, uint32_t idx, struct cfile *f)
{
	struct session *s = conn_sess(c);
	const struct config *cfg = s->api->cache->cfg;
	uint32_t i;
	for (i = 0; i < hd->nheld && hd->held[i].idx != idx; i++)
		;
	uint64_t old = i < hd->nheld ? hd->held[i].f->len : 0;
	uint64_t add = f->len > old ? f->len - old : 0;
	if (add && (s->held_bytes + add > cfg->max_held_per_client ||
		    s->user->bytes + add > cfg->max_held_per_user)) {
		s->api->cache->ctr.held_refusals++;
		s->refused_own = s->held_bytes + add > cfg->max_held_per_client;
		log_debug("client_pid=%d uid=%u op=hold held=%llu user_held=%llu err=\"over the cap\"",
			  (int)c->pid, (unsigned)c->uid, (unsigned long long)s->held_bytes,
			  (unsigned long long)s->user->bytes);
		return -ENOBUFS;
	}
	if (i == hd->nheld) {
		if (hd->nheld == SESSION_HELD_PER_HANDLE)
			return -EMFILE;
		if (hd->nheld == hd->capheld) {
			uint16_t n = hd->capheld ? (uint16_t)(hd->capheld * 2) : 2;
			size_t more = (size_t)(n - hd->capheld) * sizeof(struct held);
			if (s->mem + more > SESSION_MEM_MAX)
				return -EMFILE;
			struct held *v = realloc(hd->held, n * sizeof(*v));
			if (!v)
				return -ENOMEM;
			hd->held = v;
			hd->capheld = n;
			s->mem += more;
		}
		hd->nheld++;
		cfile_ref(f);
	} else {
		cfile_ref(f); /* first: the old one may be f */
		cfile_unref(s->api->cache, hd->held[i].f);
	}
	hd->held[i] = (struct held){.idx = idx, .f = f};
	s->held_bytes = s->held_bytes - old + f->len;
	s->api->cache->ctr.held_bytes = s->api->cache->ctr.held_bytes - old + f->len;
	s->user->bytes = s->user->bytes - old + f->len;
	return 0;
}

void session_release(struct conn *c, struct handle *hd, uint32_t idx)
{
	for (uint32_t i = 0; i < hd->nheld; i++) {
		if (hd->held[i].idx == idx) {
			held_drop(c, hd, i);
			return;
		}
	}
}

void session_reply_full(struct conn *c, uint8_t op, uint32_t id, int err)
{
	struct session *s = conn_sess(c);
	const struct config *cfg = s->api->cache->cfg;
	char a[32], b[32];
	if (err == -ENOBUFS) {
		bool own = s->refused_own;
		if (own)
			conn_reply_err(c, op, id, ENOBUFS,
				       "this connection holds %s of chunk files through descriptors it has "
				       "not released (max_held_per_client = %s): close files or release "
				       "chunks you are done with, or ask the admin to raise [daemon] "
				       "max_held_per_client",
				       config_fmt_size(a, sizeof(a), s->held_bytes),
				       config_fmt_size(b, sizeof(b), cfg->max_held_per_client));
		else
			conn_reply_err(c, op, id, ENOBUFS,
				       "uid %u holds %s of chunk files over all its connections "
				       "(max_held_per_user = %s): close files or release chunks you are "
				       "done with, or ask the admin to raise [daemon] max_held_per_user",
				       (unsigned)c->uid, config_fmt_size(a, sizeof(a), s->user->bytes),
				       config_fmt_size(b, sizeof(b), cfg->max_held_per_user));
		return;
	}
	if (err == -EMFILE) {
		conn_reply_err(c, op, id, EMFILE,
			       "too many open files or held chunks on this connection (at most %u files, "
			       "%u chunks each, %u MiB of their bookkeeping): close files you are done with",
			       SESSION_HANDLES_MAX, SESSION_HELD_PER_HANDLE, SESSION_MEM_MAX >> 20);
		return;
	}
	conn_reply_err(c, op, id, -err, "cannot hand out the file: %s", strerror(-err));
}

/* ---- the transport's table ---- */

static void *sess_opened(void *arg, struct conn *c)
{
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->api = arg;
	if (!(s->user = user_get(s->api, c->uid))) {
		free(s);
		return NULL;
	}
	access_cred_from_peer(&s->cred, c);
	return s;
}

static void sess_frame(void *arg, struct conn *c, const struct tc_hdr *h, const uint8_t *payload)
{
	(void)arg;
	handlers_dispatch(c, h, payload);
}

/* Everything the connection held goes now: the api may be gone by the
 * time a late request lets the connection's memory go (sess_release). */
static void sess_closed(void *arg, struct conn *c)
{
	(void)arg;
	struct session *s = c->sess;
	if (!s)
		return;
	handlers_conn_closed(c);
	user_put(s->api, s->user);
	s->user = NULL;
}

static void sess_release(void *arg, struct conn *c)
{
	(void)arg;
	struct session *s = c->sess;
	if (s->user) /* closed() never ran: refused right after opened() */
		user_put(s->api, s->user);
	free(s->handles);
	ahead_conn_free(s);
	access_cred_free(&s->cred);
	free(s);
	c->sess = NULL;
}

/* Holds nothing the idle timeout would take: no handle (so no chunk file)
 * and no plan it registered (a staged registration is dropped). */
static bool sess_idle(void *arg, struct conn *c)
{
	struct session *s = c->sess;
	(void)arg;
	if (s->nopen) /* open files, and the chunks they hold */
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
