/*
 * tierctl status, datasets, refresh: daemon-wide reports. STATUS and
 * DATASETS answer with record sets, rendered without knowing their fields.
 *
 * Single-threaded (tierctl).
 */
#include "tierctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

bool tierctl_cluster;

int tierctl_cluster_send(struct tiercache *tc, unsigned op, const void *req, size_t len, const char *what)
{
	void *rep = NULL;
	size_t replen = 0;
	if (tiercache_call_flags(tc, op, TC_F_CLUSTER, req, len, &rep, &replen) < 0)
		return tierctl_fail(what);
	struct proto_rd r;
	proto_rd_init(&r, rep, replen);
	char id[64];
	bool ok = proto_rd_str_copy(&r, id, sizeof(id)) && proto_rd_done(&r);
	free(rep);
	if (!ok) {
		tierctl_err("%s: malformed reply from tiercached", what);
		return TIERCTL_EXIT_FAIL;
	}
	printf("sent to the cluster as %s\n", id);
	return TIERCTL_EXIT_SENT;
}

int tierctl_call_recset(struct tiercache *tc, unsigned op, const void *req, size_t len,
			const char *what, struct proto_recset *out)
{
	if (tierctl_cluster) /* main allows it for the broadcast ops only */
		return tierctl_cluster_send(tc, op, req, len, what);
	void *rep = NULL;
	size_t replen = 0;
	if (tiercache_call(tc, op, req, len, &rep, &replen) < 0)
		return tierctl_fail(what);
	int rc = proto_recset_parse(rep, replen, out);
	free(rep);
	if (rc < 0) {
		tierctl_err("%s: %s", what,
			    rc == -ENOMEM ? "out of memory" : "malformed reply from tiercached");
		return TIERCTL_EXIT_FAIL;
	}
	return TIERCTL_EXIT_OK;
}

static int report(struct tiercache *tc, int argc, char **argv, unsigned op)
{
	bool json;
	int npos;
	int rc = tierctl_parse_json(argc, argv, &json, &npos);
	if (rc)
		return rc;
	if (npos)
		return tierctl_usage_error("%s: unexpected argument '%s'", argv[0], argv[1]);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	struct proto_recset rs;
	rc = tierctl_call_recset(tc, op, NULL, 0, argv[0], &rs);
	if (rc)
		return rc;
	if (json)
		tierctl_render_json(stdout, &rs);
	else
		tierctl_render_human(stdout, &rs);
	proto_recset_free(&rs);
	return TIERCTL_EXIT_OK;
}

int tierctl_cmd_status(struct tiercache *tc, int argc, char **argv)
{
	return report(tc, argc, argv, TC_OP_STATUS);
}

int tierctl_cmd_datasets(struct tiercache *tc, int argc, char **argv)
{
	return report(tc, argc, argv, TC_OP_DATASETS);
}

int tierctl_cmd_refresh(struct tiercache *tc, int argc, char **argv)
{
	bool json;
	int npos;
	int rc = tierctl_parse_json(argc, argv, &json, &npos);
	if (rc)
		return rc;
	if (npos != 1)
		return tierctl_usage_error("refresh: need exactly one DATASET");
	const char *ds = argv[1];
	size_t n = strlen(ds);
	if (n == 0 || n > TC_DATASET_NAME_MAX || strchr(ds, '/'))
		return tierctl_usage_error("refresh: '%s' is not a dataset name", ds);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */

	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, ds);
	void *rep = NULL;
	size_t replen = 0;
	char what[128];
	snprintf(what, sizeof(what), "refresh %s", ds);
	if (w.oom) {
		proto_wr_free(&w);
		tierctl_err("%s: out of memory", what);
		return TIERCTL_EXIT_FAIL;
	}
	rc = tiercache_call(tc, TC_OP_REFRESH, w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE, &rep,
			    &replen);
	proto_wr_free(&w);
	if (rc < 0)
		return tierctl_fail(what);
	struct proto_rd r;
	proto_rd_init(&r, rep, replen);
	uint64_t files = proto_rd_u64(&r);
	uint64_t bytes = proto_rd_u64(&r);
	uint64_t changed = proto_rd_u64(&r);
	bool ok = proto_rd_done(&r);
	free(rep);
	if (!ok) {
		tierctl_err("%s: malformed reply from tiercached", what);
		return TIERCTL_EXIT_FAIL;
	}
	if (json) {
		fputs("{\"dataset\": ", stdout);
		tierctl_json_str(stdout, ds);
		printf(", \"files\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"changed\": %" PRIu64
		       "}\n",
		       files, bytes, changed);
	} else {
		char hb[32];
		tierctl_human_bytes(hb, sizeof(hb), bytes);
		printf("%s: %" PRIu64 " files, %s, %" PRIu64 " changed\n", ds, files, hb, changed);
	}
	return TIERCTL_EXIT_OK;
}
