/*
 * The op handlers' entry points, called by handlers_dispatch (handlers.c).
 * Private to api/. Loop thread only.
 */
#ifndef TIERCACHE_HANDLERS_H
#define TIERCACHE_HANDLERS_H

#include "api.h"

/* handlers.c: one complete, header-checked frame. */
void handlers_dispatch(struct conn *c, const struct tc_hdr *h, const uint8_t *payload);
/* handlers_policy.c: TC_OP_POLICY_GET / TC_OP_POLICY_SET. */
void handlers_policy_get(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_policy_set(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* POLICY_SET's payload in r, decoded and applied without a connection
 * (rights are the caller's to check): 0 and the dataset in *ds, or -errno
 * with the message in err. */
int handlers_policy_apply(struct cache *cache, struct proto_rd *r, struct dataset **ds, char *err,
			  size_t errlen);
/* handlers_cluster.c: a request with TC_F_CLUSTER (any op: those the
 * admin broadcast does not carry are refused). */
void handlers_cluster(struct conn *c, const struct tc_hdr *h, const uint8_t *payload);
/* handlers_service.c: TC_OP_DATASETS / TC_OP_STATUS (a record set fill()
 * writes), TC_OP_REFRESH, TC_OP_CONFIG_SHOW / TC_OP_RELOAD. */
struct status;
struct proto_rs;
void handlers_recset(struct conn *c, const struct tc_hdr *h,
		     void (*fill)(struct status *st, struct proto_rs *rs));
void handlers_refresh(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_config_show(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_reload(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers_admin.c: TC_OP_WARM .. TC_OP_LIFECYCLE (residency ops). */
void handlers_admin(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers_plan.c: TC_OP_PLAN_SET / TC_OP_PLAN_CANCEL. */
void handlers_plan_set(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_plan_cancel(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* TC_OP_CONN_JOB: tag the connection's reads with a job. */
void handlers_conn_job(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers.c: open e for c and append an OPEN reply's fields to w (with
 * chunk 0's record if flags has TC_F_WANT_CHUNK0 and it is resident and
 * checked; its fd in *fd, else -1). -errno (nothing written) if c may not
 * open another file (session_reply_full says why). Counts the hit. */
int handlers_open_record(struct conn *c, struct proto_wr *w, uint32_t flags, struct dataset *ds,
			 struct mf_entry *e, int *fd);
/* handlers.c: answer OPEN id with e's record (handlers_open_record), chunk 0
 * being filled if it is not NULL (its fill just ended: open_fill.c); an
 * error reply if c may not open another file. */
struct chunk;
void handlers_open_reply(struct conn *c, uint32_t id, uint32_t flags, struct dataset *ds,
			 struct mf_entry *e, struct chunk *filled);
/* handlers.c: run OPEN id of path ("DATASET/PATH") with request flags
 * again, as if it had just arrived (its file changed meanwhile). */
void handlers_open_again(struct conn *c, uint32_t id, uint32_t flags, const char *path);
/* handlers.c: after a wait, find path's target again (the manifest may
 * have been replaced); false if it is gone (replied with the error). */
struct target;
bool handlers_reresolve(struct conn *c, uint8_t op, uint32_t id, const char *path, struct target *t);
/* open_many.c: TC_OP_OPEN_MANY (several OPENs in one reply). */
void handlers_open_many(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers_open_record flag (never on the wire): do not record the access
 * nor count the hit now; the caller does it when the client uses the file
 * (open-ahead: handlers_count_access). */
#define HANDLERS_OPEN_NO_ACCESS 0x80000000u
/* handlers_open_record flag (never on the wire): this open started chunk
 * 0's fill itself, overlapping its revalidation (prefetch_open_ahead), so
 * finding the chunk resident is the open's own miss, not a hit. */
#define HANDLERS_OPEN_OWN_FILL 0x40000000u
/* handlers_open_record flag (never on the wire): the caller starts chunk
 * 0's fill itself when the record goes without it (open_many), so its
 * first read is that miss. */
#define HANDLERS_OPEN_FILLS_ABSENT 0x20000000u
/* handlers.c: the client read chunk 0 of hd through a descriptor handed
 * earlier: the access the OPEN would have been (plans, policy, hit). */
void handlers_count_access(struct conn *c, struct handle *hd);
/* ahead.c: TC_OP_OPEN_AHEAD, and what a CLOSE or a freed handle means to it. */
void ahead_op(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void ahead_close(struct conn *c, struct handle *hd, uint32_t flags);
void ahead_handle_gone(struct conn *c, struct handle *hd);
void ahead_conn_free(struct session *s);
/* handlers_trace.c: TC_OP_TRACE_START / TC_OP_TRACE_STOP (admin). */
void handlers_trace_start(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_trace_stop(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers_drain.c: TC_OP_CLUSTER_DRAIN (admin). */
void handlers_drain(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers.c: the handle a CHUNK or READ names, if its dataset still
 * serves; else reply (EBADF, ESTALE) and return NULL. */
struct handle *handlers_handle_for_read(struct conn *c, const struct tc_hdr *h, uint64_t hid);
/* handlers_read.c: TC_OP_READ (the daemon reads and checks the bytes). */
void handlers_read(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers.c: release everything a connection holds (it is closing). */
void handlers_conn_closed(struct conn *c);

#endif
