/*
 * Request handlers for the policy ops: POLICY_GET (tierctl policy show) and
 * POLICY_SET (tierctl policy set). Decoding and limits here; the work is
 * policy_glue's. Loop thread only.
 */
#include <errno.h>
#include <string.h>

#include "policy_glue.h"
#include "handlers.h"

/* The record set both ops answer with: "policies" for ds (NULL: every
 * dataset), then "known". */
static void policy_reply(struct conn *c, const struct tc_hdr *h, struct dataset *ds)
{
	struct proto_wr w;
	struct proto_rs rs;
	struct cache *cache = conn_api(c)->cache;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	proto_rs_section(&rs, "policies", TC_SHAPE_ARRAY);
	for (unsigned i = 0; i < cache->nds; i++) {
		if (ds && cache->ds[i] != ds)
			continue;
		proto_rs_record(&rs);
		policy_glue_report(cache, cache->ds[i], &rs);
	}
	proto_rs_section(&rs, "known", TC_SHAPE_ARRAY);
	policy_glue_report_known(&rs);
	proto_rs_end(&rs);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

/* Read "str dataset" and find it; "" is allowed when any_ok. On error
 * reply and return false. */
static bool read_dataset(struct conn *c, const struct tc_hdr *h, struct proto_rd *r, bool any_ok,
			 struct dataset **out)
{
	char name[TC_DATASET_NAME_MAX + 1];
	if (!proto_rd_str_copy(r, name, sizeof(name))) {
		conn_reply_err(c, h->op, h->id, r->left >= 4 ? EINVAL : EBADMSG,
			       "malformed request: a dataset name of at most %u bytes comes first",
			       TC_DATASET_NAME_MAX);
		return false;
	}
	*out = NULL;
	if (!*name && any_ok)
		return true;
	*out = cache_dataset(conn_api(c)->cache, name, strlen(name));
	if (!*out) {
		conn_reply_err(c, h->op, h->id, ENOENT, "no dataset named \"%s\" (tierctl datasets lists them)",
			       name);
		return false;
	}
	return true;
}

void handlers_policy_get(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct dataset *ds;
	if (!read_dataset(c, h, r, true, &ds))
		return;
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed POLICY_GET");
		return;
	}
	policy_reply(c, h, ds);
}

void handlers_policy_set(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct dataset *ds;
	char name[POLICY_SPEC_NAME_MAX + 1];
	char pairs[TC_POLICY_TUNABLES_MAX][TC_POLICY_TUNABLE_MAX + 1];
	const char *pv[TC_POLICY_TUNABLES_MAX];
	char err[1024] = "";
	size_t n;
	const char *s;

	if (!conn_require_admin(c, h))
		return;
	if (!read_dataset(c, h, r, false, &ds))
		return;
	s = proto_rd_str(r, 1024, &n);
	if (!s) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed POLICY_SET");
		return;
	}
	if (n > POLICY_SPEC_NAME_MAX || memchr(s, '\0', n)) {
		conn_reply_err(c, h->op, h->id, EINVAL, "\"%.*s\" is not a policy name", (int)(n > 64 ? 64 : n),
			       s);
		return;
	}
	memcpy(name, s, n);
	name[n] = '\0';
	uint32_t count = proto_rd_u32(r);
	if (!proto_rd_ok(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed POLICY_SET");
		return;
	}
	if (count > TC_POLICY_TUNABLES_MAX) {
		conn_reply_err(c, h->op, h->id, EINVAL, "at most %u tunables at once", TC_POLICY_TUNABLES_MAX);
		return;
	}
	for (uint32_t i = 0; i < count; i++) {
		s = proto_rd_str(r, 65536, &n);
		if (!s) {
			conn_reply_err(c, h->op, h->id, EBADMSG, "malformed POLICY_SET");
			return;
		}
		if (n > TC_POLICY_TUNABLE_MAX || memchr(s, '\0', n)) {
			conn_reply_err(c, h->op, h->id, EINVAL, "tunable \"%.40s...\" longer than %u bytes", s,
				       TC_POLICY_TUNABLE_MAX);
			return;
		}
		memcpy(pairs[i], s, n);
		pairs[i][n] = '\0';
		pv[i] = pairs[i];
	}
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed POLICY_SET");
		return;
	}
	int rc;
	if (!*name && count == 0) {
		rc = policy_glue_set(conn_api(c)->cache, ds, NULL, err, sizeof(err));
	} else {
		struct policy_spec spec;
		rc = policy_spec_from_pairs(name, pv, count, &spec, err, sizeof(err));
		if (rc == 0)
			rc = policy_glue_set(conn_api(c)->cache, ds, &spec, err, sizeof(err));
	}
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "%s", err);
		return;
	}
	policy_reply(c, h, ds);
}
