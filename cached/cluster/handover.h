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

/* Whether this node saw the cluster start fresh. A node whose first
 * member list shows no other member up (all joining, or it is alone) starts
 * a fresh cluster: no member was a home before, so none is anybody's
 * previous home. Until it reads a list with every member up, it asks no
 * previous home, and that list opens no window; a member draining (it
 * hands chunks over through the asks) ends the fresh start at once. A node
 * whose first list shows another member up joined a running cluster:
 * every change opens the window, as does its start. */
enum handover_start_phase {
	HANDOVER_START_UNKNOWN = 0, /* no member list read yet */
	HANDOVER_START_FRESH,
	HANDOVER_START_SETTLED,
};

/* A new member list m[0..n) was read (self: this node's id): the new
 * phase in *phase; true if this change opens the previous-home window. */
bool handover_start_note(enum handover_start_phase *phase, const struct member *m, size_t n,
			 const char *self);

#endif
