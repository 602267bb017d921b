/*
 * The Lua scripts of the plan sharing (plan_share.c), each run with EVAL:
 * publish, refresh, cancel and list. Their arguments and replies are
 * described at each script (plan_share_lua.c).
 */
#ifndef TIERCACHE_PLAN_SHARE_LUA_H
#define TIERCACHE_PLAN_SHARE_LUA_H

extern const char plan_share_publish_script[];
extern const char plan_share_refresh_script[];
extern const char plan_share_cancel_script[];
extern const char plan_share_list_script[];

#endif
