/*
 * Homes while members come and go (docs/cluster.md, "Join, drain and
 * leave"). A chunk's home is chosen (home.h) among the members that are
 * up: a joining node (new, not yet known to every node) and a draining
 * one (handing its chunks over before it leaves) are members but no
 * homes. When homes move, the node that becomes a chunk's home asks its
 * previous home, which still holds the chunk, before the cold store: the
 * previous home is the best among the members that may hold it (up or
 * draining) other than the new home itself, while the cluster is in
 * motion (handover_asking).
 *
 * Pure: no I/O, no state.
 */
#ifndef TIERCACHE_HANDOVER_H
#define TIERCACHE_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "home.h"
#include "members.h"

struct home_choice {
	int home;   /* index into the members, -1: none is up */
	int second; /* the next up member in rank, -1: none */
	int prev;   /* the best up or draining member other than self, -1: none */
};

/* Choose for key among m[0..n) (n <= MEMBERS_MAX); self is this node's
 * id; scratch holds n nodes. */
void handover_choose(const struct member *m, size_t n, const char *self, uint64_t key,
		     struct home_node *scratch, struct home_choice *out);

/* Is the cluster in motion, so that a home's miss should ask the chunk's
 * previous home first? Yes while a member of m[0..n) is joining or
 * draining (a drain hands its chunks over through those asks), and for
 * window_ms after the member list last changed (changed_ms, on the same
 * clock as now_ms): homes moved then, and the previous homes still hold
 * what was theirs. A settled cluster does not ask: the round trip would
 * find nothing. */
bool handover_asking(const struct member *m, size_t n, uint64_t now_ms, uint64_t changed_ms,
		     uint64_t window_ms);

/* Does a member of m[0..n) other than self hold chunks a previous-home ask
 * could find: one draining (it hands its chunks over through the asks),
 * or one up whose reported use ("@used BYTES;" at the start of its stats,
 * cluster.c) is above 0? In a fresh cluster nobody does: every member
 * started empty, so none is anybody's previous home, and a change of the
 * member list then moved no data (it opens no window). A member's use is
 * as of its last heartbeat. */
bool handover_others_hold(const struct member *m, size_t n, const char *self);

#endif
