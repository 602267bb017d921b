/*
 * tierctl cluster drain / undrain (TC_OP_CLUSTER_DRAIN, admin): this node
 * goes to state draining and hands its chunks over to their new homes
 * (cluster/drain.h), or back to up. The reply comes at once; progress is
 * in status (section "cluster": drain, drain_chunks_*), which
 * `tierctl cluster drain --wait` follows.
 *
 * Loop thread only.
 */
#include <errno.h>
#include <stdio.h>

#include "cluster.h"
#include "handlers.h"
#include "log.h"

void handlers_drain(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct api *api = conn_api(c);
	uint32_t what = proto_rd_u32(r);
	if (!proto_rd_done(r) || what > TC_DRAIN_ON) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed CLUSTER_DRAIN (takes a u32: 0 undrain, 1 drain)");
		return;
	}
	if (!api->cluster) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "this daemon is not part of a cluster (its config has no [cluster] section): "
			       "there is nothing to drain");
		return;
	}
	if (!conn_require_admin(c, h))
		return;
	if (!cluster_coordinated(api->cluster)) {
		conn_reply_err(c, h->op, h->id, EHOSTUNREACH,
			       "coordination unavailable: Redis at %s does not answer, so the other nodes "
			       "cannot learn this node's state; nothing was changed (try again when `tierctl "
			       "cluster status` shows redis up)",
			       api->cache->cfg->cluster.redis);
		return;
	}
	int rc = cluster_drain(api->cluster, what == TC_DRAIN_ON);
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "cannot %s this node: %s",
			       what == TC_DRAIN_ON ? "drain" : "undrain", rc == -ENOMEM ? "out of memory" :
			       "the cluster is not running");
		return;
	}
	log_info("op=cluster_%s client_pid=%d uid=%u", what == TC_DRAIN_ON ? "drain" : "undrain", (int)c->pid,
		 (unsigned)c->uid);
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}
