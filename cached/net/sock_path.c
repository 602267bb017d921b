/*
 * The socket file, made so that no other user can redirect it (#16 item
 * 15): it gets its final mode and group before anyone can reach it, and
 * never through a path someone else could change. It is bound inside a
 * fresh 0700 directory made next to the configured path (under a 0177
 * umask: owner-only), given its group and mode there (chown/chmod of a
 * path in a directory only the daemon can write), then rename()d onto the
 * configured path (rename replaces a symlink planted there, never its
 * target); the caller listen()s only after. A socket directory that other
 * users can write is refused: they could swap the socket for their own
 * between two starts. Start-up only (loop thread, before the loop runs).
 */
#include "sock_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

int sock_path_mkdir_parent(const char *path)
{
	char dir[108];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	mode_t old = umask(0022);
	int rc = 0;
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*p = '/';
	}
	if (rc == 0 && mkdir(dir, 0755) < 0 && errno != EEXIST)
		rc = -errno;
	umask(old);
	return rc;
}

/* The socket's directory must be the daemon's alone to write: owned by
 * root or the daemon's user, not writable by others, not writable by a
 * group other than the daemon's. Whoever can write it can put their own
 * socket at the path while the daemon is down (clients would take chunk
 * descriptors from it) or plant a symlink there. A sticky bit does not
 * help: it keeps others from removing the daemon's socket, not from
 * creating one at the path when it is gone. */
static int check_socket_dir(const char *dir, char *err, size_t n)
{
	struct stat st;
	if (stat(dir, &st) < 0) {
		int e = errno;
		snprintf(err, n, "cannot stat the socket directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, n, "%s (the directory of daemon.socket) is not a directory", dir);
		return -ENOTDIR;
	}
	char what[96];
	if (st.st_uid != 0 && st.st_uid != geteuid())
		snprintf(what, sizeof(what), "is owned by another user (uid %u)", (unsigned)st.st_uid);
	else if (st.st_mode & S_IWOTH)
		snprintf(what, sizeof(what), "is writable by every user (mode %04o)",
			 (unsigned)(st.st_mode & 07777));
	else if ((st.st_mode & S_IWGRP) && st.st_gid != getegid())
		snprintf(what, sizeof(what), "is writable by its group (mode %04o), which is not the daemon's",
			 (unsigned)(st.st_mode & 07777));
	else
		return 0;
	snprintf(err, n, "socket directory %s %s: another user could replace the socket or plant a "
		 "symlink there; make it the daemon's alone (chown root %s && chmod 0755 %s) or put "
		 "daemon.socket in a directory only the daemon can write", dir, what, dir, dir);
	return -EPERM;
}

/* What is at the socket path now. A socket file left by a daemon that died
 * is replaced, one that a live daemon answers on is not; a symlink (planted
 * or stale) is replaced itself by the rename, its target untouched; any
 * other file is left alone and refused. */
static int claim_path(const char *path, char *err, size_t n)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		log_warn("op=listen socket=%s err=\"a symlink is at the socket path: replacing the "
			 "link (its target is not touched)\"", path);
		return 0;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, n, "socket path %s exists and is not a socket; remove it or change daemon.socket", path);
		return -EEXIST;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0) {
		snprintf(err, n, "another tiercached is listening on %s", path);
		return -EADDRINUSE;
	}
	return 0;
}

int sock_path_bind(int lfd, const struct config *cfg, const char *path, char *err, size_t n)
{
	char dir[108], tmpdir[108], tmpsock[112];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	int rc = check_socket_dir(dir, err, n);
	if (rc < 0)
		return rc;
	rc = claim_path(path, err, n);
	if (rc < 0)
		return rc;
	if ((size_t)snprintf(tmpdir, sizeof(tmpdir), "%s/.tcXXXXXX", dir) >= sizeof(tmpdir) - 2) {
		snprintf(err, n, "socket path %s is too long to bind next to it (at most %zu bytes "
			 "for its directory)", path, sizeof(tmpdir) - 13);
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(tmpdir)) {
		rc = -errno;
		snprintf(err, n, "cannot make a private directory in %s to bind the socket in: %s", dir,
			 strerror(errno));
		return rc;
	}
	snprintf(tmpsock, sizeof(tmpsock), "%s/s", tmpdir); /* fits: checked above */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, tmpsock, strlen(tmpsock) + 1);
	mode_t old = umask(0177);
	rc = bind(lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0) {
		rc = -errno;
		snprintf(err, n, "cannot bind %s: %s", tmpsock, strerror(errno));
		goto out;
	}
	/* tmpsock is in a directory only we can write: the path is ours */
	if (cfg->socket_gid != (gid_t)-1 && chown(tmpsock, (uid_t)-1, cfg->socket_gid) < 0) {
		rc = -errno;
		snprintf(err, n, "cannot give %s to group %s: %s (daemon.socket_group)", path,
			 cfg->socket_group, strerror(errno));
		goto out;
	}
	if (chmod(tmpsock, (mode_t)cfg->socket_mode) < 0) {
		rc = -errno;
		snprintf(err, n, "cannot set the mode of %s: %s (daemon.socket_mode)", path, strerror(errno));
		goto out;
	}
	if (rename(tmpsock, path) < 0) {
		rc = -errno;
		snprintf(err, n, "cannot put the socket at %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		unlink(tmpsock);
	rmdir(tmpdir);
	return rc;
}
