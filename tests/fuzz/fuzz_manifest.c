/*
 * libFuzzer target for the persisted manifest (cached/store/manifest.c,
 * manifest_decode): the record a dataset's file list is kept in, in the
 * index, read back at every start. Its bytes come from disk, so they may be
 * anything a crash, a bad sector or an older build left there.
 *
 * Input: the record's bytes, as index_kv_get() would return them.
 *
 * Oracle, for an input that decodes:
 *   - the manifest is sorted, without a path twice, every path passes
 *     manifest_path_valid(), every entry is unchecked (checked_ns 0), none
 *     is gone, and bytes is the sum of the sizes (mod 2^64, as counted);
 *   - it cannot hold more entries than the record had room for;
 *   - every entry is found by manifest_find() and every file is seen once by
 *     a walk of manifest_listdir() from the root down;
 *   - round trip: encode, decode again: the same entries in the same order,
 *     and encoding that gives the very same bytes (the encoding is
 *     canonical).
 * For one that does not: -EINVAL or -ENOMEM and nothing returned. Any
 * violation aborts, so that libFuzzer reports it; ASan/UBSan/LSan catch the
 * rest.
 *
 * Single-threaded.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "manifest.h"
#include "proto.h"
#include "tiercache/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define ENTRY_MIN (4 + 1 + 3 * 8) /* the smallest entry the format allows */

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_manifest: %s\n", what);
	abort();
}

static bool entry_same(const struct mf_entry *a, const struct mf_entry *b)
{
	return strcmp(a->path, b->path) == 0 && cold_stat_same(&a->st, &b->st) &&
	       a->checked_ns == b->checked_ns && a->gone == b->gone;
}

struct walk {
	const struct manifest *m;
	size_t files;
	unsigned depth;
};

static void walk_dir(struct walk *w, const char *dir);

static int walk_one(void *arg, const struct mf_dirent *de)
{
	struct walk *w = arg;
	if (de->namelen == 0 || de->namelen > TC_NAME_MAX || memchr(de->name, '/', de->namelen))
		fail("listdir gave an empty, overlong or multi-component name");
	if (!de->is_dir) {
		if (!de->e)
			fail("listdir gave a file without its entry");
		w->files++;
		return 0;
	}
	if (de->e)
		fail("listdir gave a directory with a file entry");
	return 0;
}

/* Each directory's children, then each subdirectory's: every file must be
 * met exactly once. The directory names come from the first pass of a
 * second listing, collected as paths. */
struct subdirs {
	const char *dir;
	char **v;
	size_t n;
};

static int collect_dir(void *arg, const struct mf_dirent *de)
{
	struct subdirs *s = arg;
	if (!de->is_dir)
		return 0;
	size_t dn = strlen(s->dir);
	char *p = malloc(dn + 1 + de->namelen + 1);
	char **v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!p || !v)
		fail("out of memory");
	s->v = v;
	if (dn)
		sprintf(p, "%s/%.*s", s->dir, (int)de->namelen, de->name);
	else
		sprintf(p, "%.*s", (int)de->namelen, de->name);
	s->v[s->n++] = p;
	return 0;
}

static void walk_dir(struct walk *w, const char *dir)
{
	if (++w->depth > TC_PATH_MAX)
		fail("directory walk deeper than a path can be");
	if (manifest_listdir(w->m, dir, 0, walk_one, w) != 0)
		fail("listdir stopped although nothing asked it to");
	struct subdirs s = {.dir = dir};
	manifest_listdir(w->m, dir, 0, collect_dir, &s);
	for (size_t i = 0; i < s.n; i++) {
		if (!manifest_dir_exists(w->m, s.v[i]))
			fail("listdir gave a directory that manifest_dir_exists denies");
		walk_dir(w, s.v[i]);
		free(s.v[i]);
	}
	free(s.v);
	w->depth--;
}

static void check_manifest(const struct manifest *m, size_t record_len)
{
	uint64_t bytes = 0;
	if (m->n > record_len / ENTRY_MIN)
		fail("more entries than the record had room for");
	for (size_t i = 0; i < m->n; i++) {
		const struct mf_entry *e = &m->v[i];
		if (!manifest_path_valid(e->path, strlen(e->path)))
			fail("decoded a path the path rules refuse");
		if (i && strcmp(m->v[i - 1].path, e->path) >= 0)
			fail("entries not sorted, or a path twice");
		if (e->checked_ns != 0 || e->gone)
			fail("decoded entry is checked or gone");
		if (manifest_find(m, e->path) != e)
			fail("manifest_find does not find an entry");
		bytes += e->st.size;
	}
	if (bytes != m->bytes)
		fail("bytes is not the sum of the sizes");
	struct walk w = {.m = m};
	walk_dir(&w, "");
	if (w.files != m->n)
		fail("a walk of the directories does not meet every file once");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERR); /* decoding never logs; keep the output the fuzzer's */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest *m = (struct manifest *)data, *again = NULL;
	int rc = manifest_decode(data, size, &m);
	if (rc < 0) {
		if (rc != -EINVAL && rc != -ENOMEM)
			fail("decode failed with an error other than EINVAL or ENOMEM");
		if (m)
			fail("decode failed but returned a manifest");
		return 0;
	}
	if (rc != 0 || !m)
		fail("decode succeeded without a manifest");
	check_manifest(m, size);

	struct proto_wr w1, w2;
	proto_wr_init(&w1);
	manifest_encode(m, &w1);
	if (w1.oom)
		fail("out of memory");
	if (w1.len != size)
		fail("re-encoded record differs in length from one that decoded");
	if (manifest_decode(w1.buf, w1.len, &again) != 0)
		fail("a record the encoder wrote does not decode");
	if (again->n != m->n || again->bytes != m->bytes)
		fail("round trip changed the entry count or bytes");
	for (size_t i = 0; i < m->n; i++)
		if (!entry_same(&m->v[i], &again->v[i]))
			fail("round trip changed an entry");
	proto_wr_init(&w2);
	manifest_encode(again, &w2);
	if (w2.oom)
		fail("out of memory");
	if (w2.len != w1.len || memcmp(w1.buf, w2.buf, w1.len) != 0)
		fail("encoding is not canonical: encode(decode(encode(m))) != encode(m)");
	proto_wr_free(&w1);
	proto_wr_free(&w2);
	manifest_free(again);
	manifest_free(m);
	return 0;
}
