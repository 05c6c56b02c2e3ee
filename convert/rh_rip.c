/* rh_rip.c: opening and indexing a rip file; the one reader of its chunks.
 *
 * The rip file (runtime/FORMAT.md) may be huge, so it is mapped read-only and
 * never copied. Opening validates the file header, walks the chunks by
 * 4096 + capacity rounded up, verifies the checksum of every sealed chunk, and
 * reads what the merge needs before the first event: the calibration pairs of
 * the clock, the module snapshots, the trailer, and the list of chunks of each
 * stream (one per slot, one for SHARED). Everything read from the file is
 * untrusted: every length is checked against the file before it is used, and
 * damage is either a one-line error (nothing to convert) or a warning plus the
 * damaged/cut_short flags (the rest converts). The same code runs on an
 * in-memory buffer for the fuzzer.
 *
 * Every reader of the format walks the chunks here, through one step
 * (rh_rip_at: what is at an offset, from a mapping or by pread) and one walk
 * (rh_rip_walk) with two sets of rules: a complete file's (the converter:
 * the end of the file or a bad header ends the walk, a bad checksum skips a
 * chunk) and a growing file's (the live view, rh_rip_follow_poll: what is not
 * written yet is waited for, damage is damage only when it lasts). `rheaper
 * list` scans with the same step and trailer decoder (rh_rip_scan).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_check.h"
#include "rh_core.h"
#include "rh_symbolize.h"
#include "rh_util.h"

#define RH_MAX_WARNINGS 20

void rh_rip_warn(struct rh_rip *r, const char *fmt, ...)
{
    r->nwarn++;
    if (!r->warn || r->nwarn > RH_MAX_WARNINGS + 1)
        return;
    if (r->nwarn == RH_MAX_WARNINGS + 1) {
        fprintf(r->warn, "rheaper-convert: %s: more warnings not shown\n", r->name);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fprintf(r->warn, "rheaper-convert: %s: ", r->name);
    vfprintf(r->warn, fmt, ap);
    fputc('\n', r->warn);
    va_end(ap);
}

static int rh_rip_fail(struct rh_rip *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int rh_rip_fail(struct rh_rip *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(r->err, sizeof r->err, "%s: ", r->name);
    if (n < 0 || (size_t)n >= sizeof r->err)
        n = 0;
    vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int rh_rip_oom(struct rh_rip *r)
{
    r->oom = 1;
    return rh_rip_fail(r, "out of memory");
}

/* ---- calibration ------------------------------------------------------- */

static void rh_calib_add(struct rh_rip *r, uint64_t tick, uint64_t ns)
{
    if (!tick && !ns)
        return;
    if (rh_grow(&r->calib, &r->capcalib, r->ncalib + 1, sizeof *r->calib))
        return; /* fewer pairs: coarser times, nothing worse */
    r->calib[r->ncalib].tick = tick;
    r->calib[r->ncalib].ns = ns;
    r->ncalib++;
}

static int rh_calib_cmp(const void *a, const void *b)
{
    const struct rh_calib *x = a, *y = b;
    if (x->tick != y->tick)
        return x->tick < y->tick ? -1 : 1;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* Sorts the pairs by tick and keeps a subsequence whose ns never decreases and
 * whose ticks strictly increase, so interpolation is monotone. The header pair
 * always exists (rh_rip_open adds it first). */
static void rh_calib_finish(struct rh_rip *r)
{
    if (r->ncalib > 1)
        qsort(r->calib, r->ncalib, sizeof *r->calib, rh_calib_cmp);
    size_t k = 0;
    for (size_t i = 0; i < r->ncalib; i++) {
        if (k && (r->calib[i].tick == r->calib[k - 1].tick || r->calib[i].ns < r->calib[k - 1].ns))
            continue;
        r->calib[k++] = r->calib[i];
    }
    r->ncalib = k;
    if (k >= 2 && r->calib[k - 1].ns > r->calib[0].ns) {
        r->rate_ns = r->calib[k - 1].ns - r->calib[0].ns;
        r->rate_ticks = r->calib[k - 1].tick - r->calib[0].tick;
    } else if (r->hdr.ticks_per_sec) {
        r->rate_ns = 1000000000ull;
        r->rate_ticks = r->hdr.ticks_per_sec;
    } else {
        r->rate_ns = 1; /* ticks are ns (CLOCK_MONOTONIC), or the best guess */
        r->rate_ticks = 1;
    }
}

static inline uint64_t rh_sat_u64(unsigned __int128 v)
{
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* a * b / c exactly, in 64 bits when a * b fits (most calls: a cheap
 * division), else in 128; saturated at UINT64_MAX. c > 0. */
static inline uint64_t rh_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t p;
    if (!__builtin_mul_overflow(a, b, &p))
        return p / c;
    return rh_sat_u64((unsigned __int128)a * b / c);
}

int64_t rh_rip_ns(const struct rh_rip *r, uint64_t time)
{
    size_t hint = 0;
    return rh_rip_ns_hint(r, time, &hint);
}

int64_t rh_rip_ns_hint(const struct rh_rip *r, uint64_t time, size_t *hint)
{
    unsigned shift = r->hdr.tick_shift;
    uint64_t tick = shift && time > (UINT64_MAX >> shift) ? UINT64_MAX : time << shift;
    const struct rh_calib *c = r->calib;
    size_t n = r->ncalib;
    uint64_t ns;
    if (!n) {
        ns = tick;
    } else if (tick < c[0].tick) {
        uint64_t d = rh_muldiv(c[0].tick - tick, r->rate_ns, r->rate_ticks);
        ns = d >= c[0].ns ? 0 : c[0].ns - d;
    } else if (tick >= c[n - 1].tick) {
        uint64_t d = rh_muldiv(tick - c[n - 1].tick, r->rate_ns, r->rate_ticks);
        ns = c[n - 1].ns + d < c[n - 1].ns ? UINT64_MAX : c[n - 1].ns + d;
    } else {
        size_t lo = *hint; /* c[lo].tick <= tick < c[lo + 1].tick */
        if (lo >= n - 1 || c[lo].tick > tick || c[lo + 1].tick <= tick) {
            lo = 0;
            size_t hi = n - 1; /* c[lo].tick <= tick < c[hi].tick */
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (c[mid].tick <= tick)
                    lo = mid;
                else
                    hi = mid;
            }
            *hint = lo;
        }
        size_t hi = lo + 1;
        ns = c[lo].ns + rh_muldiv(tick - c[lo].tick, c[hi].ns - c[lo].ns, c[hi].tick - c[lo].tick);
    }
    if (ns <= r->hdr.start_mono_ns)
        return 0;
    uint64_t rel = ns - r->hdr.start_mono_ns;
    return rel > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)rel;
}

/* ---- header -------------------------------------------------------------- */

/* Does argument a (n bytes) need quoting for a POSIX shell? Empty arguments
 * and any byte outside a conservative set of plain characters do. */
static int rh_rip_needs_quotes(const char *a, size_t n)
{
    if (!n)
        return 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)a[i];
        if (!c || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("_@%+=:,./-", c)))
            return 1;
    }
    return 0;
}

/* Fills r->cmdline from the header's NUL-separated arguments (cmd_len bytes):
 * the command line as a POSIX shell needs it typed, arguments separated by
 * one space, each that needs it in single quotes (an empty one as '', a quote
 * inside as '\''). A command line the runtime cut short ends in " ...". */
static void rh_rip_quote_cmdline(struct rh_rip *r, const char *cmd, size_t cmd_len)
{
    char *o = r->cmdline;
    for (size_t i = 0; cmd_len;) {
        const char *a = cmd + i;
        size_t n = strnlen(a, cmd_len - i);
        if (o != r->cmdline)
            *o++ = ' ';
        if (!rh_rip_needs_quotes(a, n)) {
            memcpy(o, a, n);
            o += n;
        } else {
            *o++ = '\'';
            for (size_t k = 0; k < n; k++) {
                if (a[k] == '\'') {
                    memcpy(o, "'\\''", 4);
                    o += 4;
                } else {
                    *o++ = a[k];
                }
            }
            *o++ = '\'';
        }
        i += n;
        if (i >= cmd_len)
            break;
        i++; /* the NUL between two arguments; one after the last starts an empty one */
    }
    if (r->hdr.flags & RIP_HDR_F_CMD_TRUNCATED) {
        memcpy(o, " ...", 4);
        o += 4;
    }
    *o = 0;
}

/* Validates and copies the file header. Fatal problems return -1 with r->err;
 * a checksum mismatch only warns (the fields are sanity-checked instead). */
uint32_t rh_rip_header_crc(const uint8_t *b)
{
    uint8_t copy[RIP_HEADER_SIZE];
    memcpy(copy, b, RIP_HEADER_SIZE);
    memset(copy + 72, 0, 4);
    return rip_crc32c(0, copy, RIP_HEADER_SIZE);
}

const char *rh_rip_header_check(const uint8_t *b, size_t n, struct rip_file_header *h,
                                int *crc_ok)
{
    if (n < 8 || memcmp(b, RIP_MAGIC, 8) != 0)
        return "not a rip file (bad magic)";
    if (n < RIP_HEADER_SIZE)
        return "file header cut short";
    memcpy(h, b, sizeof *h);
    if (h->version < RIP_VERSION_MIN || h->version > RIP_VERSION)
        return "unsupported rip format version";
    if (h->header_size != RIP_HEADER_SIZE)
        return "bad header size";
    if (crc_ok)
        *crc_ok = rh_rip_header_crc(b) == h->crc;
    return NULL;
}

static int rh_rip_header(struct rh_rip *r)
{
    if (r->size == 0)
        return rh_rip_fail(r, "empty file, not a rip file");
    if (r->size < 8 || memcmp(r->base, RIP_MAGIC, 8) != 0)
        return rh_rip_fail(r, "not a rip file (bad magic)");
    if (r->size < RIP_HEADER_SIZE)
        return rh_rip_fail(r, "file header cut short (%zu of %u bytes)", r->size, RIP_HEADER_SIZE);
    memcpy(&r->hdr, r->base, sizeof r->hdr);
    if (r->hdr.version < RIP_VERSION_MIN || r->hdr.version > RIP_VERSION)
        return rh_rip_fail(r, "unsupported rip format version %u at offset 8 (this reader: %u)",
                           r->hdr.version, RIP_VERSION);
    if (r->hdr.header_size != RIP_HEADER_SIZE)
        return rh_rip_fail(r, "bad header size %u at offset 12", r->hdr.header_size);
    if (r->hdr.version >= 3 && (r->hdr.flags & RIP_HDR_F_CPU)) { /* CPU sampling */
        memcpy(&r->cpu_hz, r->base + RIP_HDR_CPU_HZ_OFF, 4);
        memcpy(&r->cpu_signal, r->base + RIP_HDR_CPU_SIG_OFF, 4);
    }

    if (rh_rip_header_crc(r->base) != r->hdr.crc) {
        rh_rip_warn(r, "file header checksum mismatch at offset 72; header fields may be wrong");
        r->damaged = 1;
    }
    if (r->hdr.version >= 3 && (r->hdr.flags & RIP_HDR_F_SAMPLED)) {
        /* v3, sampling (FORMAT.md "Sampling") */
        uint64_t param;
        uint32_t mode;
        memcpy(&mode, r->base + RIP_HDR_SAMPLE_MODE_OFF, 4);
        memcpy(&r->sample_seeded, r->base + RIP_HDR_SAMPLE_MODE_OFF + 4, 4);
        memcpy(&param, r->base + RIP_HDR_SAMPLE_PARAM_OFF, 8);
        if (mode == RIP_SAMPLE_RATE && param) {
            r->sample_mode = mode;
            r->sample_rate = (double)param / 18446744073709551616.0;
        } else if ((mode == RIP_SAMPLE_BYTES || mode == RIP_SAMPLE_BYTES_BIG) && param &&
                   param <= (1ull << 40)) {
            r->sample_mode = RIP_SAMPLE_BYTES;
            r->sample_big = mode == RIP_SAMPLE_BYTES_BIG;
            r->sample_bytes = param;
        } else if (!r->damaged) {
            /* an intact header with a rule this reader does not know (a newer
             * rheaper's): its weights cannot be computed, so no figures */
            return rh_rip_fail(r, "sampling mode %u (parameter %llu) at offset 88 is not known "
                                  "to this reader: convert it with the rheaper that wrote it",
                               mode, (unsigned long long)param);
        } else {
            rh_rip_warn(r, "unknown sampling mode %u (parameter %llu) at offset 88 of a damaged "
                           "header; estimates use weight 1",
                        mode, (unsigned long long)param);
        }
    }
    if (r->hdr.tick_shift > 63)
        return rh_rip_fail(r, "bad tick shift %u at offset 52", r->hdr.tick_shift);

    size_t exe_len = r->hdr.exe_len < RIP_HDR_EXE_MAX ? r->hdr.exe_len : RIP_HDR_EXE_MAX;
    memcpy(r->exe, r->base + RIP_HDR_EXE_OFF, exe_len);
    r->exe[exe_len] = 0;
    size_t cmd_max = RIP_HDR_CMD_MAX;
    if (r->hdr.flags & RIP_HDR_F_ORIGIN) { /* servers: a fork child's first profile */
        const uint8_t *o = r->base + RIP_HDR_ORIGIN_OFF;
        uint32_t plen;
        memcpy(&r->origin_ppid, o, 4);
        memcpy(&plen, o + 4, 4);
        memcpy(&r->origin_mono_ns, o + 8, 8);
        memcpy(&r->origin_tick, o + 16, 8);
        if (plen > RIP_HDR_ORIGIN_PATH_MAX) {
            rh_rip_warn(r, "the fork origin's path length %u at offset %u is more than %u; "
                           "the parent's profile is not named",
                        plen, RIP_HDR_ORIGIN_OFF + 4, RIP_HDR_ORIGIN_PATH_MAX);
            plen = 0;
        }
        memcpy(r->origin_path, o + 24, plen);
        r->origin_path[plen] = 0;
        for (uint32_t i = 0; i < plen; i++)
            if (!r->origin_path[i]) /* a NUL inside: keep what precedes it */
                break;
        r->has_origin = 1;
        cmd_max = RIP_HDR_CMD_MAX_ORIGIN;
    }
    size_t cmd_len = r->hdr.cmd_len < cmd_max ? r->hdr.cmd_len : cmd_max;
    const char *cmd = (const char *)r->base + RIP_HDR_CMD_OFF;
    rh_rip_quote_cmdline(r, cmd, cmd_len);
    for (size_t i = 0; i < cmd_len; i++)
        r->args[i] = cmd[i] ? cmd[i] : ' ';
    while (cmd_len && r->args[cmd_len - 1] == ' ' && cmd[cmd_len - 1] == 0)
        cmd_len--;
    r->args[cmd_len] = 0;
    rh_calib_add(r, r->hdr.start_tick, r->hdr.start_mono_ns);
    return 0;
}

/* ---- MODULES and TRAILER ---------------------------------------------------- */

struct rh_cursor {
    const uint8_t *p, *end;
    int bad;
};

static uint64_t rh_cur_u(struct rh_cursor *c, unsigned n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

static const uint8_t *rh_cur_bytes(struct rh_cursor *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *q = c->p;
    c->p += n;
    return q;
}

static void rh_module_free(struct rh_module *m)
{
    free((void *)m->path);
    free((void *)m->build_id);
    free((void *)m->ranges);
}

/* Parses one MODULES snapshot and appends its modules. A damaged snapshot is
 * dropped entirely with a warning. Returns 0, or -1 on out-of-memory. */
static int rh_rip_modules(struct rh_rip *r, const struct rh_chunk *ch)
{
    struct rh_cursor c = {ch->payload, ch->payload + ch->used, 0};
    size_t first = r->nmods;
    rh_cur_u(&c, 8); /* snapshot tick */
    uint64_t count = rh_cur_u(&c, 4);
    if (count > RIP_MAX_MODULES)
        c.bad = 1;
    for (uint64_t i = 0; i < count && !c.bad; i++) {
        struct rh_module m = {0};
        m.base = rh_cur_u(&c, 8);
        size_t plen = rh_cur_u(&c, 2);
        const uint8_t *path = plen <= RIP_MAX_PATH ? rh_cur_bytes(&c, plen) : NULL;
        size_t blen = rh_cur_u(&c, 1);
        const uint8_t *bid = rh_cur_bytes(&c, blen);
        size_t nr = rh_cur_u(&c, 2);
        const uint8_t *rg = nr <= 4096 ? rh_cur_bytes(&c, nr * 16) : NULL;
        if (c.bad || !path || !rg) {
            c.bad = 1;
            break;
        }
        char *p = malloc(plen + 1);
        uint8_t *b = blen ? malloc(blen) : NULL;
        uint64_t *ranges = nr ? malloc(nr * 16) : NULL;
        if (!p || (blen && !b) || (nr && !ranges) ||
            rh_grow(&r->mods, &r->capmods, r->nmods + 1, sizeof *r->mods)) {
            free(p);
            free(b);
            free(ranges);
            return -1;
        }
        memcpy(p, path, plen);
        p[plen] = 0;
        if (blen)
            memcpy(b, bid, blen);
        if (nr)
            memcpy(ranges, rg, nr * 16);
        m.path = p;
        m.build_id = b;
        m.build_id_len = (unsigned)blen;
        m.ranges = ranges;
        m.nranges = (unsigned)nr;
        r->mods[r->nmods++] = m;
    }
    if (c.bad) {
        rh_rip_warn(r, "bad module list in chunk at offset %llu; its modules are ignored",
                    (unsigned long long)ch->off);
        r->damaged = 1;
        while (r->nmods > first)
            rh_module_free(&r->mods[--r->nmods]);
    }
    return 0;
}

const char *rh_rip_chunk_check(const struct rip_chunk_header *h)
{
    if (h->magic != RIP_CHUNK_MAGIC)
        return "bad magic";
    if (h->header_size != RIP_CHUNK_HDR_SIZE)
        return "bad header size";
    if (h->capacity > RIP_CHUNK_MAX_CAPACITY)
        return "capacity over 64 MiB";
    if (h->used > h->capacity)
        return "used beyond capacity";
    if (h->type < RIP_CHUNK_EVENTS || h->type > RIP_CHUNK_TRAILER)
        return "unknown chunk type";
    return NULL;
}

/* Reads the TRAILER chunk ch into r's tr_* fields (and its end time as a
 * calibration pair). Returns 1 when the trailer was read, 0 when it is too
 * short (a warning, r->damaged). */
static int rh_rip_trailer(struct rh_rip *r, const struct rh_chunk *ch)
{
    struct rh_cursor c = {ch->payload, ch->payload + ch->used, 0};
    uint64_t events = rh_cur_u(&c, 8), end_tick = rh_cur_u(&c, 8), end_ns = rh_cur_u(&c, 8);
    rh_cur_u(&c, 8); /* stacks defined */
    uint64_t lost = rh_cur_u(&c, 8);
    uint32_t open = (uint32_t)rh_cur_u(&c, 4);
    rh_cur_u(&c, 4); /* reserved */
    if (c.bad) {
        rh_rip_warn(r, "trailer at offset %llu is too short (%u bytes)",
                    (unsigned long long)ch->off, ch->used);
        r->damaged = 1;
        return 0;
    }
    r->has_trailer = 1;
    r->tr_events = events;
    r->tr_end_tick = end_tick;
    r->tr_end_ns = end_ns;
    r->tr_lost = lost;
    r->tr_open_chunks = open;
    /* v2: calls passed through unrecorded by re-entry (FORMAT.md) */
    r->tr_has_reentered = ch->used >= RIP_TRAILER_END_REASON_OFF;
    r->tr_reentered = r->tr_has_reentered ? rh_cur_u(&c, 8) : 0;
    /* v2: why the recording ended (RIP_END_SIZE_LIMIT: a clean cut) */
    r->tr_has_end_reason = ch->used >= RIP_TRAILER_END_REASON_OFF + 8;
    r->tr_end_reason = r->tr_has_end_reason ? (uint32_t)rh_cur_u(&c, 4) : 0;
    /* v3, streaming: how the profile was streamed (trailer bytes 96..111) */
    r->tr_has_stream = ch->used >= RIP_TRAILER_STREAM_OFF + 16;
    if (r->tr_has_stream) {
        memcpy(&r->tr_stream_state, ch->payload + RIP_TRAILER_STREAM_OFF, 4);
        memcpy(&r->tr_stream_peak, ch->payload + RIP_TRAILER_STREAM_OFF + 8, 8);
    }
    /* v3: CPU samples written and dropped (bytes 80..95) */
    r->tr_has_cpu = ch->used >= RIP_TRAILER_V3_CPU_SIZE;
    if (r->tr_has_cpu) {
        const uint8_t *q = ch->payload + RIP_TRAILER_CPU_OFF;
        memcpy(&r->tr_cpu_samples, q, 8);
        memcpy(&r->tr_cpu_dropped, q + 8, 8);
    }
    /* v3: sampling counters */
    r->tr_has_sample = ch->used >= 80;
    if (r->tr_has_sample) {
        rh_cur_u(&c, 4); /* reserved */
        r->tr_sample_dropped = rh_cur_u(&c, 8);
        r->tr_sample_peak = rh_cur_u(&c, 8);
    }
    /* v3, servers: the title and name at the end (bytes 112..) */
    r->tr_has_title = ch->used >= RIP_TRAILER_TITLE_OFF + 24;
    if (r->tr_has_title) {
        const uint8_t *q = ch->payload + RIP_TRAILER_TITLE_OFF;
        uint32_t tl;
        memcpy(&tl, q, 4);
        memcpy(&r->tr_flags, q + 4, 4);
        memcpy(r->comm, q + 8, 16);
        r->comm[16] = 0;
        uint32_t room = ch->used - (RIP_TRAILER_TITLE_OFF + 24);
        if (tl > room || tl > RIP_TRAILER_TITLE_MAX) {
            rh_rip_warn(r, "trailer at offset %llu: title length %u is more than its %u bytes",
                        (unsigned long long)ch->off, tl, room);
            tl = room < RIP_TRAILER_TITLE_MAX ? room : RIP_TRAILER_TITLE_MAX;
        }
        for (uint32_t i = 0; i < tl; i++) {
            uint8_t b = q[24 + i];
            r->title[i] = b == 0 ? ' ' : (b < 32 || b == 127) ? '?' : (char)b;
        }
        while (tl && r->title[tl - 1] == ' ')
            tl--; /* setproctitle pads with NULs or spaces */
        r->title[tl] = 0;
        for (char *p = r->comm; *p; p++)
            if ((unsigned char)*p < 32 || *p == 127)
                *p = '?';
    }
    rh_calib_add(r, end_tick, end_ns);
    return 1;
}

/* ---- the chunk walk: the one reader of the chunk sequence --------------- */

static int rh_all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* n bytes at off of src into buf: a copy from the mapping, or pread.
 * Returns the bytes read (fewer at the end of the file or on an error). */
static size_t rh_rip_src_read(const struct rh_rip_src *src, uint64_t off, void *buf, size_t n)
{
    if (off >= src->size)
        return 0;
    if (n > src->size - off)
        n = (size_t)(src->size - off);
    if (src->base) {
        memcpy(buf, src->base + off, n);
        return n;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(src->fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

int rh_rip_at(const struct rh_rip_src *src, uint64_t off, struct rh_rip_at *at)
{
    memset(at, 0, sizeof *at);
    at->off = off;
    if (off >= src->size)
        return at->kind = RH_AT_END;
    if (src->size - off < RIP_CHUNK_HDR_SIZE) {
        uint8_t tail[RIP_CHUNK_HDR_SIZE];
        size_t n = rh_rip_src_read(src, off, tail, (size_t)(src->size - off));
        at->zero = rh_all_zero(tail, n);
        return at->kind = RH_AT_TAIL;
    }
    if (src->base && src->growing) {
        /* as the writer leaves it: `used` and `flags` loaded first, with
         * acquire (the writer stores `used` after each complete record and
         * sets SEALED last), so records up to that `used` are whole */
        const struct rip_chunk_header *p = (const struct rip_chunk_header *)(src->base + off);
        uint32_t used = __atomic_load_n(&p->used, __ATOMIC_ACQUIRE);
        uint8_t flags = __atomic_load_n(&p->flags, __ATOMIC_ACQUIRE);
        memcpy(&at->h, p, sizeof at->h);
        at->h.used = used;
        at->h.flags = flags;
    } else if (rh_rip_src_read(src, off, &at->h, sizeof at->h) != sizeof at->h) {
        return at->kind = RH_AT_END; /* a read error: nothing more to walk */
    }
    if (rh_all_zero((const uint8_t *)&at->h, sizeof at->h))
        return at->kind = RH_AT_UNWRITTEN;
    at->why = rh_rip_chunk_check(&at->h);
    if (at->why)
        return at->kind = RH_AT_BAD;
    at->stride = rh_rip_chunk_stride(&at->h);
    at->avail = src->size - off - RIP_CHUNK_HDR_SIZE;
    at->whole = at->h.capacity <= at->avail;
    at->sealed = (at->h.flags & RIP_CHUNK_F_SEALED) != 0;
    return at->kind = RH_AT_CHUNK;
}

/* Appends chunk idx to the stream of its slot (creating the stream). */
static int rh_rip_link(struct rh_rip *r, int32_t idx)
{
    struct rh_chunk *ch = &r->chunks[idx];
    uint64_t key = ch->type == RIP_CHUNK_SHARED ? (1ull << 32) : ch->slot;
    uint32_t si = rh_map_get(&r->walk.slots, key);
    if (si == UINT32_MAX) {
        if (rh_grow(&r->streams, &r->walk.capstreams, r->nstreams + 1, sizeof *r->streams))
            return -1;
        si = (uint32_t)r->nstreams++;
        if (rh_map_put(&r->walk.slots, key, si))
            return -1;
        struct rh_stream *s = &r->streams[si];
        memset(s, 0, sizeof *s);
        s->first = s->last = idx;
        s->cur = -1; /* rh_stream_next starts at ->first */
        s->shared = ch->type == RIP_CHUNK_SHARED;
        s->follow = r->walk.follow;
        return 0;
    }
    struct rh_stream *s = &r->streams[si];
    r->chunks[s->last].next = idx;
    s->last = idx;
    return 0;
}

/* Takes the chunk the walk found (at, payload in the mapping, used bytes of
 * it to decode) into r: a MODULES snapshot is parsed, a TRAILER read, an
 * EVENTS or SHARED chunk joins its slot's stream. Returns 0, or -1 on out of
 * memory (r->err set). */
static int rh_rip_take(struct rh_rip *r, const struct rh_rip_at *at, uint32_t used, int truncated)
{
    struct rh_chunk ch = {0};
    ch.off = at->off;
    ch.payload = r->base + at->off + RIP_CHUNK_HDR_SIZE;
    ch.used = used;
    ch.slot = at->h.slot;
    ch.tid = at->h.tid;
    ch.base_time = at->h.base_time;
    ch.type = at->h.type;
    ch.truncated = (uint8_t)truncated;
    ch.open = r->walk.follow && !at->sealed;
    ch.next = -1;
    if (ch.type == RIP_CHUNK_MODULES)
        return rh_rip_modules(r, &ch) ? rh_rip_oom(r) : 0;
    if (ch.type == RIP_CHUNK_TRAILER) {
        if (rh_rip_trailer(r, &ch))
            r->walk.unsealed_at_trailer = r->walk.unsealed;
        return 0;
    }
    if (rh_grow(&r->chunks, &r->capchunks, r->nchunks + 1, sizeof *r->chunks) ||
        r->nchunks >= INT32_MAX)
        return rh_rip_oom(r);
    r->chunks[r->nchunks] = ch;
    if (rh_rip_link(r, (int32_t)r->nchunks))
        return rh_rip_oom(r);
    r->nchunks++;
    return 0;
}

/* A complete file: what the walk does at r->walk.off, whose chunk is at.
 * Returns 1 to go on, 0 at the end of the walk, -1 on out of memory. */
static int rh_rip_step_whole(struct rh_rip *r, const struct rh_rip_at *at)
{
    uint64_t off = at->off;
    switch (at->kind) {
    case RH_AT_END:
        return 0;
    case RH_AT_TAIL:
        if (!at->zero) {
            rh_rip_warn(r, "profile cut short: partial chunk header at offset %llu",
                        (unsigned long long)off);
            r->damaged = 1;
        }
        r->cut_short = 1;
        return 0;
    case RH_AT_UNWRITTEN:
        rh_rip_warn(r, "profile cut short: no chunk at offset %llu", (unsigned long long)off);
        r->cut_short = 1;
        return 0;
    case RH_AT_BAD:
        rh_rip_warn(r, "bad chunk header at offset %llu (%s); the rest of the file is ignored",
                    (unsigned long long)off, at->why);
        r->damaged = 1;
        r->cut_short = 1;
        return 0;
    default:
        break;
    }
    if (!RH_ALWAYS(at->kind == RH_AT_CHUNK, "%s: the walk's step at offset %llu is of kind %d",
                   r->name, (unsigned long long)off, at->kind)) {
        r->damaged = r->cut_short = 1;
        return 0;
    }
    const uint8_t *payload = r->base + off + RIP_CHUNK_HDR_SIZE;
    uint32_t used = at->h.used;
    int ev = at->h.type == RIP_CHUNK_EVENTS || at->h.type == RIP_CHUNK_SHARED;
    if (!at->whole) {
        /* The file ends inside this chunk: keep what is there, unverified. */
        if (used > at->avail)
            used = (uint32_t)at->avail;
        rh_rip_warn(r,
                    "profile cut short: chunk at offset %llu ends past the end of the file; "
                    "decoding what is there",
                    (unsigned long long)off);
        r->cut_short = 1;
        r->damaged = 1;
    } else if (at->sealed) {
        uint32_t crc = rip_chunk_crc(&at->h, payload);
        if (r->mapped) /* read again when decoded; RSS stays small meanwhile */
            madvise((void *)(r->base + off), RIP_CHUNK_HDR_SIZE + (size_t)used, MADV_DONTNEED);
        if (crc != at->h.crc) {
            rh_rip_warn(r, "checksum mismatch in chunk at offset %llu; chunk skipped",
                        (unsigned long long)off);
            r->damaged = 1;
            r->damaged_chunks++;
            r->walk.off += at->stride;
            return 1;
        }
    } else if (ev) {
        r->walk.unsealed++;
    }
    if (at->whole || ev)
        rh_calib_add(r, at->h.calib_tick, at->h.calib_ns);
    if (rh_rip_take(r, at, used, !at->whole))
        return -1;
    if (!at->whole)
        return 0;
    r->walk.off += at->stride;
    return 1;
}

/* Polls a chunk header may stay half written before it is damage. */
#define RH_FOLLOW_BAD_TRIES 40

/* A file still being written: what the walk does at r->walk.off. A chunk
 * header not written yet (zero, or an EVENTS chunk without a first record,
 * or one whose room the file does not hold yet) ends the walk until the next
 * poll; a header that fails its check or a sealed chunk whose checksum does
 * not match is waited for RH_FOLLOW_BAD_TRIES polls (the writer stores the
 * fields one by one; MODULES and TRAILER are written payload first, header
 * last) before it is damage. Returns 1 to go on (a chunk taken), 0 to wait,
 * -1 on out of memory. */
static int rh_rip_step_follow(struct rh_rip *r, const struct rh_rip_at *at)
{
    if (at->kind == RH_AT_END || at->kind == RH_AT_TAIL || at->kind == RH_AT_UNWRITTEN)
        return 0;
    if (at->kind == RH_AT_BAD) {
        if (++r->walk.bad_tries >= RH_FOLLOW_BAD_TRIES) {
            rh_rip_warn(r, "bad chunk header at offset %llu (%s); not following further",
                        (unsigned long long)at->off, at->why);
            r->damaged = 1;
            r->walk.stuck = 1;
        }
        return 0;
    }
    if (!at->whole || (!at->sealed && !at->h.used))
        return 0;
    if (at->sealed && rip_chunk_crc(&at->h, r->base + at->off + RIP_CHUNK_HDR_SIZE) != at->h.crc) {
        if (++r->walk.bad_tries < RH_FOLLOW_BAD_TRIES)
            return 0;
        rh_rip_warn(r, "checksum mismatch in chunk at offset %llu; chunk skipped",
                    (unsigned long long)at->off);
        r->damaged = 1;
        r->damaged_chunks++;
        r->walk.bad_tries = 0;
        r->walk.off += at->stride;
        return 1;
    }
    r->walk.bad_tries = 0;
    rh_calib_add(r, at->h.calib_tick, at->h.calib_ns);
    if (rh_rip_take(r, at, at->h.used, 0))
        return -1;
    r->walk.off += at->stride;
    return 1;
}

/* Walks the chunks from r->walk.off to the end of what is written (r->size),
 * the one walk of the format's chunk sequence: a complete file's rules
 * (rh_rip_step_whole) or a growing one's (rh_rip_step_follow). Returns the
 * number of chunks taken or skipped, or -1 on out of memory (r->err). */
static long rh_rip_walk(struct rh_rip *r)
{
    struct rh_rip_src src = {r->base, -1, r->size, r->walk.follow};
    long n = 0;
    if (!r->walk.off)
        r->walk.off = RIP_HEADER_SIZE;
    while (!r->walk.stuck) {
        struct rh_rip_at at;
        rh_rip_at(&src, r->walk.off, &at);
        int k = r->walk.follow ? rh_rip_step_follow(r, &at) : rh_rip_step_whole(r, &at);
        if (k < 0)
            return -1;
        if (!k)
            break;
        n++;
    }
    return n;
}

/* After the walk of a complete file: a missing trailer cuts it short; a
 * clean close seals every chunk but those of running threads. */
static void rh_rip_walk_end(struct rh_rip *r)
{
    if (!r->has_trailer) {
        r->cut_short = 1;
    } else if (r->walk.unsealed_at_trailer > r->tr_open_chunks) {
        rh_rip_warn(r, "%llu chunks are not sealed but the trailer says %u were open",
                    (unsigned long long)r->walk.unsealed_at_trailer, r->tr_open_chunks);
        r->damaged = 1;
    }
}

/* threads.id 1 is the process's own thread when it wrote events. Returns 0,
 * or -1 on out of memory. */
static int rh_rip_first_thread(struct rh_rip *r)
{
    if (!r->hdr.pid)
        return 0;
    for (size_t i = 0; i < r->nchunks; i++)
        if (r->chunks[i].type == RIP_CHUNK_EVENTS && r->chunks[i].tid == r->hdr.pid)
            return rh_rip_thread(r, r->hdr.pid) ? 0 : -1;
    return 0;
}

/* Everything after the bytes are available: header, walk, calibration. */
static int rh_rip_index(struct rh_rip *r)
{
    if (rh_rip_header(r))
        return -1;
    r->walk.header = 1;
    if (rh_rip_walk(r) < 0)
        return -1;
    rh_rip_walk_end(r);
    rh_calib_finish(r);
    if (rh_rip_first_thread(r))
        return rh_rip_oom(r);
    return 0;
}

void rh_rip_follow_start(struct rh_rip *r, const uint8_t *base, const char *name, FILE *warn)
{
    r->name = name;
    r->warn = warn;
    r->base = base;
    r->size = 0;
    r->walk.follow = 1;
}

int rh_rip_follow_poll(struct rh_rip *r, size_t size)
{
    if (size < r->size)
        size = r->size; /* a file never shrinks under its reader's pointers */
    r->size = size;
    int news = 0;
    size_t ncalib = r->ncalib;
    if (!r->walk.header) {
        if (size < RIP_HEADER_SIZE || rh_all_zero(r->base, 8))
            return 0; /* the header is not written yet */
        if (rh_rip_header(r))
            return -1;
        r->walk.header = 1;
        news = 1;
    }
    long n = rh_rip_walk(r);
    if (n < 0)
        return -1;
    if (n)
        news = 1;
    if (r->ncalib != ncalib)
        rh_calib_finish(r);
    /* the open chunks: what their writers added since */
    struct rh_rip_src src = {r->base, -1, r->size, 1};
    for (size_t i = 0; i < r->nchunks; i++) {
        struct rh_chunk *ch = &r->chunks[i];
        if (!ch->open)
            continue;
        struct rh_rip_at at;
        if (rh_rip_at(&src, ch->off, &at) != RH_AT_CHUNK || !at.whole)
            continue; /* rewritten under us: keep what was read */
        if (at.h.used != ch->used)
            news = 1;
        if (at.h.used > ch->used)
            ch->used = at.h.used;
        if (at.sealed)
            ch->open = 0;
    }
    for (size_t i = 0; i < r->nstreams; i++) {
        struct rh_stream *s = &r->streams[i];
        if (s->cur >= 0)
            s->end = r->chunks[s->cur].payload + r->chunks[s->cur].used;
    }
    return news;
}

int rh_rip_scan(int fd, uint64_t size, struct rh_rip_scan *s)
{
    uint8_t hb[RIP_HEADER_SIZE];
    memset(s, 0, sizeof *s);
    struct rh_rip_src src = {NULL, fd, size, 0};
    if (rh_rip_src_read(&src, 0, hb, sizeof hb) != sizeof hb || memcmp(hb, RIP_MAGIC, 8) != 0)
        return -1;
    struct rip_file_header *h = &s->hdr;
    s->damaged = rh_rip_header_check(hb, sizeof hb, h, NULL) != NULL;
    memcpy(h, hb, sizeof *h);
    size_t el = h->exe_len < RIP_HDR_EXE_MAX ? h->exe_len : RIP_HDR_EXE_MAX;
    memcpy(s->exe, hb + RIP_HDR_EXE_OFF, el);
    s->exe[el] = 0;
    /* the title until the trailer says better: the command line at start */
    size_t cl = h->cmd_len < RIP_HDR_CMD_MAX ? h->cmd_len : RIP_HDR_CMD_MAX;
    if (h->flags & RIP_HDR_F_ORIGIN && cl > RIP_HDR_CMD_MAX_ORIGIN)
        cl = RIP_HDR_CMD_MAX_ORIGIN;
    s->title_len = cl < sizeof s->title ? cl : sizeof s->title;
    memcpy(s->title, hb + RIP_HDR_CMD_OFF, s->title_len);
    /* the trailer is decoded by rh_rip_trailer, into a scratch rip */
    struct rh_rip *tr = NULL;
    for (uint64_t off = RIP_HEADER_SIZE; !s->damaged;) {
        struct rh_rip_at at;
        int k = rh_rip_at(&src, off, &at);
        if (k == RH_AT_END || k == RH_AT_UNWRITTEN || k == RH_AT_TAIL)
            break;
        if (k == RH_AT_BAD || !at.whole) {
            s->damaged = 1;
            break;
        }
        if (at.h.calib_ns > s->last_calib_ns)
            s->last_calib_ns = at.h.calib_ns;
        if (at.h.type == RIP_CHUNK_TRAILER && at.h.used >= RIP_TRAILER_V1_SIZE) {
            uint8_t t[RIP_TRAILER_SIZE] = {0};
            size_t want = at.h.used < sizeof t ? at.h.used : sizeof t;
            size_t got = rh_rip_src_read(&src, off + RIP_CHUNK_HDR_SIZE, t, want);
            if (!tr && !(tr = calloc(1, sizeof *tr)))
                break; /* out of memory: listed without its trailer */
            struct rh_chunk ch = {.off = off, .payload = t, .used = (uint32_t)got};
            if (rh_rip_trailer(tr, &ch) == 1) {
                s->trailer = 1;
                s->tr_events = tr->tr_events;
                s->tr_end_ns = tr->tr_end_ns;
                s->end_reason = tr->tr_has_end_reason ? tr->tr_end_reason : 0;
                if (tr->tr_has_title) { /* servers: the title */
                    size_t l = strlen(tr->title);
                    s->title_len = l < sizeof s->title ? l : sizeof s->title;
                    memcpy(s->title, tr->title, s->title_len);
                }
            }
            free(tr->calib);
            tr->calib = NULL;
            tr->ncalib = tr->capcalib = 0;
        } else if (at.h.type == RIP_CHUNK_EVENTS || at.h.type == RIP_CHUNK_SHARED) {
            s->chunk_events += at.h.events;
        }
        off += at.stride;
    }
    free(tr);
    return 0;
}

void rh_rip_peer(const struct rh_rip *r, char *out, size_t size)
{
    const uint8_t *a = (const uint8_t *)&r->hdr + RIP_HDR_PEER_OFF;
    static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    char buf[INET6_ADDRSTRLEN] = "?";
    if (!memcmp(a, v4map, 12))
        inet_ntop(AF_INET, a + 12, buf, sizeof buf);
    else
        inet_ntop(AF_INET6, a, buf, sizeof buf);
    snprintf(out, size, "%s", buf);
}

int rh_rip_open_mem(struct rh_rip *r, const uint8_t *buf, size_t len, const char *name, FILE *warn)
{
    r->name = name;
    r->warn = warn;
    r->base = buf;
    r->size = len;
    return rh_rip_index(r);
}

int rh_rip_open_file(struct rh_rip *r, const char *path, FILE *warn)
{
    r->name = path;
    r->warn = warn;
    /* O_NONBLOCK: a FIFO put where a rip was expected cannot block the open
     * (the checks below refuse it) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return rh_rip_fail(r, "cannot open (%s)", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return rh_rip_fail(r, "cannot stat (%s)", strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return rh_rip_fail(r, "is a directory, not a rip file");
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return rh_rip_fail(r, "not a regular file");
    }
    if (st.st_size == 0) {
        close(fd);
        return rh_rip_fail(r, "empty file, not a rip file");
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return rh_rip_fail(r, "file too large to map");
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return rh_rip_fail(r, "cannot map (%s)", strerror(e));
    madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
    r->base = p;
    r->size = (size_t)st.st_size;
    r->mapped = 1;
    r->file_mode = (unsigned)(st.st_mode & 0777);
    return rh_rip_index(r);
}

void rh_rip_close(struct rh_rip *r)
{
    if (r->mapped && r->base)
        munmap((void *)r->base, r->size);
    for (size_t i = 0; i < r->nmods; i++)
        rh_module_free(&r->mods[i]);
    free(r->mods);
    free(r->streams);
    free(r->chunks);
    free(r->calib);
    free(r->stacks);
    rh_map_free(&r->stack_map);
    free(r->frames);
    free(r->threads);
    rh_map_free(&r->thread_map);
    rh_map_free(&r->walk.slots);
    rh_regions_free(r);
    r->base = NULL;
    r->mapped = 0;
}
