/*
 * Who may read a dataset (docs/operations.md, "Access control").
 *
 * Reaching the socket is the first gate (socket_mode, socket_group). Past
 * it, every request that names a file or directory of a dataset (OPEN,
 * STAT, LISTDIR, REFRESH) is checked against the credentials of the
 * connection: the peer's own (SO_PEERCRED and SO_PEERGROUPS, taken at
 * connect), or those a trusted peer said it acts for (TC_OP_ACT_AS: the
 * FUSE mount run by root acts for the user of each request). Two checks:
 *   - the dataset's allow_users / allow_groups (empty: anyone);
 *   - with access = source (posix datasets), the source file's own owner,
 *     group and mode, as the kernel would judge an open by that user: read
 *     on the file, search (x) on the dataset root and every directory on
 *     the way, read and search on a listed directory.
 * An admin peer acting as itself passes both, as does uid 0. Reads on a
 * handle are not checked again: as with a Unix descriptor, what was
 * opened stays readable (a reload that narrows a list applies to opens
 * from then on).
 *
 * Loop thread only. The source walk is a few fstatat() calls on the local
 * tree, like the posix backend's inline revalidation stat.
 */
#ifndef TIERCACHE_ACCESS_H
#define TIERCACHE_ACCESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct conn;
struct dataset;
struct proto_rd;
struct tc_hdr;

#define ACCESS_GROUPS_MAX 1024u /* supplementary groups kept per connection */

struct access_cred {
	uid_t uid;
	gid_t gid;
	gid_t *groups;     /* supplementary groups (malloc'd) */
	uint32_t ngroups;
	bool groups_short; /* the peer has more groups than we know of */
	bool trusted;      /* an admin peer acting as itself: every check passes */
	bool acting;       /* set by TC_OP_ACT_AS */
};

/* The peer's credentials, at connect: c's SO_PEERCRED ids, its
 * supplementary groups from SO_PEERGROUPS (the same snapshot the kernel
 * took at connect), else from the group database for c->uid. */
void access_cred_from_peer(struct access_cred *cr, const struct conn *c);
void access_cred_free(struct access_cred *cr);

/* May c stat (ACCESS_STAT: search on the parents), open (ACCESS_OPEN:
 * and read the file) or list (ACCESS_LIST: read and search the directory)
 * REST of dataset DS ("" for its root)? First allow_users / allow_groups,
 * then for access = source the source's own modes. On refusal: reply
 * EACCES to (op, id) (ENOENT if the file went from the source, EIO if its
 * modes cannot be read) and return false. */
bool access_check(struct conn *c, uint8_t op, uint32_t id, const struct dataset *ds,
		  const char *rest, int want);

/* TC_F_WANT_OWNER (STAT, LISTDIR): u32 mode, u32 uid, u32 gid of an entry.
 * With access = source on the posix backend they are the source's (what
 * the checks above enforce, so that a mount shows what it enforces);
 * otherwise, or if the source cannot be asked, 0444 / 0555 and
 * TC_OWNER_NONE (the mounter's). access_owner_dir() opens REST's source
 * directory for a listing's entries (-1: defaults; close it after). */
struct proto_wr;
void access_put_owner(struct proto_wr *w, const struct dataset *ds, const char *rest, bool dir);
int access_owner_dir(const struct dataset *ds, const char *rest);
void access_put_owner_at(struct proto_wr *w, int dfd, const char *name, size_t n, bool dir);
/* The same check without a reply or a log line: 0 or -EACCES, -ENOENT,
 * -errno (work that nobody asked for by name: open-ahead). */
int access_may(const struct conn *c, const struct dataset *ds, const char *rest, int want);
#define ACCESS_STAT (-1)
#define ACCESS_OPEN 0
#define ACCESS_LIST 1

/* TC_OP_ACT_AS: req u32 uid, u32 gid, u32 n, n x u32 gid (handlers.c). */
void access_op_act_as(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);

#endif
