/*
 * seccomp_exec: run a command where openat2 does not exist, as on a kernel
 * before 5.6 or under a container's seccomp profile that refuses it.
 *
 *   seccomp_exec COMMAND [ARG...]
 *
 * Installs a seccomp-bpf filter that fails openat2 with ENOSYS and allows
 * every other system call, then execs COMMAND (the filter is inherited
 * across exec and by every thread and child). The posix cold backend then
 * takes its fallback path (tests/integration/t_posix_symlinks.sh). Only
 * x86_64 and aarch64 are known; elsewhere it refuses (exit 125) rather than
 * run the command unfiltered and let a test pass for the wrong reason.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define SC_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SC_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef __NR_openat2
#define __NR_openat2 437 /* the same number on every architecture */
#endif

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: seccomp_exec COMMAND [ARG...]\n");
		return 125;
	}
#ifndef SC_ARCH
	fprintf(stderr, "seccomp_exec: unknown architecture; refusing to run unfiltered\n");
	return 125;
#else
	struct sock_filter prog[] = {
		/* a foreign architecture's call numbers mean something else: kill */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SC_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {.len = sizeof(prog) / sizeof(prog[0]), .filter = prog};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		fprintf(stderr, "seccomp_exec: PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
		return 125;
	}
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0) {
		fprintf(stderr, "seccomp_exec: SECCOMP_SET_MODE_FILTER: %s\n", strerror(errno));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "seccomp_exec: %s: %s\n", argv[1], strerror(errno));
	return 127;
#endif
}
