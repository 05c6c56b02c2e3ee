/* rh_config.c: the runtime's settings, from the environment.
 *
 * RHEAPER_ENABLE, RHEAPER_PROFILE_DIR, RHEAPER_MAX_STACK_DEPTH,
 * RHEAPER_MAX_TRACKERS, RHEAPER_BUFFER_SIZE, RHEAPER_SCOPE, the recording
 * control RHEAPER_SIGNAL, RHEAPER_PROFILE_NAME and RHEAPER_MAX_PROFILE_SIZE, the
 * sampling variables (RHEAPER_SAMPLE_RATE / _BYTES / _SEED), for streaming
 * RHEAPER_STREAM, RHEAPER_STREAM_QUEUE and RHEAPER_STREAM_TIMEOUT, and for
 * CPU sampling RHEAPER_CPU_HZ, RHEAPER_CPU_SIGNAL and RHEAPER_HEAP are read once, on the first
 * wrapped call, with secure_getenv so setuid and setgid programs ignore them. A
 * bad value never stops the program: it gets one warning line and the default.
 * rheaper_enable() (rh_api.c) overlays its struct rheaper_config on top.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "rh_base.h"

RH_HIDDEN int rh_scope_process = 1;
/* RHEAPER_WALK_CACHE: 0 turns the stack walk's cache off (rh_stack.c). */
RH_HIDDEN int rh_wc_on = 1;

RH_HIDDEN struct rh_config rh_cfg = {
    .enable = 0,
    .max_stack_depth = RH_DEFAULT_STACK_DEPTH,
    .max_trackers = RH_DEFAULT_TRACKERS,
    .buffer_size = RH_DEFAULT_BUFFER,
    .profile_dir = ".",
    .ctl_signal = 0, /* rh_default_signal() at load: SIGRTMAX is not a constant */
    .stream_queue = RH_DEFAULT_STREAM_QUEUE,
    .stream_timeout = RH_DEFAULT_STREAM_TIMEOUT,
    .cpu_hz = 0,
    .cpu_signal = SIGPROF,
    .heap = 1,
    .populate = 0,
    .prefault = 1, /* RHEAPER_PREFAULT=0: see docs/environment.md */
    .rss_ms = RH_DEFAULT_RSS_MS,
};

int rh_default_signal(void)
{
    /* Far from SIGRTMIN, where POSIX timers (SIGEV_SIGNAL) and libraries that
     * need one real-time signal usually take theirs; queued, never merged. */
    return SIGRTMAX - 5;
}

static const struct {
    const char *name;
    int sig;
} rh_signames[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT},   {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"PIPE", SIGPIPE},   {"ALRM", SIGALRM},   {"TERM", SIGTERM},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},
    {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},   {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"POLL", SIGPOLL},   {"PWR", SIGPWR},
    {"SYS", SIGSYS},
};

int rh_parse_signal(const char *s)
{
    unsigned v;
    if (!s || !*s)
        return -1;
    if (!strncmp(s, "SIG", 3))
        s += 3;
    if (rh_parse_uint(s, 1, (unsigned)SIGRTMAX, &v) == 0)
        return (int)v;
    for (size_t i = 0; i < sizeof rh_signames / sizeof rh_signames[0]; i++)
        if (!strcmp(s, rh_signames[i].name))
            return rh_signames[i].sig;
    int base = 0, dir = 0;
    if (!strncmp(s, "RTMIN", 5)) {
        base = SIGRTMIN;
        dir = 1;
    } else if (!strncmp(s, "RTMAX", 5)) {
        base = SIGRTMAX;
        dir = -1;
    } else {
        return -1;
    }
    s += 5;
    if (!*s)
        return base;
    if ((dir > 0 && *s != '+') || (dir < 0 && *s != '-'))
        return -1;
    if (rh_parse_uint(s + 1, 0, (unsigned)(SIGRTMAX - SIGRTMIN), &v) != 0)
        return -1;
    return base + dir * (int)v;
}

/* ---- RHEAPER_STREAM: the collector's address (rh_stream.c sends to it) ---- */

/* The collector's address, parsed once from RHEAPER_STREAM. */
RH_HIDDEN struct sockaddr_storage rh_stream_addr;
RH_HIDDEN socklen_t rh_stream_addrlen;

/* Parses HOST:PORT (numeric IPv4, [IPv6] or localhost) into rh_stream_addr.
 * Returns 0, or -1 when it is not one. */
static int rh_stream_parse_addr(const char *spec)
{
    char host[128];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host)
        return -1;
    unsigned port;
    if (rh_parse_uint(colon + 1, 1, 65535, &port) != 0)
        return -1;
    size_t n = (size_t)(colon - spec);
    memcpy(host, spec, n);
    host[n] = '\0';
    memset(&rh_stream_addr, 0, sizeof rh_stream_addr);
    if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&rh_stream_addr;
        host[n - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
            return -1;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        rh_stream_addrlen = sizeof *a;
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)&rh_stream_addr;
    if (!strcmp(host, "localhost"))
        memcpy(host, "127.0.0.1", 10);
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return -1;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    rh_stream_addrlen = sizeof *a;
    return 0;
}

/* Set once, from RHEAPER_STREAM, before any recording; read by every thread
 * (rh_cfg itself is rewritten whole by rheaper_enable while threads run). */
static int rh_stream_is_on;

int rh_stream_on(void)
{
    return __atomic_load_n(&rh_stream_is_on, __ATOMIC_RELAXED);
}

/* SIZE with an optional k, M or G suffix (powers of 1024). 0 on error. */
static uint64_t rh_parse_size(const char *s)
{
    uint64_t v = 0;
    const char *p = s;
    if (!*p)
        return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == s)
        return 0;
    unsigned shift = 0;
    if (*p == 'k' || *p == 'K')
        shift = 10;
    else if (*p == 'm' || *p == 'M')
        shift = 20;
    else if (*p == 'g' || *p == 'G')
        shift = 30;
    else if (*p)
        return 0;
    if (shift) {
        p++;
        if (*p == 'i' && p[1] == 'B')
            p += 2;
        else if (*p == 'B')
            p++;
        if (*p)
            return 0;
    }
    if (v > (UINT64_MAX >> shift))
        return 0;
    return v << shift;
}

/* A decimal fraction such as 0.01, .5, 1, 1e-3 or 2.5E-4 into *out. Returns 0,
 * or -1 when s is not one. No strtod: it may allocate for long inputs. */
static int rh_parse_fraction(const char *s, double *out)
{
    double v = 0.0, scale = 1.0;
    int digits = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        v = v * 10.0 + (*p - '0');
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            v += (*p - '0') * (scale *= 0.1);
    if (!digits)
        return -1;
    if (*p == 'e' || *p == 'E') {
        int neg = 0, e = 0, ed = 0;
        p++;
        if (*p == '-' || *p == '+')
            neg = *p++ == '-';
        for (; *p >= '0' && *p <= '9' && e < 400; p++, ed++)
            e = e * 10 + (*p - '0');
        if (!ed)
            return -1;
        while (e-- > 0)
            v = neg ? v / 10.0 : v * 10.0;
    }
    if (*p)
        return -1;
    *out = v;
    return 0;
}

/* RHEAPER_SAMPLE_RATE, RHEAPER_SAMPLE_BYTES and RHEAPER_SAMPLE_SEED (
 * docs/sampling.md). Bytes win when both are set. */
static void rh_config_sampling(void)
{
    const char *rs = secure_getenv("RHEAPER_SAMPLE_RATE");
    const char *bs = secure_getenv("RHEAPER_SAMPLE_BYTES");
    const char *ss = secure_getenv("RHEAPER_SAMPLE_SEED");
    if (rs && *rs && !(bs && *bs)) {
        double r;
        if (rh_parse_fraction(rs, &r) != 0 || !(r > 0.0 && r <= 1.0)) {
            rh_warn("ignoring RHEAPER_SAMPLE_RATE=%s: expected 0 < r <= 1 such as 0.01; "
                    "recording every allocation",
                    rs);
        } else if (r < 1.0) {
            rh_cfg.sample_mode = RH_SAMPLE_RATE;
            rh_cfg.sample_threshold = (uint64_t)(r * 18446744073709551616.0);
            if (!rh_cfg.sample_threshold)
                rh_cfg.sample_threshold = 1;
        }
    }
    if (bs && *bs) {
        uint64_t v = rh_parse_size(bs);
        if (rs && *rs)
            rh_warn("RHEAPER_SAMPLE_BYTES and RHEAPER_SAMPLE_RATE both set; sampling by bytes");
        if (!v || v > ((uint64_t)1 << 40))
            rh_warn("ignoring RHEAPER_SAMPLE_BYTES=%s: expected a mean such as 524288 or 512k "
                    "(1 to 1T); recording every allocation",
                    bs);
        else {
            rh_cfg.sample_mode = RH_SAMPLE_BYTES;
            rh_cfg.sample_bytes = v;
        }
    }
    if (ss && *ss) {
        uint64_t v = 0;
        const char *p = ss;
        for (; *p >= '0' && *p <= '9' && v <= (UINT64_MAX - 9) / 10; p++)
            v = v * 10 + (uint64_t)(*p - '0');
        if (*p)
            rh_warn("ignoring RHEAPER_SAMPLE_SEED=%s: expected a decimal number", ss);
        else {
            rh_cfg.sample_seed = v;
            rh_cfg.sample_seeded = 1;
        }
    }
}

/* A template is a file name: no '/', only the % conversions we know. */
static int rh_name_template_ok(const char *t)
{
    if (!*t || strchr(t, '/') || !strcmp(t, ".") || !strcmp(t, ".."))
        return 0;
    for (const char *p = t; *p; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p != 'p' && *p != 't' && *p != 'e' && *p != 'n' && *p != '%')
            return 0;
    }
    return 1;
}

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
    /* first: where the other settings' warnings go */
    const char *lg = secure_getenv("RHEAPER_LOG");
    if (lg && rh_log_configure(lg) != 0)
        rh_warn("ignoring RHEAPER_LOG=%s: expected stderr, off, or a file name using only %%p "
                "%%t %%e %%%% (shorter than %u bytes)",
                lg, (unsigned)(RH_PATH_MAX - 320));
    const char *e = secure_getenv("RHEAPER_ENABLE");
    if (e && *e) {
        if (!strcmp(e, "1"))
            rh_cfg.enable = 1;
        else if (!strcmp(e, "signal"))
            rh_cfg.enable = RH_ENABLE_SIGNAL;
        else if (strcmp(e, "0") != 0)
            rh_warn("ignoring RHEAPER_ENABLE=%s: expected 1, signal or 0; tracking stays off", e);
    }
    rh_cfg.ctl_signal = rh_default_signal();
    const char *sg = secure_getenv("RHEAPER_SIGNAL");
    if (sg) {
        int v = rh_parse_signal(sg);
        if (v <= 0 || v == SIGKILL || v == SIGSTOP || v == SIGSEGV || v == SIGBUS ||
            v == SIGILL || v == SIGFPE || v == SIGABRT || v == SIGTRAP || v == SIGCHLD)
            rh_warn("ignoring RHEAPER_SIGNAL=%s: expected a signal such as USR2, PROF, "
                    "RTMIN+3, RTMAX-5 or a number; using %d",
                    sg, rh_cfg.ctl_signal);
        else
            rh_cfg.ctl_signal = v;
    }
    const char *nm = secure_getenv("RHEAPER_PROFILE_NAME");
    if (nm) {
        size_t n = strlen(nm);
        if (n >= sizeof rh_cfg.profile_name - 16 || !rh_name_template_ok(nm))
            rh_warn("ignoring RHEAPER_PROFILE_NAME=%s: expected a file name (no '/', "
                    "shorter than %zu bytes) using only %%p %%t %%e %%n %%%%; using rip-%%p",
                    nm, sizeof rh_cfg.profile_name - 16);
        else
            memcpy(rh_cfg.profile_name, nm, n + 1);
    }
    const char *ms = secure_getenv("RHEAPER_MAX_PROFILE_SIZE");
    if (ms && *ms) {
        uint64_t v = rh_parse_size(ms);
        if (v && v < 65536) {
            rh_warn("RHEAPER_MAX_PROFILE_SIZE=%s is below the 64k minimum; using 64k", ms);
            v = 65536;
        }
        if (!v && strcmp(ms, "0") != 0)
            rh_warn("ignoring RHEAPER_MAX_PROFILE_SIZE=%s: expected a size such as 500M, "
                    "64k or 2G; no limit",
                    ms);
        rh_cfg.max_profile_size = v;
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
    /* Streaming to a collector (rh_stream.c). A bad address keeps
     * tracking off rather than filling a disk the user meant to spare. */
    const char *st = secure_getenv("RHEAPER_STREAM");
    if (st && *st) {
        if (strlen(st) >= sizeof rh_cfg.stream || rh_stream_parse_addr(st) != 0) {
            rh_warn("ignoring RHEAPER_STREAM=%s: expected HOST:PORT with a numeric IPv4 "
                    "address, [IPv6] or localhost; tracking stays off",
                    st);
            rh_cfg.enable = 0;
        } else {
            memcpy(rh_cfg.stream, st, strlen(st) + 1);
            __atomic_store_n(&rh_stream_is_on, 1, __ATOMIC_RELAXED);
        }
    }
    const char *sq = secure_getenv("RHEAPER_STREAM_QUEUE");
    if (sq && *sq) {
        uint64_t v = rh_parse_size(sq);
        if (!v)
            rh_warn("ignoring RHEAPER_STREAM_QUEUE=%s: expected a size such as 64M; using 64M", sq);
        else if (v < RH_MIN_STREAM_QUEUE)
            rh_warn("RHEAPER_STREAM_QUEUE=%s is below the 1M minimum; using 1M", sq);
        rh_cfg.stream_queue = !v ? RH_DEFAULT_STREAM_QUEUE
                                 : v < RH_MIN_STREAM_QUEUE ? RH_MIN_STREAM_QUEUE : v;
    }
    rh_env_uint("RHEAPER_STREAM_TIMEOUT", 1, 3600, &rh_cfg.stream_timeout);
    /* CPU sampling */
    rh_env_uint("RHEAPER_CPU_HZ", 0, RH_MAX_CPU_HZ, &rh_cfg.cpu_hz);
    rh_env_uint("RHEAPER_RSS_MS", 0, RH_MAX_RSS_MS, &rh_cfg.rss_ms); /* rh_memsample.c */
    const char *cs = secure_getenv("RHEAPER_CPU_SIGNAL");
    if (cs) {
        int v = rh_parse_signal(cs);
        if (v <= 0 || v == SIGKILL || v == SIGSTOP || v == SIGSEGV || v == SIGBUS ||
            v == SIGILL || v == SIGFPE || v == SIGABRT || v == SIGTRAP || v == SIGCHLD ||
            v == rh_cfg.ctl_signal)
            rh_warn("ignoring RHEAPER_CPU_SIGNAL=%s: expected a signal such as PROF or "
                    "RTMIN+4, not the toggle signal; using %d",
                    cs, rh_cfg.cpu_signal);
        else
            rh_cfg.cpu_signal = v;
    }
    const char *hp = secure_getenv("RHEAPER_HEAP");
    if (hp && *hp) {
        if (!strcmp(hp, "0"))
            rh_cfg.heap = 0;
        else if (strcmp(hp, "1") != 0)
            rh_warn("ignoring RHEAPER_HEAP=%s: expected 1 or 0; the heap is recorded", hp);
    }
    rh_env_uint("RHEAPER_MAX_STACK_DEPTH", 1, RH_MAX_STACK_DEPTH, &rh_cfg.max_stack_depth);
    {
        unsigned wc = 1; /* the walk cache (rh_stack.c); 0 for comparisons */
        rh_env_uint("RHEAPER_WALK_CACHE", 0, 1, &wc);
        __atomic_store_n(&rh_wc_on, (int)wc, __ATOMIC_RELAXED);
    }
    rh_env_uint("RHEAPER_MAX_TRACKERS", 1, RH_MAX_TRACKERS, &rh_cfg.max_trackers);
    rh_env_uint("RHEAPER_BUFFER_SIZE", RH_MIN_BUFFER, RH_MAX_BUFFER, &rh_cfg.buffer_size);
    rh_config_sampling();
    const char *pp = secure_getenv("RHEAPER_POPULATE");
    if (pp && *pp) {
        if (!strcmp(pp, "0") || !strcmp(pp, "1"))
            rh_cfg.populate = *pp == '1';
        else
            rh_warn("ignoring RHEAPER_POPULATE=%s: expected 0 or 1", pp);
    }
    {
        unsigned pf = (unsigned)rh_cfg.prefault;
        rh_env_uint("RHEAPER_PREFAULT", 0, 1, &pf);
        rh_cfg.prefault = (int)pf;
    }
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
