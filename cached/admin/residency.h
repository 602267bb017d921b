/*
 * Residency ops for admins and warmup (issues 5 and 7): what is cached
 * where, changed on request rather than by the policies.
 *
 *   warm     fill chunks of a file ahead of a job, optionally onto one tier
 *            and re-read to check their checksums; report what is resident
 *   pin      keep DATASET[/PATH] resident: fill what is missing, then take
 *            its chunks out of every policy so nothing demotes or evicts
 *            them; persisted in the index and re-applied at startup
 *   unpin    give pinned chunks back to their tier's policy
 *   evict    drop DATASET[/PATH]'s unpinned chunks now
 *   demote   copy DATASET[/PATH]'s unpinned hot chunks to warm
 *   verify   re-checksum resident chunks on workers; drop the bad ones
 *   lifecycle demote / drop chunks not read for demote_after / evict_after
 *
 * A selection is a dataset, a file or a directory prefix of it. Ops that
 * copy or read chunk files run as a bounded window of chunks on the
 * workers and the mover and answer through a callback; the rest answer at
 * once. Loop thread only.
 */
#ifndef TIERCACHE_RESIDENCY_H
#define TIERCACHE_RESIDENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"

/* What an op did, in chunks and bytes. Fields an op does not use stay 0. */
struct residency;

struct res_count {
	uint64_t chunks, bytes;
};

#define RES_FAIL_KINDS 4

struct res_result {
	struct res_count selected;   /* chunks the op looked at */
	struct res_count hot, warm;  /* resident at the end, per tier */
	struct res_count missing;    /* not resident at the end (warm, pin) */
	struct res_count filled;     /* read from the cold store */
	struct res_count moved;      /* copied to another tier */
	struct res_count dropped;    /* evicted or dropped */
	struct res_count checked;    /* checksum re-read (verify) */
	struct res_count bad;        /* checksum mismatch: dropped */
	struct res_count pinned;     /* newly pinned / unpinned */
	struct res_count skipped_pinned; /* left alone because pinned */
	struct res_count failed;     /* could not be done (no room, I/O error) */
	struct res_count refetched;  /* warm --verify: bad, read again from cold */
	/* failed, by reason: the first RES_FAIL_KINDS errnos seen, the rest
	 * under the last one's slot as err 0 ("other") */
	struct res_fail {
		int err;             /* -errno; 0: other reasons */
		struct res_count n;
	} fails[RES_FAIL_KINDS];
	int err;                     /* 0, or -errno for the whole op */
	char msg[384];               /* with err: what happened and what to do */
};

/* Called once when an async op ends (loop thread). */
typedef void (*res_done_fn)(void *arg, const struct res_result *r);
/* Checked before each new chunk: true stops the op (client gone, ^C). */
typedef bool (*res_gone_fn)(void *arg);

struct res_cb {
	res_done_fn done;
	res_gone_fn gone;
	void *arg;
	struct tc_job_tag job; /* whose reads the op's fills are (unset: untagged) */
};

/* Startup, after the chunks are loaded: read the pins from the index and
 * pin the chunks they cover. */
int residency_init(struct residency **out, struct cache *cache);
void residency_free(struct residency *res);
/* A dataset left the config (reload): its pins go too, so a dataset added
 * later under the same name starts unpinned. */
void residency_forget_dataset(struct residency *res, const struct dataset *ds);

/* A move ended (cache hook chunk_moved): pin c if it waited for that
 * (chunk.pin_after_move). */
void residency_pin_moved(struct residency *res, struct chunk *c);

#define RES_WARM_VERIFY 0x1u /* re-read each chunk and check its checksum */
#define RES_WARM_CHECK 0x2u  /* fill nothing: only report what is resident */

/* Chunks [first, first + nchunks) of one file (0: to its end) onto
 * tier (TIER_COUNT: where the placement puts them). Returns 0 (cb
 * follows) or -errno with r->msg set (nothing started). */
int residency_warm(struct residency *res, struct dataset *ds, const char *path, uint32_t first,
		   uint32_t nchunks, int tier, unsigned flags, const struct res_cb *cb,
		   struct res_result *r);

/* rest: "" (the whole dataset), a file or a directory. Async ones return 0
 * (cb follows) or -errno with r->msg; sync ones fill r and return 0 or
 * -errno with r->msg. */
int residency_pin(struct residency *res, struct dataset *ds, const char *rest, const struct res_cb *cb,
		  struct res_result *r);
int residency_unpin(struct residency *res, struct dataset *ds, const char *rest, struct res_result *r);
int residency_evict(struct residency *res, struct dataset *ds, const char *rest, struct res_result *r);
int residency_demote(struct residency *res, struct dataset *ds, const char *rest,
		     const struct res_cb *cb, struct res_result *r);
/* ds NULL: every dataset. */
int residency_verify(struct residency *res, struct dataset *ds, const struct res_cb *cb,
		     struct res_result *r);

/* Lifecycle thresholds of one run. older_than_s < 0: each dataset's
 * demote_after / evict_after; else both are older_than_s. as_of_s: the
 * reference time ages are measured to (normally now; later to plan). */
struct res_lifecycle {
	int64_t older_than_s;
	int64_t as_of_s;
	bool dry_run;
};
/* ds NULL: every dataset. Drops at once, demotes on the mover; dry_run
 * only counts (r->moved / r->dropped are what it would do). */
int residency_lifecycle(struct residency *res, struct dataset *ds, const struct res_lifecycle *lc,
			const struct res_cb *cb, struct res_result *r);

#endif
