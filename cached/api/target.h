/*
 * The one parser of "DATASET[/PATH]", the way every op names what it acts
 * on (a file, a directory, a whole dataset). The checks come before any
 * lookup: relative, no NUL, no empty, "." or ".." component, at most
 * TC_PATH_MAX - 1 bytes in all (ENAMETOOLONG) and TC_NAME_MAX per component
 * (ENAMETOOLONG); "ds/dir/" means "ds/dir". A bad target is an error reply,
 * never a file-system access. Loop thread only.
 */
#ifndef TIERCACHE_TARGET_H
#define TIERCACHE_TARGET_H

#include <stdbool.h>

#include "api.h"

struct target {
	struct dataset *ds;
	const char *rest; /* the path in the dataset; "" for the dataset root */
	char buf[TC_PATH_MAX + 1];
};

/* Read the target from r and find its dataset, which must be serving (it
 * has a manifest). On any error: reply (EBADMSG, EINVAL, ENAMETOOLONG,
 * ENOENT for an unknown dataset, EIO for one that is unavailable) and
 * return false. */
bool target_parse(struct conn *c, const struct tc_hdr *h, struct proto_rd *r, struct target *t);
/* The same checks on s (n bytes, not NUL-terminated) without a
 * connection (the admin broadcast): 0, or -errno (EINVAL, ENAMETOOLONG,
 * ENOENT) with the message in err. A dataset without a manifest is
 * found: the caller checks t->ds->mf. */
int target_parse_str(struct cache *cache, const char *s, size_t n, struct target *t, char *err,
		     size_t errlen);
/* The EIO reply for ds without a manifest: still loading (with its
 * progress and how to wait) or failed (why, and what to do). */
void target_reply_unavailable(struct conn *c, const struct tc_hdr *h, const struct dataset *ds);

#endif
