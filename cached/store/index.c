/*
 * RocksDB-backed index: see index.h. Loop thread only.
 */
#include "index.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rocksdb/c.h>

#include "log.h"
#include "proto.h"

/* 2: checksums are XXH3-64 (1: XXH64; such records are dropped at scan) */
#define INDEX_FORMAT 2u
#define CHUNK_PREFIX 'c'
#define KV_PREFIX 'k'

struct index {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wopts;
	rocksdb_readoptions_t *ropts;
	rocksdb_writebatch_t *wb; /* open batch of chunk records, or NULL */
	rocksdb_writebatch_t *dwb; /* chunk deletes deferred (index_chunk_delete_later), or NULL */
};

int index_open(struct index **out, const char *state_dir, char *err, size_t errlen)
{
	char path[4200];
	char *rerr = NULL;
	if (mkdir(state_dir, 0750) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create state_dir %s: %s", state_dir, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/index", state_dir);
	struct index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(ix->opts, 1);
	rocksdb_options_set_max_open_files(ix->opts, 256);
	rocksdb_options_set_keep_log_file_num(ix->opts, 2);
	rocksdb_options_set_info_log_level(ix->opts, 3 /* error */);
	ix->wopts = rocksdb_writeoptions_create();
	ix->ropts = rocksdb_readoptions_create();
	ix->db = rocksdb_open(ix->opts, path, &rerr);
	if (!ix->db) {
		snprintf(err, errlen, "cannot open index %s: %s (is another tiercached using this state_dir?)",
			 path, rerr ? rerr : "?");
		free(rerr);
		index_close(ix);
		return -EIO;
	}
	*out = ix;
	return 0;
}

void index_close(struct index *ix)
{
	if (!ix)
		return;
	if (ix->wb)
		index_batch_commit(ix);
	index_deferred_commit(ix);
	if (ix->db)
		rocksdb_close(ix->db);
	if (ix->wopts)
		rocksdb_writeoptions_destroy(ix->wopts);
	if (ix->ropts)
		rocksdb_readoptions_destroy(ix->ropts);
	if (ix->opts)
		rocksdb_options_destroy(ix->opts);
	free(ix);
}

static void chunk_keybuf(uint8_t k[9], uint64_t key)
{
	k[0] = CHUNK_PREFIX;
	for (int i = 0; i < 8; i++)
		k[1 + i] = (uint8_t)(key >> (56 - 8 * i));
}

static int db_put(struct index *ix, const void *k, size_t kn, const void *v, size_t vn)
{
	char *rerr = NULL;
	rocksdb_put(ix->db, ix->wopts, k, kn, v, vn, &rerr);
	if (rerr) {
		log_err("op=index_put err=\"%s\"", rerr);
		free(rerr);
		return -EIO;
	}
	return 0;
}

static int db_delete(struct index *ix, const void *k, size_t kn)
{
	char *rerr = NULL;
	rocksdb_delete(ix->db, ix->wopts, k, kn, &rerr);
	if (rerr) {
		log_err("op=index_delete err=\"%s\"", rerr);
		free(rerr);
		return -EIO;
	}
	return 0;
}

int index_batch_begin(struct index *ix)
{
	if (ix->wb)
		return -EBUSY;
	index_deferred_commit(ix); /* the deletes before what the batch writes */
	ix->wb = rocksdb_writebatch_create();
	return ix->wb ? 0 : -ENOMEM;
}

int index_batch_commit(struct index *ix)
{
	char *rerr = NULL;
	rocksdb_writebatch_t *wb = ix->wb;
	if (!wb)
		return 0;
	ix->wb = NULL;
	if (rocksdb_writebatch_count(wb))
		rocksdb_write(ix->db, ix->wopts, wb, &rerr);
	rocksdb_writebatch_destroy(wb);
	if (rerr) {
		log_err("op=index_batch err=\"%s\" action=\"records lost; their items are removed at the "
			"next start\"", rerr);
		free(rerr);
		return -EIO;
	}
	return 0;
}

int index_deferred_commit(struct index *ix)
{
	char *rerr = NULL;
	rocksdb_writebatch_t *wb = ix->dwb;
	if (!wb)
		return 0;
	ix->dwb = NULL;
	if (rocksdb_writebatch_count(wb))
		rocksdb_write(ix->db, ix->wopts, wb, &rerr);
	rocksdb_writebatch_destroy(wb);
	if (rerr) {
		log_err("op=index_deferred_delete err=\"%s\" action=\"records kept; their items are "
			"checked against their checksums when first served after the next start\"",
			rerr);
		free(rerr);
		return -EIO;
	}
	return 0;
}

size_t index_deferred_count(const struct index *ix)
{
	return ix && ix->dwb ? (size_t)rocksdb_writebatch_count(ix->dwb) : 0;
}

/* A chunk record: into the open batch if there is one. */
static int chunk_put(struct index *ix, const void *k, size_t kn, const void *v, size_t vn)
{
	index_deferred_commit(ix); /* a put after a delete of its key wins */
	if (!ix->wb)
		return db_put(ix, k, kn, v, vn);
	rocksdb_writebatch_put(ix->wb, k, kn, v, vn);
	return 0;
}

static int chunk_delete(struct index *ix, const void *k, size_t kn)
{
	index_deferred_commit(ix); /* in their order */
	if (!ix->wb)
		return db_delete(ix, k, kn);
	rocksdb_writebatch_delete(ix->wb, k, kn);
	return 0;
}

int index_chunk_put(struct index *ix, const struct index_chunk *c)
{
	uint8_t k[9];
	struct proto_wr w;
	int rc;
	chunk_keybuf(k, c->key);
	proto_wr_init(&w);
	proto_wr_u8(&w, INDEX_FORMAT);
	proto_wr_u8(&w, c->tier);
	proto_wr_u32(&w, c->idx);
	proto_wr_u32(&w, c->len);
	proto_wr_u64(&w, c->checksum);
	proto_wr_i64(&w, c->atime_s);
	proto_wr_u64(&w, c->src.size);
	proto_wr_i64(&w, c->src.mtime_ns);
	proto_wr_u64(&w, c->src.version);
	proto_wr_str(&w, c->dataset);
	proto_wr_str(&w, c->path);
	if (c->seg) { /* optional trailer: records of chunk files end before it */
		proto_wr_u64(&w, c->seg);
		proto_wr_u64(&w, c->seg_off);
	}
	rc = w.oom ? -ENOMEM : chunk_put(ix, k, sizeof(k), w.buf, w.len);
	proto_wr_free(&w);
	return rc;
}

int index_chunk_delete(struct index *ix, uint64_t key)
{
	uint8_t k[9];
	chunk_keybuf(k, key);
	return chunk_delete(ix, k, sizeof(k));
}

int index_chunk_delete_later(struct index *ix, uint64_t key)
{
	uint8_t k[9];
	chunk_keybuf(k, key);
	if (ix->wb) { /* the open batch writes it, in its order */
		rocksdb_writebatch_delete(ix->wb, (const char *)k, sizeof(k));
		return 0;
	}
	if (!ix->dwb) {
		ix->dwb = rocksdb_writebatch_create();
		if (!ix->dwb)
			return db_delete(ix, k, sizeof(k));
	}
	rocksdb_writebatch_delete(ix->dwb, (const char *)k, sizeof(k));
	if (rocksdb_writebatch_count(ix->dwb) >= INDEX_DEFERRED_MAX)
		return index_deferred_commit(ix);
	return 0;
}

static bool chunk_decode(const char *k, size_t kn, const char *v, size_t vn, struct index_chunk *c,
			 char *ds, size_t dsn, char *path, size_t pathn, unsigned *old)
{
	struct proto_rd r;
	if (kn != 9)
		return false;
	c->key = 0;
	for (int i = 0; i < 8; i++)
		c->key = (c->key << 8) | (uint8_t)k[1 + i];
	proto_rd_init(&r, v, vn);
	uint8_t format = proto_rd_u8(&r);
	if (format != INDEX_FORMAT) {
		if (format == 1)
			(*old)++;
		return false;
	}
	c->tier = proto_rd_u8(&r);
	c->idx = proto_rd_u32(&r);
	c->len = proto_rd_u32(&r);
	c->checksum = proto_rd_u64(&r);
	c->atime_s = proto_rd_i64(&r);
	c->src.size = proto_rd_u64(&r);
	c->src.mtime_ns = proto_rd_i64(&r);
	c->src.version = proto_rd_u64(&r);
	proto_rd_str_copy(&r, ds, dsn);
	proto_rd_str_copy(&r, path, pathn);
	c->dataset = ds;
	c->path = path;
	c->seg = c->seg_off = 0;
	if (r.left && !r.bad) {
		c->seg = proto_rd_u64(&r);
		c->seg_off = proto_rd_u64(&r);
		if (!c->seg)
			return false;
	}
	return proto_rd_done(&r);
}

int index_chunk_scan(struct index *ix, int (*fn)(void *arg, const struct index_chunk *c),
		     void *arg, unsigned *bad)
{
	char ds[TC_DATASET_NAME_MAX + 1], path[TC_PATH_MAX + 1];
	char first = CHUNK_PREFIX;
	int rc = 0;
	unsigned old = 0;
	*bad = 0;
	index_deferred_commit(ix); /* the scan sees every delete */
	rocksdb_iterator_t *it = rocksdb_create_iterator(ix->db, ix->ropts);
	for (rocksdb_iter_seek(it, &first, 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *k = rocksdb_iter_key(it, &kn);
		const char *v = rocksdb_iter_value(it, &vn);
		if (kn < 1 || k[0] != CHUNK_PREFIX)
			break;
		struct index_chunk c;
		if (!chunk_decode(k, kn, v, vn, &c, ds, sizeof(ds), path, sizeof(path), &old)) {
			(*bad)++;
			db_delete(ix, k, kn);
			continue;
		}
		rc = fn(arg, &c);
		if (rc)
			break;
	}
	rocksdb_iter_destroy(it);
	if (old)
		log_info("op=index_scan old_format=%u reason=\"chunk records with XXH64 checksums (index "
			 "format 1) dropped: those chunks are read from the cold store again\"",
			 old);
	return rc;
}

static size_t kv_key(char *buf, size_t n, const char *ns, const char *key)
{
	int m = snprintf(buf, n, "%c%s", KV_PREFIX, ns);
	if (m < 0 || (size_t)m + 1 >= n)
		return 0;
	size_t at = (size_t)m + 1; /* keep the NUL as the separator */
	size_t kl = strlen(key);
	if (at + kl > n)
		return 0;
	memcpy(buf + at, key, kl);
	return at + kl;
}

int index_kv_put(struct index *ix, const char *ns, const char *key, const void *v, size_t n)
{
	char k[TC_PATH_MAX + 128];
	size_t kn = kv_key(k, sizeof(k), ns, key);
	return kn ? db_put(ix, k, kn, v, n) : -ENAMETOOLONG;
}

int index_kv_get(struct index *ix, const char *ns, const char *key, void **v, size_t *n)
{
	char k[TC_PATH_MAX + 128];
	char *rerr = NULL;
	size_t kn = kv_key(k, sizeof(k), ns, key);
	if (!kn)
		return -ENAMETOOLONG;
	char *val = rocksdb_get(ix->db, ix->ropts, k, kn, n, &rerr);
	if (rerr) {
		log_err("op=index_get err=\"%s\"", rerr);
		free(rerr);
		return -EIO;
	}
	if (!val)
		return -ENOENT;
	*v = val;
	return 0;
}

int index_kv_delete(struct index *ix, const char *ns, const char *key)
{
	char k[TC_PATH_MAX + 128];
	size_t kn = kv_key(k, sizeof(k), ns, key);
	return kn ? db_delete(ix, k, kn) : -ENAMETOOLONG;
}

int index_kv_scan(struct index *ix, const char *ns,
		  int (*fn)(void *arg, const char *key, const void *v, size_t n), void *arg)
{
	char pre[256], key[TC_PATH_MAX + 1];
	int m = snprintf(pre, sizeof(pre), "%c%s", KV_PREFIX, ns);
	if (m < 0 || (size_t)m + 1 >= sizeof(pre))
		return -ENAMETOOLONG;
	size_t pn = (size_t)m + 1;
	int rc = 0;
	rocksdb_iterator_t *it = rocksdb_create_iterator(ix->db, ix->ropts);
	for (rocksdb_iter_seek(it, pre, pn); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *k = rocksdb_iter_key(it, &kn);
		const char *v = rocksdb_iter_value(it, &vn);
		if (kn < pn || memcmp(k, pre, pn) != 0)
			break;
		if (kn - pn > TC_PATH_MAX)
			continue;
		memcpy(key, k + pn, kn - pn);
		key[kn - pn] = '\0';
		rc = fn(arg, key, v, vn);
		if (rc)
			break;
	}
	rocksdb_iter_destroy(it);
	return rc;
}
