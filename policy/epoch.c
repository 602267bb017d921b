/*
 * epoch: for data read in epochs (every sample once per epoch, a new random
 * order each time), with no hints from anyone.
 *
 * Under a fresh random order per epoch no online policy can tell which
 * unread sample comes next, so the best it can do is hold a fixed subset and
 * hit it once per epoch: hit ratio c, the cached fraction. LRU instead
 * replaces what it will need with what it will not and gets about c^2/2.
 * This policy keeps a stable resident set: once full it admits a new entry
 * only in place of a dead one, and evicts the most recently used entry when
 * asked for room with nothing dead (that entry was just read, so it is the
 * one least likely to be needed again in this epoch).
 *
 * "Dead" is how it notices epochs and adapts when the data set changes: it
 * measures the reuse distance of its hits (in its own access ticks, so a
 * paused job does not age anything) and tracks a high quantile of them
 * (the 95th percentile by default) as the epoch length: a sample read early
 * in one epoch and late in the next has a reuse distance near two epochs,
 * and with several jobs sharing the data the mean is far below the epoch,
 * so the mean would call live samples dead. An entry idle for more than
 * dead_factor of those lengths is not being read in epochs any more and may
 * be replaced, least recently used first.
 *
 * Sizes differ (samples of ~100 KB next to 4 MiB chunks of shards): the
 * hits a resident gives per epoch are one per entry whatever its size, so
 * for hits the subset worth keeping is the most entries, the smallest
 * ones. Once full it therefore also admits a new entry in place of live
 * ones at least size_ratio times its size (default 8), and when asked for
 * room with nothing dead gives up the most recently used of its largest
 * entries if they are that much larger than the most recent entry. Entries
 * within a factor of size_ratio of each other never displace each other:
 * near-uniform sizes keep the stable subset exactly as before. Entries are
 * kept in one recency list per power-of-two size class, so finding the
 * largest is O(classes), not a scan.
 *
 * Before its first hit it cannot know the epoch length, so it assumes
 * first_epoch times the resident count (the data set is at most that many
 * times the cache; default 16, i.e. the cache holds at least ~6% of it):
 * the first epoch does not churn, and a cache filled by a one-pass scan
 * that is never read again still turns over, later.
 *
 * The quantile is tracked by stochastic approximation with steps scaled to
 * the current estimate, remembering about one epoch of hits (rate
 * 4/entries unless the rate tunable fixes it).
 *
 * Entries move between instances (the daemon demotes hot to warm and
 * promotes back, one instance per tier; a policy switch moves every
 * resident). An entry leaving keeps its idle time as a fraction of the
 * leaving instance's epoch length in its policy-private fields, and an
 * instance it moves into resumes from there (in its own ticks), placing it
 * at the cold end of its list if it is older than everything there. So a
 * move neither makes an idle entry look freshly read nor makes its next
 * hit report a reuse distance counted from the move: such short distances
 * would teach the instance a tiny epoch length, call every resident dead
 * and turn it into LRU.
 *
 * A plan prefetch loads entries ahead of their read (loaded_ahead). Such an
 * entry is the newest, so "give up the most recently used" would give it
 * up before its read: the prefetch wasted, and a fight with the
 * prefetcher. It waits on a list of its own instead, out of victim()'s
 * reach until its read (a hit, which puts it in its class list: then it
 * is the most recently used, the next to go, as any entry just read) or
 * until it has idled as long as a dead entry (the plan moved on without
 * it). Its first read is no reuse: not a sample of the epoch length.
 *
 * Pure: no I/O, no locks, no clock reads. One instance per thread.
 */
#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How far admit() looks for dead entries before it gives up. */
#define EPOCH_SCAN_MAX 64
/* e->list of an entry that left an epoch instance: e->stamp holds its idle
 * time in epoch lengths (a double's bits). Other policies use small values
 * in list, so this cannot be mistaken for theirs. */
#define EPOCH_LEFT 0x45504f43u
/* Hits seen before the learnt epoch length is used (see epoch_hit). */
#define EPOCH_WARMUP 32
/* Size classes: class c holds entries of 2^c .. 2^(c+1)-1 bytes (0: 0, 1). */
#define EPOCH_CLASSES 64
/* e->aux of an entry on the ahead list (loaded ahead, not read since). */
#define EPOCH_AHEAD 0x41484421u

struct epoch {
	struct policy base;
	/* one recency list per size class, head: most recently used */
	struct pol_list cls[EPOCH_CLASSES];
	uint64_t nonempty;   /* bit c: cls[c] holds entries */
	struct pol_list ahead; /* loaded ahead of their read, not read yet */
	uint64_t capacity;   /* 0: unknown, admit everything */
	uint64_t tick;       /* accesses seen (hits + admits) */
	double reuse_q;      /* quantile of hit reuse distances, in ticks */
	uint64_t samples;
	double dead_factor;
	double first_epoch; /* epoch length before any hit, in resident counts */
	double quantile;    /* which quantile of reuse distances is the epoch */
	double rate;        /* step of the estimate; 0: 4/entries */
	double size_ratio;  /* displace live entries this many times larger; 0: never */
	uint64_t admitted, refused;
	uint64_t displacing; /* admits that took the room of larger live entries */
	uint64_t loaded_ahead; /* entries a prefetch brought (ahead list) */
};

static unsigned epoch_class(uint64_t size)
{
	return size > 1 ? 63u - (unsigned)__builtin_clzll(size) : 0u;
}

static struct pol_list *epoch_list(struct epoch *ep, const struct pol_entry *e)
{
	return &ep->cls[epoch_class(e->size)];
}

static void epoch_push(struct epoch *ep, struct pol_entry *e, bool head)
{
	unsigned c = epoch_class(e->size);
	if (head)
		pol_list_push_head(&ep->cls[c], e);
	else
		pol_list_push_tail(&ep->cls[c], e);
	ep->nonempty |= 1ull << c;
}

static void epoch_unlink(struct epoch *ep, struct pol_entry *e)
{
	if (e->aux == EPOCH_AHEAD) {
		pol_list_unlink(&ep->ahead, e);
		e->aux = 0;
		return;
	}
	unsigned c = epoch_class(e->size);
	pol_list_unlink(&ep->cls[c], e);
	if (pol_list_empty(&ep->cls[c]))
		ep->nonempty &= ~(1ull << c);
}

/* The entry read (or loaded ahead) longest ago: the oldest of the classes'
 * tails and the ahead list's. */
static struct pol_entry *epoch_oldest(const struct epoch *ep)
{
	struct pol_entry *best = NULL;
	for (uint64_t m = ep->nonempty; m; m &= m - 1) {
		struct pol_entry *t = pol_list_tail(&ep->cls[__builtin_ctzll(m)]);
		if (!best || t->stamp < best->stamp)
			best = t;
	}
	struct pol_entry *a = pol_list_tail(&ep->ahead);
	if (a && (!best || a->stamp < best->stamp))
		best = a;
	return best;
}

/* The entry read last (the newest of the classes' heads). */
static struct pol_entry *epoch_newest(const struct epoch *ep)
{
	struct pol_entry *best = NULL;
	for (uint64_t m = ep->nonempty; m; m &= m - 1) {
		struct pol_entry *h = ep->cls[__builtin_ctzll(m)].head.next;
		if (!best || h->stamp > best->stamp)
			best = h;
	}
	return best;
}

/* The lowest size class whose entries are all at least size_ratio times
 * `size`: those a new entry of that size may displace (EPOCH_CLASSES:
 * none, or size_ratio is 0). */
static unsigned epoch_displace_class(const struct epoch *ep, uint64_t size)
{
	/* size_ratio >= 2: nothing of the entry's own class or below */
	if (!(ep->size_ratio > 0) || !ep->nonempty ||
	    63u - (unsigned)__builtin_clzll(ep->nonempty) <= epoch_class(size))
		return EPOCH_CLASSES;
	double want = ep->size_ratio * (double)(size ? size : 1);
	if (want > 0x1p63)
		return EPOCH_CLASSES;
	uint64_t w = (uint64_t)want;
	if ((double)w < want)
		w++;
	/* the smallest c with 2^c >= w */
	return w > 1 ? 64u - (unsigned)__builtin_clzll(w - 1) : 0u;
}

static int epoch_create(const struct policy_env *env, struct policy **out)
{
	struct epoch *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	for (int c = 0; c < EPOCH_CLASSES; c++)
		pol_list_init(&ep->cls[c]);
	pol_list_init(&ep->ahead);
	ep->capacity = env ? env->capacity : 0;
	ep->dead_factor = 2.0;
	ep->first_epoch = 16.0;
	ep->quantile = 0.95;
	ep->rate = 0;
	ep->size_ratio = 8.0;
	*out = &ep->base;
	return 0;
}

static void epoch_destroy(struct policy *p)
{
	free(p);
}

static int epoch_set(struct policy *p, const char *key, const char *value, char *err, size_t n)
{
	struct epoch *ep = (struct epoch *)p;
	double d;
	int rc;
	if (strcmp(key, "dead_factor") == 0) {
		/* Below ~1.2 the tail of live reuse distances beyond the
		 * quantile would count as dead: churn. */
		rc = policy_parse_double(p, key, value, 1.0, 1e6, &d, err, n);
		if (rc == 0)
			ep->dead_factor = d;
		return rc;
	}
	if (strcmp(key, "first_epoch") == 0) {
		rc = policy_parse_double(p, key, value, 1.0, 1e9, &d, err, n);
		if (rc == 0)
			ep->first_epoch = d;
		return rc;
	}
	if (strcmp(key, "quantile") == 0) {
		rc = policy_parse_double(p, key, value, 0.5, 0.999, &d, err, n);
		if (rc == 0)
			ep->quantile = d;
		return rc;
	}
	if (strcmp(key, "rate") == 0) {
		rc = policy_parse_double(p, key, value, 0.0, 0.5, &d, err, n);
		if (rc == 0)
			ep->rate = d;
		return rc;
	}
	if (strcmp(key, "size_ratio") == 0) {
		/* 0: sizes never matter; below 2 entries of one size class
		 * would displace each other back and forth */
		rc = policy_parse_double(p, key, value, 0.0, 1e9, &d, err, n);
		if (rc == 0 && d > 0 && d < 2) {
			snprintf(err, n, "epoch: size_ratio: \"%s\" is not 0 or a number in [2, 1e+09]",
				 value);
			rc = -EINVAL;
		}
		if (rc == 0)
			ep->size_ratio = d;
		return rc;
	}
	return policy_unknown_tunable(p, key, err, n);
}

/* The epoch length in ticks: learnt, or assumed until EPOCH_WARMUP hits
 * have been seen (never less than the longest of those, though). */
static double epoch_period(const struct epoch *ep)
{
	double entries = (double)ep->base.entries;
	double period = ep->first_epoch * entries;
	if (ep->samples >= EPOCH_WARMUP || ep->reuse_q > period)
		period = ep->reuse_q;
	if (period < entries)
		period = entries;
	return period > 1 ? period : 1;
}

/* Ticks an entry may stay unread before it counts as dead. */
static double epoch_dead_after(const struct epoch *ep)
{
	return ep->dead_factor * epoch_period(ep);
}

static bool epoch_dead(const struct epoch *ep, const struct pol_entry *e)
{
	return (double)(ep->tick - e->stamp) > epoch_dead_after(ep);
}

static void epoch_hit(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct epoch *ep = (struct epoch *)p;
	ep->tick++;
	if (e->aux == EPOCH_AHEAD) {
		/* its first read, not a reuse: no sample of the epoch length */
		e->stamp = ep->tick;
		e->atime = now;
		epoch_unlink(ep, e);
		epoch_push(ep, e, true);
		return;
	}
	double d = (double)(ep->tick - e->stamp);
	double w = ep->rate;
	if (w <= 0)
		w = 4.0 / (double)(p->entries > 64 ? p->entries : 64);
	if (ep->samples < EPOCH_WARMUP) {
		/* the longest of the first hits, then the running quantile from
		 * there: a quantile tracker started at a single sample that
		 * happened to be short (an entry filled late, read again early)
		 * would take thousands of hits to grow back, calling live
		 * entries dead meanwhile */
		if (d > ep->reuse_q)
			ep->reuse_q = d;
	} else if (d > ep->reuse_q)
		ep->reuse_q += w * ep->reuse_q * ep->quantile;
	else
		ep->reuse_q -= w * ep->reuse_q * (1.0 - ep->quantile);
	if (ep->reuse_q < 1)
		ep->reuse_q = 1;
	ep->samples++;
	e->stamp = ep->tick;
	e->atime = now;
	epoch_unlink(ep, e);
	epoch_push(ep, e, true);
}

static bool epoch_admit(struct policy *p, uint64_t key, uint64_t size, uint64_t now)
{
	struct epoch *ep = (struct epoch *)p;
	(void)key;
	(void)now;
	ep->tick++;
	if (!ep->capacity)
		return true;
	bool ok = false;
	if (size > ep->capacity)
		goto out;
	uint64_t free_bytes = ep->capacity > p->bytes ? ep->capacity - p->bytes : 0;
	if (size <= free_bytes) {
		ok = true;
		goto out;
	}
	/* Full: only dead entries may make room, and live ones at least
	 * size_ratio times as large (victim() gives those up first after the
	 * dead). Count the dead below those classes, from each class's cold
	 * end, then every byte of those classes. */
	uint64_t need = size - free_bytes, room = 0;
	unsigned big = epoch_displace_class(ep, size);
	uint64_t below = big < EPOCH_CLASSES ? ep->nonempty & ((1ull << big) - 1) : ep->nonempty;
	int scanned = 0;
	for (uint64_t m = below; m && room < need && scanned < EPOCH_SCAN_MAX; m &= m - 1) {
		struct pol_list *l = &ep->cls[__builtin_ctzll(m)];
		for (struct pol_entry *e = pol_list_tail(l);
		     e && e != &l->head && scanned < EPOCH_SCAN_MAX; e = e->prev, scanned++) {
			if (!epoch_dead(ep, e))
				break;
			room += e->size;
		}
	}
	/* entries loaded ahead whose read never came (victim() gives up
	 * the oldest of all first when it is dead) */
	for (struct pol_entry *e = pol_list_tail(&ep->ahead);
	     e && e != &ep->ahead.head && room < need && scanned < EPOCH_SCAN_MAX;
	     e = e->prev, scanned++) {
		if (!epoch_dead(ep, e))
			break;
		room += e->size;
	}
	if (room >= need) {
		ok = true;
		goto out;
	}
	for (uint64_t m = ep->nonempty & ~below; m; m &= m - 1)
		room += ep->cls[__builtin_ctzll(m)].bytes;
	if (room >= need) {
		ok = true;
		ep->displacing++;
	}
out:
	if (ok)
		ep->admitted++;
	else
		ep->refused++;
	return ok;
}

static void epoch_insert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct epoch *ep = (struct epoch *)p;
	double idle = 0;
	if (e->list == EPOCH_LEFT)
		memcpy(&idle, &e->stamp, sizeof(idle));
	e->list = 0;
	e->aux = 0;
	e->atime = now;
	if (!(idle > 0) || idle > 1e9) { /* a new entry (or nothing sane kept) */
		e->stamp = ep->tick;
		epoch_push(ep, e, true);
		return;
	}
	/* moved in: as idle here as it was where it left (p->entries already
	 * counts it, so the period is that of the instance holding it) */
	double back = idle * epoch_period(ep);
	e->stamp = back < (double)ep->tick ? ep->tick - (uint64_t)back : 0;
	struct pol_entry *tail = pol_list_tail(epoch_list(ep, e));
	/* recency order kept well enough: moves are the newest or the oldest */
	epoch_push(ep, e, !(tail && e->stamp < tail->stamp));
}

static void epoch_remove(struct policy *p, struct pol_entry *e)
{
	struct epoch *ep = (struct epoch *)p;
	epoch_unlink(ep, e);
	pol_list_prefetch_tail(epoch_list(ep, e));
	/* see the top of the file: the instance it moves to resumes its age */
	double idle = (double)(ep->tick - e->stamp) / epoch_period(ep);
	memcpy(&e->stamp, &idle, sizeof(idle));
	e->list = EPOCH_LEFT;
}

static struct pol_entry *epoch_victim(struct policy *p, uint64_t now)
{
	struct epoch *ep = (struct epoch *)p;
	(void)now;
	struct pol_entry *old = epoch_oldest(ep);
	if (!old || epoch_dead(ep, old))
		return old;
	if (!ep->nonempty) /* only entries loaded ahead: the oldest of them */
		return pol_list_tail(&ep->ahead);
	/* nothing dead: the most recently used entry, or the most recently
	 * used of the largest if they are size_ratio times larger than it */
	struct pol_entry *mru = epoch_newest(ep);
	unsigned top = 63u - (unsigned)__builtin_clzll(ep->nonempty);
	if (top >= epoch_displace_class(ep, mru->size))
		return ep->cls[top].head.next;
	return mru;
}

/* Just inserted by a prefetch: out of victim()'s reach until read (top of
 * file). A moved-in entry (demoted, promoted) is never loaded ahead. */
static void epoch_loaded_ahead(struct policy *p, struct pol_entry *e)
{
	struct epoch *ep = (struct epoch *)p;
	if (e->aux == EPOCH_AHEAD)
		return;
	epoch_unlink(ep, e);
	e->aux = EPOCH_AHEAD;
	pol_list_push_head(&ep->ahead, e);
	ep->loaded_ahead++;
}

static int epoch_describe(struct policy *p, char *buf, size_t len)
{
	struct epoch *ep = (struct epoch *)p;
	snprintf(buf, len,
		 "dead_factor=%g first_epoch=%g quantile=%g rate=%g size_ratio=%g epoch_ticks=%.0f "
		 "dead_after=%.0f ticks=%llu admitted=%llu refused=%llu displacing=%llu "
		 "loaded_ahead=%llu ahead=%llu",
		 ep->dead_factor, ep->first_epoch, ep->quantile, ep->rate, ep->size_ratio,
		 ep->samples ? ep->reuse_q : 0.0,
		 epoch_dead_after(ep), (unsigned long long)ep->tick,
		 (unsigned long long)ep->admitted, (unsigned long long)ep->refused,
		 (unsigned long long)ep->displacing, (unsigned long long)ep->loaded_ahead,
		 (unsigned long long)ep->ahead.count);
	return 0;
}

const struct policy_ops policy_epoch_ops = {
	.name = "epoch",
	.summary = "epoch-aware: keeps a stable subset when the data set is read in epochs",
	.create = epoch_create,
	.destroy = epoch_destroy,
	.set = epoch_set,
	.hit = epoch_hit,
	.admit = epoch_admit,
	.insert = epoch_insert,
	.remove = epoch_remove,
	.victim = epoch_victim,
	.tunables = "dead_factor first_epoch quantile rate size_ratio",
	.describe = epoch_describe,
	.loaded_ahead = epoch_loaded_ahead,
};
