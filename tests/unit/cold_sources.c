/*
 * The contract's sources: see cold_sources.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rados/librados.h>

#include "cold_sources.h"
#include "backend.h"
#include "backend_rados.h"
#include "config.h"
#include "unit_tmpdir.h"
#include "unit_pattern.h"


#define MiB (1024u * 1024u)

void cold_src_open_handle(struct cold *c, const struct dataset_conf *dc)
{
	char err[512] = "";
	memset(c, 0, sizeof(*c));
	c->ops = cold_backend_find(dc->backend);
	assert_non_null(c->ops);
	snprintf(c->dataset, sizeof(c->dataset), "%s", dc->name);
	int rc = cold_open(c, dc, err, sizeof(err));
	if (rc != 0)
		fail_msg("open %s (%s): %d %s", dc->name, dc->backend, rc, err);
}

/* ---- posix: a temp directory ---- */

static int posix_init(void)
{
	return 0;
}

static void posix_fini(void)
{
}

static void posix_make(struct src *s, unsigned n)
{
	snprintf(s->base, sizeof(s->base), "/tmp/tc-contract-%u-XXXXXX", n);
	assert_int_equal(unit_tmpdir_make(s->base), 0);
	memset(&s->dc, 0, sizeof(s->dc));
	snprintf(s->dc.name, sizeof(s->dc.name), "contract");
	snprintf(s->dc.backend, sizeof(s->dc.backend), "posix");
	int w = snprintf(s->dc.path, sizeof(s->dc.path), "%s/src", s->base);
	assert_true(w > 0 && (size_t)w < sizeof(s->dc.path));
	assert_int_equal(mkdir(s->dc.path, 0755), 0);
}

void cold_src_posix_path(const struct src *s, const char *path, char *out, size_t n)
{
	int w = snprintf(out, n, "%s/%s", s->dc.path, path);
	assert_true(w > 0 && (size_t)w < n);
}

static void mkdir_parents(char *full)
{
	for (char *sl = strchr(full + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
		*sl = '\0';
		if (mkdir(full, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", full, strerror(errno));
		*sl = '/';
	}
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* The posix version is size + mtime: two writes within one timestamp tick
 * of the filesystem look the same (a limit of the backend, documented in
 * backend_posix.c). A rewrite here stands for a later writer, so its
 * mtime is made later than the one it replaces if the clock has not moved
 * past it yet. */
static void posix_put(struct src *s, const char *path, const void *buf, size_t n)
{
	char full[PATH_MAX];
	cold_src_posix_path(s, path, full, sizeof(full));
	mkdir_parents(full);
	struct stat old;
	bool existed = stat(full, &old) == 0;
	int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail_msg("create %s: %s", full, strerror(errno));
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	struct stat now;
	assert_int_equal(fstat(fd, &now), 0);
	if (existed && ts_ns(&now.st_mtim) <= ts_ns(&old.st_mtim)) {
		int64_t t = ts_ns(&old.st_mtim) + 1000000;
		struct timespec tv[2] = {
			{.tv_nsec = UTIME_OMIT},
			{.tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL},
		};
		assert_int_equal(futimens(fd, tv), 0);
	}
	assert_int_equal(close(fd), 0);
}

static void posix_del(struct src *s, const char *path)
{
	char full[PATH_MAX];
	cold_src_posix_path(s, path, full, sizeof(full));
	assert_int_equal(unlink(full), 0);
}

static void posix_fifo(struct src *s, const char *path)
{
	char full[PATH_MAX];
	cold_src_posix_path(s, path, full, sizeof(full));
	assert_int_equal(mkfifo(full, 0644), 0);
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* As root, fn runs in a child that dropped to uid/gid `nobody` (the handle
 * was opened before, as the daemon opens it at start); its results come
 * back through a pipe. `denied` gets mode 0000. Not root: the current user
 * cannot read a 0000 file either, so fn runs in place. */
static int posix_as_limited(struct src *s, const char *allowed, const char *denied, limited_fn fn,
			    void *arg, struct limited_res *res)
{
	char full[PATH_MAX];
	cold_src_posix_path(s, denied, full, sizeof(full));
	assert_int_equal(chmod(full, 0), 0);
	cold_src_posix_path(s, allowed, full, sizeof(full));
	assert_int_equal(chmod(full, 0644), 0);
	assert_int_equal(chmod(s->base, 0755), 0); /* mkdtemp made it 0700 */
	if (geteuid() != 0) {
		fn(&s->c, arg, res);
		return 0;
	}
	struct passwd *pw = getpwnam("nobody");
	if (!pw) {
		print_message("skipped: no user 'nobody' to drop to\n");
		return 1;
	}
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		int rc = 2;
		if (setgroups(0, NULL) == 0 && setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == 0 &&
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == 0 && geteuid() == pw->pw_uid) {
			struct limited_res r;
			memset(&r, 0, sizeof(r));
			fn(&s->c, arg, &r);
			rc = write_all(pfd[1], &r, sizeof(r)) == 0 ? 0 : 3;
		}
		_exit(rc);
	}
	close(pfd[1]);
	size_t got = 0;
	while (got < sizeof(*res)) {
		ssize_t r = read(pfd[0], (char *)res + got, sizeof(*res) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(pfd[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child as 'nobody' failed (status 0x%x; exit 2: could not drop "
			 "privileges)",
			 status);
	assert_int_equal(got, sizeof(*res));
	return 0;
}

static void posix_destroy(struct src *s)
{
	assert_int_equal(unit_tmpdir_remove(s->base), 0);
}

const struct src_ops cold_src_posix = {
	.name = "posix",
	.denied_errno = EACCES,
	.outside_errno = EXDEV, /* openat2(RESOLVE_BENEATH) */
	.init = posix_init,
	.fini = posix_fini,
	.make = posix_make,
	.put = posix_put,
	.del = posix_del,
	.fifo = posix_fifo,
	.as_limited = posix_as_limited,
	.destroy = posix_destroy,
};

/* ---- rados: objects in a fresh namespace, written with librados ---- */

static const char *g_conf, *g_pool;
static char g_ns[64];
static rados_t g_cl;
static rados_ioctx_t g_io;

static int rados_src_init(void)
{
	g_conf = getenv("CEPH_CONF");
	g_pool = getenv("CEPH_POOL");
	if (!g_conf || !*g_conf || !g_pool || !*g_pool) {
		fprintf(stderr, "test_cold_contract rados: CEPH_CONF and CEPH_POOL are not "
				"set: run it through tests/run-all BUILD ceph\n");
		return -1;
	}
	snprintf(g_ns, sizeof(g_ns), "contract-%ld", (long)getpid());
	if (rados_create2(&g_cl, "ceph", "client.admin", 0) < 0 ||
	    rados_conf_read_file(g_cl, g_conf) < 0 ||
	    rados_conf_set(g_cl, "rados_osd_op_timeout", "60") < 0 ||
	    rados_conf_set(g_cl, "rados_mon_op_timeout", "60") < 0 ||
	    rados_conf_set(g_cl, "client_mount_timeout", "60") < 0 || rados_connect(g_cl) < 0 ||
	    rados_ioctx_create(g_cl, g_pool, &g_io) < 0) {
		fprintf(stderr, "test_cold_contract rados: cannot connect to %s pool %s\n", g_conf,
			g_pool);
		return -1;
	}
	rados_ioctx_set_namespace(g_io, g_ns);
	return 0;
}

static void rados_src_fini(void)
{
	rados_ioctx_destroy(g_io);
	rados_shutdown(g_cl);
}

static void rados_src_make(struct src *s, unsigned n)
{
	snprintf(s->prefix, sizeof(s->prefix), "t%u/", n);
	memset(&s->dc, 0, sizeof(s->dc));
	snprintf(s->dc.name, sizeof(s->dc.name), "contract");
	snprintf(s->dc.backend, sizeof(s->dc.backend), "rados");
	snprintf(s->dc.ceph_conf, sizeof(s->dc.ceph_conf), "%s", g_conf);
	snprintf(s->dc.client_id, sizeof(s->dc.client_id), "admin");
	snprintf(s->dc.pool, sizeof(s->dc.pool), "%s", g_pool);
	snprintf(s->dc.rados_namespace, sizeof(s->dc.rados_namespace), "%s", g_ns);
	snprintf(s->dc.prefix, sizeof(s->dc.prefix), "%s", s->prefix);
	snprintf(s->dc.layout, sizeof(s->dc.layout), "plain");
	s->dc.chunk_size = 4 * MiB;
	s->dc.op_timeout_s = 30;
	s->dc.max_inflight = 4;
}

static void rados_oid(const struct src *s, const char *path, char *out, size_t n)
{
	int w = snprintf(out, n, "%s%s", s->prefix, path);
	assert_true(w > 0 && (size_t)w < n);
}

/* Every rewrite is a new object version, whatever the size and the second. */
static void rados_src_put(struct src *s, const char *path, const void *buf, size_t n)
{
	char oid[512];
	rados_oid(s, path, oid, sizeof(oid));
	assert_int_equal(rados_write_full(g_io, oid, buf, n), 0);
}

static void rados_src_del(struct src *s, const char *path)
{
	char oid[512];
	rados_oid(s, path, oid, sizeof(oid));
	assert_int_equal(rados_remove(g_io, oid), 0);
}

static int mon_cmd(const char *json, char **out, size_t *outlen)
{
	const char *cmd[] = {json};
	char *outs = NULL;
	size_t outslen = 0;
	int rc = rados_mon_command(g_cl, cmd, 1, "", 0, out, outlen, &outs, &outslen);
	if (rc < 0)
		print_message("mon command %s: %d %.*s\n", json, rc, (int)outslen,
			      outs ? outs : "");
	rados_buffer_free(outs);
	return rc;
}

/* A cephx user whose osd caps cover only the object of `allowed` (and the
 * object open() probes, PREFIX ".tiercache-probe", see backend_rados.c):
 * on the single-node cluster this is the one way to make one object of a
 * dataset unreadable while the rest is readable. */
static int rados_as_limited(struct src *s, const char *allowed, const char *denied, limited_fn fn,
			    void *arg, struct limited_res *res)
{
	(void)denied;
	char auth[64] = "";
	if (rados_conf_get(g_cl, "auth_client_required", auth, sizeof(auth)) == 0 &&
	    strcmp(auth, "none") == 0) {
		print_message("skipped: the cluster runs without cephx (no caps to deny a read)\n");
		return 1;
	}
	char user[64], json[1024];
	int w = snprintf(user, sizeof(user), "tc-contract-%ld-%s", (long)getpid(), s->prefix);
	assert_true(w > 0 && (size_t)w < sizeof(user));
	user[strlen(user) - 1] = '\0'; /* the prefix's '/' */
	snprintf(json, sizeof(json),
		 "{\"prefix\": \"auth get-or-create\", \"entity\": \"client.%s\", "
		 "\"caps\": [\"mon\", \"allow r\", \"osd\", "
		 "\"allow r pool=%s namespace=%s object_prefix %s.tiercache-probe, "
		 "allow r pool=%s namespace=%s object_prefix %s%s\"]}",
		 user, g_pool, g_ns, s->prefix, g_pool, g_ns, s->prefix, allowed);
	char *key = NULL;
	size_t keylen = 0;
	assert_int_equal(mon_cmd(json, &key, &keylen), 0);
	char dir[] = "/tmp/tc-contract-kr-XXXXXX";
	assert_int_equal(unit_tmpdir_make(dir), 0);
	struct src lim = *s;
	snprintf(lim.dc.keyring, sizeof(lim.dc.keyring), "%s/keyring", dir);
	snprintf(lim.dc.client_id, sizeof(lim.dc.client_id), "%s", user);
	FILE *f = fopen(lim.dc.keyring, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(key, 1, keylen, f), keylen);
	assert_int_equal(fclose(f), 0);
	rados_buffer_free(key);

	cold_src_open_handle(&lim.c, &lim.dc);
	fn(&lim.c, arg, res);
	cold_close(&lim.c);

	snprintf(json, sizeof(json), "{\"prefix\": \"auth rm\", \"entity\": \"client.%s\"}", user);
	assert_int_equal(mon_cmd(json, NULL, NULL), 0);
	assert_int_equal(unit_tmpdir_remove(dir), 0);
	return 0;
}

/* Remove the objects of this test's prefix. */
static void rados_src_destroy(struct src *s)
{
	rados_list_ctx_t lc;
	assert_int_equal(rados_nobjects_list_open(g_io, &lc), 0);
	char *doomed[256];
	size_t n = 0;
	const char *e;
	while (n < 256 && rados_nobjects_list_next(lc, &e, NULL, NULL) == 0)
		if (strncmp(e, s->prefix, strlen(s->prefix)) == 0)
			assert_non_null(doomed[n++] = strdup(e));
	rados_nobjects_list_close(lc);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rados_remove(g_io, doomed[i]), 0);
		free(doomed[i]);
	}
}

const struct src_ops cold_src_rados = {
	.name = "rados",
	.denied_errno = EPERM,
	.outside_errno = ENOENT, /* not a clean path: no such object */
	.init = rados_src_init,
	.fini = rados_src_fini,
	.make = rados_src_make,
	.put = rados_src_put,
	.del = rados_src_del,
	.as_limited = rados_as_limited,
	.destroy = rados_src_destroy,
};

