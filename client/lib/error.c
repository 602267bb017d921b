/*
 * libtiercache errors and diagnostics: tiercache_strerror(), the per-thread
 * detail behind tiercache_last_error(), and the log hook.
 *
 * Threads: the detail lives in thread-local buffers, so no locking. The log
 * hook is the library's only global state; it is read and written under a
 * small mutex and called outside it (a hook may call tiercache_set_log).
 */
#include "libtc_private.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The detail of the call in progress, published by tc_err_fail() only when
 * the call fails: a later successful call must not wipe the detail of the
 * failure a caller is about to report. */
static _Thread_local char pending[TC_DETAIL_MAX];
static _Thread_local bool pending_set;
static _Thread_local char last[TC_DETAIL_MAX];

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static tiercache_log_fn log_fn;
static void *log_arg;

void tc_err_begin(void)
{
	pending_set = false;
	pending[0] = '\0';
}

void tc_err_detail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pending, sizeof(pending), fmt, ap);
	va_end(ap);
	pending_set = true;
}

int tc_err_fail(int rc)
{
	if (rc >= 0 || rc == TC_ERETRY)
		rc = -EIO; /* never expected: keep the caller's contract anyway */
	memcpy(last, pending_set ? pending : "", pending_set ? sizeof(last) : 1);
	last[sizeof(last) - 1] = '\0';
	errno = -rc;
	return -1;
}

const char *tiercache_last_error(void)
{
	return last;
}

void tiercache_set_log(tiercache_log_fn fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

void tc_log(int level, const char *fmt, ...)
{
	pthread_mutex_lock(&log_lock);
	tiercache_log_fn fn = log_fn;
	void *arg = log_arg;
	pthread_mutex_unlock(&log_lock);
	if (!fn)
		return; /* no hook: do not even format */
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int saved = errno; /* a hook must not disturb the caller's errno */
	fn(level, msg, arg);
	errno = saved;
}

/* Where an errno means something more specific when it comes from
 * tiercache, say so; everything else is the C library's text. */
const char *tiercache_strerror(int errnum)
{
	switch (errnum) {
	case ECONNREFUSED:
		return "tiercached is not running (connection refused)";
	case ECONNRESET:
		return "Connection to tiercached lost";
	case EROFS:
		return "Read-only: tiercache serves datasets for reading only";
	case ESTALE:
		return "File changed in its source since it was opened (stale handle)";
	case EPROTO:
		return "Protocol error talking to tiercached";
	case EBADMSG:
		return "Malformed message (tiercached could not decode the request)";
	case EMSGSIZE:
		return "Message too large for the tiercache protocol";
	case EBADF:
		return "Bad tiercache handle";
	case ETIMEDOUT:
		/* the daemon, or the cold store behind it: the detail says which */
		return "Timed out (tiercached or its cold store did not answer in time)";
	default:
		break;
	}
	const char *s = strerrordesc_np(errnum);
	return s ? s : "Unknown error";
}
