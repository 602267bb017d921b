/*
 * Replay engine: see engine.h. The loop is the daemon's read path without
 * the I/O: hit -> placement_hit (maybe promote), miss -> placement_fill,
 * then make room tier by tier with victim() and placement_demote().
 * Single-threaded; every allocation happens before the loop.
 */
#include "engine.h"

#include "placement.h"
#include "plan.h"
#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SIM_HUGE ((size_t)2 << 20)

/* Reads ahead to prefetch (a power of two). */
#define SIM_PREFETCH 16

/* An entry whose timed prefetch load is in flight (on no tier yet). */
#define SIM_LOADING TIER_COUNT
/* ... and was read meanwhile (late): it lands as a fill, not ahead. */
#define SIM_LOADING_READ (TIER_COUNT + 1)

struct sim_ent {
	struct pol_entry e; /* first: a pol_entry * is a sim_ent * */
	int tier;           /* TIER_NONE, TIER_HOT, TIER_WARM, SIM_LOADING(_READ) */
	bool m_ahead;       /* loaded ahead by the model's prefetcher, not read since */
	bool d_ontime;      /* trace loads: the daemon's load landed, no read waited */
};

/* Each job's reads as keys, with where each of its epochs starts. */
struct sim_plans {
	struct plan_store *ps;
	uint64_t **keys;     /* per job */
	uint64_t **ep_start; /* per job: nepochs + 1 offsets */
	uint32_t *cur_ep;    /* per job: the epoch it is in */
	uint32_t njobs, nepochs, ahead;
	/* plan prefetch (NULL when off), per job */
	struct sim_prefetch *pf;
};

/* One job's prefetch window, as the daemon's struct dplan keeps it. */
struct sim_prefetch {
	uint32_t *objs;     /* the plan's entries as object ids */
	uint64_t published; /* entries in the plan so far */
	uint64_t cursor;    /* the plan store's cursor when last seen */
	uint64_t next;      /* the next entry to load (the daemon's pl->pf) */
	uint64_t ahead;     /* bytes of entries in [cursor, next) */
	uint64_t window;    /* bytes: prefetch_window x the job's ranks */
};

/* Timed prefetch: the loads in flight. One queue (a rate): the cold store
 * serves them one after another, so they land in the order issued. Per
 * epoch rates (per stream): cap slots serve one load each at once. */
struct sim_loads {
	uint32_t *obj;
	uint64_t *done_ns;
	uint32_t n, cap;       /* cap 0: loads are instant */
	uint64_t free_ns;      /* one queue: when it is done with the last load */
	uint64_t *slot_free;   /* slots: when each is free (cap), or NULL */
	uint64_t bytes;        /* in flight: room they hold on hot */
	double ns_per_byte;
	double *ns_per_byte_ep; /* per epoch (slots), or NULL */
};

struct sim_run {
	const struct trace *t;
	struct sim_ent *ents;
	struct placement pl;
	uint64_t cap[TIER_COUNT]; /* each tier's policy budget */
	uint64_t max[TIER_COUNT]; /* victims go past this (>= cap) */
	struct sim_loads loads;
};

/* Replay touches the object table at random: with 4 KiB pages every read
 * is a TLB miss too. Map it on transparent huge pages where the kernel
 * allows (madvise mode); zeroed, like calloc. */
static void *sim_alloc_huge(size_t bytes)
{
	size_t len = (bytes + SIM_HUGE - 1) & ~(SIM_HUGE - 1);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, len, MADV_HUGEPAGE); /* advice: fine if refused */
	return p;
}

static void sim_free_huge(void *p, size_t bytes)
{
	if (p)
		munmap(p, (bytes + SIM_HUGE - 1) & ~(SIM_HUGE - 1));
}

int sim_result_init(struct sim_result *r, const char *name, uint32_t nepochs)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->nepochs = nepochs ? nepochs : 1;
	r->epoch = calloc(r->nepochs, sizeof(*r->epoch));
	return r->epoch ? 0 : -ENOMEM;
}

void sim_result_free(struct sim_result *r)
{
	free(r->epoch);
	free(r->outcome);
	r->epoch = NULL;
	r->outcome = NULL;
}

static void sim_plans_free(struct sim_plans *sp)
{
	for (uint32_t j = 0; j < sp->njobs; j++) {
		if (sp->keys)
			free(sp->keys[j]);
		if (sp->ep_start)
			free(sp->ep_start[j]);
		if (sp->pf)
			free(sp->pf[j].objs);
	}
	free(sp->pf);
	free(sp->keys);
	free(sp->ep_start);
	free(sp->cur_ep);
	plan_store_destroy(sp->ps);
	memset(sp, 0, sizeof(*sp));
}

static int sim_plans_publish(struct sim_plans *sp, uint32_t j, uint32_t e)
{
	if (e >= sp->nepochs)
		return 0;
	uint64_t a = sp->ep_start[j][e], b = sp->ep_start[j][e + 1];
	if (sp->pf && b > sp->pf[j].published)
		sp->pf[j].published = b; /* epochs are published in order */
	return b > a ? plan_store_append(sp->ps, j, sp->keys[j] + a, b - a) : 0;
}

/* The trace's own future as each job's plan: all of it, or `ahead` epochs
 * past the current one, published as each job enters an epoch. */
static int sim_plans_build(struct sim_plans *sp, const struct trace *t, uint32_t ahead,
			   uint64_t window, uint64_t hot_half)
{
	int rc = -ENOMEM;
	uint64_t *count = NULL;
	memset(sp, 0, sizeof(*sp));
	sp->njobs = t->njobs ? t->njobs : 1;
	sp->nepochs = t->nepochs;
	sp->ahead = ahead;
	if (plan_store_create(&sp->ps) < 0)
		goto out;
	sp->keys = calloc(sp->njobs, sizeof(*sp->keys));
	sp->ep_start = calloc(sp->njobs, sizeof(*sp->ep_start));
	sp->cur_ep = calloc(sp->njobs, sizeof(*sp->cur_ep));
	count = calloc((size_t)sp->njobs * (sp->nepochs + 1), sizeof(*count));
	if (!sp->keys || !sp->ep_start || !sp->cur_ep || !count)
		goto out;
	if (window && !(sp->pf = calloc(sp->njobs, sizeof(*sp->pf))))
		goto out;
	for (size_t i = 0; i < t->n; i++)
		count[(size_t)t->job[i] * (sp->nepochs + 1) + t->epoch[i] + 1]++;
	/* the daemon's plans: one per rank of each job; every window
	 * together at most half of hot's budget (prefetch_window) */
	uint64_t plans = 0;
	if (sp->pf) {
		for (size_t i = 0; i < t->n; i++)
			if ((uint64_t)t->rank[i] + 1 > sp->pf[t->job[i]].window)
				sp->pf[t->job[i]].window = (uint64_t)t->rank[i] + 1; /* ranks, for now */
		for (uint32_t j = 0; j < sp->njobs; j++)
			plans += sp->pf[j].window;
		uint64_t per = plans > 1 ? hot_half / plans : hot_half;
		if (window > per)
			window = per;
		for (uint32_t j = 0; j < sp->njobs; j++)
			sp->pf[j].window *= window; /* ranks x each plan's window */
	}
	for (uint32_t j = 0; j < sp->njobs; j++) {
		uint64_t *c = count + (size_t)j * (sp->nepochs + 1);
		for (uint32_t e = 0; e < sp->nepochs; e++)
			c[e + 1] += c[e];
		sp->ep_start[j] = malloc((sp->nepochs + 1) * sizeof(**sp->ep_start));
		sp->keys[j] = malloc((c[sp->nepochs] ? c[sp->nepochs] : 1) * sizeof(**sp->keys));
		if (!sp->ep_start[j] || !sp->keys[j])
			goto out;
		memcpy(sp->ep_start[j], c, (sp->nepochs + 1) * sizeof(*c));
		if (sp->pf && !(sp->pf[j].objs = malloc((c[sp->nepochs] ? c[sp->nepochs] : 1) *
							sizeof(*sp->pf[j].objs))))
			goto out;
	}
	/* Epochs are in order within a job, so filling in trace order
	 * leaves each job's keys sorted by epoch, then by time. */
	for (size_t i = 0; i < t->n; i++) {
		uint64_t *c = count + (size_t)t->job[i] * (sp->nepochs + 1) + t->epoch[i];
		if (sp->pf)
			sp->pf[t->job[i]].objs[*c] = t->obj[i];
		sp->keys[t->job[i]][(*c)++] = t->key[t->obj[i]];
	}
	for (uint32_t j = 0; j < sp->njobs; j++) {
		uint32_t last = ahead ? ahead : sp->nepochs;
		for (uint32_t e = 0; e <= last && e < sp->nepochs; e++)
			if ((rc = sim_plans_publish(sp, j, e)) < 0)
				goto out;
	}
	rc = 0;
out:
	free(count);
	return rc;
}

static void sim_make_room(struct sim_run *s, int t, uint64_t now)
{
	struct policy *p = s->pl.tier[t];
	while (p->bytes > s->max[t]) {
		struct pol_entry *v = policy_victim(p, now);
		if (!v)
			break;
		struct sim_ent *ve = (struct sim_ent *)v;
		policy_remove(p, v);
		if (t == TIER_HOT && placement_demote(&s->pl, v, now) == TIER_WARM) {
			placement_demoted_insert(&s->pl, v, now);
			ve->tier = TIER_WARM;
			sim_make_room(s, TIER_WARM, now);
		} else {
			ve->tier = TIER_NONE;
		}
	}
}

/* May a prefetch of key (size bytes) go on hot now? Under the budget, or
 * when hot's next victim is needed later than key, or by no plan: the
 * daemon's pf_room (cached/plan/prefetch.c). */
static bool sim_prefetch_room(struct sim_run *s, struct plan_store *ps, uint64_t key,
			      uint64_t size, uint64_t now)
{
	struct policy *hot = s->pl.tier[TIER_HOT];
	if (hot->bytes + s->loads.bytes + size <= s->cap[TIER_HOT])
		return true;
	struct pol_entry *v = policy_victim(hot, now);
	if (!v)
		return true;
	return plan_use_displaces(plan_store_next_use(ps, v->key), plan_store_next_use(ps, key));
}

/* A load on hot: it landed (timed) or was issued (instant). Loaded ahead
 * of its read unless the read came while it was in flight (the daemon's
 * pf_done: a late chunk is no prefetch hit). */
static void sim_prefetch_land(struct sim_run *s, struct sim_ent *se, uint64_t now)
{
	bool read = se->tier == SIM_LOADING_READ;
	policy_insert(s->pl.tier[TIER_HOT], &se->e, now);
	if (!read)
		policy_loaded_ahead(s->pl.tier[TIER_HOT], &se->e);
	se->m_ahead = !read;
	se->tier = TIER_HOT;
	sim_make_room(s, TIER_HOT, now);
}

/* Timed: land every load the cold store is done with by now_ns, the
 * earliest done first. */
static void sim_loads_land(struct sim_run *s, uint64_t now_ns, uint64_t now)
{
	struct sim_loads *l = &s->loads;
	for (;;) {
		uint32_t k = l->n;
		for (uint32_t q = 0; q < l->n; q++)
			if (l->done_ns[q] <= now_ns && (k == l->n || l->done_ns[q] < l->done_ns[k]))
				k = q;
		if (k == l->n)
			return;
		struct sim_ent *se = &s->ents[l->obj[k]];
		l->bytes -= se->e.size;
		l->n--;
		l->obj[k] = l->obj[l->n];
		l->done_ns[k] = l->done_ns[l->n];
		sim_prefetch_land(s, se, now);
	}
}

/* Timed: queue a load of se issued at now_ns by a read in epoch. */
static void sim_loads_issue(struct sim_run *s, struct sim_ent *se, uint64_t now_ns,
			    uint32_t epoch)
{
	struct sim_loads *l = &s->loads;
	uint64_t done;
	if (l->slot_free) {
		/* the slot free soonest; it is free by now when fewer than
		 * cap loads are in flight */
		uint32_t k = 0;
		for (uint32_t q = 1; q < l->cap; q++)
			if (l->slot_free[q] < l->slot_free[k])
				k = q;
		uint64_t start = l->slot_free[k] > now_ns ? l->slot_free[k] : now_ns;
		done = start + (uint64_t)((double)se->e.size * l->ns_per_byte_ep[epoch]);
		l->slot_free[k] = done;
	} else {
		uint64_t start = l->free_ns > now_ns ? l->free_ns : now_ns;
		done = l->free_ns = start + (uint64_t)((double)se->e.size * l->ns_per_byte);
	}
	l->obj[l->n] = (uint32_t)(se - s->ents);
	l->done_ns[l->n] = done;
	l->n++;
	l->bytes += se->e.size;
	se->tier = SIM_LOADING;
}

/* After a read of job j: follow the cursor, then load the job's window
 * (the daemon's prefetch_pump; loads land at once, or when the timed
 * cold store is done with them). */
static void sim_prefetch_pump(struct sim_run *s, struct sim_plans *sp, uint32_t j,
			      struct sim_result *r, uint64_t now, uint64_t now_ns, uint32_t epoch)
{
	struct sim_prefetch *f = &sp->pf[j];
	uint64_t cur = plan_store_cursor(sp->ps, j);
	for (uint64_t q = f->cursor; q < cur && q < f->next; q++) {
		uint64_t len = s->ents[f->objs[q]].e.size;
		f->ahead -= len < f->ahead ? len : f->ahead;
	}
	f->cursor = cur;
	if (f->next < cur) {
		f->next = cur;
		f->ahead = 0;
	}
	while (f->next < f->published && f->ahead < f->window) {
		struct sim_ent *se = &s->ents[f->objs[f->next]];
		if (se->tier == TIER_NONE) {
			if (s->loads.cap && s->loads.n == s->loads.cap)
				break; /* every slot busy: the next pump goes on */
			if (!sim_prefetch_room(s, sp->ps, se->e.key, se->e.size, now)) {
				r->prefetch_stalls++;
				break;
			}
			r->prefetched++;
			r->prefetch_bytes += se->e.size;
			if (s->loads.cap)
				sim_loads_issue(s, se, now_ns, epoch);
			else
				sim_prefetch_land(s, se, now);
		}
		f->ahead += se->e.size;
		f->next++;
	}
}

/* Trace loads: note the daemon's load events recorded before access i
 * (engine.h, trace_loads): whether the daemon's prefetcher delivered each
 * chunk on time since its last read. */
static void sim_trace_events(struct sim_run *s, size_t *next, size_t i)
{
	const struct trace *t = s->t;
	for (; *next < t->nev && t->ev_at[*next] <= i; (*next)++) {
		struct sim_ent *se = &s->ents[t->ev_obj[*next]];
		if (t->ev_kind[*next] == TRACE_EV_LANDED)
			se->d_ontime = true;
		else if (t->ev_kind[*next] != TRACE_EV_LOAD)
			se->d_ontime = false; /* landed late, or lost */
	}
}

static int sim_placement_tunables(struct placement *pl, const char *list, char *err, size_t n)
{
	char buf[256];
	const char *s = list ? list : "";
	while (*s) {
		s += strspn(s, " ,\t");
		size_t len = strcspn(s, " ,\t");
		if (!len)
			break;
		if (len >= sizeof(buf)) {
			snprintf(err, n, "placement: tunable too long");
			return -EINVAL;
		}
		memcpy(buf, s, len);
		buf[len] = '\0';
		s += len;
		char *eq = strchr(buf, '=');
		if (!eq) {
			snprintf(err, n, "placement: \"%s\" is not key=value", buf);
			return -EINVAL;
		}
		*eq = '\0';
		int rc = placement_set(pl, buf, eq + 1, err, n);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sim_run_policy(const struct trace *t, const char *name, const struct sim_config *cfg,
		   struct sim_result *r, char *err, size_t errlen)
{
	struct sim_run s = { .t = t };
	struct sim_plans sp = { 0 };
	struct policy *tier[TIER_COUNT] = { NULL, NULL };
	int rc = -EINVAL;
	const struct policy_ops *ops = policy_find(name);

	if (!ops) {
		/* Let policy_create_with word the error the daemon would. */
		rc = policy_create_with(name, NULL, NULL, &tier[0], err, errlen);
		goto out;
	}
	/* plans: for a plan-aware policy, and for the prefetcher, which the
	 * daemon runs under every policy once a job registers a plan */
	if ((ops->caps & POLICY_CAP_PLANS) || cfg->prefetch_window) {
		rc = sim_plans_build(&sp, t, cfg->plan_epochs, cfg->prefetch_window, cfg->hot / 2);
		if (rc < 0) {
			snprintf(err, errlen, "plans: out of memory");
			goto out;
		}
	}
	s.cap[TIER_HOT] = cfg->hot;
	s.cap[TIER_WARM] = cfg->warm;
	/* the policies' budget stays cap (their env's capacity, as the
	 * daemon's); the tier holds up to max (engine.h) */
	s.max[TIER_HOT] = cfg->hot_max > cfg->hot ? cfg->hot_max : cfg->hot;
	s.max[TIER_WARM] = cfg->warm_max > cfg->warm ? cfg->warm_max : cfg->warm;
	for (int i = 0; i < TIER_COUNT; i++) {
		if (!s.cap[i])
			continue;
		struct policy_env env = {
			.capacity = s.cap[i],
			.next_use = sp.ps ? plan_store_oracle : NULL,
			.ctx = sp.ps,
			.version = sp.ps ? plan_store_version_cb : NULL,
		};
		rc = policy_create_with(name, cfg->tunables, &env, &tier[i], err, errlen);
		if (rc < 0)
			goto out;
	}
	if (!tier[TIER_HOT]) {
		snprintf(err, errlen, "hot tier size must be at least 1 byte");
		rc = -EINVAL;
		goto out;
	}
	placement_init(&s.pl, tier[TIER_HOT], tier[TIER_WARM]);
	/* demote=flat's room: up to what each tier holds before its victims
	 * go, as the daemon's policy_glue_room counts (policy_glue_hold: a
	 * flat hot is held past its budget, as demote=1's trailing mover
	 * holds it; --hot-max says how far) */
	s.pl.cap[TIER_HOT] = s.max[TIER_HOT];
	s.pl.cap[TIER_WARM] = s.cap[TIER_WARM];
	rc = sim_placement_tunables(&s.pl, cfg->placement, err, errlen);
	if (rc < 0)
		goto out;
	s.ents = sim_alloc_huge((t->nobj ? t->nobj : 1) * sizeof(*s.ents));
	if (!s.ents) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t o = 0; o < t->nobj; o++) {
		s.ents[o].e.key = t->key[o];
		s.ents[o].e.size = t->size[o];
		s.ents[o].tier = TIER_NONE;
	}
	if ((cfg->prefetch_rate || cfg->prefetch_rates) && sp.pf) {
		if (!t->time_us) {
			snprintf(err, errlen, "a timed prefetch needs the trace's time_us column "
					      "(tierctl trace records it)");
			rc = -EINVAL;
			goto out;
		}
		struct sim_loads *l = &s.loads;
		l->cap = cfg->prefetch_inflight ? cfg->prefetch_inflight : 8;
		l->ns_per_byte = cfg->prefetch_rate ? 1e9 / (double)cfg->prefetch_rate : 0;
		l->obj = calloc(l->cap, sizeof(*l->obj));
		l->done_ns = calloc(l->cap, sizeof(*l->done_ns));
		if (cfg->prefetch_rates &&
		    (l->ns_per_byte_ep = calloc(t->nepochs ? t->nepochs : 1, sizeof(double))) &&
		    (l->slot_free = calloc(l->cap, sizeof(*l->slot_free))))
			for (uint32_t e = 0; e < t->nepochs; e++)
				l->ns_per_byte_ep[e] = cfg->prefetch_rates[e]
							       ? 1e9 / (double)cfg->prefetch_rates[e]
							       : 0;
		if (!l->obj || !l->done_ns || (cfg->prefetch_rates && !l->slot_free)) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
			goto out;
		}
	}
	uint64_t now_ns = 0;
	size_t next_ev = 0; /* trace loads: the next event */

	struct timespec t0, t1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (size_t i = 0; i < t->n; i++) {
		/* The trace is known ahead: fetch the entries a few reads
		 * early, then their list neighbours, so the policy's pointer
		 * chasing finds them in cache. Replay is memory bound. */
		if (i + SIM_PREFETCH < t->n)
			__builtin_prefetch(&s.ents[t->obj[i + SIM_PREFETCH]]);
		if (i + SIM_PREFETCH / 2 < t->n) {
			const struct sim_ent *ahead = &s.ents[t->obj[i + SIM_PREFETCH / 2]];
			if (ahead->e.prev)
				__builtin_prefetch(ahead->e.prev);
			if (ahead->e.next)
				__builtin_prefetch(ahead->e.next);
			/* and what the policy will look at: the instance
			 * holding it, or the ones a miss asks */
			if (ahead->tier == TIER_HOT || ahead->tier == TIER_WARM) {
				policy_prefetch(tier[ahead->tier], &ahead->e);
			} else {
				for (int k = 0; k < TIER_COUNT; k++)
					if (tier[k])
						policy_prefetch(tier[k], &ahead->e);
			}
		}
		uint32_t o = t->obj[i];
		struct sim_ent *se = &s.ents[o];
		uint64_t size = se->e.size, now = i;
		if (s.loads.cap) {
			/* the trace's clock (never backwards), and what landed by then */
			uint64_t ns = t->time_us[i] * 1000;
			now_ns = ns > now_ns ? ns : now_ns;
			sim_loads_land(&s, now_ns, now);
		}
		if (sp.ps) {
			uint32_t j = t->job[i];
			if (sp.ahead && t->epoch[i] != sp.cur_ep[j]) {
				sp.cur_ep[j] = t->epoch[i];
				rc = sim_plans_publish(&sp, j, t->epoch[i] + sp.ahead);
				if (rc < 0) {
					snprintf(err, errlen, "plans: out of memory");
					goto out;
				}
			}
			plan_store_access(sp.ps, j, se->e.key);
		}
		if (cfg->trace_loads)
			sim_trace_events(&s, &next_ev, i);
		struct sim_counts *ec = &r->epoch[t->epoch[i]];
		ec->accesses++;
		ec->bytes += size;
		int to;
		bool ahead = se->m_ahead, ontime = se->d_ontime;
		se->m_ahead = se->d_ontime = false;
		if (cfg->trace_loads && ahead && !ontime && t->result &&
		    t->result[i] != TRACE_RES_HOT && t->result[i] != TRACE_RES_WARM &&
		    (se->tier == TIER_HOT || se->tier == TIER_WARM)) {
			/* loaded ahead by the model, but the daemon's prefetcher
			 * did not have it in time (its load landed late, was
			 * lost, or was not made before the read): late here too,
			 * a miss placed by the load */
			int from = se->tier;
			r->prefetch_late++;
			if (r->outcome)
				r->outcome[i] = SIM_OUT_LATE;
			/* read all the same: out of the ahead list (epoch) */
			to = placement_hit(&s.pl, from, &se->e, now);
			if (to != from)
				policy_remove(tier[from], &se->e);
		} else if (se->tier == SIM_LOADING || se->tier == SIM_LOADING_READ) {
			/* late: waits for the load in flight, a miss that reads
			 * nothing more from cold; the load places it */
			r->prefetch_late++;
			se->tier = SIM_LOADING_READ;
			to = TIER_NONE;
			if (r->outcome)
				r->outcome[i] = SIM_OUT_LATE;
		} else if (se->tier != TIER_NONE) {
			int from = se->tier;
			ec->hits++;
			ec->hit_bytes += size;
			r->tier_hits[from]++;
			r->tier_hit_bytes[from] += size;
			if (r->outcome)
				r->outcome[i] = from == TIER_HOT ? SIM_OUT_HOT : SIM_OUT_WARM;
			to = placement_hit(&s.pl, from, &se->e, now);
			if (to != from)
				policy_remove(tier[from], &se->e);
		} else {
			r->cold_bytes += size;
			if (r->outcome)
				r->outcome[i] = SIM_OUT_MISS;
			to = placement_fill(&s.pl, se->e.key, size, now);
		}
		if (to != TIER_NONE && to != se->tier) {
			policy_insert(tier[to], &se->e, now);
			se->tier = to;
			sim_make_room(&s, to, now);
		}
		if (sp.pf)
			sim_prefetch_pump(&s, &sp, t->job[i], r, now, now_ns, t->epoch[i]);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (uint32_t e = 0; e < r->nepochs; e++) {
		r->all.accesses += r->epoch[e].accesses;
		r->all.hits += r->epoch[e].hits;
		r->all.bytes += r->epoch[e].bytes;
		r->all.hit_bytes += r->epoch[e].hit_bytes;
	}
	r->demoted = s.pl.demoted;
	r->promoted = s.pl.promoted;
	rc = 0;
out:
	policy_destroy(tier[TIER_HOT]);
	policy_destroy(tier[TIER_WARM]);
	sim_free_huge(s.ents, (t->nobj ? t->nobj : 1) * sizeof(*s.ents));
	free(s.loads.obj);
	free(s.loads.done_ns);
	free(s.loads.ns_per_byte_ep);
	free(s.loads.slot_free);
	sim_plans_free(&sp);
	return rc;
}
