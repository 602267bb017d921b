/*
 * Kernel readahead for the mount: the size of the READ requests the kernel
 * sends for sequential reads.
 *
 * A FUSE mount gets its own backing device whose readahead starts at
 * 128 KiB, and the FUSE INIT reply can only lower it. With 128 KiB a
 * sequential reader costs one request per 128 KiB; a larger window lets
 * the kernel send 1 MiB requests (max_pages) and keep several in flight,
 * which the multithreaded loop serves in parallel. The window is a sysfs
 * knob of the mount's device (/sys/class/bdi/MAJ:MIN/read_ahead_kb), which
 * only root may write; without the right the kernel default stays.
 *
 * The device number comes from /proc/self/mountinfo: stat() of the
 * mountpoint would wait for our own GETATTR, and the loop is not running
 * yet. Called once, single-threaded, before the loop starts.
 */
#include "tcmount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

/* "MAJ:MIN" of the (last) FUSE mount at mountpoint into dev. */
static int mount_dev(const char *mountpoint, char *dev, size_t devsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int rc = -ENOENT;
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* id parent MAJ:MIN root mountpoint opts ... - fstype ... */
		char *save = NULL, *field[5];
		int i;
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "fuse", 4) != 0)
			continue;
		for (i = 0; i < 5; i++) {
			field[i] = strtok_r(i ? NULL : line, " ", &save);
			if (!field[i])
				break;
		}
		if (i < 5)
			continue;
		unescape(field[4]);
		if (strcmp(field[4], mountpoint) == 0 && strlen(field[2]) < devsz) {
			strcpy(dev, field[2]);
			rc = 0; /* keep going: the last mount there is ours */
		}
	}
	free(line);
	fclose(f);
	return rc;
}

int tcm_readahead_set(const char *mountpoint, unsigned kb)
{
	char dev[64], path[128];
	int rc = mount_dev(mountpoint, dev, sizeof(dev));
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	FILE *f = fopen(path, "we");
	if (!f)
		return -errno;
	int n = fprintf(f, "%u\n", kb);
	rc = fclose(f);
	if (n < 0 || rc != 0)
		return -EIO;
	return 0;
}
