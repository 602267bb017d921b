/*
 * tierctl advise: a recorded trace's what-if, in words (cmd_advise.c).
 */
#ifndef TIERCACHE_TIERCTL_CMD_ADVISE_H
#define TIERCACHE_TIERCTL_CMD_ADVISE_H

#include "tierctl.h"

#define TIERCTL_ADVISE_USAGE "TRACE [--hot SIZE [--warm SIZE]] [--policy LIST] [--sample R]"
#define TIERCTL_ADVISE_SUMMARY "best policy for a recorded trace, and what more hot or warm gives"

int tierctl_cmd_advise(struct tiercache *tc, int argc, char **argv);

#endif
