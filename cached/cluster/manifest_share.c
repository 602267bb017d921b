/*
 * Shared manifests: see manifest_share.h.
 *
 * One state per dataset name (struct share), never freed before the
 * module: Redis replies and worker jobs find it still there after
 * manifest_share_stop() (redis_conn_free() and workers_stop() end them
 * before manifest_share_free()). At most one Redis step of a dataset is in
 * flight at a time (share.busy); the heartbeat timer drives waiting loads,
 * lock renewals and the watch for newer generations.
 */
#include "manifest_share.h"

#include <errno.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "dataset.h"
#include "home.h"
#include "log.h"
#include "manifest.h"
#include "manifest_pieces.h"
#include "members.h"
#include "redis_conn.h"
#include "workers.h"

#define KEY_MAX (CONFIG_NAME_MAX * 2 + 64)
#define OLD_PIECES_MS "60000"        /* a replaced generation's pieces live on this long */
#define NEW_PIECES_MS "600000"       /* pieces not (yet) published expire */
#define WAIT_MAX_NS (30ull * 60 * 1000000000ull) /* waiting for a lister at most */
#define ZSTD_LEVEL 3
#define PIECES_INFLIGHT 8u           /* piece GETs or SETs in flight for one dataset */

enum origin {
	ORIGIN_NONE = 0,
	ORIGIN_LISTED,       /* listed here (the home, or a refresh asked here), published */
	ORIGIN_REDIS,        /* loaded from Redis */
	ORIGIN_FALLBACK,     /* listed here: Redis had none to give (why) */
};

struct share {
	struct manifest_share *ms;
	char name[CONFIG_NAME_MAX + 1];
	char source[MFP_SOURCE_MAX + 1];
	char meta_key[KEY_MAX], lock_key[KEY_MAX], gen_key[KEY_MAX], piece_prefix[KEY_MAX];
	uint64_t home_key;
	struct manifest_fetch *f; /* the load waiting for an answer, or NULL */
	uint64_t start_ns, deadline_ns;
	bool busy;          /* a Redis step or a worker job is in flight */
	bool locked;        /* this node holds the listing lock */
	bool pickup;        /* the next fetch loads the newer generation from Redis */
	int home;           /* this node is the manifest's home: 1, 0, -1 unknown yet */
	uint64_t bad_gen;   /* a generation found bad: wait for another */
	unsigned retries;   /* pieces gone under a read (a switch): read again */
	uint64_t have_gen;  /* the generation the manifest is (0: listed, not published) */
	bool follow_seen;   /* a fallback listing saw Redis's generation since (follow_from) */
	uint64_t follow_from; /* ... and then follows only generations above it: those
	                       * are listed after its own listing */
	uint64_t refresh_floor; /* a refresh loads only a generation newer than this
	                         * (what Redis had when it began); 0: not set yet */
	enum origin origin;
	char why[160];      /* the fallback's reason, or the last problem */
	uint64_t published, loaded, fallbacks;
};

struct manifest_share {
	struct cache *cache;
	struct redis_conn *rc;
	struct members *mem;
	const struct cluster_conf *cc;
	struct event *timer;
	uint64_t start_ns;
	bool stopped;
	struct share **v;
	size_t n;
	uint64_t published, loaded, fallbacks;
	struct home_node nodes[MEMBERS_MAX];
};

/* Scripts. Keys are built in the scripts from ARGV (one hash tag: one
 * slot), as for the member hashes. */
static const char peek_script[] =
	"return {redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[2])}";
/* KEYS meta, lock; ARGV gen pieces raw zsize xxh3 source node prefix */
static const char publish_script[] =
	"local g = tonumber(ARGV[1])\n"
	"local cur = tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')\n"
	"if cur >= g then return 0 end\n"
	"for i = 0, tonumber(ARGV[2]) - 1 do\n"
	"  if redis.call('PERSIST', ARGV[8] .. ARGV[1] .. ':' .. i) == 0 and\n"
	"     redis.call('EXISTS', ARGV[8] .. ARGV[1] .. ':' .. i) == 0 then return -1 end\n"
	"end\n"
	"local oldp = tonumber(redis.call('HGET', KEYS[1], 'pieces') or '0')\n"
	"local t = redis.call('TIME')\n"
	"local ms = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))\n"
	"redis.call('DEL', KEYS[1])\n"
	"redis.call('HSET', KEYS[1], 'gen', ARGV[1], 'pieces', ARGV[2], 'raw', ARGV[3], 'zsize',\n"
	"  ARGV[4], 'xxh3', ARGV[5], 'source', ARGV[6], 'node', ARGV[7], 'listed_ms', ms)\n"
	"if cur > 0 then for i = 0, oldp - 1 do\n"
	"  redis.call('PEXPIRE', ARGV[8] .. cur .. ':' .. i, " OLD_PIECES_MS ")\n"
	"end end\n"
	"if redis.call('GET', KEYS[2]) == ARGV[7] then redis.call('DEL', KEYS[2]) end\n"
	"return 1";
/* KEYS lock; ARGV node, ms (0: release) */
static const char lock_script[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	"if ARGV[2] == '0' then return redis.call('DEL', KEYS[1]) end\n"
	"return redis.call('PEXPIRE', KEYS[1], ARGV[2])";

static void step(struct share *s);
static void finish_list(struct share *s, bool publish, const char *why);

static uint64_t lock_ms(const struct manifest_share *ms)
{
	return 2 * ms->cc->lease_ms;
}

static void source_of(const struct dataset_conf *dc, char *out, size_t n)
{
	if (strcmp(dc->backend, "rados") == 0)
		snprintf(out, n, "rados:%s/%s/%s/%s", dc->pool, dc->rados_namespace, dc->prefix, dc->layout);
	else
		snprintf(out, n, "%s:%s", dc->backend, dc->path);
}

static struct share *share_get(struct manifest_share *ms, const struct dataset *ds)
{
	for (size_t i = 0; i < ms->n; i++)
		if (strcmp(ms->v[i]->name, ds->name) == 0) {
			source_of(&ds->conf, ms->v[i]->source, sizeof(ms->v[i]->source)); /* a reload may change it */
			return ms->v[i];
		}
	struct share **v = realloc(ms->v, (ms->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	ms->v = v;
	struct share *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->ms = ms;
	snprintf(s->name, sizeof(s->name), "%s", ds->name);
	source_of(&ds->conf, s->source, sizeof(s->source));
	const char *c = ms->cc->name;
	snprintf(s->meta_key, sizeof(s->meta_key), "tc:{%s}:mf:%s", c, s->name);
	snprintf(s->lock_key, sizeof(s->lock_key), "tc:{%s}:mf:%s:lock", c, s->name);
	snprintf(s->gen_key, sizeof(s->gen_key), "tc:{%s}:mf:%s:gen", c, s->name);
	snprintf(s->piece_prefix, sizeof(s->piece_prefix), "tc:{%s}:mf:%s:", c, s->name);
	ms->v[ms->n++] = s;
	return s;
}

/* Is this node the dataset's manifest home? -1: the members are not known yet. */
static int is_home(struct share *s)
{
	struct manifest_share *ms = s->ms;
	if (members_age_ms(ms->mem) == UINT64_MAX)
		return s->home = -1;
	size_t n;
	const struct member *m = members_list(ms->mem, &n);
	if (n > MEMBERS_MAX)
		n = MEMBERS_MAX;
	for (size_t i = 0; i < n; i++)
		ms->nodes[i] = (struct home_node){.id = m[i].id, .weight = m[i].capacity,
						  .skip = m[i].state != MEMBER_UP};
	char k[CONFIG_NAME_MAX + MFP_SOURCE_MAX + 2];
	int kn = snprintf(k, sizeof(k), "%s%c%s", s->name, 0, s->source);
	s->home_key = XXH3_64bits(k, kn > 0 ? (size_t)kn : 0);
	int first, second;
	home_pick(ms->nodes, n, s->home_key, &first, &second);
	s->home = first >= 0 && strcmp(m[first].id, ms->cc->node_id) == 0;
	return s->home;
}

/* Answer the waiting load. */
static void answer(struct share *s, int result, struct manifest *mf, bool publish)
{
	struct manifest_fetch *f = s->f;
	s->f = NULL;
	s->retries = 0;
	s->pickup = false;
	s->refresh_floor = 0;
	if (!f) {
		manifest_free(mf);
		return;
	}
	f->result = result;
	f->mf = mf;
	f->publish = publish;
	f->done(f);
}

static void finish_list(struct share *s, bool publish, const char *why)
{
	if (publish) {
		s->origin = ORIGIN_LISTED;
		s->why[0] = '\0';
	} else {
		char w[sizeof(s->why)];
		snprintf(w, sizeof(w), "%s", why); /* why may be s->why */
		s->origin = ORIGIN_FALLBACK;
		memcpy(s->why, w, sizeof(w));
		s->fallbacks++;
		s->ms->fallbacks++;
		s->follow_seen = false;
		log_warn("dataset=%s op=manifest_share action=list_here reason=\"%s\": this node lists the "
			 "source itself", s->name, why);
	}
	s->have_gen = 0;
	answer(s, 1, NULL, publish);
}

/* ---- reading a generation ---- */

struct read {
	struct share *s;
	struct mfp_meta meta;
	uint8_t *z;
	uint64_t next;      /* the next piece to ask for */
	uint64_t outstanding;
	int err;            /* first failure: -ENOENT a piece gone, -EINVAL bad, else Redis */
	char why[160];
	/* the worker's */
	struct job job;
	struct manifest *mf;
};

static void read_free(struct read *r)
{
	free(r->z);
	manifest_free(r->mf);
	free(r);
}

static void unpack_work(struct job *j)
{
	struct read *r = (struct read *)((char *)j - offsetof(struct read, job));
	void *raw = NULL;
	r->err = mfp_unpack(r->z, (size_t)r->meta.zsize, &r->meta, &raw, r->why, sizeof(r->why));
	if (r->err == 0) {
		r->err = manifest_decode(raw, (size_t)r->meta.raw, &r->mf);
		if (r->err < 0)
			snprintf(r->why, sizeof(r->why), "the manifest does not decode (%s)", strerror(-r->err));
		free(raw);
	}
}

static void bad_generation(struct share *s, uint64_t gen, const char *why)
{
	s->bad_gen = gen;
	snprintf(s->why, sizeof(s->why), "generation %" PRIu64 " bad: %.100s", gen, why);
	log_warn("dataset=%s op=manifest_share gen=%" PRIu64 " err=\"%s\": not used; waiting for a new "
		 "generation, else listing the source", s->name, gen, why);
}

static void unpack_done(struct job *j)
{
	struct read *r = (struct read *)((char *)j - offsetof(struct read, job));
	struct share *s = r->s;
	s->busy = false;
	if (s->ms->stopped) {
		read_free(r);
		return;
	}
	if (r->err == -ENOMEM) {
		finish_list(s, false, "out of memory loading it");
	} else if (r->err < 0) {
		bad_generation(s, r->meta.gen, r->why);
		step(s);
	} else {
		s->have_gen = r->meta.gen;
		s->origin = ORIGIN_REDIS;
		s->why[0] = '\0';
		s->pickup = false;
		s->loaded++;
		s->ms->loaded++;
		log_info("dataset=%s op=manifest_share action=loaded gen=%" PRIu64 " files=%zu bytes_z=%" PRIu64
			 " listed_by=%s", s->name, r->meta.gen, r->mf->n, r->meta.zsize, r->meta.node);
		struct manifest *mf = r->mf;
		r->mf = NULL;
		answer(s, 0, mf, false);
	}
	read_free(r);
}

static void send_gets(struct read *r);

static void read_put(struct read *r)
{
	if (--r->outstanding)
		return;
	struct share *s = r->s;
	if (s->ms->stopped) {
		s->busy = false;
		read_free(r);
		return;
	}
	if (r->err == 0) {
		workers_submit(s->ms->cache->workers, &r->job); /* still busy */
		return;
	}
	s->busy = false;
	if (r->err == -ENOENT && ++s->retries <= 3) {
		step(s); /* a newer generation replaced it meanwhile: the meta again */
	} else if (r->err == -ENOENT || r->err == -EINVAL) {
		bad_generation(s, r->meta.gen, r->err == -ENOENT ? "pieces missing" : r->why);
		step(s);
	} else {
		finish_list(s, false, r->err == -ENOMEM ? "out of memory loading it"
						       : "Redis failed while the pieces were read");
	}
	read_free(r);
}

struct piece_req {
	struct read *r;
	uint64_t i;
};

static void on_piece(void *arg, redisReply *rep, int err)
{
	struct piece_req *q = arg;
	struct read *r = q->r;
	uint64_t i = q->i;
	free(q);
	if (r->err == 0) {
		size_t want = mfp_piece_len(&r->meta, i);
		if (err < 0) {
			r->err = err;
			snprintf(r->why, sizeof(r->why), "piece %" PRIu64 ": %s", i,
				 err == -EPROTO && rep && rep->str ? rep->str : strerror(-err));
		} else if (!rep || rep->type == REDIS_REPLY_NIL) {
			r->err = -ENOENT;
		} else if (rep->type != REDIS_REPLY_STRING || want == 0 || rep->len != want) {
			r->err = -EINVAL;
			snprintf(r->why, sizeof(r->why), "piece %" PRIu64 " has %zu bytes, %zu expected", i,
				 rep->type == REDIS_REPLY_STRING ? (size_t)rep->len : (size_t)0, want);
		} else {
			memcpy(r->z + i * MFP_PIECE_MAX, rep->str, want);
		}
	}
	if (r->err == 0 && !r->s->ms->stopped)
		send_gets(r);
	read_put(r);
}

/* Keep PIECES_INFLIGHT GETs in flight: each has the Redis deadline, so a
 * large manifest is not asked all at once. */
static void send_gets(struct read *r)
{
	while (r->err == 0 && r->next < r->meta.pieces && r->outstanding <= PIECES_INFLIGHT) {
		uint64_t i = r->next++;
		char key[KEY_MAX + 48];
		snprintf(key, sizeof(key), "%s%" PRIu64 ":%" PRIu64, r->s->piece_prefix, r->meta.gen, i);
		struct piece_req *q = malloc(sizeof(*q));
		if (!q) {
			r->err = -ENOMEM;
			break;
		}
		*q = (struct piece_req){.r = r, .i = i};
		const char *argv[] = {"GET", key};
		r->outstanding++;
		if (redis_conn_cmd(r->s->ms->rc, on_piece, q, 2, argv, NULL) < 0) {
			r->outstanding--;
			free(q);
			r->err = -ENOTCONN;
		}
	}
}

static void read_generation(struct share *s, const struct mfp_meta *m)
{
	struct read *r = calloc(1, sizeof(*r));
	if (r)
		r->z = malloc((size_t)m->zsize);
	if (!r || !r->z) {
		free(r);
		finish_list(s, false, "out of memory loading it");
		return;
	}
	r->s = s;
	r->meta = *m;
	r->job.work = unpack_work;
	r->job.done = unpack_done;
	s->busy = true;
	r->outstanding = 1; /* held until the first GETs are sent */
	send_gets(r);
	read_put(r);
}

/* ---- the meta, and what to do next ---- */

/* The meta hash as HGETALL gives it: 0 and m, -ENOENT (none), -EINVAL. */
static int parse_meta(const redisReply *h, struct mfp_meta *m, char *why, size_t whyn)
{
	memset(m, 0, sizeof(*m));
	if (!h || h->type != REDIS_REPLY_ARRAY || h->elements % 2 || h->elements > 64) {
		snprintf(why, whyn, "the meta is not a hash of a few fields");
		return -EINVAL;
	}
	if (h->elements == 0)
		return -ENOENT;
	for (size_t i = 0; i < h->elements; i += 2) {
		const redisReply *f = h->element[i], *v = h->element[i + 1];
		if (!f || !v || f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    mfp_meta_field(m, f->str, f->len, v->str, v->len) < 0) {
			snprintf(why, whyn, "field %zu of the meta is malformed", i / 2);
			return -EINVAL;
		}
	}
	return mfp_meta_check(m, why, whyn);
}

static void on_lock(void *arg, redisReply *rep, int err)
{
	struct share *s = arg;
	s->busy = false;
	if (s->ms->stopped || !s->f)
		return;
	if (err < 0) {
		finish_list(s, false, "Redis failed taking the listing lock");
		return;
	}
	if (rep && rep->type == REDIS_REPLY_STATUS) { /* OK: ours */
		s->locked = true;
		log_info("dataset=%s op=manifest_share action=list_publish: this node is the manifest's home",
			 s->name);
		finish_list(s, true, NULL);
	}
	/* else another node lists: wait for its generation (the timer) */
}

static void take_lock(struct share *s)
{
	char ms[24];
	snprintf(ms, sizeof(ms), "%" PRIu64, lock_ms(s->ms));
	const char *argv[] = {"SET", s->lock_key, s->ms->cc->node_id, "NX", "PX", ms};
	s->busy = true;
	if (redis_conn_cmd(s->ms->rc, on_lock, s, 6, argv, NULL) < 0) {
		s->busy = false;
		finish_list(s, false, "Redis unreachable");
	}
}

static void on_peek(void *arg, redisReply *rep, int err)
{
	struct share *s = arg;
	struct manifest_share *ms = s->ms;
	s->busy = false;
	if (ms->stopped || !s->f)
		return;
	if (err < 0 || !rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
		finish_list(s, false, err < 0 ? "Redis failed reading the meta" : "unexpected reply to the meta");
		return;
	}
	struct mfp_meta m;
	char why[160] = "";
	int rc = parse_meta(rep->element[0], &m, why, sizeof(why));
	const redisReply *lk = rep->element[1];
	bool locked_by_other = lk && lk->type == REDIS_REPLY_STRING &&
			       !(lk->len == strlen(ms->cc->node_id) && memcmp(lk->str, ms->cc->node_id, lk->len) == 0);
	if (rc == 0 && strcmp(m.source, s->source) != 0) {
		snprintf(why, sizeof(why), "published for another source (%.60s)", m.source);
		rc = -EINVAL;
	}
	if (rc == -EINVAL && m.gen != s->bad_gen)
		bad_generation(s, m.gen, why);
	bool usable = rc == 0 && m.gen != s->bad_gen;
	int home = is_home(s);
	/* a refresh (tierctl refresh, on any node) wants the source as of now:
	 * it loads only a generation published after it began (another node
	 * listing meanwhile), else lists itself and publishes */
	bool refresh = s->f->refresh && !s->pickup;
	if (refresh && !s->refresh_floor)
		s->refresh_floor = (rc == 0 && m.gen > s->have_gen ? m.gen : s->have_gen) + 1;
	if (usable && (!refresh || m.gen >= s->refresh_floor)) {
		read_generation(s, &m);
		return;
	}
	/* nothing to load (or a refresh): the home lists, or the node asked to
	 * refresh; who is home is known after the first heartbeat's answer */
	if ((home == 1 || refresh) && !locked_by_other) {
		take_lock(s);
		return;
	}
	uint64_t now = cache_now_ns();
	if (locked_by_other && s->deadline_ns < now + lock_ms(ms) * 1000000ull &&
	    now - s->start_ns < WAIT_MAX_NS)
		s->deadline_ns = now + lock_ms(ms) * 1000000ull; /* a lister is at work: give it time */
	if (now >= s->deadline_ns)
		finish_list(s, false, s->bad_gen ? s->why : "no manifest published in time");
	/* else: the next tick asks again */
}

/* One step of a waiting load: ask the meta (and who holds the lock). */
static void step(struct share *s)
{
	struct manifest_share *ms = s->ms;
	if (!s->f || s->busy || ms->stopped)
		return;
	if (!redis_conn_up(ms->rc)) {
		/* at startup the connection may still be on its way */
		if (redis_conn_connects(ms->rc) > 0 ||
		    cache_now_ns() - ms->start_ns > ms->cc->redis_timeout_ms * 1000000ull)
			finish_list(s, false, "Redis unreachable");
		return;
	}
	const char *argv[] = {"EVAL", peek_script, "2", s->meta_key, s->lock_key};
	s->busy = true;
	if (redis_conn_cmd(ms->rc, on_peek, s, 5, argv, NULL) < 0) {
		s->busy = false;
		finish_list(s, false, "Redis unreachable");
	}
}

static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	step(arg);
}

int manifest_share_fetch(void *arg, struct manifest_fetch *f)
{
	struct manifest_share *ms = arg;
	if (ms->stopped)
		return -ECANCELED;
	struct share *s = share_get(ms, f->ds);
	if (!s || s->f)
		return -EBUSY; /* list as without the cluster */
	s->f = f;
	s->start_ns = cache_now_ns();
	s->deadline_ns = s->start_ns + lock_ms(ms) * 1000000ull;
	s->retries = 0;
	/* the first step on the loop's next turn: done() is never called
	 * from within this call */
	const struct timeval now = {0, 0};
	if (event_base_once(ms->cache->base, -1, EV_TIMEOUT, kick_cb, s, &now) < 0)
		(void)0; /* the next tick takes the first step */
	return 0;
}

/* ---- publishing what the home listed ---- */

struct pub {
	struct share *s;
	struct job job;
	void *enc;
	size_t enc_len;
	int err;
	void *z;
	size_t zn;
	struct mfp_meta meta;
	uint64_t next;
	uint64_t outstanding;
	int perr;
};

static void send_sets(struct pub *p);

static void pub_free(struct pub *p)
{
	free(p->enc);
	free(p->z);
	free(p);
}

static void ignore_reply(void *arg, redisReply *rep, int err)
{
	(void)arg;
	(void)rep;
	(void)err;
}

static void release_lock(struct share *s)
{
	if (!s->locked)
		return;
	s->locked = false;
	const char *argv[] = {"EVAL", lock_script, "1", s->lock_key, s->ms->cc->node_id, "0"};
	redis_conn_cmd(s->ms->rc, ignore_reply, NULL, 6, argv, NULL); /* else it expires */
}

static void pub_fail(struct pub *p, const char *why)
{
	struct share *s = p->s;
	s->busy = false;
	if (!s->ms->stopped) {
		snprintf(s->why, sizeof(s->why), "not published: %s", why);
		log_warn("dataset=%s op=manifest_share action=publish err=\"%s\": the other nodes list the source "
			 "themselves after their wait", s->name, why);
		release_lock(s);
	}
	pub_free(p);
}

static void on_published(void *arg, redisReply *rep, int err)
{
	struct pub *p = arg;
	struct share *s = p->s;
	if (s->ms->stopped || err < 0 || !rep || rep->type != REDIS_REPLY_INTEGER) {
		pub_fail(p, err < 0 ? strerror(-err) : "unexpected reply to the publish script");
		return;
	}
	if (rep->integer != 1) {
		pub_fail(p, rep->integer == 0 ? "a newer generation was published meanwhile"
					     : "its pieces expired before the switch");
		return;
	}
	s->busy = false;
	s->locked = false; /* the script released it */
	s->have_gen = p->meta.gen;
	s->published++;
	s->ms->published++;
	log_info("dataset=%s op=manifest_share action=published gen=%" PRIu64 " raw=%" PRIu64 " zsize=%" PRIu64
		 " pieces=%" PRIu64, s->name, p->meta.gen, p->meta.raw, p->meta.zsize, p->meta.pieces);
	pub_free(p);
}

static void switch_meta(struct pub *p)
{
	struct share *s = p->s;
	char a[5][24];
	snprintf(a[0], sizeof(a[0]), "%" PRIu64, p->meta.gen);
	snprintf(a[1], sizeof(a[1]), "%" PRIu64, p->meta.pieces);
	snprintf(a[2], sizeof(a[2]), "%" PRIu64, p->meta.raw);
	snprintf(a[3], sizeof(a[3]), "%" PRIu64, p->meta.zsize);
	snprintf(a[4], sizeof(a[4]), "%016" PRIx64, p->meta.xxh3);
	const char *argv[] = {"EVAL", publish_script, "2", s->meta_key, s->lock_key, a[0], a[1], a[2],
			      a[3], a[4], s->source, s->ms->cc->node_id, s->piece_prefix};
	if (redis_conn_cmd(s->ms->rc, on_published, p, 13, argv, NULL) < 0)
		pub_fail(p, "Redis unreachable");
}

static void on_piece_set(void *arg, redisReply *rep, int err)
{
	struct pub *p = arg;
	if (p->perr == 0 && (err < 0 || !rep || rep->type != REDIS_REPLY_STATUS))
		p->perr = err < 0 ? err : -EPROTO;
	if (p->perr == 0 && !p->s->ms->stopped)
		send_sets(p);
	if (--p->outstanding)
		return;
	if (p->s->ms->stopped || p->perr < 0)
		pub_fail(p, p->perr == -ENOMEM ? "out of memory" : "Redis failed while the pieces were written");
	else
		switch_meta(p);
}

static void on_gen(void *arg, redisReply *rep, int err)
{
	struct pub *p = arg;
	struct share *s = p->s;
	if (s->ms->stopped || err < 0 || !rep || rep->type != REDIS_REPLY_INTEGER || rep->integer <= 0) {
		pub_fail(p, "no generation number from Redis");
		return;
	}
	p->meta.gen = (uint64_t)rep->integer;
	p->outstanding = 1; /* held until the first SETs are sent */
	send_sets(p);
	on_piece_set(p, &(redisReply){.type = REDIS_REPLY_STATUS}, 0); /* the hold */
}

static void send_sets(struct pub *p)
{
	struct share *s = p->s;
	while (p->perr == 0 && p->next < p->meta.pieces && p->outstanding <= PIECES_INFLIGHT) {
		uint64_t i = p->next++;
		char key[KEY_MAX + 48];
		snprintf(key, sizeof(key), "%s%" PRIu64 ":%" PRIu64, s->piece_prefix, p->meta.gen, i);
		size_t len = mfp_piece_len(&p->meta, i);
		const char *argv[] = {"SET", key, (const char *)p->z + i * MFP_PIECE_MAX, "PX", NEW_PIECES_MS};
		const size_t argvlen[] = {3, strlen(key), len, 2, strlen(NEW_PIECES_MS)};
		p->outstanding++;
		if (redis_conn_cmd(s->ms->rc, on_piece_set, p, 5, argv, argvlen) < 0) {
			p->outstanding--;
			p->perr = -ENOTCONN;
		}
	}
}

static void pack_work(struct job *j)
{
	struct pub *p = (struct pub *)((char *)j - offsetof(struct pub, job));
	p->err = mfp_pack(p->enc, p->enc_len, ZSTD_LEVEL, &p->z, &p->zn, &p->meta);
	free(p->enc);
	p->enc = NULL;
}

static void pack_done(struct job *j)
{
	struct pub *p = (struct pub *)((char *)j - offsetof(struct pub, job));
	struct share *s = p->s;
	if (s->ms->stopped) {
		pub_fail(p, "stopping");
		return;
	}
	if (p->err == -EFBIG) {
		char why[160];
		snprintf(why, sizeof(why), "the encoded manifest (%zu bytes) is above the limit of %llu bytes",
			 p->enc_len, MFP_RAW_MAX);
		pub_fail(p, why);
		return;
	}
	if (p->err < 0) {
		pub_fail(p, strerror(-p->err));
		return;
	}
	const char *argv[] = {"INCR", s->gen_key};
	if (redis_conn_cmd(s->ms->rc, on_gen, p, 2, argv, NULL) < 0)
		pub_fail(p, "Redis unreachable");
}

void manifest_share_listed(void *arg, struct manifest_fetch *f, int err)
{
	struct manifest_share *ms = arg;
	struct share *s = share_get(ms, f->ds);
	if (!s || ms->stopped)
		return;
	if (!f->publish)
		return;
	if (err < 0 || !f->enc) {
		release_lock(s);
		return;
	}
	struct pub *p = calloc(1, sizeof(*p));
	if (!p) {
		release_lock(s);
		return;
	}
	p->s = s;
	p->enc = f->enc;
	p->enc_len = f->enc_len;
	f->enc = NULL;
	p->job.work = pack_work;
	p->job.done = pack_done;
	s->busy = true;
	workers_submit(ms->cache->workers, &p->job);
}

/* ---- the heartbeat: waiting loads, the lock, newer generations ---- */

static void on_gen_seen(void *arg, redisReply *rep, int err)
{
	struct share *s = arg;
	s->busy = false;
	if (s->ms->stopped || err < 0 || !rep)
		return;
	bool fallback = s->origin == ORIGIN_FALLBACK;
	if (fallback && !s->follow_seen && rep->type == REDIS_REPLY_NIL) {
		s->follow_seen = true; /* none published yet: take the first */
		s->follow_from = 0;
		return;
	}
	if (rep->type != REDIS_REPLY_STRING)
		return;
	uint64_t g;
	struct mfp_meta m = {0};
	if (mfp_meta_field(&m, "gen", 3, rep->str, rep->len) < 0)
		return;
	g = m.gen;
	if (fallback && !s->follow_seen) {
		/* what Redis holds now may predate this node's own listing:
		 * follow the generations after it */
		s->follow_seen = true;
		s->follow_from = g;
		log_info("dataset=%s op=manifest_share action=follow after_gen=%" PRIu64
			 ": this node listed itself and takes the next generation published", s->name, g);
		return;
	}
	if (g <= (fallback ? s->follow_from : s->have_gen) || g == s->bad_gen || s->f)
		return;
	struct dataset *ds = cache_dataset(s->ms->cache, s->name, strlen(s->name));
	if (!ds)
		return;
	s->pickup = true;
	if (dataset_refresh(s->ms->cache, ds, NULL, NULL) < 0)
		s->pickup = false; /* busy: the next tick */
	else
		log_info("dataset=%s op=manifest_share action=pickup gen=%" PRIu64 " had=%" PRIu64, s->name, g,
			 s->have_gen);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct manifest_share *ms = arg;
	if (ms->stopped)
		return;
	for (size_t i = 0; i < ms->n; i++) {
		struct share *s = ms->v[i];
		(void)is_home(s); /* for status */
		if (s->f) {
			step(s);
			continue;
		}
		if (s->locked) {
			char t[24];
			snprintf(t, sizeof(t), "%" PRIu64, lock_ms(ms));
			const char *argv[] = {"EVAL", lock_script, "1", s->lock_key, ms->cc->node_id, t};
			redis_conn_cmd(ms->rc, ignore_reply, NULL, 6, argv, NULL);
		}
		if ((s->have_gen > 0 || s->origin == ORIGIN_FALLBACK) && !s->busy && !s->locked &&
		    redis_conn_up(ms->rc)) {
			const char *argv[] = {"HGET", s->meta_key, "gen"};
			s->busy = true;
			if (redis_conn_cmd(ms->rc, on_gen_seen, s, 3, argv, NULL) < 0)
				s->busy = false;
		}
	}
}

int manifest_share_new(struct cache *cache, struct redis_conn *rc, struct members *mem,
		       const struct cluster_conf *cc, struct manifest_share **out)
{
	struct manifest_share *ms = calloc(1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	ms->cache = cache;
	ms->rc = rc;
	ms->mem = mem;
	ms->cc = cc;
	ms->start_ns = cache_now_ns();
	ms->timer = event_new(cache->base, -1, EV_PERSIST, tick_cb, ms);
	struct timeval tv = {.tv_sec = (time_t)(cc->heartbeat_ms / 1000),
			     .tv_usec = (suseconds_t)(cc->heartbeat_ms % 1000) * 1000};
	if (!ms->timer || event_add(ms->timer, &tv) < 0) {
		if (ms->timer)
			event_free(ms->timer);
		free(ms);
		return -ENOMEM;
	}
	*out = ms;
	return 0;
}

void manifest_share_stop(struct manifest_share *ms)
{
	if (!ms || ms->stopped)
		return;
	ms->stopped = true;
	event_del(ms->timer);
	for (size_t i = 0; i < ms->n; i++)
		if (ms->v[i]->f)
			answer(ms->v[i], -ECANCELED, NULL, false);
}

void manifest_share_free(struct manifest_share *ms)
{
	if (!ms)
		return;
	manifest_share_stop(ms);
	event_free(ms->timer);
	for (size_t i = 0; i < ms->n; i++)
		free(ms->v[i]);
	free(ms->v);
	free(ms);
}

/* ---- status ---- */

void manifest_share_counts(const struct manifest_share *ms, uint64_t *published, uint64_t *loaded,
			   uint64_t *fallbacks)
{
	*published = ms ? ms->published : 0;
	*loaded = ms ? ms->loaded : 0;
	*fallbacks = ms ? ms->fallbacks : 0;
}

static const char *origin_name(const struct share *s)
{
	if (s->f)
		return "loading";
	switch (s->origin) {
	case ORIGIN_LISTED: return "listed";
	case ORIGIN_REDIS: return "redis";
	case ORIGIN_FALLBACK: return "listed_fallback";
	default: return "none";
	}
}

void manifest_share_report(const struct manifest_share *ms, struct proto_rs *rs)
{
	proto_rs_section(rs, "cluster_manifests", TC_SHAPE_ARRAY);
	for (size_t i = 0; ms && i < ms->n; i++) {
		const struct share *s = ms->v[i];
		proto_rs_record(rs);
		proto_rs_str(rs, "dataset", s->name);
		proto_rs_str(rs, "origin", origin_name(s));
		proto_rs_u64(rs, "generation", s->have_gen);
		proto_rs_str(rs, "reason", s->why);
		proto_rs_bool(rs, "listing_lock", s->locked);
		proto_rs_bool(rs, "home", s->home == 1);
		proto_rs_u64(rs, "published", s->published);
		proto_rs_u64(rs, "loaded", s->loaded);
		proto_rs_u64(rs, "fallbacks", s->fallbacks);
	}
}
