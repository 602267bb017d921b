/*
 * tiercache-mount messages: one line each, key=value, the level checked
 * before formatting. In the foreground they go to stderr; once the mount
 * runs in the background stderr is /dev/null, so they go to syslog.
 *
 * Repeated lines are rate limited per call site (its format string): at
 * most TCM_LOG_BURST lines per TCM_LOG_WINDOW seconds, then one line
 * saying that more are suppressed; the next line after the window says
 * how many were. A failing cold store or a program retrying a bad read in
 * a loop would otherwise fill syslog with one line per FUSE request.
 * Debug lines (-d) are never limited.
 *
 * Threads: the settings are written once at startup before the FUSE loop
 * starts its threads, then only read; the rate limit table has a mutex.
 */
#include "tcmount.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define TCM_LOG_BURST 10u
#define TCM_LOG_WINDOW 10.0 /* s */
#define TCM_LOG_SITES 64u

/* One call site's window. */
struct log_site {
	const char *fmt;
	double start;      /* s, CLOCK_MONOTONIC */
	unsigned n;        /* lines in this window */
	unsigned dropped;  /* suppressed in this window */
};

static int log_max = TCM_WARN;
static bool log_syslog;

void tcm_log_setup(int max_level, bool to_syslog)
{
	log_max = max_level;
	log_syslog = to_syslog;
	if (to_syslog)
		openlog("tiercache-mount", LOG_PID, LOG_DAEMON);
}

static struct log_site log_sites[TCM_LOG_SITES];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

enum log_verdict {
	LOG_PRINT,
	LOG_PRINT_LAST, /* print, and say that more will be suppressed */
	LOG_DROP,
};

/* May a line from call site fmt go out now? *before: lines suppressed in
 * the site's previous window, to report with this one. A full table
 * limits nothing (more call sites than the code has). */
static enum log_verdict log_admit(const char *fmt, unsigned *before)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	enum log_verdict v = LOG_PRINT;

	*before = 0;
	pthread_mutex_lock(&log_lock);
	struct log_site *site = NULL;
	for (unsigned i = 0; i < TCM_LOG_SITES; i++) {
		if (log_sites[i].fmt == fmt || !log_sites[i].fmt) {
			site = &log_sites[i];
			break;
		}
	}
	if (site) {
		if (!site->fmt || now - site->start >= TCM_LOG_WINDOW) {
			*before = site->dropped;
			*site = (struct log_site){.fmt = fmt, .start = now};
		}
		if (site->n >= TCM_LOG_BURST) {
			site->dropped++;
			v = LOG_DROP;
		} else if (++site->n == TCM_LOG_BURST) {
			v = LOG_PRINT_LAST;
		}
	}
	pthread_mutex_unlock(&log_lock);
	return v;
}

static void log_line(int level, const char *msg)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	if (log_syslog)
		syslog(prio[level], "%s", msg);
	else
		fprintf(stderr, "tiercache-mount[%d]: level=%s %s\n", (int)getpid(), names[level], msg);
}

void tcm_log(int level, const char *fmt, ...)
{
	if (level > log_max || level < 0)
		return;
	unsigned before = 0;
	enum log_verdict v = level == TCM_DEBUG ? LOG_PRINT : log_admit(fmt, &before);
	if (v == LOG_DROP)
		return;
	char msg[1024];
	if (before) {
		snprintf(msg, sizeof(msg), "suppressed=%u lines like the next in the last %.0f s",
			 before, TCM_LOG_WINDOW);
		log_line(level, msg);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line(level, msg);
	if (v == LOG_PRINT_LAST) {
		snprintf(msg, sizeof(msg),
			 "rate_limit=%u lines per %.0f s: more lines like the last are suppressed",
			 TCM_LOG_BURST, TCM_LOG_WINDOW);
		log_line(level, msg);
	}
}

void tcm_log_lib(int level, const char *msg, void *arg)
{
	(void)arg;
	tcm_log(level, "lib: %s", msg);
}
