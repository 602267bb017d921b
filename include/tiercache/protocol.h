/*
 * tiercache wire protocol, version 1.
 *
 * A client and tiercached talk over a Unix stream socket in frames. A frame
 * is a 16-byte header followed by `len` payload bytes. Every integer is
 * little-endian. Requests carry a client-chosen id that the reply echoes, so
 * a client may pipeline: replies to requests that wait on a cold read can
 * come back after replies to later requests.
 *
 * Payload fields are encoded in order with no padding:
 *   u8 / u16 / u32 / u64 / i64   fixed width, little-endian
 *   str                          u32 byte length, then the bytes (no NUL)
 *   bytes                        rest of the payload
 *
 * A reply whose header `aux` is non-zero is an error: `aux` is a Linux errno
 * value and the payload is one str, a human-readable detail (may be empty).
 *
 * File data normally never crosses the socket: a CHUNK reply carries an
 * O_RDONLY descriptor of the immutable chunk file as SCM_RIGHTS ancillary
 * data, and the client preads from it. READ streams bytes instead, for
 * clients that cannot take descriptors.
 *
 * Limits are hard: a frame whose len exceeds TC_FRAME_MAX, or whose magic or
 * version is wrong, is answered with EMSGSIZE / EPROTO and the connection is
 * closed. A payload that does not decode is answered with EBADMSG.
 */
#ifndef TIERCACHE_PROTOCOL_H
#define TIERCACHE_PROTOCOL_H

#include <stdint.h>

#define TC_PROTO_MAGIC 0x4354u   /* "TC" as little-endian bytes 'T','C' */
#define TC_PROTO_VERSION 2u

#define TC_HDR_SIZE 16u
#define TC_FRAME_MAX (1u << 20)  /* payload bytes, either direction */
#define TC_READ_MAX (TC_FRAME_MAX - 64u) /* bytes one streamed READ returns */
#define TC_PATH_MAX 4096u        /* a "dataset/path" string, bytes */
#define TC_NAME_MAX 255u         /* one path component, bytes */
#define TC_DATASET_NAME_MAX 64u  /* a dataset name, bytes */
#define TC_POLICY_TUNABLES_MAX 32u /* key=value pairs in one POLICY_SET */
#define TC_POLICY_TUNABLE_MAX 255u /* bytes of one key=value */
#define TC_REPLY_FDS_MAX 64u     /* descriptors one reply carries */
#define TC_OPEN_MANY_MAX 64u     /* files one OPEN_MANY names */

/* Header: magic u16, version u8, op u8, len u32, id u32, aux u32.
 * aux: request flags (TC_F_*) in a request, 0 or errno in a reply. */
struct tc_hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t op;
	uint32_t len;
	uint32_t id;
	uint32_t aux;
};

/* Request flags (struct tc_hdr.aux of a request). */
#define TC_F_NOREPLY 0x1u     /* do not answer (RELEASE, CLOSE) */
#define TC_F_WANT_CHUNK0 0x2u /* OPEN: attach chunk 0's fd if it is resident */
/* OPEN with TC_F_WANT_CHUNK0: a file of one chunk that is not resident is
 * read from the cold store first (joining a read in flight) and the OPEN
 * answered with its chunk, so the client sends no CHUNK for it: one
 * request per small miss. A cold read error fails the OPEN (EIO, ...); a
 * file that changed at the source is opened again at its new version. Up
 * to a bound of such OPENs wait per connection; past it, or when the read
 * cannot start, the OPEN is answered at once without the chunk, as without
 * this flag. A daemon that predates it ignores it. */
#define TC_F_FILL_CHUNK0 0x20u
/* CHUNK: the descriptor this client was given for that chunk read short or
 * failed (EIO): the daemon checks the chunk's file again (size and
 * checksum, on its own: the report is never trusted) before answering; a
 * file that does not match is dropped and the chunk read from the cold
 * store. Reports beyond a small rate per connection are ignored (answered
 * as a plain CHUNK). */
#define TC_F_CHUNK_RECHECK 0x4u
/* STAT, LISTDIR: each reply record (the STAT reply, every LISTDIR entry)
 * ends with u32 mode (permission bits), u32 uid, u32 gid: the source's for
 * a dataset with access = source on the posix backend, else 0444 (files) /
 * 0555 (directories) and uid = gid = 0xffffffff ("the mounter's"). */
#define TC_F_WANT_OWNER 0x80u
/* OPEN, STAT, LISTDIR, OPEN_MANY: a dataset still doing its first listing
 * (a daemon that just started) is waited for, up to TC_F_WAIT_S(aux)
 * seconds (bits 16..31 of aux; 0: fail at once with EIO, as before),
 * instead of failing. The daemon answers when the listing ends: the reply
 * the request then gets, or the listing's error; ETIMEDOUT when the time
 * is up. A waiting request counts against the connection's waiting bound. */
#define TC_F_WAIT_SHIFT 16u
#define TC_F_WAIT_MAX_S 0xffffu
#define TC_F_WAIT_S(aux) ((uint32_t)(aux) >> TC_F_WAIT_SHIFT)
#define TC_F_WAIT(seconds) ((uint32_t)(seconds) << TC_F_WAIT_SHIFT)
/* PIN, UNPIN, EVICT, DEMOTE, POLICY_SET, RELOAD (admin): not applied here
 * but sent to every node of the daemon's cluster, this one included,
 * through the admin broadcast (docs/cluster.md); each node applies it
 * once, a node that is down when it comes back. rep: str the entry's id
 * in the stream, once Redis took it. Errors: EINVAL (another op, or a
 * daemon without [cluster]), ENOTCONN / EHOSTUNREACH (Redis does not
 * answer: the command went to no node), and the op's own rights check. */
#define TC_F_CLUSTER 0x10u
/* ownerless STAT / LISTDIR records (TC_F_WANT_OWNER): the mounter's */
#define TC_OWNER_NONE 0xffffffffu

enum tc_op {
	/* req: u32 client_version
	 * rep: u32 server_version, u32 frame_max, str daemon_version */
	TC_OP_HELLO = 1,

	/* req: str "dataset/path"
	 * rep: u64 handle, u64 size, i64 mtime_ns, u32 chunk_size,
	 *      u8 has_chunk; if has_chunk: a chunk record (+ one fd) */
	TC_OP_OPEN = 2,

	/* req: u64 handle, u32 idx (flags: TC_F_CHUNK_RECHECK)
	 * rep: a chunk record (+ one fd).
	 * A chunk record: u32 idx, u64 off (the chunk's offset in its file),
	 * u32 len, u64 base, u8 tier: the chunk's bytes are the passed
	 * descriptor's bytes [base, base + len) (base > 0: a segment). */
	TC_OP_CHUNK = 3,

	/* req: u64 handle, u64 off, u32 len (<= TC_READ_MAX)
	 * rep: bytes (short at EOF, empty past it) */
	TC_OP_READ = 4,

	/* req: u64 handle, u32 idx. The client dropped its fd of that chunk.
	 * Sent with TC_F_NOREPLY. */
	TC_OP_RELEASE = 5,

	/* req: u64 handle. rep: empty. May be sent with TC_F_NOREPLY. */
	TC_OP_CLOSE = 6,

	/* req: str "dataset[/path]"
	 * rep: u8 type (TC_TYPE_*), u64 size, i64 mtime_ns, u32 chunk_size
	 *      [TC_F_WANT_OWNER: u32 mode, u32 uid, u32 gid] */
	TC_OP_STAT = 7,

	/* req: str "dataset[/dir]", u32 cookie (0 = from the start)
	 * rep: u32 next_cookie (0 = no more), u32 count,
	 *      count x { u8 type, u64 size, i64 mtime_ns, str name
	 *      [TC_F_WANT_OWNER: u32 mode, u32 uid, u32 gid] } */
	TC_OP_LISTDIR = 8,

	/* req: empty. rep: a record set (see below) with section "datasets". */
	TC_OP_DATASETS = 9,

	/* req: empty. rep: a record set: "daemon", "tiers", "counters",
	 * "datasets". */
	TC_OP_STATUS = 10,

	/* req: str dataset. rep: u64 files, u64 bytes, u64 changed. */
	TC_OP_REFRESH = 11,

	/* req: str dataset ("" = every dataset).
	 * rep: a record set: "policies" (one record per dataset: the policy,
	 *      its tunables, where the choice comes from, placement counters,
	 *      each tier's policy state) and "known" (every policy a dataset
	 *      may use, with its tunables). */
	TC_OP_POLICY_GET = 12,

	/* req: str dataset, str policy, u32 n (<= TC_POLICY_TUNABLES_MAX),
	 *      n x str "key=value" (each <= TC_POLICY_TUNABLE_MAX bytes).
	 *      policy "" with n = 0: back to the config file's policy.
	 * rep: the POLICY_GET record set for that dataset. Errors: ENOENT (no
	 *      such dataset), EINVAL (unknown policy or bad tunable: the
	 *      detail says which; the old policy stays). */
	TC_OP_POLICY_SET = 13,

	/* Plans (docs/plans.md): the order in which (job, rank) will read a
	 * dataset's files.
	 * req: str dataset, u64 job, u32 rank, u32 world_size (>= 1, rank <
	 *      world_size), u32 epoch, u8 flags (TC_PLAN_*), u8 kind
	 *      (TC_PLAN_PATHS | TC_PLAN_INDICES), u32 n (<= TC_PLAN_ENTRIES_MAX),
	 *      n x (str path relative to the dataset | u64 index into the
	 *      dataset's files sorted by path bytes)
	 * A plan longer than a frame is sent as a sequence: the first frame
	 * without TC_PLAN_CONT, every frame but the last with TC_PLAN_MORE,
	 * every frame but the first with TC_PLAN_CONT, all with the same
	 * dataset, job and rank, on one connection. The frames wait in the
	 * daemon until the last one, then the whole plan is registered (all or
	 * nothing): replaces (job, rank)'s plan, or extends it if the first
	 * frame has TC_PLAN_APPEND. Every frame is answered.
	 * rep: u64 entries (of the sequence so far), u64 chunks (the plan's
	 *      chunk reads still ahead; 0 while frames wait), u8 registered
	 * Errors: ENOENT (no such dataset, or a path / index not in it: the
	 *      whole sequence is dropped), EINVAL (world_size 0, rank out of
	 *      range, bad kind or flags, a CONT frame with no sequence in
	 *      progress, too many entries), EBADMSG (payload does not decode). */
	TC_OP_PLAN_SET = 14,
	/* req: str dataset, u64 job, u32 rank. rep: empty. ENOENT: no plan. */
	TC_OP_PLAN_CANCEL = 15,

	/* Residency ops for admins and warmup (cached/handlers_admin.c
	 * documents them in full). All but WARM need an admin (EPERM).
	 * Each reply is a record set with an object section "result" of
	 * <what>_chunks / <what>_bytes counts.
	 *
	 * req: str "dataset/path" (a file), u8 tier (TC_TIER_HOT, TC_TIER_WARM,
	 *      TC_TIER_NONE: where placement puts it), u8 flags (TC_WARM_F_*),
	 *      u32 first chunk, u32 count (0: to the end of the file) */
	TC_OP_WARM = 16,
	/* req: str "dataset[/path]" (a file or a directory) */
	TC_OP_PIN = 17,
	TC_OP_UNPIN = 18,
	TC_OP_EVICT = 19,
	/* req: str "dataset[/path]", u8 to (TC_TIER_WARM) */
	TC_OP_DEMOTE = 20,
	/* req: str dataset ("" = every dataset) */
	TC_OP_VERIFY = 21,
	/* req: str dataset ("" = every dataset), u8 flags (TC_LC_F_*),
	 *      i64 older_than_s (-1: the datasets' demote_after/evict_after),
	 *      i64 as_of_s (reference time of the ages, 0: now) */
	TC_OP_LIFECYCLE = 22,

	/* Service ops (cached/handlers_service.c documents the payloads). */
	TC_OP_CONFIG_SHOW = 23,
	TC_OP_RELOAD = 24,

	/* Tag this connection's reads with a job (docs/plans.md): from then on
	 * its chunk reads advance only that job's plans, and only that rank's
	 * unless rank is TC_JOB_RANK_ANY. Untagged connections advance every
	 * plan that expects the read. A new connection starts untagged.
	 * req: u8 flags (TC_JOB_F_SET: tag; 0: remove the tag, job and rank
	 *      ignored), u64 job, u32 rank
	 * rep: empty. Errors: EINVAL (unknown flags), EBADMSG. */
	TC_OP_CONN_JOB = 25,

	/* Act for another user (docs/operations.md, "Access control"): from
	 * now on this connection's OPEN, STAT, LISTDIR and REFRESH are checked
	 * against these credentials instead of the peer's: the dataset's
	 * allow_users / allow_groups and, with access = source, the source
	 * file's modes. For a FUSE mount run by root that serves other users.
	 * Only an admin peer (root, the daemon's user, daemon.admin_group) may
	 * send it; it may be sent again to act for another user.
	 * req: u32 uid, u32 gid, u32 n (<= TC_ACT_GROUPS_MAX), n x u32 gid
	 *      (supplementary groups)
	 * rep: empty. Errors: EPERM (not an admin), EINVAL (uid or gid -1,
	 *      too many groups), EBADMSG. */
	TC_OP_ACT_AS = 26,

	/* req (flags: TC_F_WANT_CHUNK0): u32 count (1..TC_OPEN_MANY_MAX),
	 *      count x str "dataset/path"
	 * rep: u32 count, count x { u32 err; err != 0: str message;
	 *      err == 0: an OPEN reply's fields }, with one fd for each
	 *      record whose has_chunk is 1, in record order. Files fail
	 *      one by one; the frame fails only if it is malformed (EBADMSG)
	 *      or its count is 0 or past TC_OPEN_MANY_MAX (EINVAL).
	 * Each file gets an OPEN's checks and errors (ENOENT, EISDIR, EACCES,
	 * EINVAL, ENAMETOOLONG, EIO, EMFILE past the connection's handles);
	 * the reply waits for every revalidation. A file whose chunk 0 is not
	 * resident has has_chunk 0 and its fill is started (the client's
	 * CHUNK joins it). */
	TC_OP_OPEN_MANY = 27,

	/* Open-ahead from plans (docs/plans.md): open records for the next
	 * files of the plan(s) of this connection's job (TC_OP_CONN_JOB), in
	 * plan order, from the plan's position on; successive calls hand
	 * different files (the daemon keeps a cursor per connection). A
	 * handle handed ahead counts in the connection's handles and held
	 * bytes like any other, and at most TC_AHEAD_HANDLES_MAX of them (and
	 * a byte bound) are out at once per connection. A CLOSE of a handed
	 * handle without TC_F_AHEAD_UNUSED means the client used it: the
	 * daemon then records the access (plans, policy, hit) it replaced.
	 * req (flags: TC_F_NOREPLY allowed when want is 0): u32 want
	 *      (0..TC_REPLY_FDS_MAX), u32 nrel (<= TC_AHEAD_HANDLES_MAX),
	 *      nrel x u64 handle (handed ahead, released unused: closed),
	 *      then optionally a stride: u32 batch (1..TC_AHEAD_STRIDE_MAX),
	 *      u32 workers (1..TC_AHEAD_STRIDE_MAX), u32 index (< workers):
	 *      hand only the plan's samples i (counted from its epoch's
	 *      first, repeats and empty files included) with (i / batch) %
	 *      workers == index (a DataLoader worker's batches); it holds for the
	 *      connection until a request names another (workers 1: none)
	 * rep: u8 state (TC_AHEAD_*), u64 plan (an id, changes when the plan
	 *      is replaced), u32 count, count x { str "dataset/path",
	 *      u32 fresh_ms (use the record at most this long after the reply,
	 *      then open the file anew: the daemon would confirm its version
	 *      first), an OPEN reply's fields }, with one fd for each record
	 *      whose has_chunk is 1, in record order. */
	TC_OP_OPEN_AHEAD = 28,

	/* Access traces (admin; cached/api/handlers_trace.c has the payloads):
	 * TRACE_START req: str absolute path, str dataset ("" = all), u64
	 * max_bytes (0: 1 GiB); TRACE_STOP req: empty. rep: a record set with
	 * an object section "trace". */
	TC_OP_TRACE_START = 29,
	TC_OP_TRACE_STOP = 30,

	/* Drain this node of its cluster (admin; docs/cluster.md "Join, drain
	 * and leave"): req: u32 TC_DRAIN_ON or TC_DRAIN_OFF (undrain: up
	 * again). rep: empty; progress is in the status section "cluster"
	 * (drain, drain_chunks_*). EHOSTUNREACH: Redis unreachable; EINVAL:
	 * no [cluster]. */
	TC_OP_CLUSTER_DRAIN = 31,

	TC_OP_MAX_
};

/* WARM flags. */
#define TC_WARM_F_VERIFY 0x1u /* re-read each chunk and check its checksum */
#define TC_WARM_F_CHECK 0x2u  /* fill nothing: report what is resident */
/* LIFECYCLE flags. */
#define TC_LC_F_DRY_RUN 0x1u  /* report what it would do, change nothing */
/* TC_OP_PLAN_SET flags and kinds. */
#define TC_PLAN_APPEND 0x1u /* first frame: extend the plan instead of replacing it */
#define TC_PLAN_MORE 0x2u   /* more frames of this sequence follow */
#define TC_PLAN_CONT 0x4u   /* continues a sequence */
#define TC_PLAN_RESUME 0x8u /* first frame: a re-registration after a reconnect;
			     * the plan's position jumps to the first read of it
			     * the daemon sees, wherever it is in the plan */
#define TC_PLAN_JOB 0x10u   /* first frame: the list is the whole job's sample
			     * order; rank r reads entries i with
			     * i % world_size == r (DistributedSampler's
			     * interleave). Not with TC_PLAN_APPEND. */
#define TC_PLAN_PATHS 1u
#define TC_PLAN_INDICES 2u
#define TC_PLAN_ENTRIES_MAX (1u << 24) /* files in one registration */
/* TC_OP_CONN_JOB. */
#define TC_JOB_F_SET 0x1u
#define TC_JOB_RANK_ANY 0xffffffffu /* every rank of the job */
/* TC_OP_OPEN_AHEAD. */
#define TC_AHEAD_HANDLES_MAX 256u /* handed-ahead handles out per connection */
#define TC_AHEAD_NONE 0u    /* no plan for this connection's job: stop asking */
#define TC_AHEAD_PLAN 1u    /* a plan: the records follow it */
#define TC_AHEAD_STRIDE_MAX 65536u /* bound on a stride's batch and workers */
/* CLOSE of a handle handed by OPEN_AHEAD that the client never used. */
#define TC_F_AHEAD_UNUSED 0x8u
/* TC_OP_CLUSTER_DRAIN. */
#define TC_DRAIN_OFF 0u
#define TC_DRAIN_ON 1u
/* TC_OP_ACT_AS. */
#define TC_ACT_GROUPS_MAX 256u /* supplementary groups one ACT_AS carries */

enum tc_type {
	TC_TYPE_FILE = 1,
	TC_TYPE_DIR = 2,
};

enum tc_tier {
	TC_TIER_HOT = 0,
	TC_TIER_WARM = 1,
	TC_TIER_NONE = 255,
};

/*
 * Record sets: how the daemon reports structured, extensible data (status,
 * datasets) without a JSON library on either side.
 *   u32 nsections; each section:
 *     str name, u8 shape (TC_SHAPE_OBJECT: one record | TC_SHAPE_ARRAY),
 *     u32 nrecords; each record: u32 nfields; each field:
 *       str key, u8 type (TC_VAL_*), value (u64 | i64 | str | u8 bool)
 * A client renders this as JSON ({"section": {...} or [...]}) or as tables.
 */
enum tc_shape {
	TC_SHAPE_OBJECT = 1,
	TC_SHAPE_ARRAY = 2,
};

enum tc_val {
	TC_VAL_U64 = 1,
	TC_VAL_I64 = 2,
	TC_VAL_STR = 3,
	TC_VAL_BOOL = 4,
};

#endif
