/*
 * tierctl ls, stat, cat: a dataset's files as the cache serves them, read
 * through libtiercache exactly as a training job would.
 *
 * Single-threaded (tierctl).
 */
#include "tierctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CAT_BLOCK (1u << 20)

static char type_char(int type)
{
	return type == TIERCACHE_DIR ? 'd' : '-';
}

static void local_time(char *buf, size_t n, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M", &tm))
		snprintf(buf, n, "?");
}

static void ls_line(bool lng, int type, uint64_t size, int64_t mtime_ns, const char *name)
{
	if (!lng) {
		printf("%s\n", name);
		return;
	}
	char when[32];
	local_time(when, sizeof(when), mtime_ns);
	printf("%c %14" PRIu64 " %s %s\n", type_char(type), size, when, name);
}

int tierctl_cmd_ls(struct tiercache *tc, int argc, char **argv)
{
	bool lng = false;
	const struct tierctl_flag flags[] = {{"-l", &lng}, {NULL, NULL}};
	int npos;
	int rc = tierctl_parse_flags(argc, argv, flags, &npos);
	if (rc)
		return rc;
	if (npos != 1)
		return tierctl_usage_error("ls: need exactly one DATASET[/DIR]");
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	const char *path = argv[1];
	char what[64 + TC_PATH_MAX];
	snprintf(what, sizeof(what), "ls %s", path);

	struct tiercache_dir *d = tiercache_opendir(tc, path);
	if (!d && errno == ENOTDIR) {
		/* like ls(1): a file lists as itself */
		struct tiercache_stat st;
		if (tiercache_stat(tc, path, &st) < 0)
			return tierctl_fail(what);
		ls_line(lng, st.type, st.size, st.mtime_ns, path);
		return TIERCTL_EXIT_OK;
	}
	if (!d)
		return tierctl_fail(what);
	const struct tiercache_dirent *e;
	while ((e = tiercache_readdir(d)))
		ls_line(lng, e->type, e->size, e->mtime_ns, e->name);
	rc = errno ? tierctl_fail(what) : TIERCTL_EXIT_OK;
	tiercache_closedir(d);
	return rc;
}

int tierctl_cmd_stat(struct tiercache *tc, int argc, char **argv)
{
	bool json;
	int npos;
	int rc = tierctl_parse_json(argc, argv, &json, &npos);
	if (rc)
		return rc;
	if (npos != 1)
		return tierctl_usage_error("stat: need exactly one DATASET/PATH");
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	const char *path = argv[1];
	struct tiercache_stat st;
	if (tiercache_stat(tc, path, &st) < 0) {
		char what[64 + TC_PATH_MAX];
		snprintf(what, sizeof(what), "stat %s", path);
		return tierctl_fail(what);
	}
	const char *type = st.type == TIERCACHE_DIR ? "directory" : "file";
	if (json) {
		fputs("{\"path\": ", stdout);
		tierctl_json_str(stdout, path);
		printf(", \"type\": \"%s\", \"size\": %" PRIu64 ", \"mtime_ns\": %" PRId64
		       ", \"chunk_size\": %" PRIu32 "}\n",
		       type, st.size, st.mtime_ns, st.chunk_size);
		return TIERCTL_EXIT_OK;
	}
	char size_h[32], chunk_h[32], when[64];
	tierctl_human_bytes(size_h, sizeof(size_h), st.size);
	tierctl_human_bytes(chunk_h, sizeof(chunk_h), st.chunk_size);
	tierctl_format_time(when, sizeof(when), st.mtime_ns);
	printf("path        %s\n", path);
	printf("type        %s\n", type);
	printf("size        %" PRIu64 " (%s)\n", st.size, size_h);
	printf("mtime       %s\n", when);
	printf("chunk_size  %" PRIu32 " (%s)\n", st.chunk_size, chunk_h);
	if (st.type == TIERCACHE_FILE && st.chunk_size)
		printf("chunks      %" PRIu64 "\n", (st.size + st.chunk_size - 1) / st.chunk_size);
	return TIERCTL_EXIT_OK;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One file to stdout in 1 MiB preads. */
static int cat_one(struct tiercache *tc, const char *path, char *buf)
{
	char what[64 + TC_PATH_MAX];
	snprintf(what, sizeof(what), "cat %s", path);
	int h = tiercache_open(tc, path, 0);
	if (h < 0)
		return tierctl_fail(what);
	int rc = TIERCTL_EXIT_OK;
	uint64_t off = 0;
	for (;;) {
		ssize_t n = tiercache_pread(tc, h, buf, CAT_BLOCK, off);
		if (n < 0) {
			rc = tierctl_fail(what);
			break;
		}
		if (n == 0)
			break;
		if (write_all(STDOUT_FILENO, buf, (size_t)n) < 0) {
			tierctl_err("%s: write to standard output: %s", what, strerror(errno));
			rc = TIERCTL_EXIT_FAIL;
			break;
		}
		off += (uint64_t)n;
	}
	tiercache_close(tc, h);
	return rc;
}

int tierctl_cmd_cat(struct tiercache *tc, int argc, char **argv)
{
	int npos;
	int rc = tierctl_parse_flags(argc, argv, NULL, &npos);
	if (rc)
		return rc;
	if (npos < 1)
		return tierctl_usage_error("cat: need at least one DATASET/PATH");
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	char *buf = malloc(CAT_BLOCK);
	if (!buf) {
		tierctl_err("cat: out of memory");
		return TIERCTL_EXIT_FAIL;
	}
	fflush(stdout); /* cat writes with write(2): nothing may be pending */
	rc = TIERCTL_EXIT_OK;
	for (int i = 1; i <= npos; i++)
		if (cat_one(tc, argv[i], buf) != TIERCTL_EXIT_OK)
			rc = TIERCTL_EXIT_FAIL;
	free(buf);
	return rc;
}
