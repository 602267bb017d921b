/*
 * --explain: the daemon's outcome of each access (the trace's result
 * column, `tierctl trace`) beside the simulator's on the same access, per
 * epoch and by chunk size: where a replay and the daemon part ways, and
 * whether the simulator's side was a late load (timing) or a plain miss
 * or hit (placement, windows).
 */
#ifndef TIERCACHE_SIM_EXPLAIN_H
#define TIERCACHE_SIM_EXPLAIN_H

#include "engine.h"
#include "trace.h"

#include <stdio.h>

/* Print the comparison for one policy's run (r->outcome set, t->result
 * set). */
void explain_print(FILE *f, const struct trace *t, const struct sim_result *r);

#endif
