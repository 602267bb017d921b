/*
 * Acting for another user: tiercache_act_as (the TC_OP_ACT_AS request,
 * include/tiercache/protocol.h). The FUSE mount run by root keeps one
 * connection per user of the mount and says, on each, whose rights its
 * requests have; the daemon then checks every open, stat and listing
 * against that user's credentials.
 *
 * The credentials are connection state in the daemon, so the library keeps
 * them in struct tiercache and sends them first on every new connection
 * (tc_act_send from conn.c, right after HELLO): a connection that cannot
 * say it again fails, so it never reads with the actor's own rights
 * instead.
 *
 * Threads: tc->act_* change and are sent with io_lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libtc_private.h"

static void act_encode(struct proto_wr *w, uint32_t uid, uint32_t gid, const uint32_t *groups,
		       uint32_t n)
{
	proto_wr_u32(w, uid);
	proto_wr_u32(w, gid);
	proto_wr_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		proto_wr_u32(w, groups[i]);
}

int tc_act_send(struct tiercache *tc)
{
	if (!tc->act_set)
		return 0;
	struct proto_wr w;
	struct tc_msg m;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	act_encode(&w, tc->act_uid, tc->act_gid, tc->act_groups, tc->act_ngroups);
	int rc = w.oom ? -ENOMEM : tc_xfer(tc, TC_OP_ACT_AS, 0, &w, &m);
	proto_wr_free(&w);
	if (rc == 0)
		tc_msg_free(&m);
	else if (rc != TC_ERETRY)
		tc_log(0, "socket=%s uid=%u err=\"%s\": cannot act for the user again on a new "
			  "connection: its requests fail", tc->path, (unsigned)tc->act_uid,
			  tiercache_strerror(-rc));
	return rc;
}

struct act_arg {
	uint32_t uid, gid, n;
	const uint32_t *groups;
};

static int act_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	(void)tc;
	const struct act_arg *a = arg;
	act_encode(w, a->uid, a->gid, a->groups, a->n);
	return 0;
}

int tiercache_act_as(struct tiercache *tc, uid_t uid, gid_t gid, const gid_t *groups,
		     size_t ngroups)
{
	tc_err_begin();
	if (!tc || (ngroups && !groups) || uid == (uid_t)-1 || gid == (gid_t)-1)
		return tc_err_fail(-EINVAL);
	if (ngroups > TC_ACT_GROUPS_MAX) {
		tc_err_detail("%zu supplementary groups; the daemon takes at most %u", ngroups,
			      TC_ACT_GROUPS_MAX);
		return tc_err_fail(-EINVAL);
	}
	uint32_t *g = malloc((ngroups ? ngroups : 1) * sizeof(*g));
	if (!g)
		return tc_err_fail(-ENOMEM);
	for (size_t i = 0; i < ngroups; i++)
		g[i] = (uint32_t)groups[i];
	tc_enter(tc);
	tc_io_lock(tc);
	struct act_arg a = {.uid = (uint32_t)uid, .gid = (uint32_t)gid, .n = (uint32_t)ngroups,
			    .groups = g};
	struct tc_req rq = {.op = TC_OP_ACT_AS, .build = act_build, .arg = &a};
	struct tc_msg m;
	/* the new credentials apply to a reconnect inside this request too */
	bool was_set = tc->act_set;
	uint32_t ouid = tc->act_uid, ogid = tc->act_gid, on = tc->act_ngroups;
	uint32_t *og = tc->act_groups;
	tc->act_set = true;
	tc->act_uid = a.uid;
	tc->act_gid = a.gid;
	tc->act_groups = g;
	tc->act_ngroups = a.n;
	int rc = tc_request_locked(tc, &rq, &m);
	if (rc < 0) {
		tc->act_set = was_set;
		tc->act_uid = ouid;
		tc->act_gid = ogid;
		tc->act_groups = og;
		tc->act_ngroups = on;
		free(g);
		if (rc == -ENOSYS)
			tc_err_detail("tiercached at %s is older than TC_OP_ACT_AS: upgrade it", tc->path);
		else if (rc == -EPERM)
			tc_err_detail("only root or an admin (daemon.admin_group) may act for another user");
		/* the daemon kept the old credentials, or the connection is gone
		 * and the next one sends the old ones */
	} else {
		free(og);
		tc_msg_free(&m);
	}
	tc_io_unlock(tc);
	return rc < 0 ? tc_err_fail(rc) : 0;
}
