/* tierctl trace start/stop (cmd_trace.c). */
#ifndef TIERCACHE_TIERCTL_CMD_TRACE_H
#define TIERCACHE_TIERCTL_CMD_TRACE_H

#include "tierctl.h"

#define TIERCTL_TRACE_USAGE "start [--dataset D] [--max-bytes N] [--json] FILE | stop [--json]"
#define TIERCTL_TRACE_SUMMARY "record every chunk access to a CSV for tiercache-sim (admin)"

int tierctl_cmd_trace(struct tiercache *tc, int argc, char **argv);

#endif
