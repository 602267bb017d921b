/*
 * tierctl config show, reload: the daemon's effective configuration, and
 * re-reading its file (admin). Payloads: cached/handlers_service.c.
 *
 * Single-threaded (tierctl).
 */
#include "tierctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* "key = value" per section, like the file; defaults marked. */
static void config_human(FILE *f, const struct proto_recset *rs)
{
	const struct proto_section *file = proto_recset_find(rs, "file");
	const struct proto_section *cfg = proto_recset_find(rs, "config");
	if (file && file->nrecords) {
		const struct proto_field *p = proto_record_find(&file->records[0], "path");
		if (p && p->type == TC_VAL_STR)
			fprintf(f, "# %s (effective values; \"# default\" marks a key's default)\n",
				p->v.s);
	}
	if (!cfg)
		return;
	const char *section = NULL;
	for (uint32_t i = 0; i < cfg->nrecords; i++) {
		const struct proto_record *r = &cfg->records[i];
		const struct proto_field *s = proto_record_find(r, "section");
		const struct proto_field *k = proto_record_find(r, "key");
		const struct proto_field *v = proto_record_find(r, "value");
		const struct proto_field *d = proto_record_find(r, "default");
		if (!s || !k || !v || s->type != TC_VAL_STR || k->type != TC_VAL_STR ||
		    v->type != TC_VAL_STR)
			continue;
		if (!section || strcmp(section, s->v.s) != 0) {
			fprintf(f, "%s[%s]\n", section ? "\n" : "", s->v.s);
			section = s->v.s;
		}
		fprintf(f, "%s = %s%s\n", k->v.s, v->v.s,
			d && d->type == TC_VAL_BOOL && d->v.b ? "  # default" : "");
	}
}

static int config_show(struct tiercache *tc, int argc, char **argv)
{
	bool json;
	int npos;
	int rc = tierctl_parse_json(argc, argv, &json, &npos);
	if (rc)
		return rc;
	if (npos < 1 || npos > 3 || strcmp(argv[1], "show") != 0)
		return tierctl_usage_error("config: use 'tierctl config show [--json] [SECTION]'");
	/* "dataset imagenet" or dataset imagenet: one section */
	char section[160] = "";
	if (npos == 3)
		snprintf(section, sizeof(section), "%s %s", argv[2], argv[3]);
	else if (npos == 2)
		snprintf(section, sizeof(section), "%s", argv[2]);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	if (section[0])
		proto_wr_str(&w, section);
	struct proto_recset rs;
	if (w.oom) {
		proto_wr_free(&w);
		tierctl_err("config show: out of memory");
		return TIERCTL_EXIT_FAIL;
	}
	rc = tierctl_call_recset(tc, TC_OP_CONFIG_SHOW, w.buf + TC_HDR_SIZE,
				 w.len - TC_HDR_SIZE, "config show", &rs);
	proto_wr_free(&w);
	if (rc)
		return rc;
	if (json)
		tierctl_render_json(stdout, &rs);
	else
		config_human(stdout, &rs);
	proto_recset_free(&rs);
	return TIERCTL_EXIT_OK;
}

int tierctl_cmd_config(struct tiercache *tc, int argc, char **argv)
{
	return config_show(tc, argc, argv);
}

int tierctl_cmd_reload(struct tiercache *tc, int argc, char **argv)
{
	int npos;
	const struct tierctl_flag flags[] = {{NULL, NULL}};
	int rc = tierctl_parse_flags(argc, argv, flags, &npos);
	if (rc)
		return rc;
	if (npos)
		return tierctl_usage_error("reload: unexpected argument '%s'", argv[1]);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	if (tierctl_cluster)
		return tierctl_cluster_send(tc, TC_OP_RELOAD, NULL, 0, "reload");
	void *rep = NULL;
	size_t n = 0;
	if (tiercache_call(tc, TC_OP_RELOAD, NULL, 0, &rep, &n) < 0)
		return tierctl_fail("reload");
	struct proto_rd r;
	proto_rd_init(&r, rep, n);
	size_t len = 0;
	const char *text = proto_rd_str(&r, TC_FRAME_MAX, &len);
	if (!proto_rd_done(&r)) {
		free(rep);
		tierctl_err("reload: malformed reply from tiercached");
		return TIERCTL_EXIT_FAIL;
	}
	fwrite(text, 1, len, stdout);
	free(rep);
	return TIERCTL_EXIT_OK;
}
