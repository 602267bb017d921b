/*
 * config.c's private parts, shared with config_check.c (the cross-checks
 * run once every section is parsed): the load's bookkeeping and its
 * message helpers.
 */
#ifndef TIERCACHE_CONF_CONFIG_INT_H
#define TIERCACHE_CONF_CONFIG_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "config_keys.h"

static const char *const tier_names[TIER_COUNT] = {"hot", "warm"};

/* Parse bookkeeping of one section: where it and each key were written. */
struct sect_state {
	int line;		/* header line, 0: absent */
	int key_line[KEYS_MAX]; /* 0: not in the file */
	bool key_bad[KEYS_MAX]; /* in the file, but rejected */
};

struct load {
	const char *file;   /* as the caller named it: prefixes every message */
	char dir[PATH_MAX]; /* absolute directory of the file */
	struct config *cfg;
	FILE *err; /* messages (open_memstream), NULL once out of memory */
	unsigned nerr;
	bool oom;
	/* line reader */
	const char *text;
	size_t len, pos;
	int line;
	int first_syntax_line; /* first line the reader found malformed */
	/* the section being parsed */
	enum section_kind kind;
	void *base; /* its struct */
	struct sect_state *state;
	char label[CONFIG_NAME_MAX + 16]; /* "daemon", "hot", "dataset.NAME" */
	struct sect_state daemon, tiers[TIER_COUNT], cluster;
	struct sect_state *ds; /* parallel to cfg->datasets */
	size_t ds_cap;
};

/* One message "FILE:LINE: ..." ("FILE: ..." for line 0, a cross-check). */
__attribute__((format(printf, 3, 4))) void config_msg(struct load *ld, int line, const char *fmt,
						      ...);

/* A message about key K of section LABEL: "FILE:LINE: label.key: ...". */
#define key_msg(ld, line, label, k, fmt, ...)                                                      \
	config_msg((ld), (line), "%s.%s: " fmt, (label), (k)->name, __VA_ARGS__)

/* Copy S into BUF for a message: control bytes become '?' (a config line
 * must not inject terminal escapes into a log), long text ends in "...". */
const char *config_shown(char *buf, size_t n, const char *s);

/* The cross-checks between sections and against the system (config_check.c). */
void config_cross_check(struct load *ld);

#endif
