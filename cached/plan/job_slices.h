/*
 * The slices of a whole-job plan (job_plans.h) installed in steps, as the
 * home views are (job_views.h): a rank's slice of a million-entry plan is
 * a quarter of a million files to resolve (manifest_find) and plan
 * (plans_set), which held the registering node's loop for a quarter of a
 * second in one go. A build resolves the next entries of the rank's share
 * each turn of the loop (a zero timer), about a millisecond of CPU a step:
 * the first step installs the slice (or, for an append, extends the one
 * there), later steps append to it, so the slice's readers find its first
 * entries at once and the rest follow within the build.
 *
 * A build reads its job plan across turns: whatever unlinks that plan
 * (replace, append, cancel, end, the dataset's removal) drops the build
 * first (job_slices_drop), and so does the end of the slices or a cancel
 * of the slice plan itself (checked at each step). Loop thread only.
 */
#ifndef TIERCACHE_JOB_SLICES_H
#define TIERCACHE_JOB_SLICES_H

#include <stdbool.h>
#include <stdint.h>

struct job_plans;
struct job_plan;
struct dataset;

/* Install rank's slice of jp in steps (flags: TC_PLAN_RESUME); from > 0:
 * extend the rank's installed slice with jp's entries from there on (an
 * append), if this registry has one (else it is installed whole). A build
 * of the same (jp's job, rank) in progress starts over. */
void job_slice_build(struct job_plans *jps, struct job_plan *jp, uint32_t rank, uint8_t flags,
		     uint32_t from);
/* Drop the builds reading jp (it is being unlinked), or with jp NULL every
 * build of (ds, job). */
void job_slices_drop(struct job_plans *jps, const struct job_plan *jp, const struct dataset *ds,
		     uint64_t job);
/* Is a build reading jp still running? (an append must then install the
 * slices whole: the entries before the append are not all in) */
bool job_slices_pending(const struct job_plans *jps, const struct job_plan *jp);
unsigned job_slices_building(const struct job_plans *jps);
void job_slices_free(struct job_plans *jps);

#endif
