/*
 * Daemon logging: one line per event on stderr, "key=value" pairs after a
 * timestamp and level. The level is checked before the message is
 * formatted, so debug lines cost nothing when off. Safe from any thread
 * (one write(2) per line).
 */
#ifndef TIERCACHE_LOG_H
#define TIERCACHE_LOG_H

enum log_level {
	LOG_ERR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

extern int log_current_level;

void log_set_level(int level);
/* "error" | "warn" | "info" | "debug" -> level, or -1. */
int log_level_parse(const char *s);
const char *log_level_name(int level);
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_at(level, ...)                                                                 \
	do {                                                                               \
		if ((level) <= log_current_level)                                          \
			log_write((level), __VA_ARGS__);                                   \
	} while (0)
#define log_err(...) log_at(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif
