#include "exe_dir.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int tc_exe_dir(char *dir, size_t n)
{
	if (n < 2)
		return -ENOENT;
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
