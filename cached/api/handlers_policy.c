/*
 * Request handlers for the policy ops: POLICY_GET (tierctl policy show) and
 * POLICY_SET (tierctl policy set). Decoding and limits here; the work is
 * policy_glue's. Loop thread only.
 */
#include <errno.h>
#include <stdio.h>
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

/* Read "str dataset" and find it; "" is allowed when any_ok. 0, or
 * -errno with the message in err. */
static int read_dataset(struct cache *cache, struct proto_rd *r, bool any_ok, struct dataset **out,
			char *err, size_t errlen)
{
	char name[TC_DATASET_NAME_MAX + 1];
	if (!proto_rd_str_copy(r, name, sizeof(name))) {
		snprintf(err, errlen, "malformed request: a dataset name of at most %u bytes comes first",
			 TC_DATASET_NAME_MAX);
		return r->left >= 4 ? -EINVAL : -EBADMSG;
	}
	*out = NULL;
	if (!*name && any_ok)
		return 0;
	*out = cache_dataset(cache, name, strlen(name));
	if (!*out) {
		snprintf(err, errlen, "no dataset named \"%s\" (tierctl datasets lists them)", name);
		return -ENOENT;
	}
	return 0;
}

void handlers_policy_get(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct dataset *ds;
	char err[256];
	int rc = read_dataset(conn_api(c)->cache, r, true, &ds, err, sizeof(err));
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "%s", err);
		return;
	}
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed POLICY_GET");
		return;
	}
	policy_reply(c, h, ds);
}

int handlers_policy_apply(struct cache *cache, struct proto_rd *r, struct dataset **out, char *err,
			  size_t errlen)
{
	struct dataset *ds;
	char name[POLICY_SPEC_NAME_MAX + 1];
	char pairs[TC_POLICY_TUNABLES_MAX][TC_POLICY_TUNABLE_MAX + 1];
	const char *pv[TC_POLICY_TUNABLES_MAX];
	size_t n;
	const char *s;

	int rc = read_dataset(cache, r, false, &ds, err, errlen);
	if (rc < 0)
		return rc;
	s = proto_rd_str(r, 1024, &n);
	if (!s) {
		snprintf(err, errlen, "malformed POLICY_SET");
		return -EBADMSG;
	}
	if (n > POLICY_SPEC_NAME_MAX || memchr(s, '\0', n)) {
		snprintf(err, errlen, "\"%.*s\" is not a policy name", (int)(n > 64 ? 64 : n), s);
		return -EINVAL;
	}
	memcpy(name, s, n);
	name[n] = '\0';
	uint32_t count = proto_rd_u32(r);
	if (!proto_rd_ok(r)) {
		snprintf(err, errlen, "malformed POLICY_SET");
		return -EBADMSG;
	}
	if (count > TC_POLICY_TUNABLES_MAX) {
		snprintf(err, errlen, "at most %u tunables at once", TC_POLICY_TUNABLES_MAX);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < count; i++) {
		s = proto_rd_str(r, 65536, &n);
		if (!s) {
			snprintf(err, errlen, "malformed POLICY_SET");
			return -EBADMSG;
		}
		if (n > TC_POLICY_TUNABLE_MAX || memchr(s, '\0', n)) {
			snprintf(err, errlen, "tunable \"%.40s...\" longer than %u bytes", s, TC_POLICY_TUNABLE_MAX);
			return -EINVAL;
		}
		memcpy(pairs[i], s, n);
		pairs[i][n] = '\0';
		pv[i] = pairs[i];
	}
	if (!proto_rd_done(r)) {
		snprintf(err, errlen, "malformed POLICY_SET");
		return -EBADMSG;
	}
	if (!*name && count == 0) {
		rc = policy_glue_set(cache, ds, NULL, err, errlen);
	} else {
		struct policy_spec spec;
		rc = policy_spec_from_pairs(name, pv, count, &spec, err, errlen);
		if (rc == 0)
			rc = policy_glue_set(cache, ds, &spec, err, errlen);
	}
	*out = ds;
	return rc;
}

void handlers_policy_set(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct dataset *ds = NULL;
	char err[1024] = "";
	if (!conn_require_admin(c, h))
		return;
	int rc = handlers_policy_apply(conn_api(c)->cache, r, &ds, err, sizeof(err));
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "%s", err);
		return;
	}
	policy_reply(c, h, ds);
}
