/*
 * Direct I/O for large files: which opens of tiercache-mount skip the
 * kernel page cache of the mount.
 *
 * Through the page cache, every byte of a large file is copied twice on
 * its first read (the tier file's pages into the mount's page cache, then
 * into the program's buffer) and kept twice in memory (the tier file's
 * pages and the mount's). With direct I/O the kernel sends the program's
 * read as it is and the reply is spliced from the tier file's page cache
 * straight into the program's buffer: one copy, one cached copy, as a
 * local read. Measured: 1 MiB reads of a cached 256 MiB file at 0.74-0.9 of
 * local against 0.48 through the page cache, at 40 % of the CPU.
 *
 * The price: no kernel readahead and no page cache of the mount, so every
 * read is a request: small reads (8 KiB: 0.6 GB/s against 3 GB/s through
 * the page cache) pay a round trip each. So in mode auto the mount learns
 * per reading thread: its first large-file opens are direct; once a direct
 * handle has seen TCM_DIO_PROBE_READS reads (or is closed after at least
 * two) averaging under TCM_DIO_SMALL_READ bytes, that thread's later opens
 * use the page cache. Threads are keyed by the pid the kernel gives
 * (thread id); a verdict is forgotten after TCM_DIO_FORGET_S, so a reused
 * id is probed again. A thread not seen before follows the last verdict
 * given (the workers of one job read alike: once one worker of a loader
 * reading tar shards in 10 KiB pieces has shown it, new workers start
 * with the page cache), but every TCM_DIO_PROBE_EVERY-th such thread is
 * probed all the same, so a job that reads differently is noticed.
 *
 * Direct I/O needs the kernel's permission to mmap such files
 * (FUSE_DIRECT_IO_ALLOW_MMAP, kernel >= 6.6), which only a mount we made
 * ourselves can ask for (passthrough.c patches the INIT reply): without it
 * every file reads through the page cache, as with direct_io=off.
 *
 * Threads: any libfuse worker; one mutex over the table.
 */
#include "tcmount.h"

#include <string.h>
#include <time.h>

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int tcm_dio_init(struct tcm_dio *d, enum tcm_dio_mode mode)
{
	memset(d, 0, sizeof(*d));
	d->mode = mode;
	if (pthread_mutex_init(&d->lock, NULL) != 0)
		return -1;
	d->ready = true;
	return 0;
}

void tcm_dio_free(struct tcm_dio *d)
{
	if (d->ready)
		pthread_mutex_destroy(&d->lock);
	d->ready = false;
}

/* The table slot of pid, or NULL. Called with the lock held. */
static struct tcm_dio_pid *slot_of(struct tcm_dio *d, uint32_t pid, double now)
{
	for (size_t i = 0; i < TCM_DIO_PIDS; i++) {
		struct tcm_dio_pid *e = &d->pids[i];
		if (e->pid == pid && e->pid != 0 && now - e->when < TCM_DIO_FORGET_S)
			return e;
	}
	return NULL;
}

bool tcm_dio_choose(struct tcm_dio *d, uint32_t pid, uint64_t size)
{
	if (!atomic_load(&d->on) || d->mode == TCM_DIO_OFF || size <= TCM_DIO_MIN_SIZE)
		return false;
	if (d->mode == TCM_DIO_LARGE)
		return true;
	double now = mono_now();
	pthread_mutex_lock(&d->lock);
	const struct tcm_dio_pid *e = slot_of(d, pid, now);
	bool direct;
	if (e)
		direct = !e->small;
	else if (d->last_small && now - d->last_when < TCM_DIO_FORGET_S)
		direct = ++d->strangers % TCM_DIO_PROBE_EVERY == 0;
	else
		direct = true;
	pthread_mutex_unlock(&d->lock);
	return direct;
}

void tcm_dio_learn(struct tcm_dio *d, uint32_t pid, uint64_t reads, uint64_t bytes)
{
	if (d->mode != TCM_DIO_AUTO || reads == 0 || pid == 0)
		return;
	bool small = bytes / reads < TCM_DIO_SMALL_READ;
	double now = mono_now();
	pthread_mutex_lock(&d->lock);
	struct tcm_dio_pid *e = slot_of(d, pid, now);
	if (!e) { /* the oldest (or a free) slot */
		e = &d->pids[0];
		for (size_t i = 1; i < TCM_DIO_PIDS; i++)
			if (d->pids[i].when < e->when)
				e = &d->pids[i];
	}
	bool changed = e->pid != pid || e->small != small;
	e->pid = pid;
	e->small = small;
	e->when = now;
	d->last_small = small;
	d->last_when = now;
	pthread_mutex_unlock(&d->lock);
	if (changed)
		tcm_log(TCM_DEBUG, "pid=%u reads=%llu mean_read=%llu direct_io=%s", (unsigned)pid,
			(unsigned long long)reads, (unsigned long long)(bytes / reads),
			small ? "off" : "on");
}
