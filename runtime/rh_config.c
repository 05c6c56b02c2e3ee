/* rh_config.c: the runtime's settings, from the environment.
 *
 * RHEAPER_ENABLE, RHEAPER_PROFILE_DIR, RHEAPER_MAX_STACK_DEPTH,
 * RHEAPER_MAX_TRACKERS, RHEAPER_BUFFER_SIZE and RHEAPER_SCOPE are read once, on the first
 * wrapped call, with secure_getenv so setuid and setgid programs ignore them. A
 * bad value never stops the program: it gets one warning line and the default.
 * rheaper_enable() (rh_api.c) overlays its struct rheaper_config on top.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "rh_runtime.h"

RH_HIDDEN int rh_scope_process = 1;

RH_HIDDEN struct rh_config rh_cfg = {
    .enable = 0,
    .max_stack_depth = RH_DEFAULT_STACK_DEPTH,
    .max_trackers = RH_DEFAULT_TRACKERS,
    .buffer_size = RH_DEFAULT_BUFFER,
    .profile_dir = ".",
};

int rh_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
    if (!s || !*s)
        return -1;
    unsigned long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (unsigned)(*p - '0');
        if (v > max)
            return -1;
    }
    if (v < min)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* Reads one numeric variable into *dst, keeping the default on a bad value. */
static void rh_env_uint(const char *name, unsigned min, unsigned max, unsigned *dst)
{
    const char *s = secure_getenv(name);
    if (!s)
        return;
    if (rh_parse_uint(s, min, max, dst) != 0)
        rh_warn("ignoring %s=%s: expected a number from %u to %u; using %u", name, s, min, max,
                *dst);
}

void rh_config_load_env(void)
{
    const char *e = secure_getenv("RHEAPER_ENABLE");
    if (e && *e) {
        if (!strcmp(e, "1"))
            rh_cfg.enable = 1;
        else if (strcmp(e, "0") != 0)
            rh_warn("ignoring RHEAPER_ENABLE=%s: expected 1 or 0; tracking stays off", e);
    }
    const char *d = secure_getenv("RHEAPER_PROFILE_DIR");
    if (d) {
        size_t n = strlen(d);
        if (!n || n >= sizeof rh_cfg.profile_dir - 64)
            rh_warn("ignoring RHEAPER_PROFILE_DIR: empty or longer than %zu bytes; using \".\"",
                    sizeof rh_cfg.profile_dir - 64);
        else
            memcpy(rh_cfg.profile_dir, d, n + 1);
    }
    const char *sc = secure_getenv("RHEAPER_SCOPE");
    if (sc && *sc) {
        if (!strcmp(sc, "program"))
            rh_scope_process = 0;
        else if (strcmp(sc, "process") != 0)
            rh_warn("ignoring RHEAPER_SCOPE=%s: expected process or program; using process", sc);
    }
    rh_env_uint("RHEAPER_MAX_STACK_DEPTH", 1, RH_MAX_STACK_DEPTH, &rh_cfg.max_stack_depth);
    rh_env_uint("RHEAPER_MAX_TRACKERS", 1, RH_MAX_TRACKERS, &rh_cfg.max_trackers);
    rh_env_uint("RHEAPER_BUFFER_SIZE", RH_MIN_BUFFER, RH_MAX_BUFFER, &rh_cfg.buffer_size);
}

uint32_t rh_config_max_chunk(void)
{
    /* 8 bytes per event is a generous average (FORMAT.md events are 3-6 bytes);
     * 16 KiB is the floor so the largest stack record (1024 frames) fits. */
    uint64_t bytes = (uint64_t)rh_cfg.buffer_size * 8u + RIP_CHUNK_HDR_SIZE;
    bytes = (bytes + RIP_ALIGN - 1) & ~(uint64_t)(RIP_ALIGN - 1);
    if (bytes < 16384)
        bytes = 16384;
    if (bytes > RIP_CHUNK_MAX_CAPACITY)
        bytes = RIP_CHUNK_MAX_CAPACITY;
    return (uint32_t)bytes;
}
