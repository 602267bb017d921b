/*
 * The tiers, named once for the whole project: the daemon's configuration
 * (cached/config.h) and the placement decisions (placement.h) both use this
 * enum. Kept in policy/ because the policies must not include the daemon's
 * headers; the daemon may include the policies'.
 */
#ifndef TIERCACHE_POLICY_TIER_ID_H
#define TIERCACHE_POLICY_TIER_ID_H

enum tier_id {
	TIER_HOT = 0,
	TIER_WARM = 1,
	TIER_COUNT = 2,
};

#endif
