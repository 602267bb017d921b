/*
 * The counter table: see counters.h. Rows are in the order the metrics
 * endpoint prints them; status keeps the same order within each section.
 * Adding a counter to struct counters means adding its row here (the unit
 * test fails until it is), and the metric to docs/operations.md.
 *
 * Loop thread: the getters read loop-owned state without locks.
 */
#include "counters.h"

#include <string.h>

#include "durable.h"
#include "fill.h"
#include "fill_buf.h"
#include "mover.h"
#include "scrub.h"
#include "server.h"
#include "stat_ahead.h"
#include "status.h"
#include "verify.h"

/* ---- values that are not in struct counters ---- */

static uint64_t get_clients(const struct status *st)
{
	return st->srv ? server_clients(st->srv) : 0;
}

static uint64_t get_bad_frames(const struct status *st)
{
	return st->srv ? server_bad_frames(st->srv) : 0;
}

static uint64_t get_accept_errors(const struct status *st)
{
	return st->srv ? server_accept_errors(st->srv) : 0;
}

static uint64_t get_idle_closed(const struct status *st)
{
	return st->srv ? server_idle_closed(st->srv) : 0;
}

static uint64_t get_clients_refused(const struct status *st)
{
	return st->srv ? server_refused(st->srv) : 0;
}

static uint64_t get_fills_inflight(const struct status *st)
{
	return fill_inflight(st->cache);
}

static uint64_t get_moves_inflight(const struct status *st)
{
	return mover_inflight(st->cache);
}

static uint64_t get_moves_syncing(const struct status *st)
{
	return mover_syncing(st->cache);
}

static uint64_t get_revals_inflight(const struct status *st)
{
	return st->cache->revals_inflight;
}

static uint64_t get_stat_ahead_inflight(const struct status *st)
{
	return stat_ahead_inflight(st->cache);
}

static uint64_t get_unkept_ram(const struct status *st)
{
	return st->cache->unkept_ram;
}

static uint64_t get_fill_buffers_spare(const struct status *st)
{
	return fill_buf_spare_count(&st->cache->fills);
}

static uint64_t get_fill_buffer_spare_bytes(const struct status *st)
{
	return fill_buf_spare_bytes(&st->cache->fills);
}

static uint64_t get_sync_pending_chunks(const struct status *st)
{
	return durable_pending_chunks(st->cache);
}

static uint64_t get_sync_pending_bytes(const struct status *st)
{
	return durable_pending_bytes(st->cache);
}

static uint64_t get_reloads(const struct status *st)
{
	return st->reloads;
}

static uint64_t get_reload_failures(const struct status *st)
{
	return st->reload_failures;
}

static uint64_t get_scrub_last_pass(const struct status *st)
{
	int64_t t = scrub_last_pass_s(st->cache);
	return t > 0 ? (uint64_t)t : 0;
}

static uint64_t get_verifies_inflight(const struct status *st)
{
	return verify_count_inflight(st->cache);
}

static struct status_ahead ahead_info(const struct status *st)
{
	struct status_ahead a = {0};
	if (st->ahead_info)
		st->ahead_info(st->ahead_arg, &a);
	return a;
}

static uint64_t get_ahead_bound_bytes(const struct status *st)
{
	return ahead_info(st).bound_bytes;
}

static uint64_t get_ahead_conn_bound_bytes(const struct status *st)
{
	return ahead_info(st).conn_bound_bytes;
}

static uint64_t get_ahead_askers(const struct status *st)
{
	return ahead_info(st).askers;
}

/* ---- the table ---- */

#define CTR(field) .off = offsetof(struct counters, field)

#define HELP_HITS "Chunk reads served from a tier, by tier."
#define HELP_ERRORS "Errors by kind."
#define HELP_AHEAD "Handles handed ahead of a plan (OPEN_AHEAD), then used or released unused."
#define HELP_STAT_AHEAD                                                                            \
	"Revalidation stats sent ahead of the opens (stat-ahead); opens that found their file "   \
	"confirmed by one; opens that found theirs in flight and waited for it; files stat'd ahead "    \
	"that were due again when opened (wasted)."
#define HELP_FRAMES "Request frames received, by op (the per-file ones)."

const struct counter_row counter_rows[] = {
	{.status = "clients", .section = STATUS_DAEMON,
	 .metric = "tiercache_clients", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Connected clients.", .get = get_clients},

	{.status = "hits_hot", .section = STATUS_COUNTERS,
	 .metric = "tiercache_hits_total", .labels = "tier=\"hot\"", .type = COUNTER_COUNTER,
	 .help = HELP_HITS, CTR(hits_hot)},
	{.status = "hits_warm", .section = STATUS_COUNTERS,
	 .metric = "tiercache_hits_total", .labels = "tier=\"warm\"", .type = COUNTER_COUNTER,
	 .help = HELP_HITS, CTR(hits_warm)},
	{.status = "misses", .section = STATUS_COUNTERS,
	 .metric = "tiercache_misses_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Chunk reads that went to the cold store.", CTR(misses)},
	{.status = "bytes_served", .section = STATUS_COUNTERS,
	 .metric = "tiercache_served_bytes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Bytes handed to clients (chunk descriptors and streamed reads).",
	 CTR(bytes_served)},
	{.status = "bytes_from_cold", .section = STATUS_COUNTERS,
	 .metric = "tiercache_cold_read_bytes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Bytes read from cold stores.", CTR(bytes_from_cold)},
	{.status = "bytes_from_peers", .section = STATUS_COUNTERS,
	 .metric = "tiercache_peer_read_bytes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Bytes of chunks filled from their home node instead of the cold store (cluster).",
	 CTR(bytes_from_peers)},
	{.status = "bytes_to_peers", .section = STATUS_COUNTERS,
	 .metric = "tiercache_peer_served_bytes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Bytes of chunks this node sent to other nodes (cluster).", CTR(bytes_to_peers)},
	{.status = "peer_fills", .section = STATUS_COUNTERS,
	 .metric = "tiercache_peer_fills_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Fills answered by the chunk's home node (cluster).", CTR(peer_fills)},
	{.status = "peer_fallbacks", .section = STATUS_COUNTERS,
	 .metric = "tiercache_peer_fallbacks_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Fills a peer did not answer, read from the cold store instead (cluster; by "
		 "reason in tiercache_fallback_total).",
	 CTR(peer_fallbacks)},
	{.status = "cold_reads", .section = STATUS_COUNTERS,
	 .metric = "tiercache_cold_reads_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Reads from cold stores.", CTR(cold_reads)},
	{.status = "served_unkept", .section = STATUS_COUNTERS,
	 .metric = "tiercache_served_unkept_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Chunks read from cold and served without being kept on a tier.",
	 CTR(served_unkept)},
	{.status = "served_unkept_with_room", .section = STATUS_COUNTERS,
	 .metric = "tiercache_served_unkept_with_room_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Chunks served without being kept although a tier had room its policies could "
		 "have used (the goal is 0).",
	 CTR(served_unkept_room)},
	{.status = "fills_instead", .section = STATUS_COUNTERS,
	 .metric = "tiercache_fills_instead_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Fills the tier placement chose had no room for at that moment, kept on the "
		 "next tier instead.",
	 CTR(fills_instead)},
	{.status = "evictions", .section = STATUS_COUNTERS,
	 .metric = "tiercache_evictions_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Chunks dropped from the cache to make room.", CTR(evictions)},
	{.status = "demotions", .section = STATUS_COUNTERS,
	 .metric = "tiercache_demotions_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Chunks moved from hot to warm.", CTR(demotions)},
	{.status = "promotions", .section = STATUS_COUNTERS,
	 .metric = "tiercache_promotions_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Chunks moved from warm to hot.", CTR(promotions)},
	{.status = "segment_items_kept", .section = STATUS_COUNTERS,
	 .metric = "tiercache_segment_items_kept_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Live items of reclaimed segments copied to an open segment (the policy keeps them).",
	 CTR(segment_items_kept)},
	{.status = "segment_items_dropped", .section = STATUS_COUNTERS,
	 .metric = "tiercache_segment_items_dropped_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Live items of reclaimed segments dropped (the policy does not keep them, or no room).",
	 CTR(segment_items_dropped)},
	{.status = "segment_reclaim_copied_bytes", .section = STATUS_COUNTERS,
	 .metric = "tiercache_segment_reclaim_copied_bytes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Bytes segment reclaims copied into their own tier (live items the policy keeps): "
		 "writes reclaim adds to the fills' own; items it demotes count in demotions.",
	 CTR(segment_reclaim_copied_bytes)},
	{.status = "segment_reclaim_dropped_bytes", .section = STATUS_COUNTERS,
	 .metric = "tiercache_segment_reclaim_dropped_bytes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Bytes of live items segment reclaims dropped (the cold store has them).",
	 CTR(segment_reclaim_dropped_bytes)},
	{.status = "segment_copy_syncs", .section = STATUS_COUNTERS,
	 .metric = "tiercache_segment_copy_syncs_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "fdatasyncs of segments for copies into them (demotions, promotions, reclaims); "
		 "one covers every copy written before it started.",
	 CTR(segment_copy_syncs)},

	{.status = "cold_errors", .section = STATUS_COUNTERS,
	 .metric = "tiercache_errors_total", .labels = "kind=\"cold_read\"", .type = COUNTER_COUNTER,
	 .help = HELP_ERRORS, CTR(cold_errors)},
	{.status = "checksum_errors", .section = STATUS_COUNTERS,
	 .metric = "tiercache_errors_total", .labels = "kind=\"checksum\"", .type = COUNTER_COUNTER,
	 .help = HELP_ERRORS, CTR(checksum_errors)},
	{.status = "fill_errors", .section = STATUS_COUNTERS,
	 .metric = "tiercache_errors_total", .labels = "kind=\"fill\"", .type = COUNTER_COUNTER,
	 .help = HELP_ERRORS, CTR(fill_errors)},
	{.status = "stale_reads", .section = STATUS_COUNTERS,
	 .metric = "tiercache_errors_total", .labels = "kind=\"stale_read\"", .type = COUNTER_COUNTER,
	 .help = HELP_ERRORS, CTR(stale_reads)},
	{.status = "peer_bad", .section = STATUS_COUNTERS,
	 .metric = "tiercache_errors_total", .labels = "kind=\"peer_checksum\"", .type = COUNTER_COUNTER,
	 .help = HELP_ERRORS, CTR(peer_bad)},
	{.status = "bad_frames", .section = STATUS_COUNTERS,
	 .metric = "tiercache_errors_total", .labels = "kind=\"bad_frame\"", .type = COUNTER_COUNTER,
	 .help = HELP_ERRORS, .get = get_bad_frames},
	{.status = "accept_errors", .section = STATUS_COUNTERS,
	 .metric = "tiercache_errors_total", .labels = "kind=\"accept\"", .type = COUNTER_COUNTER,
	 .help = HELP_ERRORS, .get = get_accept_errors},
	{.status = "held_refusals", .section = STATUS_COUNTERS,
	 .metric = "tiercache_held_refusals_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Chunk descriptors refused (ENOBUFS) because the client held "
		 "max_held_per_client or its uid max_held_per_user.",
	 CTR(held_refusals)},
	{.status = "stale_served", .section = STATUS_COUNTERS,
	 .metric = "tiercache_stale_served_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Files served without checking them against a cold store that is down "
		 "(serve_stale_on_error = yes).",
	 CTR(stale_served)},
	{.status = "clients_refused", .section = STATUS_COUNTERS,
	 .metric = "tiercache_clients_refused_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Connections refused by a limit (max_clients, the admin reserve, max_clients_per_uid).",
	 .get = get_clients_refused},
	{.status = "idle_closed", .section = STATUS_COUNTERS,
	 .metric = "tiercache_idle_closed_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Connections closed by daemon.idle_timeout (idle and holding nothing).",
	 .get = get_idle_closed},

	{.status = "fills_inflight", .section = STATUS_DAEMON,
	 .metric = "tiercache_fills_inflight", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Cold reads in progress.", .get = get_fills_inflight},
	{.status = "moves_inflight", .section = STATUS_DAEMON,
	 .metric = "tiercache_moves_inflight", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Chunk moves between tiers in progress.", .get = get_moves_inflight},
	{.status = "moves_syncing", .section = STATUS_DAEMON,
	 .metric = "tiercache_moves_syncing", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Moves into segments written and waiting for their grouped fdatasync (of moves_inflight).",
	 .get = get_moves_syncing},
	{.status = "revalidations_inflight", .section = STATUS_DAEMON,
	 .metric = "tiercache_revalidations_inflight", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Revalidation stats of cold files in progress.", .get = get_revals_inflight},
	{.status = "unkept_ram_bytes", .section = STATUS_DAEMON,
	 .metric = "tiercache_unkept_ram_bytes", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Bytes of chunks served from memory without a tier.", .get = get_unkept_ram},
	{.status = "fill_buffers_spare", .section = STATUS_DAEMON,
	 .metric = "tiercache_fill_buffers_spare", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Buffers of finished fills kept for the next fills.",
	 .get = get_fill_buffers_spare},
	{.status = "fill_buffer_spare_bytes", .section = STATUS_DAEMON,
	 .metric = "tiercache_fill_buffer_spare_bytes", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Bytes of the spare fill buffers.",
	 .get = get_fill_buffer_spare_bytes},
	{.status = "sync_pending_chunks", .section = STATUS_DAEMON,
	 .metric = "tiercache_sync_pending_chunks", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Filled chunks not yet fdatasync'ed and recorded.",
	 .get = get_sync_pending_chunks},
	{.status = "sync_pending_bytes", .section = STATUS_DAEMON,
	 .metric = "tiercache_sync_pending_bytes", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Bytes of filled chunks not yet fdatasync'ed and recorded.",
	 .get = get_sync_pending_bytes},
	{.status = "chunks_synced", .section = STATUS_COUNTERS,
	 .metric = "tiercache_chunks_synced_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Filled chunks made durable and recorded in the index.", CTR(chunks_synced)},
	{.status = "syncs_skipped", .section = STATUS_COUNTERS,
	 .metric = "tiercache_syncs_skipped_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Filled chunks evicted or moved before their sync was due (never synced).",
	 CTR(syncs_skipped)},
	{.status = "scrubbed_bytes", .section = STATUS_COUNTERS,
	 .metric = "tiercache_scrubbed_bytes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Bytes of chunk files the scrubber re-read and checked.", CTR(scrubbed_bytes)},
	{.status = "scrub_passes", .section = STATUS_COUNTERS,
	 .metric = "tiercache_scrub_passes_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Walks of every resident chunk the scrubber finished.", CTR(scrub_passes)},
	{.status = "scrub_last_pass", .section = STATUS_DAEMON,
	 .metric = "tiercache_scrub_last_pass_seconds", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Wall clock (Unix seconds) the scrubber last finished a pass (0: never).",
	 .get = get_scrub_last_pass},
	{.status = "verifies_inflight", .section = STATUS_DAEMON,
	 .metric = "tiercache_verifies_inflight", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Chunk files being checked against their checksum.", .get = get_verifies_inflight},
	{.status = "chunk_reports", .section = STATUS_COUNTERS,
	 .metric = "tiercache_chunk_reports_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Clients' reports of a chunk descriptor that read short (each re-checked).",
	 CTR(chunk_reports)},
	{.status = "open_many_frames", .section = STATUS_COUNTERS,
	 .metric = "tiercache_open_many_frames_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Batched open requests (OPEN_MANY frames) answered.", CTR(open_many_frames)},
	{.status = "open_many_files", .section = STATUS_COUNTERS,
	 .metric = "tiercache_open_many_files_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Files named by batched open requests (opened or refused).", CTR(open_many_files)},
	{.status = "ahead_handed", .section = STATUS_COUNTERS,
	 .metric = "tiercache_ahead_handles_total", .labels = "event=\"handed\"", .type = COUNTER_COUNTER,
	 .help = HELP_AHEAD, CTR(ahead_handed)},
	{.status = "ahead_used", .section = STATUS_COUNTERS,
	 .metric = "tiercache_ahead_handles_total", .labels = "event=\"used\"", .type = COUNTER_COUNTER,
	 .help = HELP_AHEAD, CTR(ahead_used)},
	{.status = "ahead_unused", .section = STATUS_COUNTERS,
	 .metric = "tiercache_ahead_handles_total", .labels = "event=\"unused\"", .type = COUNTER_COUNTER,
	 .help = HELP_AHEAD, CTR(ahead_unused)},
	{.status = "ahead_out", .section = STATUS_DAEMON,
	 .metric = "tiercache_ahead_out", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Handles handed ahead of a plan that their clients have neither used nor released.",
	 CTR(ahead_out)},
	{.status = "ahead_out_bytes", .section = STATUS_DAEMON,
	 .metric = "tiercache_ahead_out_bytes", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Chunk bytes those handles hold through their descriptors.", CTR(ahead_out_bytes)},
	{.status = "ahead_bound_bytes", .section = STATUS_DAEMON,
	 .metric = "tiercache_ahead_bound_bytes", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Chunk bytes all connections together may hold ahead: half of what hot and warm "
		 "free between high and low water.", .get = get_ahead_bound_bytes},
	{.status = "ahead_conn_bound_bytes", .section = STATUS_DAEMON,
	 .metric = "tiercache_ahead_conn_bound_bytes", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Chunk bytes one connection may hold ahead: its even share of the bound among the "
		 "connections that ask (a job's rank: among its world_size if more).",
	 .get = get_ahead_conn_bound_bytes},
	{.status = "ahead_askers", .section = STATUS_DAEMON,
	 .metric = "tiercache_ahead_askers", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Connections that have asked for handles ahead of a plan.", .get = get_ahead_askers},
	{.status = "held_bytes", .section = STATUS_DAEMON,
	 .metric = "tiercache_held_bytes", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Chunk bytes all clients hold through descriptors they have not released.",
	 CTR(held_bytes)},
	{.status = "frames_open", .section = STATUS_COUNTERS,
	 .metric = "tiercache_request_frames_total", .labels = "op=\"open\"", .type = COUNTER_COUNTER,
	 .help = HELP_FRAMES, CTR(frames_open)},
	{.status = "frames_open_many", .section = STATUS_COUNTERS,
	 .metric = "tiercache_request_frames_total", .labels = "op=\"open_many\"", .type = COUNTER_COUNTER,
	 .help = HELP_FRAMES, CTR(frames_open_many)},
	{.status = "frames_open_ahead", .section = STATUS_COUNTERS,
	 .metric = "tiercache_request_frames_total", .labels = "op=\"open_ahead\"", .type = COUNTER_COUNTER,
	 .help = HELP_FRAMES, CTR(frames_open_ahead)},
	{.status = "frames_chunk", .section = STATUS_COUNTERS,
	 .metric = "tiercache_request_frames_total", .labels = "op=\"chunk\"", .type = COUNTER_COUNTER,
	 .help = HELP_FRAMES, CTR(frames_chunk)},
	{.status = "frames_close", .section = STATUS_COUNTERS,
	 .metric = "tiercache_request_frames_total", .labels = "op=\"close\"", .type = COUNTER_COUNTER,
	 .help = HELP_FRAMES, CTR(frames_close)},
	{.status = "revalidations_by_read", .section = STATUS_COUNTERS,
	 .metric = "tiercache_revalidations_by_read_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Revalidations of a one-chunk file answered by the read of its chunk that its open "
		 "started (the read asserts the version), without a stat of their own.",
	 CTR(revals_by_read)},
	{.status = "revalidation_stats", .section = STATUS_COUNTERS,
	 .metric = "tiercache_revalidation_stats_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Stats of the cold store a request's own revalidation asked and waited for "
		 "(not those sent ahead, nor revalidations answered by a read).",
	 CTR(reval_stats)},
	{.status = "stat_ahead_sent", .section = STATUS_COUNTERS,
	 .metric = "tiercache_stat_ahead_total", .labels = "event=\"sent\"", .type = COUNTER_COUNTER,
	 .help = HELP_STAT_AHEAD, CTR(stat_ahead_sent)},
	{.status = "stat_ahead_used", .section = STATUS_COUNTERS,
	 .metric = "tiercache_stat_ahead_total", .labels = "event=\"used\"", .type = COUNTER_COUNTER,
	 .help = HELP_STAT_AHEAD, CTR(stat_ahead_used)},
	{.status = "stat_ahead_joined", .section = STATUS_COUNTERS,
	 .metric = "tiercache_stat_ahead_total", .labels = "event=\"joined\"", .type = COUNTER_COUNTER,
	 .help = HELP_STAT_AHEAD, CTR(stat_ahead_joined)},
	{.status = "stat_ahead_wasted", .section = STATUS_COUNTERS,
	 .metric = "tiercache_stat_ahead_total", .labels = "event=\"wasted\"", .type = COUNTER_COUNTER,
	 .help = HELP_STAT_AHEAD, CTR(stat_ahead_wasted)},
	{.status = "stat_ahead_inflight", .section = STATUS_DAEMON,
	 .metric = "tiercache_stat_ahead_inflight", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Revalidation stats sent ahead of the opens, not answered yet (daemon.stat_ahead_inflight at most).",
	 .get = get_stat_ahead_inflight},
	{.status = "opens_filled", .section = STATUS_COUNTERS,
	 .metric = "tiercache_opens_filled_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Opens of a one-chunk file answered with its chunk once read from the cold store "
		 "(no CHUNK request).", CTR(opens_filled)},
	{.status = "opens_filling", .section = STATUS_DAEMON,
	 .metric = "tiercache_opens_filling", .labels = "", .type = COUNTER_GAUGE,
	 .help = "Opens waiting for their file's chunk to be read from the cold store.",
	 CTR(opens_filling)},

	{.status = "reloads", .section = STATUS_COUNTERS,
	 .metric = "tiercache_reloads_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Config reloads applied.", .get = get_reloads},
	{.status = "reload_failures", .section = STATUS_COUNTERS,
	 .metric = "tiercache_reload_failures_total", .labels = "", .type = COUNTER_COUNTER,
	 .help = "Config reloads rejected.", .get = get_reload_failures},
};

const size_t counter_nrows = sizeof(counter_rows) / sizeof(counter_rows[0]);

uint64_t counter_value(const struct counter_row *r, const struct status *st)
{
	if (r->get)
		return r->get(st);
	uint64_t v;
	memcpy(&v, (const char *)&st->cache->ctr + r->off, sizeof(v));
	return v;
}

const char *counter_type_name(enum counter_type t)
{
	return t == COUNTER_GAUGE ? "gauge" : "counter";
}
