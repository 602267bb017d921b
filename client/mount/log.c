/*
 * tiercache-mount messages: one line each, key=value, the level checked
 * before formatting. In the foreground they go to stderr; once the mount
 * runs in the background stderr is /dev/null, so they go to syslog.
 *
 * Threads: the settings are written once at startup before the FUSE loop
 * starts its threads, then only read.
 */
#include "tcmount.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

static int log_max = TCM_WARN;
static bool log_syslog;

void tcm_log_setup(int max_level, bool to_syslog)
{
	log_max = max_level;
	log_syslog = to_syslog;
	if (to_syslog)
		openlog("tiercache-mount", LOG_PID, LOG_DAEMON);
}

void tcm_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	if (level > log_max || level < 0)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_syslog)
		syslog(prio[level], "%s", msg);
	else
		fprintf(stderr, "tiercache-mount[%d]: level=%s %s\n", (int)getpid(), names[level], msg);
}

void tcm_log_lib(int level, const char *msg, void *arg)
{
	(void)arg;
	tcm_log(level, "lib: %s", msg);
}
