/*
 * Homes while members come and go: see handover.h.
 */
#include "handover.h"

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

bool handover_start_note(enum handover_start_phase *phase, const struct member *m, size_t n,
			 const char *self)
{
	bool others_up = false, all_up = n > 0, draining = false;
	for (size_t i = 0; i < n; i++) {
		others_up |= m[i].state == MEMBER_UP && strcmp(m[i].id, self) != 0;
		all_up &= m[i].state == MEMBER_UP;
		draining |= m[i].state == MEMBER_DRAINING;
	}
	switch (*phase) {
	case HANDOVER_START_UNKNOWN:
		if (others_up || draining) {
			*phase = HANDOVER_START_SETTLED; /* joined a running cluster */
			return true;
		}
		*phase = all_up ? HANDOVER_START_SETTLED : HANDOVER_START_FRESH;
		return false;
	case HANDOVER_START_FRESH:
		if (draining) {
			*phase = HANDOVER_START_SETTLED;
			return true;
		}
		if (all_up)
			*phase = HANDOVER_START_SETTLED; /* settled: nobody held anything before */
		return false;
	case HANDOVER_START_SETTLED:
	default:
		return true;
	}
}
