/*
 * Residency commands (docs/admin.md): pin, unpin, evict, demote, verify,
 * lifecycle run (cmd_admin.c) and warm (cmd_warm.c), plus the small option
 * helpers they share.
 */
#ifndef TIERCACHE_TIERCTL_ADMIN_H
#define TIERCACHE_TIERCTL_ADMIN_H

#include <stdint.h>

#include "proto.h"

struct tiercache;

int tierctl_cmd_pin(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_unpin(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_evict(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_demote(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_verify(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_lifecycle(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_warm(struct tiercache *tc, int argc, char **argv);

/* Take "NAME VALUE" or "NAME=VALUE" out of argv (at most once) into
 * *value. Returns 0, or TIERCTL_EXIT_USAGE (message printed). */
int tierctl_take_option(int *argc, char **argv, const char *name, const char **value);
/* "90", "90s", "30m", "12h", "7d", "2w" -> seconds. 0, -EINVAL, -ERANGE. */
int tierctl_parse_duration_s(const char *s, int64_t *out);
/* A u64 field of a record, 0 if absent. */
uint64_t tierctl_field_u64(const struct proto_record *r, const char *key);

/* Why chunks failed, summed over replies (their "failures" section). */
#define TIERCTL_FAIL_KINDS 8
struct tierctl_fails {
	uint64_t err[TIERCTL_FAIL_KINDS]; /* errno; 0: other */
	uint64_t chunks[TIERCTL_FAIL_KINDS], bytes[TIERCTL_FAIL_KINDS];
	unsigned n;
};
void tierctl_fails_add(struct tierctl_fails *f, const struct proto_recset *rs);
/* One line on stderr per reason: "WHAT: N chunks (SIZE) failed: why". */
void tierctl_fails_print(const struct tierctl_fails *f, const char *what);

#endif
