/*
 * Lists of users or groups in the configuration (allow_users,
 * allow_groups): names or numeric ids, resolved to ids when the file is
 * loaded. See config_value.h.
 */
#include "config_value.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

/* A user (IS_GROUP false) or group name, or a numeric id, to its id.
 * 0, or -ENOENT when there is no such name. */
static int id_of(const char *word, bool is_group, uint32_t *id)
{
	char buf[16384];
	const char *p = word;
	uint64_t x;
	if (config_parse_digits(&p, &x) == 0 && !*p)
		return x < UINT32_MAX ? (*id = (uint32_t)x, 0) : -ENOENT;
	if (is_group) {
		struct group gr, *res = NULL;
		if (getgrnam_r(word, &gr, buf, sizeof(buf), &res) != 0 || !res)
			return -ENOENT;
		*id = res->gr_gid;
	} else {
		struct passwd pw, *res = NULL;
		if (getpwnam_r(word, &pw, buf, sizeof(buf), &res) != 0 || !res)
			return -ENOENT;
		*id = res->pw_uid;
	}
	return 0;
}

int config_parse_ids(const char *list, bool is_group, uint32_t *ids, unsigned max, unsigned *n,
		     void (*unknown)(void *arg, const char *word), void *arg)
{
	char word[256];
	*n = 0;
	for (const char *p = list;;) {
		p += strspn(p, ", \t");
		if (!*p)
			return 0;
		size_t len = strcspn(p, ", \t");
		snprintf(word, sizeof(word), "%.*s", (int)len, p);
		p += len;
		uint32_t id;
		if (len >= sizeof(word) || id_of(word, is_group, &id) < 0) {
			unknown(arg, word);
			continue;
		}
		if (*n == max)
			return -E2BIG;
		ids[(*n)++] = id;
	}
}
