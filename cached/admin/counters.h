/*
 * The daemon's counters and gauges, one row each: the single list that
 * both `tierctl status` (status.c) and the Prometheus endpoint (metrics.c)
 * walk. A row carries everything about its number: the status key, the
 * metric name and labels, the type, the help text and where the value is
 * read. Nothing about a counter is kept in a second list that can drift;
 * tests/unit/test_counters.c checks the table against struct counters.
 *
 * Per-tier, per-dataset, prefetch and histogram metrics are not here: each
 * is rendered by one loop over its own objects (metrics.c, status.c).
 *
 * Loop thread: values are read where the loop owns them, without locks.
 */
#ifndef TIERCACHE_ADMIN_COUNTERS_H
#define TIERCACHE_ADMIN_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

struct status;

enum counter_type {
	COUNTER_COUNTER, /* only goes up (until a restart); name ends in _total */
	COUNTER_GAUGE,   /* goes up and down */
};

/* Which section of `tierctl status` shows the row. */
enum counter_section {
	STATUS_DAEMON,   /* "daemon": work in flight, memory, clients */
	STATUS_COUNTERS, /* "counters": events since start */
};

struct counter_row {
	/* The key in `tierctl status --json`: an interface, add never rename. */
	const char *status;
	enum counter_section section;
	/* The Prometheus family, and this row's sample in it: "" or a label
	 * set such as tier="hot". Rows of one family are adjacent and agree
	 * on type and help; the family's HELP/TYPE lines print once. */
	const char *metric;
	const char *labels;
	enum counter_type type;
	const char *help;
	/* Where the value is: get(st), or when get is NULL the uint64_t at
	 * off in struct counters (cache->ctr). */
	uint64_t (*get)(const struct status *st);
	size_t off;
};

extern const struct counter_row counter_rows[];
extern const size_t counter_nrows;

/* The row's value now. */
uint64_t counter_value(const struct counter_row *r, const struct status *st);
/* "counter" or "gauge", as the TYPE line spells it. */
const char *counter_type_name(enum counter_type t);

#endif
