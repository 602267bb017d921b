/*
 * Home views of the job plans (job_plans.h): in a cluster, a node is home
 * for about 1/N of a job's chunks whether or not it serves a rank of the
 * job, and the ranks elsewhere ask it for them. A job's home view is one
 * more plan of this node's (rank TC_JOB_RANK_ANY, owned by the job
 * registry): the chunks homed here among the entries of the ranks this
 * node does not serve, in the job's order. The peers' asks (untagged
 * reads) advance it, its prefetcher fills it from the cold store ahead of
 * them, and the plan store tells hot's policy when each chunk is read
 * next, so the node keeps its home share.
 *
 * The view then plans the next epoch as a guess: every rank's entries
 * again (the served ranks' too), in this epoch's order, until the next
 * registration replaces the view with the real one. A chunk served this
 * epoch thus keeps a (distant) next use, and hot's policy keeps the home
 * share between epochs rather than chunks nobody planned.
 *
 * The job's order is its whole-job plan's, or, without one, the per-rank
 * plans this node knows of the job (its own ranks' and the copies the
 * cluster shared), interleaved as a DistributedSampler deals them: entry
 * j of rank r is the job's entry j * world_size + r.
 *
 * A view is built in steps of about a millisecond, one per loop turn
 * (job_views.c): a job of a million entries does not hold the loop.
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_JOB_VIEWS_H
#define TIERCACHE_JOB_VIEWS_H

#include <stdbool.h>
#include <stdint.h>

struct job_plans;
struct dataset;

#define JOB_VIEW_RANKS_MAX 65536u /* world_size a view is built for */

/* (Re)build (ds, job)'s home view from what this node knows of the job;
 * ends it if nothing of it is homed here (or no homes: not a cluster).
 * resume (the job's plan was appended to): a view its readers advanced
 * resumes where they are. */
void job_view_build(struct job_plans *jps, struct dataset *ds, uint64_t job, bool resume);
/* End (ds, job)'s home view, if there is one. */
void job_view_end(struct job_plans *jps, struct dataset *ds, uint64_t job);
/* Rebuild every job's view (homes moved, or per-rank plans changed). */
void job_views_rebuild(struct job_plans *jps);
/* A plan of (ds, job) goes: drop a build of its view in progress (it reads
 * that plan across loop turns); the caller builds again if it should. */
void job_views_drop(struct job_plans *jps, const struct dataset *ds, uint64_t job);
/* Builds in progress (status), and freeing them all (job_plans_free). */
unsigned job_views_building(const struct job_plans *jps);
void job_views_free(struct job_plans *jps);

#endif
