/*
 * The cluster node: see cluster.h.
 *
 * A miss asks cluster_remote_read. The chunk's home comes from the live
 * member list as Redis last gave it (members_list: while Redis is down the
 * last list stays in force, so peers are still asked), by weighted
 * rendezvous over every member that is up. Home is this node: the cold
 * store. Home is a peer that failed lately (suspect): the fallback is
 * counted (reason "suspect") and the next home in rank is asked instead,
 * or the cold store when that is this node. Every fallback is counted by
 * reason (tiercache_fallback_total) and the first of a run is logged.
 *
 * Egress per dataset goes to Redis with each heartbeat as this node's
 * stats ("NAME COLD PEER_IN PEER_OUT HITS;" per dataset), so that every
 * node's status can show the whole cluster's without asking each node.
 */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broadcast.h"
#include "drain.h"
#include "handover.h"
#include "home.h"
#include "leave.h"
#include "log.h"
#include "manifest_share.h"
#include "members.h"
#include "peer_client.h"
#include "peer_server.h"
#include "plan_share.h"
#include "redis_conn.h"

#define PASSWORD_MAX 512u

struct cluster {
	struct cache *cache;
	const struct cluster_conf *cc; /* &conf: what every module below is given */
	struct cluster_conf conf; /* a copy: a reload frees the config it came from
				   * (every [cluster] key is restart-only) */
	struct peer_keys keys;
	char password[PASSWORD_MAX + 1];
	bool has_password;
	uint64_t incarnation;
	struct redis_conn *redis;
	struct members *mem;
	struct peer_server *srv;
	struct peer_client *cli;
	struct broadcast *bcast;             /* the admin broadcast (broadcast.h) */
	struct manifest_share *mshare;       /* shared manifests (manifest_share.h) */
	struct drain *drain;                 /* tierctl cluster drain (drain.h) */
	uint64_t prev_asked, prev_got;      /* misses asked of the chunk's previous home */
	uint64_t prev_skipped;              /* ... not asked: the cluster had settled */
	uint64_t changed_ms;                /* when the member list last changed (now_ms) */
	bool others_hold;                   /* handover_others_hold, as of others_hold_ms */
	uint64_t others_hold_ms;
	struct plans *plans;                 /* the daemon's plans (cluster_set_plans) */
	struct plan_share *pshare;           /* whole-job plans through Redis (plan_share.h) */
	bool running;
	uint64_t asked;                     /* misses asked of a peer */
	uint64_t fallbacks[PEER_FAIL_COUNT]; /* by reason */
	struct home_node nodes[MEMBERS_MAX]; /* scratch for one home lookup */
};

size_t cluster_fallback_reasons(void)
{
	return PEER_FAIL_COUNT - 1; /* every reason but NONE */
}

const char *cluster_fallback_reason(size_t i)
{
	return peer_fail_name((enum peer_fail)(i + 1));
}

uint64_t cluster_fallbacks(const struct cluster *cl, size_t i)
{
	return cl && i + 1 < PEER_FAIL_COUNT ? cl->fallbacks[i + 1] : 0;
}

struct broadcast *cluster_broadcast(const struct cluster *cl)
{
	return cl ? cl->bcast : NULL;
}

bool cluster_coordinated(const struct cluster *cl)
{
	return cl && cl->redis && redis_conn_up(cl->redis);
}

/* The Redis password: the file's first line, from a file nobody else may
 * read. */
static int load_password(struct cluster *cl, char *err, size_t errlen)
{
	const char *path = cl->cc->redis_password_file;
	if (!path[0])
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cluster.redis_password_file: cannot read %s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		close(fd);
		snprintf(err, errlen, "cluster.redis_password_file: %s must be a regular file readable only "
			 "by the daemon's user (chmod 600 %s)", path, path);
		return -EPERM;
	}
	ssize_t n = read(fd, cl->password, PASSWORD_MAX);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cluster.redis_password_file: cannot read %s: %s", path, strerror(errno));
		return -EIO;
	}
	cl->password[n] = '\0';
	cl->password[strcspn(cl->password, "\r\n")] = '\0';
	if (!cl->password[0]) {
		snprintf(err, errlen, "cluster.redis_password_file: %s is empty", path);
		return -EINVAL;
	}
	cl->has_password = true;
	return 0;
}

static void on_peer_done(void *arg, struct remote_read *rr, enum peer_fail why)
{
	struct cluster *cl = arg;
	if (rr->flags & READ_DRAIN_TAKE)
		; /* a hand-over, not a read (drain.h) */
	else if ((rr->flags & READ_PREV_HOME) && (why == PEER_FAIL_NONE || why == PEER_FAIL_ERROR))
		cl->prev_got += why == PEER_FAIL_NONE; /* ERROR: not there (ENODATA), the cold store */
	else if (why != PEER_FAIL_NONE)
		cl->fallbacks[why]++;
	rr->done(rr);
}

int cluster_new(struct cache *cache, const struct cluster_conf *cc, struct cluster **out, char *err,
		size_t errlen)
{
	struct cluster *cl = calloc(1, sizeof(*cl));
	if (!cl) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*out = cl;
	cl->cache = cache;
	cl->conf = *cc;
	cl->cc = cc = &cl->conf;
	int rc = peer_keys_load(cc->key_file, &cl->keys, err, errlen);
	if (rc < 0)
		return rc;
	rc = load_password(cl, err, errlen);
	if (rc < 0)
		return rc;
	uint8_t r[PEER_NONCE_LEN];
	if (peer_nonce(r) == 0) /* random: a fresh nonce's first 8 bytes */
		memcpy(&cl->incarnation, r, sizeof(cl->incarnation));
	else
		cl->incarnation = cache_now_ns() ^ ((uint64_t)getpid() << 32);
	rc = peer_client_new(cache->base, cc, &cl->keys, on_peer_done, cl, &cl->cli);
	if (rc < 0)
		snprintf(err, errlen, "out of memory");
	return rc;
}

/* ---- membership ---- */

/* Monotonic milliseconds (the previous-home window's clock). */
static uint64_t now_ms(void)
{
	return cache_now_ns() / 1000000u;
}

static void on_members_changed(void *arg)
{
	struct cluster *cl = arg;
	size_t n;
	const struct member *m = members_list(cl->mem, &n);
	/* homes may have moved: ask previous homes a while, if another member
	 * holds chunks (in a fresh cluster nobody does: nothing moved) */
	cl->others_hold = handover_others_hold(m, n < MEMBERS_MAX ? n : MEMBERS_MAX, cl->cc->node_id);
	cl->others_hold_ms = now_ms();
	if (cl->others_hold)
		cl->changed_ms = now_ms();
	plan_share_members_changed(cl->pshare); /* the home views follow the homes */
	const char *ids[MEMBERS_MAX];
	for (size_t i = 0; i < n && i < MEMBERS_MAX; i++)
		ids[i] = m[i].id;
	peer_client_keep(cl->cli, ids, n < MEMBERS_MAX ? n : MEMBERS_MAX);
}

/* This node's egress per dataset, for its next heartbeat. */
/* The tiers' bytes in use (the "use" each member reports). */
static uint64_t self_used(const struct cache *cache)
{
	uint64_t u = 0;
	for (int t = 0; t < TIER_COUNT; t++)
		if (cache->tiers[t].present)
			u += cache->tiers[t].used;
	return u;
}

/* A member's stats text: "@used BYTES;" then per dataset "NAME COLD
 * PEER_IN PEER_OUT HITS;" (what fits in MEMBER_STATS_MAX). */
static void on_members_stats(void *arg, char *buf, size_t n)
{
	struct cluster *cl = arg;
	int k0 = snprintf(buf, n, "@used %" PRIu64 ";", self_used(cl->cache));
	size_t at = k0 > 0 && (size_t)k0 < n ? (size_t)k0 : 0;
	buf[at] = '\0';
	for (unsigned i = 0; i < cl->cache->nds; i++) {
		const struct dataset *ds = cl->cache->ds[i];
		char one[CONFIG_NAME_MAX + 96];
		int k = snprintf(one, sizeof(one), "%s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ";",
				 ds->name, ds->bytes_from_cold, ds->bytes_from_peers, ds->bytes_to_peers, ds->hits);
		if (k < 0 || (size_t)k >= sizeof(one) || at + (size_t)k + 1 > n)
			break; /* bounded: the datasets that fit */
		memcpy(buf + at, one, (size_t)k + 1);
		at += (size_t)k;
	}
}

static void on_redis_state(void *arg, bool up)
{
	struct cluster *cl = arg;
	if (up && cl->mem)
		members_redis_up(cl->mem);
	if (up)
		broadcast_redis_up(cl->bcast);
	if (up)
		plan_share_redis_up(cl->pshare);
}

void cluster_set_plans(struct cluster *cl, struct plans *reg)
{
	cl->plans = reg;
}

static uint64_t self_capacity(const struct cache *cache)
{
	uint64_t w = 0;
	for (int t = 0; t < TIER_COUNT; t++)
		if (cache->tiers[t].present)
			w += cache->tiers[t].capacity;
	return w;
}

int cluster_start(struct cluster *cl, char *err, size_t errlen)
{
	const struct cluster_conf *cc = cl->cc;
	int rc = peer_server_start(cl->cache, cc, &cl->keys, &cl->srv, err, errlen);
	if (rc < 0)
		return rc;
	const struct redis_conn_conf rcc = {
		.host = cc->redis_host,
		.port = cc->redis_port,
		.unix_path = cc->redis_unix,
		.user = cc->redis_user,
		.password = cl->has_password ? cl->password : NULL,
		.timeout_ms = cc->redis_timeout_ms,
		.workers = cl->cache->workers,
	};
	rc = redis_conn_new(cl->cache->base, &rcc, on_redis_state, cl, &cl->redis);
	if (rc < 0) {
		snprintf(err, errlen, "cannot set up the Redis connection (cluster.redis): %s", strerror(-rc));
		return rc;
	}
	const struct members_self self = {
		.id = cc->node_id,
		.addr = cc->peer_addr,
		.capacity = self_capacity(cl->cache),
		.incarnation = cl->incarnation,
	};
	const struct members_hooks hooks = {
		.arg = cl,
		.changed = on_members_changed,
		.stats = on_members_stats,
	};
	rc = broadcast_new(cl->cache->base, cl->redis, cc, cl->cache->ix, &cl->bcast);
	if (rc < 0) {
		snprintf(err, errlen, "cannot set up the admin broadcast: %s", strerror(-rc));
		return rc;
	}
	if (cl->plans && (rc = plan_share_new(cl->cache, cl->redis, cc, cl->plans, cluster_is_home, cl,
					      &cl->pshare)) < 0) {
		snprintf(err, errlen, "cannot set up the plan sharing: %s", strerror(-rc));
		return rc;
	}
	rc = members_new(cl->cache->base, cl->redis, cc, &self, &hooks, &cl->mem);
	if (rc == 0)
		rc = members_start(cl->mem);
	if (rc == 0)
		rc = manifest_share_new(cl->cache, cl->redis, cl->mem, cc, &cl->mshare);
	if (rc == 0)
		rc = drain_new(&(struct drain_env){.cache = cl->cache, .mem = cl->mem, .cli = cl->cli,
						   .self = cc->node_id, .cluster = cc->name,
						   .heartbeat_ms = cc->heartbeat_ms},
			       &cl->drain);
	if (rc == 0 && drain_restore(cl->drain) < 0)
		log_warn("op=cluster_start node=%s err=\"a drain recorded before the restart did not "
			 "start again\": the node is a home", cc->node_id);
	if (rc < 0) {
		snprintf(err, errlen, "cannot start the cluster membership: %s", strerror(-rc));
		return rc;
	}
	/* a start opens no window by itself: the first member list that shows
	 * others is a change (on_members_changed), which opens it if they hold
	 * chunks (joining a running cluster) and not in a fresh one */
	cl->running = true;
	log_info("op=cluster_start cluster=%s node=%s peer_listen=%s redis=%s", cc->name, cc->node_id,
		 cc->peer_listen, cc->redis);
	return 0;
}

/* ---- the engine's hook ---- */

/* Is the cluster in motion (handover_asking)? */
static bool asking_prev(struct cluster *cl)
{
	size_t n;
	const struct member *m = members_list(cl->mem, &n);
	uint64_t now = now_ms();
	if (now - cl->others_hold_ms >= 200) { /* members' use, as of their heartbeats */
		cl->others_hold = handover_others_hold(m, n < MEMBERS_MAX ? n : MEMBERS_MAX, cl->cc->node_id);
		cl->others_hold_ms = now;
	}
	if (!cl->others_hold)
		return false; /* nobody else holds anything: no previous home to ask */
	return handover_asking(m, n < MEMBERS_MAX ? n : MEMBERS_MAX, now_ms(), cl->changed_ms,
			       cl->cc->prev_home_window_ms);
}

/* This node reads the chunk itself: first from its previous home, which
 * may still hold it (handover.h), unless that is suspect or the cluster
 * has settled (counted: prev_home_skipped). */
static int ask_prev(struct cluster *cl, const struct member *m, int prev, struct remote_read *rr)
{
	if (prev < 0 || peer_client_suspect(cl->cli, m[prev].id))
		return -ENOENT;
	if (!asking_prev(cl)) {
		cl->prev_skipped++;
		return -ENOENT;
	}
	rr->flags |= READ_PREV_HOME;
	if (peer_client_get(cl->cli, m[prev].id, m[prev].addr, rr) != 0) {
		rr->flags &= ~READ_PREV_HOME;
		return -ENOENT;
	}
	cl->prev_asked++;
	return 0;
}

/* key's home, next in rank and previous home among the live members (hc);
 * the member list in *mp. */
static void choose(struct cluster *cl, uint64_t key, const struct member **mp, struct home_choice *hc)
{
	size_t n;
	const struct member *m = members_list(cl->mem, &n);
	if (n > MEMBERS_MAX)
		n = MEMBERS_MAX;
	handover_choose(m, n, cl->cc->node_id, key, cl->nodes, hc);
	*mp = m;
}

bool cluster_is_home(void *arg, uint64_t key)
{
	struct cluster *cl = arg;
	if (!cl->running || !cl->mem)
		return true;
	const struct member *m;
	struct home_choice hc;
	choose(cl, key, &m, &hc);
	return hc.home < 0 || strcmp(m[hc.home].id, cl->cc->node_id) == 0;
}

int cluster_remote_read(void *arg, struct remote_read *rr)
{
	struct cluster *cl = arg;
	if (!cl->running)
		return -ENOTCONN;
	const struct member *m;
	struct home_choice hc;
	choose(cl, rr->key, &m, &hc);
	int first = hc.home, second = hc.second;
	if (first < 0)
		return ask_prev(cl, m, hc.prev, rr); /* no home up (all joining) */
	if (strcmp(m[first].id, cl->cc->node_id) == 0)
		return ask_prev(cl, m, hc.prev, rr); /* home here (new?): its previous home first */
	if (rr->flags & READ_FOR_PEER)
		return -ENOENT; /* asked by a peer, not home here: never passed on */
	int pick = first;
	if (peer_client_suspect(cl->cli, m[first].id)) {
		/* its home failed lately: the next in rank, unless that is us */
		cl->fallbacks[PEER_FAIL_SUSPECT]++;
		pick = second;
	}
	if (pick < 0 || strcmp(m[pick].id, cl->cc->node_id) == 0 || peer_client_suspect(cl->cli, m[pick].id))
		return ask_prev(cl, m, hc.prev, rr); /* read here: the cold store */
	int r = peer_client_get(cl->cli, m[pick].id, m[pick].addr, rr);
	if (r != 0) {
		cl->fallbacks[r > 0 ? r : PEER_FAIL_BUSY]++;
		return -EHOSTDOWN;
	}
	cl->asked++;
	return 0;
}

int cluster_drain(struct cluster *cl, bool on)
{
	return cl && cl->drain ? drain_set(cl->drain, on) : -ENOTCONN;
}

void cluster_stop(struct cluster *cl)
{
	if (!cl)
		return;
	cl->running = false;
	manifest_share_stop(cl->mshare); /* before the connection: waiting loads end */
	peer_client_cancel_all(cl->cli);
	peer_server_stop(cl->srv);
	cl->srv = NULL;
	broadcast_free(cl->bcast); /* before the connection: its reads are cut loose */
	cl->bcast = NULL;
	drain_free(cl->drain); /* its requests ended with the peer client's */
	cl->drain = NULL;
	plan_share_free(cl->pshare);
	cl->pshare = NULL;
	if (cl->mem && cl->redis && redis_conn_up(cl->redis)) /* leave now, not when the lease ends */
		leave_now(cl->cache->base, cl->mem, cl->cc->node_id, cl->cc->redis_timeout_ms);
	members_free(cl->mem); /* leaves the list if Redis is there */
	cl->mem = NULL;
	redis_conn_free(cl->redis);
	cl->redis = NULL;
}

void cluster_free(struct cluster *cl)
{
	if (!cl)
		return;
	cluster_stop(cl);
	manifest_share_free(cl->mshare);
	peer_client_free(cl->cli);
	peer_keys_clear(&cl->keys);
	memset(cl->password, 0, sizeof(cl->password));
	free(cl);
}

int cluster_manifest_fetch(void *arg, struct manifest_fetch *f)
{
	struct cluster *cl = arg;
	return cl->running && cl->mshare ? manifest_share_fetch(cl->mshare, f) : -ENOTCONN;
}

void cluster_manifest_listed(void *arg, struct manifest_fetch *f, int err)
{
	struct cluster *cl = arg;
	if (cl->mshare)
		manifest_share_listed(cl->mshare, f, err);
}

void cluster_manifest_counts(const struct cluster *cl, uint64_t out[3])
{
	manifest_share_counts(cl ? cl->mshare : NULL, &out[0], &out[1], &out[2]);
}

/* ---- status ---- */

/* One member's egress records from its stats text. */
/* The "@used" a member's stats start with (0: none, an older node). */
static uint64_t stats_used(const char *stats, const char **rest)
{
	uint64_t u = 0;
	int used = 0;
	*rest = stats;
	if (sscanf(stats, "@used %" SCNu64 ";%n", &u, &used) == 1 && used > 0)
		*rest = stats + used;
	return used > 0 ? u : 0;
}

/* The next "NAME COLD PEER_IN PEER_OUT HITS;" of a stats text at *p: 1
 * (name, v set, *p past it) or 0 (the end, or not ours: cut short). */
static int egress_next(const char **p, char name[CONFIG_NAME_MAX + 1], uint64_t v[4])
{
	int used = 0;
	if (!**p || sscanf(*p, "%64[A-Za-z0-9._-] %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 ";%n", name,
			   &v[0], &v[1], &v[2], &v[3], &used) != 5 || used <= 0)
		return 0;
	*p += used;
	return 1;
}

#define EGRESS_SUMS_MAX 64u /* datasets summed over the cluster */

struct egress_sum {
	char name[CONFIG_NAME_MAX + 1];
	uint64_t v[4];
	uint32_t nodes;
};

/* One record per dataset of a member's stats into rs, each also added to
 * sums (*nsum of them, at most EGRESS_SUMS_MAX names). */
static void report_egress(struct proto_rs *rs, const char *node, const char *stats, struct egress_sum *sums,
			  size_t *nsum)
{
	const char *p;
	char name[CONFIG_NAME_MAX + 1];
	uint64_t v[4];
	(void)stats_used(stats, &p);
	while (egress_next(&p, name, v)) {
		proto_rs_record(rs);
		proto_rs_str(rs, "node", node);
		proto_rs_str(rs, "dataset", name);
		proto_rs_u64(rs, "bytes_from_cold", v[0]);
		proto_rs_u64(rs, "bytes_from_peers", v[1]);
		proto_rs_u64(rs, "bytes_to_peers", v[2]);
		proto_rs_u64(rs, "hits", v[3]);
		size_t j = 0;
		while (j < *nsum && strcmp(sums[j].name, name) != 0)
			j++;
		if (j == *nsum) {
			if (*nsum == EGRESS_SUMS_MAX)
				continue;
			memset(&sums[j], 0, sizeof(sums[j]));
			memcpy(sums[j].name, name, sizeof(sums[j].name));
			(*nsum)++;
		}
		for (int k = 0; k < 4; k++)
			sums[j].v[k] += v[k];
		sums[j].nodes++;
	}
}

void cluster_report(struct cluster *cl, struct proto_rs *rs)
{
	const struct cluster_conf *cc = cl->cc;
	size_t n = 0;
	const struct member *m = cl->mem ? members_list(cl->mem, &n) : NULL;
	struct peer_server_stats ss;
	peer_server_stats(cl->srv, &ss);
	uint64_t gets, bytes;
	peer_client_counts(cl->cli, &gets, &bytes);

	proto_rs_section(rs, "cluster", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	proto_rs_str(rs, "name", cc->name);
	proto_rs_str(rs, "node", cc->node_id);
	proto_rs_u64(rs, "incarnation", cl->incarnation);
	proto_rs_str(rs, "state", cl->mem ? member_state_name(members_self_state(cl->mem)) : "stopped");
	proto_rs_str(rs, "peer_listen", cc->peer_listen);
	bool up = cluster_coordinated(cl);
	proto_rs_str(rs, "redis", up ? "up" : "down");
	proto_rs_str(rs, "redis_reason", cl->redis && !up ? redis_conn_why(cl->redis) : "");
	proto_rs_u64(rs, "redis_connects", cl->redis ? redis_conn_connects(cl->redis) : 0);
	proto_rs_u64(rs, "redis_timeouts", cl->redis ? redis_conn_timeouts(cl->redis) : 0);
	proto_rs_u64(rs, "members", n);
	uint64_t age = cl->mem ? members_age_ms(cl->mem) : UINT64_MAX;
	proto_rs_u64(rs, "members_age_ms", age);
	proto_rs_u64(rs, "heartbeat_failures", cl->mem ? members_failures(cl->mem) : 0);
	proto_rs_u64(rs, "peer_connections", ss.conns);
	proto_rs_u64(rs, "peer_accepted", ss.accepted);
	proto_rs_u64(rs, "peer_refused_auth", ss.refused_auth);
	proto_rs_u64(rs, "peer_refused_limit", ss.refused_limit);
	proto_rs_u64(rs, "peer_gets_served", ss.gets);
	proto_rs_u64(rs, "peer_get_errors", ss.get_errors);
	proto_rs_u64(rs, "peer_bytes_served", ss.bytes_sent);
	proto_rs_u64(rs, "peer_asked", cl->asked);
	proto_rs_u64(rs, "peer_gets_sent", gets);
	proto_rs_u64(rs, "peer_bytes_received", bytes);
	proto_rs_u64(rs, "prev_home_asked", cl->prev_asked);
	proto_rs_u64(rs, "prev_home_got", cl->prev_got);
	proto_rs_u64(rs, "prev_home_skipped", cl->prev_skipped);
	proto_rs_bool(rs, "prev_home_asking", cl->mem && asking_prev(cl));
	proto_rs_bool(rs, "prev_home_others_hold", cl->others_hold);
	proto_rs_u64(rs, "prev_home_served", ss.prev_served);
	proto_rs_u64(rs, "prev_home_not_held", ss.prev_misses);
	proto_rs_u64(rs, "drain_chunks_taken", ss.takes);
	drain_report(cl->drain, rs);
	for (size_t i = 0; i < cluster_fallback_reasons(); i++) {
		char key[64];
		snprintf(key, sizeof(key), "fallback_%s", cluster_fallback_reason(i));
		proto_rs_u64(rs, key, cluster_fallbacks(cl, i));
	}

	uint64_t mf[3];
	manifest_share_counts(cl->mshare, &mf[0], &mf[1], &mf[2]);
	proto_rs_u64(rs, "manifests_published", mf[0]);
	proto_rs_u64(rs, "manifests_loaded", mf[1]);
	proto_rs_u64(rs, "manifest_fallbacks", mf[2]);

	proto_rs_section(rs, "cluster_members", TC_SHAPE_ARRAY);
	for (size_t i = 0; i < n; i++) {
		bool self = strcmp(m[i].id, cc->node_id) == 0;
		proto_rs_record(rs);
		proto_rs_str(rs, "id", m[i].id);
		proto_rs_str(rs, "addr", m[i].addr);
		proto_rs_str(rs, "state", member_state_name((enum member_state)m[i].state));
		proto_rs_u64(rs, "lease_age_ms", m[i].lease_age_ms);
		proto_rs_u64(rs, "capacity_bytes", m[i].capacity);
		const char *rest;
		proto_rs_u64(rs, "used_bytes", self ? self_used(cl->cache) : stats_used(m[i].stats, &rest));
		proto_rs_u64(rs, "incarnation", m[i].incarnation);
		proto_rs_bool(rs, "self", self);
		proto_rs_bool(rs, "suspect", !self && peer_client_suspect(cl->cli, m[i].id));
	}

	broadcast_report(cl->bcast, rs);
	manifest_share_report(cl->mshare, rs);
	plan_share_report(cl->pshare, rs);

	proto_rs_section(rs, "cluster_egress", TC_SHAPE_ARRAY);
	char mine[MEMBER_STATS_MAX];
	struct egress_sum sums[EGRESS_SUMS_MAX];
	size_t nsum = 0;
	on_members_stats(cl, mine, sizeof(mine));
	/* this node: now, not as of its last heartbeat */
	report_egress(rs, cc->node_id, mine, sums, &nsum);
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].id, cc->node_id) != 0)
			report_egress(rs, m[i].id, m[i].stats, sums, &nsum);
	/* summed over the cluster, per dataset: cold / dataset bytes is the
	 * egress ratio, bytes_from_peers what the cold store was spared */
	proto_rs_section(rs, "cluster_egress_total", TC_SHAPE_ARRAY);
	for (size_t j = 0; j < nsum; j++) {
		proto_rs_record(rs);
		proto_rs_str(rs, "dataset", sums[j].name);
		proto_rs_u64(rs, "nodes", sums[j].nodes);
		proto_rs_u64(rs, "bytes_from_cold", sums[j].v[0]);
		proto_rs_u64(rs, "bytes_from_peers", sums[j].v[1]);
		proto_rs_u64(rs, "bytes_to_peers", sums[j].v[2]);
		proto_rs_u64(rs, "hits", sums[j].v[3]);
	}
}
