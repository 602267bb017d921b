/*
 * tcp_floor: what loopback TCP allows for moving chunks from one process to
 * another, the floor of the cluster's peer path (bench/cluster.sh).
 *
 *   tcp_floor [--chunk BYTES] [--streams K] [--sync] [--write DIR | --fill DIR] FILE...
 *
 * A sender sendfile()s every FILE, chunk by chunk, over one loopback TCP
 * connection to a receiver (a child process) that recv()s each chunk into
 * a buffer, as the peer client does; with --write the receiver also writes
 * each file to a new file in DIR, kept until every file is in (as a
 * fill keeps its copy: the pages are new ones, not recycled) and then
 * unlinked. With --fill the receiver does what any fill that keeps a
 * checked copy must: each chunk goes to a file of its own, written under a
 * temporary name, its XXH3 computed, then renamed to its final name (the
 * peer client's fill also records it in the index and syncs it later; not
 * here). Request and reply per chunk, as the peer protocol does: the
 * receiver asks for the next chunk with one byte when the last one is in.
 * With --streams K (1..16), K such sender/receiver pairs run at once, each
 * over its own connection and every K-th FILE: K chunks in flight, as a
 * peer read with read-ahead has several (bench/cluster.sh uses the
 * daemon's readahead_chunks). Prints one line: "tcp_floor MB/s M
 * cpu_s_per_gb C send_s_per_gb S recv_s_per_gb V" (M: all bytes over the
 * wall time of all streams; C: every process, user + system; S and V: of
 * C, the senders' and the receivers' own, getrusage of each).
 * With --sync (and --write or --fill) the receiver also makes its copies
 * durable as the daemon's lazy sync does (cached/cache/durable.c): in
 * batches of up to 64 files, writeback started for each
 * (sync_file_range), then each fdatasync'ed; a batch is synced once it is
 * full and at the end, before the copies are unlinked. That is the CPU
 * floor of a peer path that keeps a synced copy (bench/cluster_xfer.sh).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xxhash.h>

#include "lib_bench.h"

static void die(const char *what)
{
	fprintf(stderr, "tcp_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

#define SYNC_BATCH 64 /* files per batch, as durable.c's DURABLE_BATCH_MAX */

/* --sync: files written and not yet synced (their descriptors, open). */
struct sync_batch {
	bool on;
	int fds[SYNC_BATCH];
	unsigned n;
};

static void sync_flush(struct sync_batch *b)
{
	for (unsigned i = 0; i < b->n; i++)
		(void)sync_file_range(b->fds[i], 0, 0, SYNC_FILE_RANGE_WRITE);
	for (unsigned i = 0; i < b->n; i++) {
		if (fdatasync(b->fds[i]) < 0)
			die("fdatasync a copy");
		close(b->fds[i]);
	}
	b->n = 0;
}

/* A copy is written: close it, or (--sync) keep it open for its batch. */
static void sync_add(struct sync_batch *b, int fd)
{
	if (!b->on) {
		close(fd);
		return;
	}
	b->fds[b->n++] = fd;
	if (b->n == SYNC_BATCH)
		sync_flush(b);
}

/* CPU seconds (user + system) of who (RUSAGE_SELF or RUSAGE_CHILDREN). */
static double cpu_s(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int recv_all(int fd, char *p, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, p, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* --fill: chunk k of file f as a file of its own, checked and renamed. */
static void fill_chunk(const char *dir, unsigned f, uint64_t k, const char *buf, size_t n,
		       struct sync_batch *b)
{
	char tmp[4096], path[4096];
	snprintf(tmp, sizeof(tmp), "%s/tcp_floor.%d.%u.%llu.tmp", dir, (int)getpid(), f, (unsigned long long)k);
	snprintf(path, sizeof(path), "%s/tcp_floor.%d.%u.%llu", dir, (int)getpid(), f, (unsigned long long)k);
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (out < 0 || write(out, buf, n) != (ssize_t)n)
		die(tmp);
	volatile XXH64_hash_t h = XXH3_64bits(buf, n);
	(void)h;
	if (rename(tmp, path) < 0)
		die(path);
	sync_add(b, out); /* the daemon syncs after the rename too (fill.c, durable.c) */
}

/* The receiver: for each file, its size (u64) then its chunks. */
static int receive(int fd, size_t chunk, const char *dir, bool fill, bool sync)
{
	struct sync_batch b = {.on = sync};
	char *buf = malloc(chunk);
	unsigned files = 0;
	if (!buf)
		return -1;
	for (unsigned k = 0;; k++) {
		uint64_t size;
		if (recv_all(fd, (char *)&size, sizeof(size)) < 0)
			break; /* the sender is done */
		int out = -1;
		char path[4096];
		if (dir && !fill) {
			snprintf(path, sizeof(path), "%s/tcp_floor.%d.%u", dir, (int)getpid(), k);
			out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (out < 0)
				die(path);
		}
		for (uint64_t off = 0; off < size; off += chunk) {
			size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
			if (write(fd, "g", 1) != 1 || recv_all(fd, buf, n) < 0)
				die("receive a chunk");
			if (out >= 0 && pwrite(out, buf, n, (off_t)off) != (ssize_t)n)
				die("write the copy");
			if (fill)
				fill_chunk(dir, k, off / chunk, buf, n, &b);
		}
		if (out >= 0)
			sync_add(&b, out);
		files = k + 1;
	}
	sync_flush(&b);
	for (unsigned k = 0; dir && k < files; k++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/tcp_floor.%d.%u", dir, (int)getpid(), k);
		unlink(path);
		for (uint64_t c = 0; fill; c++) {
			snprintf(path, sizeof(path), "%s/tcp_floor.%d.%u.%llu", dir, (int)getpid(), k,
				 (unsigned long long)c);
			if (unlink(path) < 0)
				break;
		}
	}
	free(buf);
	return 0;
}

/* One stream: files[0..n) every K-th, sent over a connection of its own
 * to a receiver child. Exits the process: 0 or 1; cpu[0] is set to its
 * own CPU seconds, cpu[1] to its receiver's. */
static void stream(size_t chunk, const char *dir, bool fill, bool sync, char **files, int n, int k,
		   int streams, double *cpu)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &al) < 0)
		die("listen on loopback");
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		int fd = accept(ls, NULL, NULL);
		if (fd < 0)
			die("accept");
		_exit(receive(fd, chunk, dir, fill, sync) < 0 ? 1 : 0);
	}
	close(ls);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int i = k; i < n; i += streams) {
		int in = open(files[i], O_RDONLY);
		struct stat st;
		if (in < 0 || fstat(in, &st) < 0)
			die(files[i]);
		uint64_t size = (uint64_t)st.st_size;
		if (send(fd, &size, sizeof(size), 0) != (ssize_t)sizeof(size))
			die("send a size");
		for (uint64_t off = 0; off < size; off += chunk) {
			char g;
			if (recv_all(fd, &g, 1) < 0)
				die("the receiver's request");
			off_t o = (off_t)off;
			size_t left = size - off < chunk ? (size_t)(size - off) : chunk;
			while (left) {
				ssize_t s = sendfile(fd, in, &o, left);
				if (s < 0 && errno == EINTR)
					continue;
				if (s <= 0)
					die("sendfile");
				left -= (size_t)s;
			}
		}
		close(in);
	}
	shutdown(fd, SHUT_WR);
	int status;
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "tcp_floor: the receiver failed\n");
		_exit(1);
	}
	close(fd);
	cpu[0] = cpu_s(RUSAGE_SELF);
	cpu[1] = cpu_s(RUSAGE_CHILDREN);
	_exit(0);
}

int main(int argc, char **argv)
{
	size_t chunk = 1u << 20;
	const char *dir = NULL;
	bool fill = false, sync = false;
	int streams = 1;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
			chunk = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--streams") && i + 1 < argc)
			streams = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sync"))
			sync = true;
		else if (!strcmp(argv[i], "--write") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--fill") && i + 1 < argc)
			dir = argv[++i], fill = true;
		else
			break;
	}
	if (i >= argc || chunk == 0 || chunk > (64u << 20) || streams < 1 || streams > 16 || (sync && !dir)) {
		fprintf(stderr, "usage: tcp_floor [--chunk BYTES] [--streams 1..16] [--sync] [--write DIR | --fill DIR] "
				"FILE...\n(--sync needs --write or --fill)\n");
		return 2;
	}
	uint64_t total = 0;
	for (int j = i; j < argc; j++) {
		struct stat st;
		if (stat(argv[j], &st) < 0)
			die(argv[j]);
		total += (uint64_t)st.st_size;
	}
	/* per stream: its sender's and its receiver's CPU seconds */
	double *cpus = mmap(NULL, 2 * 16 * sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cpus == MAP_FAILED)
		die("mmap");
	double t0 = bench_now();
	pid_t kids[16];
	for (int k = 0; k < streams; k++) {
		kids[k] = fork();
		if (kids[k] < 0)
			die("fork");
		if (kids[k] == 0)
			stream(chunk, dir, fill, sync, argv + i, argc - i, k, streams, cpus + 2 * k);
	}
	int failed = 0;
	for (int k = 0; k < streams; k++) {
		int status;
		if (waitpid(kids[k], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	}
	if (failed) {
		fprintf(stderr, "tcp_floor: a stream failed\n");
		return 1;
	}
	double t1 = bench_now();
	double cpu = cpu_s(RUSAGE_CHILDREN), send = 0, recv = 0;
	for (int k = 0; k < streams; k++) {
		send += cpus[2 * k];
		recv += cpus[2 * k + 1];
	}
	double g = total / 1e9;
	printf("tcp_floor MB/s %.0f cpu_s_per_gb %.3f send_s_per_gb %.3f recv_s_per_gb %.3f\n", total / (t1 - t0) / 1e6,
	       cpu / g, send / g, recv / g);
	return 0;
}
