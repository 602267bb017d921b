/*
 * fuse_floor: the cheapest FUSE file system that shows a given tree, for
 * bench/mount.sh. It answers every request from memory (no daemon, no
 * disk, no data but zeros), so what a program pays to read through it is
 * what the kernel's FUSE round trips alone cost on this machine: a ceiling
 * for any FUSE file system, tiercache-mount included, measured in the same
 * run as the local reads it is compared with.
 *
 *   fuse_floor [--empty] [--no-open] [--direct] LIST MOUNTPOINT
 *
 * LIST has one line per file: "SIZE PATH", PATH relative (directories are
 * made from the paths). --empty shows every file with size 0, so reading
 * it costs LOOKUP, OPEN and RELEASE and no READ; --no-open answers the
 * first OPEN with ENOSYS, after which the kernel sends no OPEN or RELEASE
 * at all (a first pass then costs one LOOKUP per file); --direct opens
 * files over 1 MiB with direct I/O, one READ per 1 MiB read(), as
 * tiercache-mount does by default. Entries and attributes are cached for
 * 60 s, as tiercache-mount's defaults. No listing (readdir answers ENOSYS):
 * the bench opens files by path. Runs in the foreground until
 * unmounted (fusermount3 -u) or signalled; exit 1 on a bad list or mount.
 *
 * Threads: libfuse's multithreaded loop; the tree is read-only once built.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#define FLOOR_TIMEOUT 60.0
#define FLOOR_DIRECT_MIN (1u << 20)
#define FLOOR_MAX_NODES (1u << 22)

struct node {
	char *name;
	uint64_t parent;
	uint64_t size;
	bool dir;
};

/* nodes[i] is inode i + 1 (the root, FUSE_ROOT_ID, is nodes[0]); slots
 * maps (parent, name) to an inode, open addressing, 0 = empty */
static struct node *nodes;
static size_t nnodes, nodes_cap;
static uint64_t *slots;
static size_t nslots = 1u << 13;
static char zeros[1u << 20];
static bool opt_empty, opt_no_open, opt_direct;

static size_t slot_of(uint64_t parent, const char *name)
{
	return (size_t)XXH3_64bits_withSeed(name, strlen(name), parent) & (nslots - 1);
}

static uint64_t find(uint64_t parent, const char *name)
{
	for (size_t i = slot_of(parent, name);; i = (i + 1) & (nslots - 1)) {
		uint64_t ino = slots[i];
		if (!ino)
			return 0;
		if (nodes[ino - 1].parent == parent && !strcmp(nodes[ino - 1].name, name))
			return ino;
	}
}

static int grow_slots(void)
{
	size_t n = nslots * 2;
	uint64_t *s = calloc(n, sizeof(*s));
	if (!s)
		return -1;
	free(slots);
	slots = s;
	nslots = n;
	for (size_t ino = 1; ino <= nnodes; ino++) {
		size_t i = slot_of(nodes[ino - 1].parent, nodes[ino - 1].name);
		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = ino;
	}
	return 0;
}

/* The inode of PARENT/NAME, added if new; 0 on failure. */
static uint64_t add(uint64_t parent, const char *name, bool dir, uint64_t size)
{
	uint64_t ino = find(parent, name);
	if (ino)
		return nodes[ino - 1].dir == dir ? ino : 0;
	if (nnodes >= FLOOR_MAX_NODES)
		return 0;
	if (nnodes == nodes_cap) {
		size_t cap = nodes_cap ? nodes_cap * 2 : 1024;
		struct node *v = realloc(nodes, cap * sizeof(*v));
		if (!v)
			return 0;
		nodes = v;
		nodes_cap = cap;
	}
	if ((nnodes + 1) * 2 > nslots && grow_slots() < 0)
		return 0;
	char *copy = strdup(name);
	if (!copy)
		return 0;
	nodes[nnodes++] = (struct node){.name = copy, .parent = parent, .size = size, .dir = dir};
	ino = nnodes;
	size_t i = slot_of(parent, name);
	while (slots[i])
		i = (i + 1) & (nslots - 1);
	slots[i] = ino;
	return ino;
}

/* One "SIZE PATH" line into the tree. 0, or -1 (the line is bad). */
static int add_line(char *line)
{
	char *end, *path;
	unsigned long long size = strtoull(line, &end, 10);
	if (end == line || *end != ' ')
		return -1;
	path = end + 1;
	path[strcspn(path, "\n")] = '\0';
	uint64_t parent = FUSE_ROOT_ID;
	char *save = NULL;
	char *comp = strtok_r(path, "/", &save);
	while (comp) {
		char *next = strtok_r(NULL, "/", &save);
		parent = add(parent, comp, next != NULL, next ? 0 : (opt_empty ? 0 : size));
		if (!parent)
			return -1;
		comp = next;
	}
	return 0;
}

static void attr_of(uint64_t ino, struct stat *st)
{
	const struct node *n = &nodes[ino - 1];
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = n->dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = n->dir ? 2 : 1;
	st->st_size = (off_t)n->size;
}

static bool valid(fuse_ino_t ino)
{
	return ino >= 1 && ino <= nnodes;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	uint64_t ino = valid(parent) ? find(parent, name) : 0;
	if (!ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct fuse_entry_param e = {
		.ino = ino,
		.attr_timeout = FLOOR_TIMEOUT,
		.entry_timeout = FLOOR_TIMEOUT,
	};
	attr_of(ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	if (!valid(ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	attr_of(ino, &st);
	fuse_reply_attr(req, &st, FLOOR_TIMEOUT);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (opt_no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (!valid(ino) || nodes[ino - 1].dir) {
		fuse_reply_err(req, valid(ino) ? EISDIR : ENOENT);
		return;
	}
	fi->keep_cache = 1;
	fi->noflush = 1;
	fi->direct_io = opt_direct && nodes[ino - 1].size > FLOOR_DIRECT_MIN;
	fuse_reply_open(req, fi);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	uint64_t fsize = valid(ino) ? nodes[ino - 1].size : 0;
	if (off < 0 || (uint64_t)off >= fsize) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > fsize - (uint64_t)off)
		size = (size_t)(fsize - (uint64_t)off);
	if (size > sizeof(zeros))
		size = sizeof(zeros);
	fuse_reply_buf(req, zeros, size);
}

static void floor_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops floor_ops = {
	.lookup = floor_lookup,
	.getattr = floor_getattr,
	.open = floor_open,
	.read = floor_read,
	.release = floor_release,
};

static int load(const char *list)
{
	FILE *f = fopen(list, "r");
	char line[4096];
	unsigned lineno = 0;
	if (!f) {
		fprintf(stderr, "fuse_floor: %s: %s\n", list, strerror(errno));
		return -1;
	}
	slots = calloc(nslots, sizeof(*slots));
	if (!slots || !add(0, "", true, 0)) { /* the root: inode 1 */
		fprintf(stderr, "fuse_floor: out of memory\n");
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (add_line(line) < 0) {
			fprintf(stderr,
				"fuse_floor: %s:%u: not \"SIZE PATH\" (or a path that is both a "
				"file and a directory, or out of memory): fix the list\n",
				list, lineno);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	int a = 1;
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--empty"))
			opt_empty = true;
		else if (!strcmp(argv[a], "--no-open"))
			opt_no_open = true;
		else if (!strcmp(argv[a], "--direct"))
			opt_direct = true;
		else
			break;
	}
	if (argc - a != 2) {
		fprintf(stderr, "usage: fuse_floor [--empty] [--no-open] [--direct] LIST MOUNTPOINT\n");
		return 2;
	}
	if (load(argv[a]) < 0)
		return 1;
	char *fargv[] = {argv[0], "-o", "ro,fsname=fuse_floor", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &floor_ops, sizeof(floor_ops), NULL);
	fuse_opt_free_args(&args); /* libfuse may have added to them */
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, argv[a + 1]) != 0) {
		fprintf(stderr, "fuse_floor: cannot mount on %s\n", argv[a + 1]);
		fuse_session_destroy(se);
		return 1;
	}
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int rc = cfg ? fuse_session_loop_mt(se, cfg) : -1;
	fuse_loop_cfg_destroy(cfg);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc == 0 ? 0 : 1;
}
