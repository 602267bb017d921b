/*
 * libFuzzer target for the daemon's config loader (cached/conf: config.c,
 * the key table, the value parsers, policy specs) as the daemon runs it:
 * config_load() on a file. The input is the file's text; it is written to
 * a memfd and loaded through /proc/self/fd/N, so no file is left behind and
 * the loader's own read path (size limit, NUL bytes) is in the run.
 *
 * Oracle, for a file that is refused: -EINVAL (or -ENOMEM), no config, and
 * messages that each start with the file's name, have no control byte (a
 * config line must not put terminal escapes into a log) and are not empty.
 *
 * For a file that loads:
 *   - the rules the loader promises hold: a hot tier; low_water <
 *     high_water <= 100 on every tier; tier and dataset paths absolute and
 *     normalised (no "//", "/./", "/../", no trailing '/'); dataset names
 *     non-empty, unique and found by config_dataset(); backend posix or
 *     rados; a chunk size;
 *   - config_diff_*() finds nothing between the config and itself;
 *   - round trip: every key that is not at its default, written back as
 *     `config show` formats it (config_key_value) in KEY=VALUE lines (the
 *     shortest form: a value that fit a line read fits one written), loads
 *     again to a config
 *     with no difference from the first (same tiers, same datasets in the
 *     same order, no key differing).
 * Any violation aborts so that libFuzzer reports it; ASan, UBSan and LSan
 * catch the rest.
 *
 * Single-threaded. The config never names a group that exists unless the
 * input guesses one; getgrnam_r on a miss is only slow.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int in_fd = -1, back_fd = -1;
static char in_path[64], back_path[64];

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_config: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static void put_file(int fd, const void *p, size_t n)
{
	if (ftruncate(fd, 0) < 0)
		fail("ftruncate", strerror(errno));
	size_t at = 0;
	while (at < n) {
		ssize_t w = pwrite(fd, (const char *)p + at, n - at, (off_t)at);
		if (w <= 0)
			fail("pwrite", strerror(errno));
		at += (size_t)w;
	}
}

static void check_errors(const char *file, const char *errors)
{
	size_t fl = strlen(file);
	if (!errors || !*errors)
		fail("refused without a message", NULL);
	for (const char *line = errors; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		if (n <= fl + 2 || strncmp(line, file, fl) != 0 || line[fl] != ':')
			fail("a message that does not start with the file's name", errors);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
				fail("a message with a control byte", errors);
		line += n + (nl ? 1 : 0);
	}
}

static void check_path(const char *what, const char *p)
{
	size_t n = strlen(p);
	if (p[0] != '/' || strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../") ||
	    (n > 1 && p[n - 1] == '/') || (n >= 2 && strcmp(p + n - 2, "/.") == 0) ||
	    (n >= 3 && strcmp(p + n - 3, "/..") == 0))
		fail(what, p);
}

static int on_change(void *arg, const struct config_change *ch)
{
	const char *where = arg;
	fprintf(stderr, "fuzz_config: %s: %s: \"%s\" -> \"%s\"\n", where, ch->name, ch->was,
		ch->now);
	fail("a key differs", where);
	return 1;
}

static void check_loaded(const struct config *cfg)
{
	if (!cfg->tiers[TIER_HOT].present)
		fail("loaded without a hot tier", NULL);
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *tc = &cfg->tiers[t];
		if (!tc->present)
			continue;
		if (tc->low_water >= tc->high_water || tc->high_water > 100)
			fail("tier watermarks out of order", tc->path);
		check_path("tier path not absolute and normalised", tc->path);
		if (tc->capacity == 0)
			fail("tier without capacity", tc->path);
	}
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dataset_conf *ds = &cfg->datasets[i];
		if (!ds->name[0])
			fail("dataset with an empty name", NULL);
		if (config_dataset(cfg, ds->name) != ds)
			fail("dataset name twice, or not found by config_dataset", ds->name);
		if (strcmp(ds->backend, "posix") != 0 && strcmp(ds->backend, "rados") != 0)
			fail("dataset with an unknown backend", ds->backend);
		if (strcmp(ds->backend, "posix") == 0)
			check_path("posix dataset path not absolute and normalised", ds->path);
		if (ds->chunk_size == 0)
			fail("dataset without a chunk size", ds->name);
	}
	if (config_diff_daemon(cfg, cfg, on_change, "daemon vs itself") ||
	    config_diff_cluster(cfg, cfg, on_change, "cluster vs itself"))
		fail("config differs from itself", NULL);
}

/* Write CFG back as a file: each section, each key not at its default. */
static char *write_back(const struct config *cfg, size_t *len)
{
	static const char *const tier_names[TIER_COUNT] = {"hot", "warm"};
	char *buf = NULL, val[CONFIG_CHANGE_VALUE_MAX + 8];
	FILE *f = open_memstream(&buf, len);
	struct config_key_info ki;
	bool dflt;
	if (!f)
		fail("open_memstream", NULL);
	fputs("[daemon]\n", f);
	for (size_t i = 0; config_key_at(i, &ki) == 0; i++)
		if (strcmp(ki.section, "daemon") == 0 &&
		    config_key_value(cfg, i, 0, val, sizeof(val), &dflt) == 0 && !dflt)
			fprintf(f, "%s=%s\n", ki.name, val);
	for (unsigned t = 0; t < TIER_COUNT; t++) {
		if (!cfg->tiers[t].present)
			continue;
		fprintf(f, "[tier %s]\n", tier_names[t]);
		for (size_t i = 0; config_key_at(i, &ki) == 0; i++)
			if (strcmp(ki.section, "tier") == 0 &&
			    config_key_value(cfg, i, t, val, sizeof(val), &dflt) == 0 && !dflt)
				fprintf(f, "%s=%s\n", ki.name, val);
	}
	if (cfg->cluster.enabled) {
		fputs("[cluster]\n", f);
		for (size_t i = 0; config_key_at(i, &ki) == 0; i++)
			if (strcmp(ki.section, "cluster") == 0 &&
			    config_key_value(cfg, i, 0, val, sizeof(val), &dflt) == 0 && !dflt)
				fprintf(f, "%s=%s\n", ki.name, val);
	}
	for (unsigned d = 0; d < cfg->ndatasets; d++) {
		fprintf(f, "[dataset %s]\n", cfg->datasets[d].name);
		for (size_t i = 0; config_key_at(i, &ki) == 0; i++)
			if (strcmp(ki.section, "dataset") == 0 &&
			    config_key_value(cfg, i, d, val, sizeof(val), &dflt) == 0 && !dflt)
				fprintf(f, "%s=%s\n", ki.name, val);
	}
	if (fclose(f) != 0)
		fail("open_memstream", NULL);
	return buf;
}

/* Lines the loader takes (inih's buffer, 200 bytes with its NUL). */
#define FUZZ_LINE_MAX 199u

/* A relative path is resolved against the file's directory, so a value
 * that fit its line may not fit once written back: such a config cannot
 * round-trip through a file, and the loader says so with "line too
 * long", which is what a user would see. */
static bool lines_fit(const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (n > FUZZ_LINE_MAX)
			return false;
		p += n + 1;
	}
	return true;
}

static void check_round_trip(const struct config *a)
{
	size_t len = 0;
	char *text = write_back(a, &len), *errors = NULL;
	struct config *b = NULL;
	if (!lines_fit(text, len)) {
		free(text);
		return;
	}
	put_file(back_fd, text, len);
	int rc = config_load(back_path, &b, &errors);
	if (rc != 0) {
		fprintf(stderr, "fuzz_config: written back:\n%s\n", text);
		fail("a loaded config, written back, does not load", errors);
	}
	if (config_diff_daemon(a, b, on_change, "daemon"))
		fail("round trip changed [daemon]", text);
	for (int t = 0; t < TIER_COUNT; t++) {
		if (a->tiers[t].present != b->tiers[t].present)
			fail("round trip changed which tiers exist", text);
		if (a->tiers[t].present &&
		    config_diff_tier(&a->tiers[t], &b->tiers[t], on_change, "tier"))
			fail("round trip changed a tier", text);
	}
	if (a->cluster.enabled != b->cluster.enabled ||
	    config_diff_cluster(a, b, on_change, "cluster"))
		fail("round trip changed [cluster]", text);
	if (a->ndatasets != b->ndatasets)
		fail("round trip changed the number of datasets", text);
	for (unsigned d = 0; d < a->ndatasets; d++) {
		if (strcmp(a->datasets[d].name, b->datasets[d].name) != 0)
			fail("round trip changed a dataset's name or order", text);
		if (config_diff_dataset(&a->datasets[d], &b->datasets[d], on_change, "dataset"))
			fail("round trip changed a dataset", text);
		if (!config_same_source(&a->datasets[d], &b->datasets[d]))
			fail("round trip changed a dataset's source", text);
	}
	config_free(b);
	free(errors);
	free(text);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERR);
	in_fd = memfd_create("fuzz_config", MFD_CLOEXEC);
	back_fd = memfd_create("fuzz_config_back", MFD_CLOEXEC);
	if (in_fd < 0 || back_fd < 0)
		fail("memfd_create", strerror(errno));
	snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
	snprintf(back_path, sizeof(back_path), "/proc/self/fd/%d", back_fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg = (struct config *)data;
	char *errors = NULL;
	put_file(in_fd, data, size);
	int rc = config_load(in_path, &cfg, &errors);
	if (rc < 0) {
		if (cfg)
			fail("refused but returned a config", NULL);
		if (rc != -EINVAL && rc != -ENOMEM)
			fail("refused with an error other than EINVAL or ENOMEM", strerror(-rc));
		if (rc == -EINVAL)
			check_errors(in_path, errors);
		free(errors);
		return 0;
	}
	if (rc != 0 || !cfg)
		fail("loaded without a config", NULL);
	if (errors)
		fail("loaded, yet with messages", errors);
	check_loaded(cfg);
	check_round_trip(cfg);
	config_free(cfg);
	return 0;
}
