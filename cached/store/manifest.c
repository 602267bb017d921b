/*
 * Sorted manifest: see manifest.h.
 */
#include "manifest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "proto.h"
#include "tiercache/protocol.h"

#define MANIFEST_FORMAT 1u
/* the least an entry takes: str length u32 + a 1-byte path + 3 x 8 */
#define MANIFEST_ENTRY_MIN (4 + 1 + 3 * 8)

bool manifest_path_valid(const char *path, size_t len)
{
	if (len == 0 || len >= TC_PATH_MAX || path[0] == '/')
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && path[i] == '\0')
			return false;
		if (i < len && path[i] != '/')
			continue;
		size_t cl = i - start;
		if (cl == 0 || cl > TC_NAME_MAX)
			return false;
		if ((cl == 1 && path[start] == '.') || (cl == 2 && path[start] == '.' && path[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

int manifest_add(struct manifest *m, const char *path, const struct cold_stat *st, uint64_t now_ns)
{
	if (!manifest_path_valid(path, strlen(path))) {
		m->skipped++;
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct mf_entry *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	m->v[m->n++] = (struct mf_entry){.path = p, .st = *st, .checked_ns = now_ns};
	m->bytes += st->size;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mf_entry *)a)->path, ((const struct mf_entry *)b)->path);
}

void manifest_sort(struct manifest *m)
{
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), entry_cmp);
}

struct build_ctx {
	struct manifest *m;
	uint64_t now_ns;
	uint64_t *listed;
	int rc;
};

static int build_one(void *arg, const char *path, const struct cold_stat *st)
{
	struct build_ctx *b = arg;
	b->rc = manifest_add(b->m, path, st, b->now_ns);
	if (b->listed)
		__atomic_store_n(b->listed, (uint64_t)b->m->n, __ATOMIC_RELAXED);
	return b->rc;
}

int manifest_build(struct manifest **out, struct cold *c, uint64_t now_ns, uint64_t *listed)
{
	struct manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	struct build_ctx b = {.m = m, .now_ns = now_ns, .listed = listed};
	int rc = cold_list(c, build_one, &b);
	if (rc == 0)
		rc = b.rc;
	if (rc < 0) {
		manifest_free(m);
		return rc;
	}
	manifest_sort(m);
	if (m->skipped)
		log_warn("dataset=%s op=manifest_build skipped=%u reason=\"names with empty, . or .. "
			 "components or longer than the protocol allows\"",
			 c->dataset, m->skipped);
	*out = m;
	return 0;
}

void manifest_free(struct manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	free(m);
}

void manifest_encode(const struct manifest *m, struct proto_wr *w)
{
	uint64_t live = 0;
	for (size_t i = 0; i < m->n; i++)
		live += !m->v[i].gone;
	proto_wr_u8(w, MANIFEST_FORMAT);
	proto_wr_u64(w, live);
	for (size_t i = 0; i < m->n; i++) {
		const struct mf_entry *e = &m->v[i];
		if (e->gone)
			continue;
		proto_wr_str(w, e->path);
		proto_wr_u64(w, e->st.size);
		proto_wr_i64(w, e->st.mtime_ns);
		proto_wr_u64(w, e->st.version);
	}
}

int manifest_decode(const void *p, size_t n, struct manifest **out)
{
	char path[TC_PATH_MAX + 1];
	struct proto_rd r;
	int rc = -EINVAL;
	*out = NULL;
	struct manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	proto_rd_init(&r, p, n);
	uint8_t fmt = proto_rd_u8(&r);
	uint64_t cnt = proto_rd_u64(&r);
	/* a count the rest of the record cannot hold is corrupt: checked
	 * before anything is allocated for it */
	if (fmt != MANIFEST_FORMAT || !proto_rd_ok(&r) || cnt > r.left / MANIFEST_ENTRY_MIN)
		goto out;
	for (uint64_t i = 0; i < cnt; i++) {
		struct cold_stat st;
		size_t pn;
		if (!proto_rd_str_copy(&r, path, sizeof(path)))
			goto out;
		pn = strlen(path);
		st.size = proto_rd_u64(&r);
		st.mtime_ns = proto_rd_i64(&r);
		st.version = proto_rd_u64(&r);
		/* the daemon writes only valid paths: anything else is damage,
		 * not a name to skip */
		if (!proto_rd_ok(&r) || !manifest_path_valid(path, pn))
			goto out;
		rc = manifest_add(m, path, &st, 0);
		if (rc < 0)
			goto out;
		rc = -EINVAL;
	}
	if (!proto_rd_done(&r))
		goto out;
	manifest_sort(m);
	for (size_t i = 1; i < m->n; i++)
		if (strcmp(m->v[i - 1].path, m->v[i].path) == 0)
			goto out; /* one path twice: lookups would see only one */
	*out = m;
	return 0;
out:
	manifest_free(m);
	return rc;
}

/* First index whose path is >= key (key of length kn, compared as bytes). */
static size_t lower_bound(const struct manifest *m, const char *key, size_t kn)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *p = m->v[mid].path;
		size_t pn = strlen(p);
		int c = memcmp(p, key, pn < kn ? pn : kn);
		if (c < 0 || (c == 0 && pn < kn))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct mf_entry *manifest_find(const struct manifest *m, const char *path)
{
	size_t n = strlen(path);
	size_t i = lower_bound(m, path, n);
	if (i < m->n && !m->v[i].gone && strcmp(m->v[i].path, path) == 0)
		return &m->v[i];
	return NULL;
}

static bool has_prefix(const char *p, const char *pre, size_t pn)
{
	return strncmp(p, pre, pn) == 0;
}

bool manifest_dir_exists(const struct manifest *m, const char *dir)
{
	char pre[TC_PATH_MAX + 2];
	size_t dn = strlen(dir);
	if (dn == 0)
		return true; /* the root always exists, even when empty */
	if (dn + 2 > sizeof(pre))
		return false;
	memcpy(pre, dir, dn);
	pre[dn] = '/';
	pre[dn + 1] = '\0';
	size_t i = lower_bound(m, pre, dn + 1);
	return i < m->n && has_prefix(m->v[i].path, pre, dn + 1);
}

uint32_t manifest_listdir(const struct manifest *m, const char *dir, uint32_t cookie,
			  int (*fn)(void *arg, const struct mf_dirent *de), void *arg)
{
	char pre[TC_PATH_MAX + 2];
	size_t dn = strlen(dir), pn;
	if (dn + 2 > sizeof(pre))
		return 0;
	memcpy(pre, dir, dn);
	if (dn) {
		pre[dn] = '/';
		pn = dn + 1;
	} else {
		pn = 0;
	}
	pre[pn] = '\0';
	size_t i = lower_bound(m, pre, pn);
	if (cookie && cookie - 1 > i)
		i = cookie - 1;
	while (i < m->n && has_prefix(m->v[i].path, pre, pn)) {
		if (m->v[i].gone) {
			i++;
			continue;
		}
		const char *rest = m->v[i].path + pn;
		const char *slash = strchr(rest, '/');
		struct mf_dirent de = {
			.name = rest,
			.namelen = slash ? (size_t)(slash - rest) : strlen(rest),
			.is_dir = slash != NULL,
			.e = slash ? NULL : &m->v[i],
		};
		if (fn(arg, &de))
			return (uint32_t)(i + 1);
		if (!slash) {
			i++;
			continue;
		}
		/* skip the whole subdirectory: everything with prefix "pre/name/"
		 * sorts before "pre/name0" ('0' follows '/') */
		char next[TC_PATH_MAX + 2];
		size_t nn = pn + de.namelen;
		memcpy(next, m->v[i].path, nn);
		next[nn] = '/' + 1;
		i = lower_bound(m, next, nn + 1);
	}
	return 0;
}
