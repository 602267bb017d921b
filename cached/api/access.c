/*
 * Who may read a dataset: the allow lists, the source's own modes, and the
 * credentials they are checked against. See access.h for the model.
 * Loop thread only.
 */
#include "access.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "log.h"

#define PERM_R 4u
#define PERM_X 1u

/* ---- credentials ---- */

static void groups_from_db(struct access_cred *cr)
{
	char buf[16384];
	struct passwd pw, *res = NULL;
	if (getpwuid_r(cr->uid, &pw, buf, sizeof(buf), &res) != 0 || !res) {
		/* a uid without a passwd entry has no supplementary groups
		 * we could know of: only its primary gid counts */
		return;
	}
	int n = ACCESS_GROUPS_MAX;
	gid_t *g = malloc(ACCESS_GROUPS_MAX * sizeof(*g));
	if (!g || getgrouplist(res->pw_name, cr->gid, g, &n) < 0) {
		free(g);
		cr->groups_short = true;
		return;
	}
	cr->groups = g;
	cr->ngroups = (uint32_t)n;
}

void access_cred_from_peer(struct access_cred *cr, const struct conn *c)
{
	memset(cr, 0, sizeof(*cr));
	cr->uid = c->uid;
	cr->gid = c->gid;
	cr->trusted = c->admin;
	if (c->uid == (uid_t)-1) {
		cr->groups_short = true;
		return;
	}
	/* SO_PEERGROUPS: the groups the kernel recorded at connect, with the
	 * ids SO_PEERCRED gave: no race with the peer's later setgroups or
	 * exec, and no name-service lookup on the loop */
	socklen_t len = 64 * sizeof(gid_t);
	for (int attempt = 0; attempt < 2; attempt++) {
		gid_t *g = malloc(len ? len : sizeof(gid_t));
		if (!g) {
			cr->groups_short = true;
			return;
		}
		if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0) {
			cr->groups = g;
			cr->ngroups = (uint32_t)(len / sizeof(gid_t));
			return;
		}
		int err = errno;
		free(g);
		if (err != ERANGE)
			break; /* an old kernel: ask the group database */
		if (len > ACCESS_GROUPS_MAX * sizeof(gid_t)) {
			cr->groups_short = true;
			return;
		}
	}
	groups_from_db(cr);
}

void access_cred_free(struct access_cred *cr)
{
	free(cr->groups);
	cr->groups = NULL;
	cr->ngroups = 0;
}

static bool cred_in_group(const struct access_cred *cr, gid_t g)
{
	if (cr->gid == g)
		return true;
	for (uint32_t i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == g)
			return true;
	return false;
}

/* ---- the allow lists ---- */

static bool allow_lists_admit(const struct access_cred *cr, const struct dataset_conf *dc)
{
	if (!dc->nallow_uids && !dc->nallow_gids)
		return true;
	for (uint32_t i = 0; i < dc->nallow_uids; i++)
		if (dc->allow_uids[i] == cr->uid)
			return true;
	for (uint32_t i = 0; i < dc->nallow_gids; i++)
		if (cred_in_group(cr, dc->allow_gids[i]))
			return true;
	return false;
}

/* ---- the source's modes (access = source) ---- */

/* The kernel's rule for a process of cr: the owner class if it owns the
 * file, else the group class if it is in the file's group, else other;
 * uid 0 passes (CAP_DAC_OVERRIDE). A peer with more groups than we were
 * told of may or may not be in the group: it gets the narrower of the two
 * classes. Mode bits only: POSIX ACLs are not consulted. */
static bool mode_allows(const struct access_cred *cr, const struct stat *st, unsigned need)
{
	unsigned bits;
	if (cr->uid == 0)
		return true;
	if (st->st_uid == cr->uid)
		bits = (st->st_mode >> 6) & 7u;
	else if (cred_in_group(cr, st->st_gid))
		bits = (st->st_mode >> 3) & 7u;
	else if (cr->groups_short)
		bits = (st->st_mode >> 3) & st->st_mode & 7u;
	else
		bits = st->st_mode & 7u;
	return (bits & need) == need;
}

static unsigned want_bits(int want)
{
	return want == ACCESS_OPEN ? PERM_R : want == ACCESS_LIST ? PERM_R | PERM_X : 0;
}

/* Walk REST below the dataset's source directory, as the kernel would for
 * an open by cr: search on the root and every directory on the way, then
 * WANT's bits on the last component. 0, -EACCES, or -errno when a mode
 * cannot be read (-ENOENT: gone at the source). Symlinks are followed,
 * as the posix backend follows those that stay in the tree. */
static int source_walk(const struct dataset *ds, const struct access_cred *cr, const char *rest,
		       int want)
{
	struct stat st;
	char comp[TC_NAME_MAX + 1];
	int rc = 0;
	int dfd = open(ds->conf.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!mode_allows(cr, &st, *rest ? PERM_X : want_bits(want))) {
		rc = -EACCES;
		goto out;
	}
	for (const char *p = rest; *p;) {
		size_t n = strcspn(p, "/");
		if (n >= sizeof(comp)) { /* target_parse refuses these first */
			rc = -ENAMETOOLONG;
			goto out;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n + (p[n] == '/');
		bool last = !*p;
		if (fstatat(dfd, comp, &st, 0) < 0) {
			rc = -errno;
			goto out;
		}
		if (!mode_allows(cr, &st, last ? want_bits(want) : PERM_X)) {
			rc = -EACCES;
			goto out;
		}
		if (last)
			break;
		int nfd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (nfd < 0) {
			rc = -errno;
			goto out;
		}
		close(dfd);
		dfd = nfd;
	}
out:
	close(dfd);
	return rc;
}

/* ---- the checks ---- */

int access_may(const struct conn *c, const struct dataset *ds, const char *rest, int want)
{
	const struct access_cred *cr = &conn_sess(c)->cred;
	if (cr->trusted || cr->uid == 0)
		return 0;
	if (!allow_lists_admit(cr, &ds->conf))
		return -EACCES;
	if (strcmp(ds->conf.access, "source") != 0 || strcmp(ds->conf.backend, "posix") != 0)
		return 0;
	return source_walk(ds, cr, rest, want);
}

bool access_check(struct conn *c, uint8_t op, uint32_t id, const struct dataset *ds,
		  const char *rest, int want)
{
	const struct access_cred *cr = &conn_sess(c)->cred;
	if (cr->trusted || cr->uid == 0)
		return true;
	if (!allow_lists_admit(cr, &ds->conf)) {
		log_info("client_pid=%d uid=%u dataset=%s op=%u err=\"not in allow_users/allow_groups\"",
			 (int)c->pid, (unsigned)cr->uid, ds->name, (unsigned)op);
		conn_reply_err(c, op, id, EACCES,
			       "%s: not allowed for uid %u (dataset.%s.allow_users/allow_groups); ask "
			       "the daemon's admin to add your user or group",
			       ds->name, (unsigned)cr->uid, ds->name);
		return false;
	}
	if (strcmp(ds->conf.access, "source") != 0 || strcmp(ds->conf.backend, "posix") != 0)
		return true;
	int rc = source_walk(ds, cr, rest, want);
	if (rc == 0)
		return true;
	if (rc == -EACCES) {
		log_info("client_pid=%d uid=%u dataset=%s path=\"%s\" op=%u err=\"denied by the "
			 "source's mode\"", (int)c->pid, (unsigned)cr->uid, ds->name, rest, (unsigned)op);
		conn_reply_err(c, op, id, EACCES,
			       "%s%s%s: permission denied by the source file's mode (dataset.%s.access = "
			       "source)", ds->name, *rest ? "/" : "", rest, ds->name);
	} else if (rc == -ENOENT || rc == -ENOTDIR) {
		conn_reply_err(c, op, id, ENOENT, "%s%s%s was removed at the source", ds->name,
			       *rest ? "/" : "", rest);
	} else {
		log_warn("dataset=%s path=\"%s\" op=access_check err=\"%s\"", ds->name, rest,
			 strerror(-rc));
		conn_reply_err(c, op, id, EIO,
			       "%s%s%s: cannot read the source's permissions to check them (%s; "
			       "dataset.%s.access = source)", ds->name, *rest ? "/" : "", rest,
			       strerror(-rc), ds->name);
	}
	return false;
}

/* ---- owner and mode (TC_F_WANT_OWNER) ---- */

static bool owner_from_source(const struct dataset *ds)
{
	return strcmp(ds->conf.access, "source") == 0 && strcmp(ds->conf.backend, "posix") == 0;
}

static void put_owner(struct proto_wr *w, const struct stat *st, bool dir)
{
	if (st) {
		proto_wr_u32(w, (uint32_t)(st->st_mode & 07777));
		proto_wr_u32(w, (uint32_t)st->st_uid);
		proto_wr_u32(w, (uint32_t)st->st_gid);
	} else {
		proto_wr_u32(w, dir ? 0555u : 0444u);
		proto_wr_u32(w, TC_OWNER_NONE);
		proto_wr_u32(w, TC_OWNER_NONE);
	}
}

int access_owner_dir(const struct dataset *ds, const char *rest)
{
	if (!owner_from_source(ds))
		return -1;
	int root = open(ds->conf.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || !*rest)
		return root;
	int dfd = openat(root, rest, O_PATH | O_DIRECTORY | O_CLOEXEC);
	close(root);
	return dfd;
}

void access_put_owner_at(struct proto_wr *w, int dfd, const char *name, size_t n, bool dir)
{
	char comp[TC_NAME_MAX + 1];
	struct stat st;
	bool have = false;
	if (dfd >= 0 && n < sizeof(comp)) {
		memcpy(comp, name, n);
		comp[n] = '\0';
		have = fstatat(dfd, comp, &st, 0) == 0;
	}
	put_owner(w, have ? &st : NULL, dir);
}

void access_put_owner(struct proto_wr *w, const struct dataset *ds, const char *rest, bool dir)
{
	struct stat st;
	bool have = false;
	if (owner_from_source(ds)) {
		int root = open(ds->conf.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root >= 0) {
			have = fstatat(root, *rest ? rest : ".", &st, 0) == 0;
			close(root);
		}
	}
	put_owner(w, have ? &st : NULL, dir);
}

/* ---- TC_OP_ACT_AS ---- */

void access_op_act_as(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint32_t uid = proto_rd_u32(r);
	uint32_t gid = proto_rd_u32(r);
	uint32_t n = proto_rd_u32(r);
	if (!proto_rd_ok(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed ACT_AS: u32 uid, u32 gid, u32 n, n x u32 gid");
		return;
	}
	if (!c->admin) {
		log_info("client_pid=%d uid=%u op=act_as err=\"not an admin\"", (int)c->pid,
			 (unsigned)c->uid);
		conn_reply_err(c, h->op, h->id, EPERM,
			       "only root or an admin (daemon.admin_group) may act for another user; "
			       "run the mount as root to serve other users (-o allow_other)");
		return;
	}
	if (n > TC_ACT_GROUPS_MAX || uid == UINT32_MAX || gid == UINT32_MAX) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "ACT_AS: uid and gid must not be -1, and at most %u groups", TC_ACT_GROUPS_MAX);
		return;
	}
	gid_t *g = n ? malloc(n * sizeof(*g)) : NULL;
	if (n && !g) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		g[i] = (gid_t)proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		free(g);
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed ACT_AS: u32 uid, u32 gid, u32 n, n x u32 gid");
		return;
	}
	struct access_cred *cr = &conn_sess(c)->cred;
	access_cred_free(cr);
	*cr = (struct access_cred){.uid = uid, .gid = gid, .groups = g, .ngroups = n, .acting = true};
	log_debug("client_pid=%d uid=%u op=act_as as_uid=%u as_gid=%u groups=%u", (int)c->pid,
		  (unsigned)c->uid, uid, gid, n);
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}
