/*
 * tierctl cluster drain [--wait] | cluster undrain (admin; docs/cluster.md
 * "Join, drain and leave"): TC_OP_CLUSTER_DRAIN, then, with --wait, the
 * status section "cluster" until its drain is done, with the progress on
 * stderr. The node stays a member (serving its chunks to their new homes)
 * until it is stopped.
 *
 * Single-threaded (tierctl).
 */
#include "tierctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The drain fields of this node's status: 0, or EXIT_FAIL (printed). */
static int drain_progress(struct tiercache *tc, char *phase, size_t pn, uint64_t v[4])
{
	struct proto_recset rs;
	int rc = tierctl_call_recset(tc, TC_OP_STATUS, NULL, 0, "cluster drain", &rs);
	if (rc)
		return rc;
	const struct proto_section *s = proto_recset_find(&rs, "cluster");
	const struct proto_field *f = s && s->nrecords ? proto_record_find(&s->records[0], "drain") : NULL;
	if (!f || f->type != TC_VAL_STR) {
		proto_recset_free(&rs);
		tierctl_err("cluster drain: the daemon's status has no drain progress (an older tiercached?)");
		return TIERCTL_EXIT_FAIL;
	}
	snprintf(phase, pn, "%s", f->v.s);
	static const char *const keys[4] = {"drain_chunks", "drain_chunks_handed", "drain_chunks_failed",
					    "drain_chunks_left"};
	for (int i = 0; i < 4; i++) {
		const struct proto_field *g = proto_record_find(&s->records[0], keys[i]);
		v[i] = g && g->type == TC_VAL_U64 ? g->v.u : 0;
	}
	proto_recset_free(&rs);
	return 0;
}

int tierctl_cluster_drain(struct tiercache *tc, int argc, char **argv)
{
	bool on = strcmp(argv[0], "drain") == 0, wait = false;
	const struct tierctl_flag flags[] = {{"--wait", &wait}, {NULL, NULL}};
	int npos;
	int rc = tierctl_parse_flags(argc, argv, flags, &npos);
	if (rc)
		return rc;
	if (npos)
		return tierctl_usage_error("cluster %s: unexpected argument '%s'", argv[0], argv[1]);
	if (wait && !on)
		return tierctl_usage_error("cluster undrain: --wait applies to drain only");
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	uint8_t req[4];
	uint32_t what = on ? TC_DRAIN_ON : TC_DRAIN_OFF;
	for (int i = 0; i < 4; i++)
		req[i] = (uint8_t)(what >> (8 * i));
	void *rep = NULL;
	size_t n = 0;
	if (tiercache_call(tc, TC_OP_CLUSTER_DRAIN, req, sizeof(req), &rep, &n) < 0)
		return tierctl_fail(on ? "cluster drain" : "cluster undrain");
	free(rep);
	if (!wait) {
		printf("%s\n", on ? "draining (tierctl cluster status shows the progress; --wait waits for it)"
				  : "up");
		return TIERCTL_EXIT_OK;
	}
	char phase[32] = "", last[96] = "";
	uint64_t v[4];
	for (;;) {
		rc = drain_progress(tc, phase, sizeof(phase), v);
		if (rc)
			return rc;
		if (strcmp(phase, "none") == 0) {
			tierctl_err("cluster drain: the node is no longer draining (undrained meanwhile?)");
			return TIERCTL_EXIT_FAIL;
		}
		char now[96];
		snprintf(now, sizeof(now), "%s: %" PRIu64 " chunks, %" PRIu64 " handed over, %" PRIu64
			 " failed, %" PRIu64 " left", phase, v[0], v[1], v[2], v[3]);
		if (strcmp(now, last) != 0) {
			fprintf(stderr, "tierctl: cluster drain: %s\n", now);
			memcpy(last, now, sizeof(last));
		}
		if (strcmp(phase, "done") == 0)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
	}
	printf("drained: %" PRIu64 " chunks handed over to their new homes, %" PRIu64 " failed%s; stop the "
	       "daemon to leave the cluster\n", v[1], v[2],
	       v[2] ? " (their new homes read those from the cold store when they are read; the daemon log "
		      "says why each failed)" : "");
	return v[2] ? TIERCTL_EXIT_FAIL : TIERCTL_EXIT_OK;
}
