/*
 * tierctl cluster status: this node's view of its cluster (docs/cluster.md)
 * -- the status sections "cluster", "cluster_members" and "cluster_egress",
 * rendered like status. A daemon without [cluster] says so. cluster drain
 * and undrain are in cmd_drain.c.
 *
 * Single-threaded (tierctl).
 */
#include "tierctl.h"

#include <stdlib.h>
#include <string.h>

int tierctl_cmd_cluster(struct tiercache *tc, int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "drain") == 0 || strcmp(argv[1], "undrain") == 0))
		return tierctl_cluster_drain(tc, argc - 1, argv + 1);
	if (argc < 2 || strcmp(argv[1], "status") != 0)
		return tierctl_usage_error("cluster: unknown subcommand '%s' (use: cluster status [--json], "
					   "cluster drain [--wait], cluster undrain)",
					   argc < 2 ? "" : argv[1]);
	bool json;
	int npos;
	int rc = tierctl_parse_json(argc - 1, argv + 1, &json, &npos);
	if (rc)
		return rc;
	if (npos)
		return tierctl_usage_error("cluster status: unexpected argument '%s'", argv[2]);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	struct proto_recset rs;
	rc = tierctl_call_recset(tc, TC_OP_STATUS, NULL, 0, "cluster status", &rs);
	if (rc)
		return rc;
	if (!proto_recset_find(&rs, "cluster")) {
		proto_recset_free(&rs);
		tierctl_err("cluster status: this daemon is not part of a cluster (its config has no [cluster] "
			    "section; docs/cluster.md)");
		return TIERCTL_EXIT_FAIL;
	}
	/* keep the cluster's sections only (the others are freed with rs) */
	struct proto_recset mine = {.sections = calloc(rs.nsections, sizeof(struct proto_section))};
	if (!mine.sections) {
		proto_recset_free(&rs);
		tierctl_err("cluster status: out of memory");
		return TIERCTL_EXIT_FAIL;
	}
	for (uint32_t i = 0; i < rs.nsections; i++)
		if (strncmp(rs.sections[i].name, "cluster", 7) == 0)
			mine.sections[mine.nsections++] = rs.sections[i];
	if (json)
		tierctl_render_json(stdout, &mine);
	else
		tierctl_render_human(stdout, &mine);
	free(mine.sections);
	proto_recset_free(&rs);
	return TIERCTL_EXIT_OK;
}
