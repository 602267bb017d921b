/*
 * `tierctl policy show [--json] [DATASET]` and
 * `tierctl policy set DATASET NAME [key=value ...] | --config`: see
 * cmd_policy.c and docs/policies.md.
 */
#ifndef TIERCACHE_TIERCTL_POLICY_H
#define TIERCACHE_TIERCTL_POLICY_H

struct tiercache;

#define TIERCTL_POLICY_USAGE "show|set [--json] [DATASET [NAME [k=v...] | --config]]"
#define TIERCTL_POLICY_SUMMARY "show a dataset's cache policy, or switch it at run time"

/* argv[0] = "policy". Returns a tierctl exit status (0 ok, 1 failed, 2
 * usage). */
int tierctl_cmd_policy(struct tiercache *tc, int argc, char **argv);

#endif
