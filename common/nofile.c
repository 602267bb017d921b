/* Raising the descriptor limit (see nofile.h). */
#include "nofile.h"

#include <sys/resource.h>

uint64_t tc_nofile_raise(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = {.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl.rlim_cur = rl.rlim_max;
	}
	return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}
