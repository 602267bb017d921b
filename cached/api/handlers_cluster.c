/*
 * Cluster admin commands (`tierctl --cluster ...`, TC_F_CLUSTER in
 * include/tiercache/protocol.h): a request for PIN, UNPIN, EVICT, DEMOTE,
 * POLICY_SET or RELOAD with that flag is not applied here but published
 * through the admin broadcast (cluster/broadcast.h), after the same admin
 * check the op itself makes; the reply is the stream entry's id. Every
 * node, this one too, applies it when it reads the stream: through
 * api_cluster_apply(), which runs the op from its payload as root, with
 * no client connection.
 *
 * Loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"
#include "dataset.h"
#include "handlers.h"
#include "log.h"
#include "residency.h"
#include "target.h"

/* ---- issuing ---- */

struct cluster_req {
	struct conn *c;
	uint8_t op;
	uint32_t id;
};

static void published(void *arg, int err, const char *id)
{
	struct cluster_req *q = arg;
	struct conn *c = q->c;
	if (!c->dead) {
		const char *redis = conn_api(c)->cache->cfg->cluster.redis;
		if (err == 0) {
			struct proto_wr w;
			proto_wr_init(&w);
			proto_wr_begin(&w);
			proto_wr_str(&w, id);
			conn_reply(c, q->op, q->id, &w, -1);
			proto_wr_free(&w);
		} else if (err == -ECANCELED) {
			conn_reply_err(c, q->op, q->id, ESHUTDOWN,
				       "the daemon is stopping; the command may not have been sent to the cluster "
				       "(check tierctl status on a node, then run it again)");
		} else if (err == -ESTALE || err == -ENOTCONN) {
			conn_reply_err(c, q->op, q->id, EHOSTUNREACH,
				       "coordination unavailable: Redis at %s does not answer in time; the command "
				       "was not sent to any node (run it without --cluster to apply it on this node "
				       "only)", redis);
		} else {
			conn_reply_err(c, q->op, q->id, EHOSTUNREACH,
				       "coordination unavailable: Redis at %s did not take the command (%s); it may "
				       "not have reached the cluster: check `tierctl cluster status`, then run it "
				       "again (these commands may be repeated safely)",
				       redis, err == -EPROTO ? "an error reply" : strerror(-err));
		}
	}
	conn_put(c);
	free(q);
}

void handlers_cluster(struct conn *c, const struct tc_hdr *h, const uint8_t *payload)
{
	struct api *api = conn_api(c);
	if (!broadcast_op_allowed(h->op)) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "--cluster applies to pin, unpin, evict, demote, policy set and reload only");
		return;
	}
	if (!api->bcast) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "this daemon is not part of a cluster (its config has no [cluster] section); "
			       "run the command without --cluster to apply it on this node");
		return;
	}
	if (!conn_require_admin(c, h))
		return;
	struct cluster_req *q = calloc(1, sizeof(*q));
	if (!q) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	*q = (struct cluster_req){.c = c, .op = h->op, .id = h->id};
	int rc = broadcast_publish(api->bcast, h->op, payload, h->len, published, q);
	if (rc < 0) {
		free(q);
		if (rc == -ENOTCONN)
			conn_reply_err(c, h->op, h->id, ENOTCONN,
				       "coordination unavailable: Redis at %s does not answer; the command was not "
				       "sent to any node (run it without --cluster to apply it on this node only)",
				       api->cache->cfg->cluster.redis);
		else
			conn_reply_err(c, h->op, h->id, -rc, "cannot send the command to the cluster: %s",
				       strerror(-rc));
		return;
	}
	conn_get(c);
	log_info("op=cluster_admin_publish admin_op=%u client_pid=%d uid=%u", (unsigned)h->op, (int)c->pid,
		 (unsigned)c->uid);
}

/* ---- applying (the broadcast's hook) ---- */

/* An async residency op's end: nobody waits for it, the log says it. */
static void applied_async(void *arg, const struct res_result *r)
{
	(void)arg;
	if (r->err)
		log_warn("op=cluster_admin_done err=\"%s\"", r->msg);
	else
		log_info("op=cluster_admin_done selected_chunks=%llu failed_chunks=%llu",
			 (unsigned long long)r->selected.chunks, (unsigned long long)r->failed.chunks);
}

static bool never_gone(void *arg)
{
	(void)arg;
	return false;
}

static int apply_residency(struct api *api, uint8_t op, struct proto_rd *r, char *result, size_t rn)
{
	size_t n;
	struct target t;
	const char *s = proto_rd_str(r, TC_PATH_MAX, &n);
	if (!s) {
		snprintf(result, rn, "malformed request: expected DATASET[/PATH]");
		return -EBADMSG;
	}
	int rc = target_parse_str(api->cache, s, n, &t, result, rn);
	if (rc < 0)
		return rc;
	if (!t.ds->mf) {
		snprintf(result, rn, "dataset %s is unavailable here (still loading or failed): %s", t.ds->name,
			 t.ds->reason);
		return -EIO;
	}
	uint8_t to = op == TC_OP_DEMOTE ? proto_rd_u8(r) : TC_TIER_WARM;
	if (!proto_rd_done(r)) {
		snprintf(result, rn, "malformed request (trailing or missing bytes)");
		return -EBADMSG;
	}
	if (to != TC_TIER_WARM) {
		snprintf(result, rn, "can only demote to the warm tier (got tier %u)", to);
		return -EINVAL;
	}
	struct res_result res = {0};
	const struct res_cb cb = {.done = applied_async, .gone = never_gone};
	switch (op) {
	case TC_OP_PIN:
		rc = residency_pin(api->res, t.ds, t.rest, &cb, &res);
		break;
	case TC_OP_UNPIN:
		rc = residency_unpin(api->res, t.ds, t.rest, &res);
		break;
	case TC_OP_EVICT:
		rc = residency_evict(api->res, t.ds, t.rest, &res);
		break;
	default:
		rc = residency_demote(api->res, t.ds, t.rest, &cb, &res);
		break;
	}
	if (rc == 0 && res.err)
		rc = res.err;
	if (rc < 0) {
		snprintf(result, rn, "%s", res.msg[0] ? res.msg : strerror(-rc));
		return rc;
	}
	if (op == TC_OP_PIN || op == TC_OP_DEMOTE)
		snprintf(result, rn, "ok: started on %s", t.buf);
	else
		snprintf(result, rn, "ok: %s: %llu chunks selected, %llu dropped", t.buf,
			 (unsigned long long)res.selected.chunks, (unsigned long long)res.dropped.chunks);
	return 0;
}

int api_cluster_apply(void *arg, uint8_t op, const void *payload, size_t len, char *result, size_t rn)
{
	struct api *api = arg;
	struct proto_rd r;
	proto_rd_init(&r, payload, len);
	switch (op) {
	case TC_OP_PIN:
	case TC_OP_UNPIN:
	case TC_OP_EVICT:
	case TC_OP_DEMOTE:
		return apply_residency(api, op, &r, result, rn);
	case TC_OP_POLICY_SET: {
		struct dataset *ds = NULL;
		int rc = handlers_policy_apply(api->cache, &r, &ds, result, rn);
		if (rc == 0)
			snprintf(result, rn, "ok: policy of %s set", ds->name);
		return rc;
	}
	case TC_OP_RELOAD: {
		if (len) {
			snprintf(result, rn, "malformed RELOAD (takes no payload)");
			return -EBADMSG;
		}
		char *report = NULL;
		int rc = api->reload(api->reload_arg, &report);
		const char *text = report ? report : (rc < 0 ? strerror(-rc) : "reloaded");
		size_t n = strcspn(text, "\n"); /* the first line; the log has all */
		snprintf(result, rn, "%s%.*s", rc < 0 ? "" : "ok: ", (int)n, text);
		free(report);
		return rc;
	}
	default:
		snprintf(result, rn, "op %u is not one the cluster broadcasts", op);
		return -EINVAL;
	}
}
