/*
 * The admin broadcast: see broadcast.h. The entry parser is
 * broadcast_entry.c.
 *
 * At most one read (XREVRANGE to find the start, or XREAD) is in flight;
 * its request record is cut loose by broadcast_free(), so a reply that
 * comes later (redis_conn_free() calls it with -ECANCELED) finds nothing
 * to update. Loop thread only.
 */
#include "broadcast.h"

#include <errno.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "log.h"
#include "tiercache/protocol.h"
#include "redis_conn.h"

struct result {
	char id[BROADCAST_ID_MAX + 1];
	char from[CONFIG_NAME_MAX + 1];
	uint8_t op;
	int err;
	char text[BROADCAST_RESULT_MAX + 1];
};

struct read_req {
	struct broadcast *b; /* NULL once broadcast_free() ran */
};

struct pub_req {
	/* used only on a successful TIME reply: broadcast_free() is followed
	 * at once by redis_conn_free() (cluster_stop), which ends this
	 * request with -ECANCELED before any reply can come */
	struct broadcast *b;
	uint8_t op;
	void *payload;
	size_t len;
	broadcast_done_fn done;
	void *arg;
};

struct broadcast {
	struct event_base *base;
	struct redis_conn *rc;
	struct index *ix;
	struct event *timer;
	struct broadcast_hooks hooks;
	char key[CONFIG_NAME_MAX + 32]; /* tc:{name}:admin */
	char name[CONFIG_NAME_MAX + 1];
	char node[CONFIG_NAME_MAX + 1];
	char pos[BROADCAST_ID_MAX + 1]; /* the last id applied (or skipped) */
	bool have_pos;
	bool trim_checked;              /* the stored position was checked against the stream */
	char missed_since[BROADCAST_ID_MAX + 1]; /* trimmed past: the position then, else "" */
	char missed_first[BROADCAST_ID_MAX + 1]; /* ... and the stream's first entry */
	struct read_req *req;           /* the read in flight, or NULL */
	uint64_t timeout_ms;            /* cluster.redis_timeout */
	uint64_t applied, skipped, apply_errors, published, persist_errors;
	struct result results[BROADCAST_RESULTS];
	unsigned nresults, next_result;
};

static void read_next(struct broadcast *b);

static const char *op_name(uint8_t op)
{
	switch (op) {
	case TC_OP_PIN: return "pin";
	case TC_OP_UNPIN: return "unpin";
	case TC_OP_EVICT: return "evict";
	case TC_OP_DEMOTE: return "demote";
	case TC_OP_POLICY_SET: return "policy_set";
	case TC_OP_RELOAD: return "reload";
	default: return "?";
	}
}

/* Store the position; a failure is logged and counted (the entry may then
 * be applied once more after a restart: the ops are idempotent). */
static void persist(struct broadcast *b)
{
	int rc = index_kv_put(b->ix, BROADCAST_INDEX_NS, b->name, b->pos, strlen(b->pos));
	if (rc < 0) {
		b->persist_errors++;
		log_warn("op=cluster_admin_persist position=%s err=\"%s\": the index did not take the stream "
			 "position; after a restart the entries since the last stored one apply again",
			 b->pos, strerror(-rc));
	}
}

static void note_result(struct broadcast *b, const struct broadcast_entry *e, int err, const char *text)
{
	struct result *r = &b->results[b->next_result];
	b->next_result = (b->next_result + 1) % BROADCAST_RESULTS;
	if (b->nresults < BROADCAST_RESULTS)
		b->nresults++;
	snprintf(r->id, sizeof(r->id), "%s", e->id);
	snprintf(r->from, sizeof(r->from), "%s", e->from);
	r->op = e->op;
	r->err = err;
	snprintf(r->text, sizeof(r->text), "%s", text);
}

/* A read request's reply came: its broadcast (NULL after broadcast_free),
 * no longer waiting for it. */
static struct broadcast *req_done(void *arg)
{
	struct read_req *q = arg;
	struct broadcast *b = q->b;
	free(q);
	if (b)
		b->req = NULL;
	return b;
}

/* One entry of an XREAD: apply it (or skip a malformed one), then store
 * its id. false: the reply is not a stream's, stop here. */
static bool take_entry(struct broadcast *b, const redisReply *er)
{
	struct broadcast_entry e;
	char why[256];
	int rc = broadcast_entry_parse(er, &e, why, sizeof(why));
	if (rc == -EPROTO) {
		log_warn("op=cluster_admin_read stream=%s err=\"%s\": reading stops until the next tick", b->key,
			 why);
		return false;
	}
	if (rc < 0) {
		b->skipped++;
		log_warn("op=cluster_admin_skip stream=%s id=%s err=\"%s\": the entry was not written by a "
			 "tiercached of this version; skipped", b->key, e.id, why);
		note_result(b, &e, EINVAL, why);
	} else {
		char text[BROADCAST_RESULT_MAX + 1] = "";
		rc = b->hooks.apply(b->hooks.arg, e.op, e.payload, e.len, text, sizeof(text));
		b->applied++;
		if (rc < 0)
			b->apply_errors++;
		if (rc < 0)
			log_warn("op=cluster_admin_apply id=%s from=%s admin_op=%s err=\"%s\"", e.id, e.from,
				 op_name(e.op), text);
		else
			log_info("op=cluster_admin_apply id=%s from=%s admin_op=%s result=\"%s\"", e.id, e.from,
				 op_name(e.op), text);
		note_result(b, &e, rc < 0 ? -rc : 0, text[0] ? text : (rc < 0 ? strerror(-rc) : "ok"));
	}
	snprintf(b->pos, sizeof(b->pos), "%s", e.id);
	b->have_pos = true;
	persist(b); /* before the next entry: apply-then-persist */
	return true;
}

static void on_read(void *arg, struct redisReply *r, int err)
{
	struct broadcast *b = req_done(arg);
	if (!b)
		return; /* broadcast_free() ran */
	if (err < 0) {
		log_debug("op=cluster_admin_read stream=%s err=\"%s\"", b->key,
			  err == -EPROTO && r && r->str ? r->str : strerror(-err));
		return; /* the next tick tries again */
	}
	if (!r || r->type == REDIS_REPLY_NIL)
		return; /* nothing new */
	/* [[key, [entry, ...]]] */
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 || !r->element[0] ||
	    r->element[0]->type != REDIS_REPLY_ARRAY || r->element[0]->elements != 2 ||
	    !r->element[0]->element[1] || r->element[0]->element[1]->type != REDIS_REPLY_ARRAY) {
		log_warn("op=cluster_admin_read stream=%s err=\"unexpected XREAD reply (type %d)\"", b->key,
			 r->type);
		return;
	}
	const redisReply *list = r->element[0]->element[1];
	size_t n = list->elements > BROADCAST_READ_COUNT ? BROADCAST_READ_COUNT : list->elements;
	size_t i = 0;
	for (; i < n; i++)
		if (!take_entry(b, list->element[i]))
			break;
	if (i == BROADCAST_READ_COUNT)
		read_next(b); /* more may wait: catch up now, not a heartbeat later */
}

/* XREVRANGE KEY + - COUNT 1: the stream's last id, where a node that never
 * read it starts ("0-0": empty, every entry to come is new). */
static void on_last(void *arg, struct redisReply *r, int err)
{
	struct broadcast *b = req_done(arg);
	if (!b)
		return; /* broadcast_free() ran */
	if (err < 0 || !r || r->type != REDIS_REPLY_ARRAY)
		return; /* the next tick asks again */
	const char *id = "0-0";
	size_t idn = 3;
	if (r->elements >= 1) {
		const redisReply *e = r->element[0];
		if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 1 || !e->element[0] ||
		    e->element[0]->type != REDIS_REPLY_STRING ||
		    !broadcast_id_valid(e->element[0]->str, e->element[0]->len)) {
			log_warn("op=cluster_admin_start stream=%s err=\"unexpected XREVRANGE reply\"", b->key);
			return;
		}
		id = e->element[0]->str;
		idn = e->element[0]->len;
	}
	memcpy(b->pos, id, idn);
	b->pos[idn] = '\0';
	b->have_pos = true;
	b->trim_checked = true; /* it starts at the end: nothing before is its own */
	persist(b); /* a restart must read from here, not from its own start */
	log_info("op=cluster_admin_start stream=%s position=%s (no stored position: starts at the "
		 "stream's end)", b->key, b->pos);
	read_next(b);
}

/* XINFO STREAM, once, for a position read from the index: was the stream
 * trimmed past it while this node was away? (broadcast_trim.c) */
static void on_info(void *arg, struct redisReply *r, int err)
{
	struct broadcast *b = req_done(arg);
	if (!b)
		return; /* broadcast_free() ran */
	if (err < 0 && err != -EPROTO)
		return; /* the next tick asks again */
	b->trim_checked = true; /* an error reply: no such stream, nothing to miss */
	char first[BROADCAST_ID_MAX + 1];
	if (err == 0 && broadcast_trim_check(r, b->pos, first, sizeof(first)) == 1) {
		snprintf(b->missed_since, sizeof(b->missed_since), "%s", b->pos);
		snprintf(b->missed_first, sizeof(b->missed_first), "%s", first);
		log_warn("op=cluster_admin_missed stream=%s position=%s first=%s err=\"the stream was trimmed "
			 "past this node's position while it was away: admin commands sent to the cluster "
			 "between them were not applied here\" action=\"compare this node's pins and policies "
			 "with another node's (tierctl status) and apply what differs here without --cluster\"",
			 b->key, b->pos, first);
	}
	read_next(b);
}

static void read_next(struct broadcast *b)
{
	if (b->req || !b->hooks.apply || !redis_conn_up(b->rc))
		return;
	struct read_req *q = calloc(1, sizeof(*q));
	if (!q)
		return;
	q->b = b;
	int rc;
	if (b->have_pos && !b->trim_checked) {
		const char *argv[] = {"XINFO", "STREAM", b->key};
		rc = redis_conn_cmd(b->rc, on_info, q, 3, argv, NULL);
	} else if (!b->have_pos) {
		const char *argv[] = {"XREVRANGE", b->key, "+", "-", "COUNT", "1"};
		rc = redis_conn_cmd(b->rc, on_last, q, 6, argv, NULL);
	} else {
		const char *argv[] = {"XREAD", "COUNT", "64", "STREAMS", b->key, b->pos};
		rc = redis_conn_cmd(b->rc, on_read, q, 6, argv, NULL);
	}
	if (rc < 0) {
		free(q);
		return;
	}
	b->req = q;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	read_next(arg);
}

int broadcast_new(struct event_base *base, struct redis_conn *rc, const struct cluster_conf *cc,
		  struct index *ix, struct broadcast **out)
{
	struct broadcast *b = calloc(1, sizeof(*b));
	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->base = base;
	b->rc = rc;
	b->ix = ix;
	snprintf(b->key, sizeof(b->key), "tc:{%s}:admin", cc->name);
	b->timeout_ms = cc->redis_timeout_ms ? cc->redis_timeout_ms : 1000;
	snprintf(b->name, sizeof(b->name), "%s", cc->name);
	snprintf(b->node, sizeof(b->node), "%s", cc->node_id);
	void *v = NULL;
	size_t n = 0;
	int r = index_kv_get(ix, BROADCAST_INDEX_NS, b->name, &v, &n);
	if (r == 0 && broadcast_id_valid(v, n)) {
		memcpy(b->pos, v, n);
		b->pos[n] = '\0';
		b->have_pos = true;
		log_info("op=cluster_admin_start stream=%s position=%s (stored: entries after it apply)", b->key,
			 b->pos);
	} else if (r == 0) {
		log_warn("op=cluster_admin_start stream=%s err=\"the stored position is not a stream id\": "
			 "starting at the stream's end", b->key);
	} else if (r != -ENOENT) {
		log_warn("op=cluster_admin_start stream=%s err=\"cannot read the stored position: %s\": "
			 "starting at the stream's end", b->key, strerror(-r));
	}
	free(v);
	b->timer = event_new(base, -1, EV_PERSIST, on_tick, b);
	uint64_t ms = cc->heartbeat_ms ? cc->heartbeat_ms : 1000;
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	if (!b->timer || event_add(b->timer, &tv) < 0) {
		if (b->timer)
			event_free(b->timer);
		free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

void broadcast_set_hooks(struct broadcast *b, const struct broadcast_hooks *hooks)
{
	if (!b)
		return;
	b->hooks = *hooks;
	read_next(b);
}

void broadcast_redis_up(struct broadcast *b)
{
	if (b)
		read_next(b);
}

/* XADD only if Redis' clock is not past the deadline: a command queued in
 * the socket of a Redis that was stopped (SIGSTOP) runs when it resumes,
 * long after the client was told that the command failed; the deadline
 * makes it a no-op then. Redis 7 replicates the script's effects, so TIME
 * before a write is allowed. */
static const char xadd_script[] =
	"local t = redis.call('TIME') "
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
	"if now > tonumber(ARGV[4]) then return redis.error_reply('STALE command past its deadline') end "
	"return redis.call('XADD', KEYS[1], 'MAXLEN', '~', '100000', '*', "
	"'op', ARGV[1], 'payload', ARGV[2], 'from', ARGV[3])";

static void pub_end(struct pub_req *q, int err, const char *id)
{
	q->done(q->arg, err, id);
	free(q->payload);
	free(q);
}

static void on_added(void *arg, struct redisReply *r, int err)
{
	struct pub_req *q = arg;
	char id[BROADCAST_ID_MAX + 1] = "";
	if (err == -EPROTO && r && r->str && strncmp(r->str, "STALE", 5) == 0)
		err = -ESTALE; /* Redis ran it too late: refused, on no node */
	if (err == 0 && (!r || r->type != REDIS_REPLY_STRING || !broadcast_id_valid(r->str, r->len)))
		err = -EPROTO;
	if (err == 0) {
		memcpy(id, r->str, r->len);
		id[r->len] = '\0';
	}
	pub_end(q, err, id);
}

/* Redis' clock (TIME): the XADD's deadline is half a command deadline
 * later, so a script that runs in time is answered in time. */
static void on_time(void *arg, struct redisReply *r, int err)
{
	struct pub_req *q = arg;
	if (err == 0 && (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element[0] ||
			 !r->element[1] || r->element[0]->type != REDIS_REPLY_STRING ||
			 r->element[1]->type != REDIS_REPLY_STRING))
		err = -EPROTO;
	if (err < 0) {
		pub_end(q, -ENOTCONN, ""); /* the XADD was never sent */
		return;
	}
	unsigned long long sec = strtoull(r->element[0]->str, NULL, 10);
	unsigned long long usec = strtoull(r->element[1]->str, NULL, 10);
	if (!q->b) {
		pub_end(q, -ECANCELED, "");
		return;
	}
	char opbuf[8], deadline[32];
	snprintf(opbuf, sizeof(opbuf), "%u", (unsigned)q->op);
	snprintf(deadline, sizeof(deadline), "%llu", sec * 1000ull + usec / 1000ull + q->b->timeout_ms / 2);
	const char *argv[] = {"EVAL", xadd_script, "1", q->b->key, opbuf,
			      q->len ? (const char *)q->payload : "", q->b->node, deadline};
	size_t argvlen[8];
	for (size_t i = 0; i < 8; i++)
		argvlen[i] = i == 5 ? q->len : strlen(argv[i]);
	int rc = redis_conn_cmd(q->b->rc, on_added, q, 8, argv, argvlen);
	if (rc < 0)
		pub_end(q, rc, "");
}

int broadcast_publish(struct broadcast *b, uint8_t op, const void *payload, size_t len,
		      broadcast_done_fn done, void *arg)
{
	if (!broadcast_op_allowed(op) || len > TC_FRAME_MAX)
		return -EINVAL;
	if (!redis_conn_up(b->rc))
		return -ENOTCONN;
	struct pub_req *q = calloc(1, sizeof(*q));
	if (!q || !(q->payload = malloc(len ? len : 1))) {
		free(q);
		return -ENOMEM;
	}
	memcpy(q->payload, payload, len);
	q->len = len;
	q->op = op;
	q->b = b;
	q->done = done;
	q->arg = arg;
	const char *argv[] = {"TIME"};
	int rc = redis_conn_cmd(b->rc, on_time, q, 1, argv, NULL);
	if (rc < 0) {
		free(q->payload);
		free(q);
		return rc;
	}
	b->published++;
	return 0;
}

void broadcast_report(struct broadcast *b, struct proto_rs *rs)
{
	if (!b)
		return;
	proto_rs_section(rs, "cluster_admin", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	proto_rs_str(rs, "stream", b->key);
	proto_rs_str(rs, "position", b->have_pos ? b->pos : "");
	proto_rs_u64(rs, "applied", b->applied);
	proto_rs_u64(rs, "apply_errors", b->apply_errors);
	proto_rs_u64(rs, "skipped", b->skipped);
	proto_rs_u64(rs, "published", b->published);
	proto_rs_u64(rs, "persist_errors", b->persist_errors);
	/* trimmed past this node's position while it was away (broadcast_trim.c) */
	proto_rs_bool(rs, "missed_entries", b->missed_since[0] != '\0');
	proto_rs_str(rs, "missed_after", b->missed_since);
	proto_rs_str(rs, "missed_before", b->missed_first);
	proto_rs_section(rs, "cluster_admin_results", TC_SHAPE_ARRAY);
	/* oldest first */
	for (unsigned k = 0; k < b->nresults; k++) {
		unsigned i = (b->next_result + BROADCAST_RESULTS - b->nresults + k) % BROADCAST_RESULTS;
		const struct result *r = &b->results[i];
		proto_rs_record(rs);
		proto_rs_str(rs, "id", r->id);
		proto_rs_str(rs, "op", op_name(r->op));
		proto_rs_str(rs, "from", r->from);
		proto_rs_u64(rs, "errno", (uint64_t)r->err);
		proto_rs_str(rs, "result", r->text);
	}
}

void broadcast_free(struct broadcast *b)
{
	if (!b)
		return;
	if (b->req)
		b->req->b = NULL;
	if (b->timer)
		event_free(b->timer);
	free(b);
}
