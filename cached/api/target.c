/*
 * "DATASET[/PATH]" as every op names a file, a directory or a whole
 * dataset: see target.h. Loop thread only.
 */
#include "target.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dataset.h"
#include "manifest.h"

void target_reply_unavailable(struct conn *c, const struct tc_hdr *h, const struct dataset *ds)
{
	if (ds->first_load) {
		uint64_t listed = dataset_load_progress(ds);
		uint64_t secs = (cache_now_ns() - ds->load_start_ns) / 1000000000ull;
		conn_reply_err(c, h->op, h->id, EIO,
			       "dataset %s is still loading (%llu files listed in %llu s); "
			       "wait for it: tiercache_set_wait(), $TIERCACHE_LOAD_TIMEOUT or "
			       "tiercache-mount -o load_timeout=SECONDS",
			       ds->name, (unsigned long long)listed, (unsigned long long)secs);
		return;
	}
	conn_reply_err(c, h->op, h->id, EIO,
		       "dataset %s is unavailable: %s (the daemon retries every few seconds; "
		       "tierctl status and the daemon's log say more: fix the source or the "
		       "dataset's configuration)",
		       ds->name, ds->reason);
}


int target_parse_str(struct cache *cache, const char *s, size_t n, struct target *t, char *err,
		     size_t errlen)
{
	if (n == 0 || memchr(s, '\0', n)) {
		snprintf(err, errlen, "empty path or NUL byte in path");
		return -EINVAL;
	}
	if (n >= sizeof(t->buf)) {
		snprintf(err, errlen, "path longer than %u bytes", TC_PATH_MAX - 1);
		return -ENAMETOOLONG;
	}
	if (s[0] == '/') {
		snprintf(err, errlen, "absolute path: name files as DATASET/PATH (no leading /)");
		return -EINVAL;
	}
	memcpy(t->buf, s, n);
	t->buf[n] = '\0';
	while (n > 1 && t->buf[n - 1] == '/')
		t->buf[--n] = '\0'; /* "ds/dir/" means "ds/dir" */
	char *slash = strchr(t->buf, '/');
	size_t dn = slash ? (size_t)(slash - t->buf) : n;
	t->rest = slash ? slash + 1 : "";
	if (*t->rest && !manifest_path_valid(t->rest, strlen(t->rest))) {
		bool long_name = false;
		for (const char *p = t->rest, *q; *p; p = q + (*q != '\0')) {
			q = strchrnul(p, '/');
			long_name |= (size_t)(q - p) > TC_NAME_MAX;
		}
		if (long_name) {
			snprintf(err, errlen, "a path component is longer than %u bytes", TC_NAME_MAX);
			return -ENAMETOOLONG;
		}
		snprintf(err, errlen, "invalid path \"%s\": empty, \".\" or \"..\" components are not allowed",
			 t->buf);
		return -EINVAL;
	}
	t->ds = cache_dataset(cache, t->buf, dn);
	if (!t->ds) {
		snprintf(err, errlen, "no dataset named \"%.*s\" (tierctl datasets lists them)",
			 (int)(dn > 64 ? 64 : dn), t->buf);
		return -ENOENT;
	}
	return 0;
}

bool target_parse(struct conn *c, const struct tc_hdr *h, struct proto_rd *r, struct target *t)
{
	size_t n;
	/* a length the frame holds but the protocol does not allow is a long
	 * path; one the frame does not hold is a malformed request */
	struct proto_rd peek = *r;
	uint32_t declared = proto_rd_u32(&peek);
	bool held = !peek.bad && declared <= peek.left;
	const char *s = proto_rd_str(r, TC_PATH_MAX, &n);
	if (!s) {
		if (held)
			conn_reply_err(c, h->op, h->id, ENAMETOOLONG, "path longer than %u bytes",
				       TC_PATH_MAX - 1);
		else
			conn_reply_err(c, h->op, h->id, EBADMSG,
				       "malformed request: expected DATASET[/PATH]");
		return false;
	}
	char err[1024];
	int rc = target_parse_str(conn_api(c)->cache, s, n, t, err, sizeof(err));
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "%s", err);
		return false;
	}
	if (!t->ds->mf) {
		target_reply_unavailable(c, h, t->ds);
		return false;
	}
	return true;
}
