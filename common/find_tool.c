#include "find_tool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory of /proc/self/exe into dir (n bytes). */
static int exe_dir(char *dir, size_t n)
{
	ssize_t len = readlink("/proc/self/exe", dir, n - 1);
	if (len <= 0 || (size_t)len >= n - 1)
		return -ENOENT; /* unreadable, or cut short */
	dir[len] = '\0';
	char *slash = strrchr(dir, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	return 0;
}

int tc_find_tool(const char *env, const char *const *names, char *path, size_t n)
{
	const char *set = getenv(env);
	if (set && *set) {
		snprintf(path, n, "%s", set);
		return access(path, X_OK) == 0 ? 0 : -ENOENT;
	}
	char dir[PATH_MAX];
	if (exe_dir(dir, sizeof(dir)) < 0)
		return -ENOENT;
	for (; *names; names++) {
		int len = snprintf(path, n, "%s/%s", dir, *names);
		if (len > 0 && (size_t)len < n && access(path, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}
