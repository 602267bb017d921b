/*
 * Homes while members come and go: see handover.h.
 */
#include "handover.h"

#include <stdio.h>
#include <string.h>

void handover_choose(const struct member *m, size_t n, const char *self, uint64_t key,
		     struct home_node *scratch, struct home_choice *out)
{
	for (size_t i = 0; i < n; i++)
		scratch[i] = (struct home_node){
			.id = m[i].id,
			.weight = m[i].capacity,
			.skip = m[i].state != MEMBER_UP,
		};
	home_pick(scratch, n, key, &out->home, &out->second);
	for (size_t i = 0; i < n; i++)
		scratch[i].skip = (m[i].state != MEMBER_UP && m[i].state != MEMBER_DRAINING) ||
				  strcmp(m[i].id, self) == 0;
	int unused;
	home_pick(scratch, n, key, &out->prev, &unused);
}

bool handover_asking(const struct member *m, size_t n, uint64_t now_ms, uint64_t changed_ms,
		     uint64_t window_ms)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].state == MEMBER_JOINING || m[i].state == MEMBER_DRAINING)
			return true;
	return now_ms < changed_ms || now_ms - changed_ms < window_ms;
}

bool handover_others_hold(const struct member *m, size_t n, const char *self)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(m[i].id, self) == 0)
			continue;
		if (m[i].state == MEMBER_DRAINING)
			return true;
		unsigned long long used = 0;
		if (m[i].state == MEMBER_UP && sscanf(m[i].stats, "@used %llu;", &used) == 1 && used > 0)
			return true;
	}
	return false;
}
