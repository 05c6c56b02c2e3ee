/* rh_live_follow.c: following a rip file while the program writes it.
 *
 * The runtime writes the rip file through MAP_SHARED mappings, so another
 * process sees each record as soon as it is stored, and each chunk's `used`
 * after every complete record (runtime/FORMAT.md). This reader maps the file
 * read only, with a large reservation past its end so that the pointers the
 * converter's decoder keeps stay valid while the file grows; it only ever
 * touches bytes below the size fstat() reports. Each poll:
 *   1. the one rip reader's walk of a growing file (rh_rip_follow_poll in
 *      convert/rh_rip.c) takes the chunks written since the last poll (a
 *      header not written yet ends the walk until the next poll; new
 *      EVENTS/SHARED chunks join their slot's stream, MODULES are parsed,
 *      a TRAILER marks the profile closed) and re-reads `used` (and the
 *      SEALED flag) of every chunk still open; new modules go to the
 *      symbolizer;
 *   2. pulls every event the streams now hold through the converter's decoder
 *      (rh_stream_next with `follow` set: it waits at the end of an open chunk
 *      and at a record not whole yet) and merges them by time into the
 *      converter's merge (rh_merge_feed), which pairs frees with allocations;
 *      a free whose allocation, written by another thread, is not visible yet
 *      is held back and merged again at the next polls (at most
 *      RH_FOLLOW_HOLD of them) before it counts as an unknown free;
 *   3. symbolizes the stacks used since (rh_sym_resolve) into a small
 *      in-memory database and runs the converter's call-site rule
 *      (rh_callsite_write) on it, so sites skip allocator wrappers exactly as
 *      the converted profile will.
 * A file that shrinks (another program truncated it) is not followed any
 * further: the view keeps what it read. A truncation between the size test
 * and a read of the mapping would raise SIGBUS; the follower's handler puts
 * zero pages over the faulting page of its own mapping and the poll stops
 * following the file, so the live view never dies of it (rh_fl_bus_guard).
 * The heap's figures are the converter's aggregates (rh_aggregate.c), fed
 * incrementally by the same merge: per stack, the peak and the live total,
 * weighted by the sampling weights on a sampled profile, so that at the end of
 * a run they equal what `summary` and `view` read from the converted profile.
 * Memory grows with live blocks, stacks and threads (and one trend of
 * RH_LV_TREND points per call site), never with events; the heap over time
 * keeps one point per poll.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_core.h"
#include "rh_db.h"
#include "rh_symbolize.h"
#include "rh_util.h"
#include "rh_live.h"
#include "rh_regex.h"
#include "rh_safefile.h"

/* The longest function name kept whole (C++ names run to thousands of
 * characters; a cut one cannot be shortened, rh_name_short). */
#define RH_FL_NAME 8192
/* Polls a held-back free survives before it counts as unknown. */
#define RH_FOLLOW_HOLD 8

/* Per stack, what the aggregates do not keep: CPU samples and the call site.
 * The heap's figures of stack i are f->agg->st[i]. */
struct rh_fl_stack {
    int64_t cpu_samples;
    int32_t site; /* index into f->sites, -1: not known yet */
    uint8_t in_db;
    uint8_t match;      /* some frame's function matches f->re (at match_gen) */
    uint32_t match_gen; /* the f->re_gen `match` was computed for, 0: never */
};

struct rh_fl_site {
    char *label, *func;
    int64_t trend[RH_LV_TREND];
    int ntrend;
    int64_t sum_live; /* scratch of rh_follow_sums */
};

struct rh_held {
    struct rh_event ev;
    int age;
};

struct rh_follow {
    char path[1100];
    int fd;
    uint8_t *map;
    size_t reserved;
    struct rh_rip r;
    int hdr_ok, stuck; /* stuck: the file grew past the reservation */
    int shrunk;        /* the file shrank: not read any more */
    int guard;         /* its slot in the SIGBUS handler's table, -1: none */
    size_t seen;       /* the largest size fstat reported */
    /* merge */
    struct rh_merge *merge;
    struct rh_merge_stats mst;
    struct rh_merge_sink sink;
    struct rh_held *held;
    size_t nheld, capheld;
    /* symbols and call sites */
    struct rh_symbolizer *sym;
    size_t nmods_added;
    sqlite3 *db;
    sqlite3_stmt *ins_stack, *ins_frame;
    sqlite3_stmt *sel_frame0, *sel_syms; /* a stack's frame 0; its functions */
    int cs_dirty;
    char skipped[512];
    /* aggregates: the converter's (created once the header says whether the
     * profile is sampled), fed by the merge; blocks in 1/bscale units */
    struct rh_agg *agg;
    struct rh_fl_stack *st;
    size_t nst, capst;
    struct rh_lv_thread *th;
    size_t nth, capth;
    int64_t tl_max;
    int64_t last_ns, cpu_total;
    struct rh_fl_site *sites;
    size_t nsites, capsites;
    struct rh_map site_map; /* label hash -> site index */
    int64_t trend_sec;      /* the second of the last trend point, -1: none */
    struct rh_lv_point *tl;
    size_t ntl, captl;
    struct rh_lv_point *rss; /* memory samples: RSS at t */
    size_t nrss, caprss;
    int64_t rss_heap; /* the live heap at the last one */
    int pid;
    int oom;
    /* the call-site filter of rh_follow_model */
    struct rh_re *re;
    int have_re;
    char re_text[256];
    uint32_t re_gen;
};

/* ---- aggregates ------------------------------------------------------------ */

static struct rh_fl_stack *rh_fl_stack(struct rh_follow *f, uint32_t si)
{
    if (si >= f->nst) {
        if (rh_grow(&f->st, &f->capst, (size_t)si + 1, sizeof *f->st)) {
            f->oom = 1;
            return NULL;
        }
        memset(f->st + f->nst, 0, ((size_t)si + 1 - f->nst) * sizeof *f->st);
        for (size_t i = f->nst; i <= si; i++)
            f->st[i].site = -1;
        f->nst = (size_t)si + 1;
    }
    return &f->st[si];
}

static struct rh_lv_thread *rh_fl_thread(struct rh_follow *f, uint32_t id)
{
    if (!id)
        return NULL;
    if (id > f->nth) {
        if (rh_grow(&f->th, &f->capth, id, sizeof *f->th)) {
            f->oom = 1;
            return NULL;
        }
        memset(f->th + f->nth, 0, (id - f->nth) * sizeof *f->th);
        for (size_t i = f->nth; i < id; i++)
            f->th[i].id = (uint32_t)i + 1;
        f->nth = id;
    }
    return &f->th[id - 1];
}

/* The heap's figures of stack index i (NULL: none yet). */
static const struct rh_agg_stack *rh_fl_agg(const struct rh_follow *f, size_t i)
{
    return f->agg && i < f->agg->nst ? &f->agg->st[i] : NULL;
}

/* The live heap now, in estimated bytes: the aggregates' running total. */
static int64_t rh_fl_live(const struct rh_follow *f)
{
    return f->agg ? f->agg->total : 0;
}

/* The merge's sink: a block ended (freed at row->dealloc_ns, or replaced by
 * an allocation at its address when dealloc_ns < 0: its free was missed).
 * The merge has given it to the aggregates already; here the threads' figures
 * follow, with the same weights. */
static int rh_fl_row(void *ctx, const struct rh_row *row)
{
    struct rh_follow *f = ctx;
    struct rh_lv_thread *a = rh_fl_thread(f, row->alloc_thread);
    if (!a || !f->agg)
        return -1;
    int64_t size = rh_agg_est_bytes(f->agg, row->size, row->addr);
    int64_t nb = rh_agg_est_blocks(f->agg, row->size, row->addr);
    a->live_bytes -= size;
    a->live_blocks -= nb;
    if (row->dealloc_ns < 0)
        return 0;
    struct rh_lv_thread *d = rh_fl_thread(f, row->dealloc_thread);
    a = rh_fl_thread(f, row->alloc_thread); /* the table may have moved */
    if (!d || !a)
        return -1;
    d->freed_bytes += size;
    d->freed_blocks += nb;
    if (row->dealloc_thread != row->alloc_thread) {
        a->others_bytes += size;
        a->others_blocks += nb;
    }
    return 0;
}

/* An allocation the merge took (ALLOC, or a REALLOC's new block): the
 * aggregates have it; its thread's figures and the heap's maximum since the
 * last poll follow. */
static int rh_fl_alloc(struct rh_follow *f, const struct rh_event *ev)
{
    uint32_t si = rh_rip_stack(&f->r, ev->stack);
    struct rh_fl_stack *s = si == UINT32_MAX ? NULL : rh_fl_stack(f, si);
    struct rh_lv_thread *t = rh_fl_thread(f, ev->thread ? ev->thread : 1);
    if (!s || !t || !f->agg)
        return -1;
    int64_t size = rh_agg_est_bytes(f->agg, ev->size, ev->addr);
    int64_t nb = rh_agg_est_blocks(f->agg, ev->size, ev->addr);
    t->alloc_bytes += size;
    t->alloc_blocks += nb;
    t->live_bytes += size;
    t->live_blocks += nb;
    if (rh_fl_live(f) > f->tl_max)
        f->tl_max = rh_fl_live(f);
    return 0;
}

/* An event of another kind than the heap's: a CPU sample when its stack is a
 * CPU stack (kind RH_LV_KIND_CPU; the decoder yields the CPU sample's EXT 14
 * CPUSAMPLE records as events carrying their stack id and, in size, the
 * sampling periods they stand for). Returns 0 or -1. */
static int rh_fl_cpu(struct rh_follow *f, const struct rh_event *ev)
{
    uint32_t si = rh_rip_stack(&f->r, ev->stack);
    if (si == UINT32_MAX)
        return -1;
    if (!f->r.stacks[si].defined || f->r.stacks[si].kind != RH_LV_KIND_CPU)
        return 0;
    struct rh_fl_stack *s = rh_fl_stack(f, si);
    struct rh_lv_thread *t = rh_fl_thread(f, ev->thread ? ev->thread : 1);
    if (!s || !t)
        return -1;
    f->r.stacks[si].used = 1;
    /* a late signal's sample stands for 1 + overrun periods (ev->size), as
     * the converter's cpu_stack_stats counts them */
    int64_t n = ev->size ? (int64_t)ev->size : 1;
    s->cpu_samples += n;
    t->cpu_samples += n;
    f->cpu_total += n;
    return 0;
}

/* A memory sample (EXT MEMSAMPLE, rh_memory_decode): its RSS beside the
 * live heap. A damaged one is skipped. Returns 0 or -1. */
static int rh_fl_mem(struct rh_follow *f, const struct rh_event *ev, int64_t t)
{
    struct rh_memsample ms;
    if (rh_memory_decode(ev->ext, ev->ext_len, &ms) || !ms.has_rss)
        return 0;
    if (rh_grow(&f->rss, &f->caprss, f->nrss + 1, sizeof *f->rss))
        return -1;
    f->rss[f->nrss].t = t;
    f->rss[f->nrss].bytes = ms.rss > INT64_MAX ? INT64_MAX : (int64_t)ms.rss;
    f->nrss++;
    f->rss_heap = rh_fl_live(f);
    return 0;
}

/* Applies one merged event. Returns 0 or -1. */
static int rh_fl_apply(struct rh_follow *f, const struct rh_event *ev, int age, int final)
{
    int64_t t = rh_rip_ns(&f->r, ev->time);
    if (t > f->last_ns)
        f->last_ns = t;
    if ((ev->op == RH_EV_FREE || ev->op == RH_EV_RFREE) && !final && age < RH_FOLLOW_HOLD &&
        !rh_merge_is_live(f->merge, ev->addr)) {
        /* its allocation may be in a chunk whose `used` we read too early */
        if (rh_grow(&f->held, &f->capheld, f->nheld + 1, sizeof *f->held))
            return -1;
        f->held[f->nheld].ev = *ev;
        f->held[f->nheld].age = age + 1;
        f->nheld++;
        return 0;
    }
    if (rh_merge_feed(f->merge, ev))
        return -1;
    if (ev->op == RH_EV_ALLOC || ev->op == RH_EV_RALLOC)
        return rh_fl_alloc(f, ev);
    if (ev->op == RH_EV_EXT && ev->ext_sub == RIP_EXT_MEMSAMPLE)
        return rh_fl_mem(f, ev, t);
    if (ev->op > RH_EV_POOLRESET && ev->op != RH_EV_REGION && ev->stack)
        return rh_fl_cpu(f, ev);
    return 0;
}

/* ---- the merge of one poll ------------------------------------------------- */

struct rh_fl_head {
    struct rh_event ev;
    uint32_t src; /* stream index, or nstreams for the held-back frees */
    int age;
};

static int rh_fl_less(const struct rh_fl_head *a, const struct rh_fl_head *b)
{
    if (a->ev.time != b->ev.time)
        return a->ev.time < b->ev.time;
    if (a->ev.cls != b->ev.cls)
        return a->ev.cls < b->ev.cls;
    return a->src < b->src;
}

static void rh_fl_down(struct rh_fl_head *h, size_t n, size_t i)
{
    struct rh_fl_head x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && rh_fl_less(&h[c + 1], &h[c]))
            c++;
        if (!rh_fl_less(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Next event of source src (a stream, or the held-back frees from *hi on).
 * Returns 1, 0 (nothing more now) or -1. */
static int rh_fl_next(struct rh_follow *f, uint32_t src, struct rh_held *held, size_t nheld,
                      size_t *hi, struct rh_fl_head *out)
{
    out->src = src;
    if (src == f->r.nstreams) {
        if (*hi >= nheld)
            return 0;
        out->ev = held[*hi].ev;
        out->age = held[*hi].age;
        (*hi)++;
        return 1;
    }
    out->age = 0;
    return rh_stream_next(&f->r, &f->r.streams[src], &out->ev);
}

/* Merges every event the streams hold now, with the held-back frees, by
 * time. Returns the number of events merged, or -1. */
static int64_t rh_fl_merge(struct rh_follow *f, int final)
{
    struct rh_held *held = f->held;
    size_t nheld = f->nheld, hi = 0;
    f->held = NULL;
    f->nheld = f->capheld = 0;
    size_t ns = f->r.nstreams + 1;
    struct rh_fl_head *h = calloc(ns, sizeof *h);
    int64_t count = 0;
    if (!h)
        goto fail;
    size_t n = 0;
    for (uint32_t i = 0; i < ns; i++) {
        int k = rh_fl_next(f, i, held, nheld, &hi, &h[n]);
        if (k < 0)
            goto fail;
        n += (size_t)k;
    }
    for (size_t i = n / 2; i-- > 0;)
        rh_fl_down(h, n, i);
    while (n) {
        if (rh_fl_apply(f, &h[0].ev, h[0].age, final))
            goto fail;
        count++;
        int k = rh_fl_next(f, h[0].src, held, nheld, &hi, &h[0]);
        if (k < 0)
            goto fail;
        if (!k)
            h[0] = h[--n];
        if (n)
            rh_fl_down(h, n, 0);
    }
    free(h);
    free(held);
    return count;
fail:
    free(h);
    free(held);
    return -1;
}

/* ---- the file ---------------------------------------------------------------- */

/* ---- a file truncated under the follower ----------------------------------- */

/* The mappings of the open followers, for the SIGBUS handler: at most a few
 * (one per `rheaper live`), published before their first read. */
#define RH_FL_MAPS 8
static uint8_t *volatile rh_fl_maps[RH_FL_MAPS];
static volatile size_t rh_fl_map_len[RH_FL_MAPS];
static volatile sig_atomic_t rh_fl_hit[RH_FL_MAPS]; /* a read past the end was caught */
static struct sigaction rh_fl_bus_old;

/* SIGBUS: a read of a page past the end of a followed file (it was truncated
 * after the size test). The page is replaced by a private zero page, so the
 * read completes, and the mapping's rh_fl_hit tells the poll to stop following. A SIGBUS
 * anywhere else is the default action's, as before. Async-signal-safe: one
 * mmap system call and a flag. */
static void rh_fl_on_bus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < RH_FL_MAPS; i++) {
        uintptr_t b = (uintptr_t)rh_fl_maps[i];
        if (b && a >= b && a - b < rh_fl_map_len[i]) {
            uintptr_t pg = a & ~(uintptr_t)4095;
            if (mmap((void *)pg, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                     0) != MAP_FAILED) {
                rh_fl_hit[i] = 1;
                return;
            }
        }
    }
    sigaction(sig, &rh_fl_bus_old, NULL);
    raise(sig);
}

/* Registers map (len bytes) with the SIGBUS handler, installed on first use.
 * Returns the slot, or -1 when all are taken (the file is then followed
 * without the guard, as a reader of the plain file would be). */
static int rh_fl_bus_guard(uint8_t *map, size_t len)
{
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = rh_fl_on_bus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, &rh_fl_bus_old) != 0)
            return -1;
        installed = 1;
    }
    for (int i = 0; i < RH_FL_MAPS; i++)
        if (!rh_fl_maps[i]) {
            rh_fl_hit[i] = 0;
            rh_fl_map_len[i] = len;
            rh_fl_maps[i] = map;
            return i;
        }
    return -1;
}

static void rh_fl_bus_unguard(uint8_t *map)
{
    for (int i = 0; i < RH_FL_MAPS; i++)
        if (rh_fl_maps[i] == map) {
            rh_fl_maps[i] = NULL;
            rh_fl_map_len[i] = 0;
        }
}

/* Stops following f after a shrink or a caught SIGBUS, with one line. */
static void rh_fl_shrunk(struct rh_follow *f, size_t size)
{
    if (!f->shrunk)
        fprintf(stderr,
                "rheaper: %s: the profile shrank to %zu bytes (from %zu: truncated by another "
                "program); not following it further\n",
                f->path, size, f->seen);
    f->shrunk = 1;
    f->r.walk.stuck = 1;
}

/* One poll of the file through the one rip reader (rh_rip_follow_poll, the
 * walk of a growing file), then what the follower adds: the aggregates once
 * the header is read, and the new modules for the symbolizer. Returns 1 when
 * something new was found, 0 when not, -1 on a fatal error (printed). */
static int rh_fl_poll_file(struct rh_follow *f)
{
    struct rh_rip *r = &f->r;
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) {
        fprintf(stderr, "rheaper: %s: cannot stat (%s)\n", f->path, strerror(errno));
        return -1;
    }
    size_t size = (size_t)sb.st_size;
    if (f->shrunk)
        return 0;
    if (size < f->seen || (f->guard >= 0 && rh_fl_hit[f->guard])) {
        rh_fl_shrunk(f, size);
        return 0;
    }
    f->seen = size;
    if (size > f->reserved) {
        if (!f->stuck)
            fprintf(stderr,
                    "rheaper: %s: the profile grew past %zu bytes; not following it "
                    "further\n",
                    f->path, f->reserved);
        f->stuck = 1;
        r->walk.stuck = 1;
        size = f->reserved;
    }
    int news = rh_rip_follow_poll(r, size);
    if (news < 0) {
        fprintf(stderr, "rheaper: %s\n", r->err);
        return -1;
    }
    if (!f->hdr_ok && r->walk.header) {
        /* the converter's aggregates, weighted as the header's sampling
         * says; no stored timeline (span 0): the live view keeps its own
         * points, one per poll */
        if (!(f->agg = rh_agg_new(r, 0))) {
            fprintf(stderr, "rheaper: %s: out of memory\n", f->path);
            return -1;
        }
        f->sink.agg = f->agg;
        f->hdr_ok = 1;
        if (!f->pid)
            f->pid = (int)r->hdr.pid;
    }
    for (; f->nmods_added < r->nmods; f->nmods_added++) {
        if (rh_sym_add_module(f->sym, &r->mods[f->nmods_added])) {
            fprintf(stderr, "rheaper: %s: out of memory\n", f->path);
            return -1;
        }
    }
    return news;
}

/* ---- symbols and call sites ------------------------------------------------- */

static const char rh_fl_schema[] =
    "CREATE TABLE backtraces(id INTEGER NOT NULL, frame_no INTEGER NOT NULL, file TEXT,"
    " line INTEGER, sym TEXT, module TEXT, address INTEGER, inlined INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(id, frame_no)) WITHOUT ROWID;"
    "CREATE TABLE stacks(id INTEGER PRIMARY KEY, kind TEXT, depth INTEGER, truncated INTEGER,"
    " callsite INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE skipped_functions(sym TEXT PRIMARY KEY, callers INTEGER, stacks INTEGER);";

/* Writes stack si's row and frames into the call-site database, the way the
 * converter writes backtraces (rh_db_stack_frames). Returns 0 or -1. */
static int rh_fl_stack_frames(struct rh_follow *f, uint32_t si)
{
    const struct rh_stack *st = &f->r.stacks[si];
    sqlite3_stmt *ss = f->ins_stack, *bs = f->ins_frame;
    sqlite3_bind_int64(ss, 1, (sqlite3_int64)st->id);
    sqlite3_bind_text(ss, 2, rh_kind_name(st->kind), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ss, 3, st->nframes);
    int rc = sqlite3_step(ss);
    sqlite3_reset(ss);
    if (rc != SQLITE_DONE)
        return -1;
    return rh_db_stack_frames(bs, f->sym, &f->r, st) < 0 ? -1 : 0;
}

/* The site of a label, created when new. Returns its index or -1. */
static int32_t rh_fl_site(struct rh_follow *f, const char *label, const char *func)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = label; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    for (;; h++) {
        uint32_t i = rh_map_get(&f->site_map, h);
        if (i == UINT32_MAX)
            break;
        if (!strcmp(f->sites[i].label, label))
            return (int32_t)i;
    }
    if (rh_grow(&f->sites, &f->capsites, f->nsites + 1, sizeof *f->sites))
        return -1;
    struct rh_fl_site *s = &f->sites[f->nsites];
    memset(s, 0, sizeof *s);
    s->label = strdup(label);
    s->func = strdup(func);
    if (!s->label || !s->func || rh_map_put(&f->site_map, h, (uint32_t)f->nsites)) {
        free(s->label);
        free(s->func);
        return -1;
    }
    return (int32_t)f->nsites++;
}

/* Sets the site of CPU stack si: "function file" of its frame 0 as the
 * converter writes the stack (rh_db_stack_frames: rheaper's own frames, such
 * as the allocation hooks inlined into __wrap_malloc where a sample taken
 * inside the runtime is charged, are never frames), which is the frame
 * `rheaper view` groups the samples by. Returns 0, or -1 (SQLite, or out of
 * memory: *oom set). */
static int rh_fl_cpu_site(struct rh_follow *f, uint32_t si, int *oom)
{
    const struct rh_stack *st = &f->r.stacks[si];
    if (rh_fl_stack_frames(f, si))
        return -1;
    sqlite3_stmt *q = f->sel_frame0;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)st->id);
    const char *sym = NULL, *file = NULL;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        sym = (const char *)sqlite3_column_text(q, 0);
        file = (const char *)sqlite3_column_text(q, 1);
    }
    char label[RH_FL_NAME + 512], func[RH_FL_NAME];
    const char *fb = file ? strrchr(file, '/') : NULL;
    snprintf(func, sizeof func, "%s", sym ? sym : "??");
    if (file)
        snprintf(label, sizeof label, "%s %s", func, fb ? fb + 1 : file);
    else
        snprintf(label, sizeof label, "%s", func);
    sqlite3_reset(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    int32_t site = rh_fl_site(f, label, func);
    if (site < 0) {
        *oom = 1;
        return -1;
    }
    f->st[si].site = site;
    return 0;
}

/* Symbolizes the stacks used since the last poll and, when there were any,
 * runs the call-site rule again over all of them and re-reads every stack's
 * site. Returns 0 or -1 (printed). */
static int rh_fl_callsites(struct rh_follow *f)
{
    struct rh_rip *r = &f->r;
    int added = 0;
    if (sqlite3_exec(f->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        goto sqlfail;
    for (size_t i = 0; i < r->nstacks; i++) {
        const struct rh_stack *st = &r->stacks[i];
        if (!st->defined || !st->used)
            continue;
        struct rh_fl_stack *s = rh_fl_stack(f, (uint32_t)i);
        if (!s)
            goto oom;
        if (s->in_db)
            continue;
        s->in_db = 1;
        if (st->kind == RH_LV_KIND_CPU) {
            /* a CPU sample's site is the function it was in (frame 0 of
             * the stack as written: the interrupted PC, or the program's
             * call the runtime was working for), as `rheaper view` shows
             * it; the call-site rule, which is about allocations, skips
             * CPU stacks as it does in the converter */
            int oom = 0;
            if (rh_fl_cpu_site(f, (uint32_t)i, &oom)) {
                if (oom)
                    goto oom;
                goto sqlfail;
            }
            continue;
        }
        if (rh_fl_stack_frames(f, (uint32_t)i))
            goto sqlfail;
        added = 1;
    }
    if (!added)
        return sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    char err[256];
    if (sqlite3_exec(f->db, "UPDATE stacks SET callsite = 0; DELETE FROM skipped_functions;", NULL,
                     NULL, NULL) != SQLITE_OK ||
        rh_callsite_write(f->db, err, sizeof err) ||
        sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto sqlfail;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(f->db,
                           "SELECT s.id, b.sym, b.file, b.line, b.module, b.address FROM stacks s"
                           " JOIN backtraces b ON b.id = s.id AND b.frame_no = s.callsite"
                           " WHERE s.kind IS NOT 'cpu'",
                           -1, &q, NULL) != SQLITE_OK)
        goto sqlfail;
    while (sqlite3_step(q) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(q, 0);
        const char *sym = (const char *)sqlite3_column_text(q, 1);
        const char *file = (const char *)sqlite3_column_text(q, 2);
        int line = sqlite3_column_int(q, 3);
        const char *mod = (const char *)sqlite3_column_text(q, 4);
        int64_t addr = sqlite3_column_int64(q, 5);
        char label[RH_FL_NAME + 512], func[RH_FL_NAME];
        const char *fb = file ? strrchr(file, '/') : NULL;
        const char *mb = mod ? strrchr(mod, '/') : NULL;
        if (sym)
            snprintf(func, sizeof func, "%s", sym);
        else
            snprintf(func, sizeof func, "%s+0x%llx",
                     mb    ? mb + 1
                     : mod ? mod
                           : "?",
                     (unsigned long long)addr);
        if (file)
            snprintf(label, sizeof label, "%s %s:%d", func, fb ? fb + 1 : file, line);
        else
            snprintf(label, sizeof label, "%s", func);
        uint32_t si = rh_map_get(&r->stack_map, id);
        if (si == UINT32_MAX || si >= f->nst)
            continue;
        int32_t site = rh_fl_site(f, label, func);
        if (site < 0) {
            sqlite3_finalize(q);
            goto oom;
        }
        f->st[si].site = site;
    }
    sqlite3_finalize(q);
    f->skipped[0] = 0;
    if (sqlite3_prepare_v2(f->db,
                           "SELECT group_concat(sym, ', ') FROM (SELECT sym FROM skipped_functions"
                           " ORDER BY stacks DESC, sym LIMIT 8)",
                           -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(f->skipped, sizeof f->skipped, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return 0;
sqlfail:
    fprintf(stderr, "rheaper: %s: call sites: SQLite error (%s)\n", f->path, sqlite3_errmsg(f->db));
    sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
oom:
    fprintf(stderr, "rheaper: %s: out of memory\n", f->path);
    sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* Site sums into sites[].sum_live. Stacks without a site yet count in none. */
static void rh_fl_sums(struct rh_follow *f)
{
    for (size_t i = 0; i < f->nsites; i++)
        f->sites[i].sum_live = 0;
    for (size_t i = 0; i < f->nst; i++)
        if (f->st[i].site >= 0)
            f->sites[f->st[i].site].sum_live += rh_fl_agg(f, i) ? rh_fl_agg(f, i)->live_bytes : 0;
}

/* One trend point per second of the program's time up to now. */
static void rh_fl_trend(struct rh_follow *f)
{
    int64_t sec = f->last_ns / 1000000000;
    if (f->trend_sec >= sec)
        return;
    rh_fl_sums(f);
    int64_t steps = sec - f->trend_sec;
    if (f->trend_sec < 0 || steps > RH_LV_TREND)
        steps = f->trend_sec < 0 ? 1 : RH_LV_TREND;
    for (size_t i = 0; i < f->nsites; i++) {
        struct rh_fl_site *s = &f->sites[i];
        for (int64_t k = 0; k < steps; k++) {
            memmove(s->trend, s->trend + 1, (RH_LV_TREND - 1) * sizeof *s->trend);
            s->trend[RH_LV_TREND - 1] = s->sum_live;
            if (s->ntrend < RH_LV_TREND)
                s->ntrend++;
        }
    }
    f->trend_sec = sec;
}

/* ---- the public functions ------------------------------------------------------ */

struct rh_follow *rh_follow_open(const char *path, int pid_hint)
{
    struct rh_follow *f = calloc(1, sizeof *f);
    if (!f) {
        fprintf(stderr, "rheaper: out of memory\n");
        return NULL;
    }
    snprintf(f->path, sizeof f->path, "%s", path);
    f->pid = pid_hint;
    f->trend_sec = -1;
    char err[PATH_MAX + 128];
    f->fd = rh_safe_open(path, O_RDONLY, 0, 0, 0, err, sizeof err);
    if (f->fd < 0) {
        fprintf(stderr, "rheaper: cannot open %s\n", err);
        free(f);
        return NULL;
    }
    struct stat sb;
    if (fstat(f->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "rheaper: %s: not a regular file\n", path);
        close(f->fd);
        free(f);
        return NULL;
    }
    /* A reservation past the end keeps every pointer into the mapping valid
     * while the file grows; pages past the end are never touched. */
    static const size_t tries[] = {(size_t)1 << 38, (size_t)1 << 35, (size_t)1 << 32,
                                   (size_t)1 << 30};
    f->map = MAP_FAILED;
    for (size_t i = 0; i < sizeof tries / sizeof *tries && f->map == MAP_FAILED; i++) {
        if (tries[i] < (size_t)sb.st_size)
            break;
        f->reserved = tries[i];
        f->map = mmap(NULL, f->reserved, PROT_READ, MAP_SHARED | MAP_NORESERVE, f->fd, 0);
    }
    if (f->map == MAP_FAILED) {
        fprintf(stderr, "rheaper: %s: cannot map (%s)\n", path, strerror(errno));
        close(f->fd);
        free(f);
        return NULL;
    }
    f->guard = rh_fl_bus_guard(f->map, f->reserved);
    rh_rip_follow_start(&f->r, f->map, f->path, stderr);
    f->sink.row = rh_fl_row;
    f->sink.ctx = f;
    f->merge = rh_merge_new(&f->r, &f->sink, &f->mst);
    f->sym = rh_sym_new();
    if (!f->merge || !f->sym || sqlite3_open(":memory:", &f->db) != SQLITE_OK ||
        sqlite3_exec(f->db, rh_fl_schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(f->db, "INSERT OR IGNORE INTO stacks(id, kind, depth) VALUES(?,?,?)", -1,
                           &f->ins_stack, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(f->db,
                           "INSERT OR IGNORE INTO backtraces(id, frame_no, file, line, sym,"
                           " module, address, inlined) VALUES(?,?,?,?,?,?,?,?)",
                           -1, &f->ins_frame, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(f->db, "SELECT sym, file FROM backtraces WHERE id = ? AND frame_no = 0",
                           -1, &f->sel_frame0, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(f->db, "SELECT sym FROM backtraces WHERE id = ? AND sym IS NOT NULL", -1,
                           &f->sel_syms, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: %s: cannot start following (out of memory)\n", path);
        rh_follow_close(f);
        return NULL;
    }
    return f;
}

int rh_follow_poll(struct rh_follow *f, int final)
{
    int news = rh_fl_poll_file(f);
    if (news < 0)
        return -1;
    if (!f->hdr_ok || f->shrunk)
        return 0;
    int64_t n = rh_fl_merge(f, final);
    if (f->guard >= 0 && rh_fl_hit[f->guard]) {
        /* the file was truncated while this poll read it: what the zero
         * pages gave is in the figures; nothing more is read */
        struct stat sb;
        rh_fl_shrunk(f, fstat(f->fd, &sb) == 0 ? (size_t)sb.st_size : 0);
    }
    if (n < 0 || f->oom) {
        fprintf(stderr, "rheaper: %s: out of memory\n", f->path);
        return -1;
    }
    if (rh_fl_callsites(f))
        return -1;
    rh_fl_trend(f);
    if (n > 0 || !f->ntl) {
        if (!rh_grow(&f->tl, &f->captl, f->ntl + 1, sizeof *f->tl)) {
            f->tl[f->ntl].t = f->last_ns;
            f->tl[f->ntl].bytes = f->tl_max;
            f->ntl++;
        }
        f->tl_max = rh_fl_live(f);
    }
    return news || n > 0;
}

int rh_follow_has_header(const struct rh_follow *f)
{
    return f->hdr_ok;
}

int rh_follow_ended(struct rh_follow *f)
{
    if (f->pid > 0 && (kill(f->pid, 0) == 0 || errno == EPERM))
        return 0;
    return 1;
}

/* Makes func_re the current filter (compiled once per change). Returns 0,
 * or -1 after one line for a bad regex. */
static int rh_fl_filter(struct rh_follow *f, const char *func_re)
{
    if (!func_re || !*func_re) {
        if (f->have_re)
            rh_re_free(f->re);
        f->have_re = 0;
        f->re_text[0] = 0;
        return 0;
    }
    if (f->have_re && !strcmp(f->re_text, func_re))
        return 0;
    if (f->have_re)
        rh_re_free(f->re);
    f->have_re = 0;
    char e[128];
    f->re = rh_re_compile(func_re, e, sizeof e);
    if (!f->re) {
        fprintf(stderr, "rheaper: bad function regex /%s/: %s\n", func_re, e);
        return -1;
    }
    f->have_re = 1;
    snprintf(f->re_text, sizeof f->re_text, "%s", func_re);
    if (++f->re_gen == 0)
        f->re_gen = 1;
    return 0;
}

/* 1 when some frame of stack si (inlined ones included) has a function that
 * matches the current filter: the frames the converter writes for it
 * (rh_db_stack_frames, read back from the call-site database), as `rheaper
 * view` matches the converted profile's backtraces. A stack not symbolized
 * yet matches nothing. Cached per stack and filter. */
static int rh_fl_matches(struct rh_follow *f, uint32_t si)
{
    struct rh_fl_stack *s = &f->st[si];
    if (s->match_gen == f->re_gen)
        return s->match;
    if (!s->in_db)
        return 0;
    sqlite3_stmt *q = f->sel_syms;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)f->r.stacks[si].id);
    int yes = 0;
    while (!yes && sqlite3_step(q) == SQLITE_ROW)
        yes = rh_re_match(f->re, (const char *)sqlite3_column_text(q, 0)) == 1;
    sqlite3_reset(q);
    s->match = (uint8_t)yes;
    s->match_gen = f->re_gen;
    return yes;
}

int rh_follow_model(struct rh_follow *f, struct rh_lv_model *m, const char *func_re)
{
    if (rh_fl_filter(f, func_re))
        return -1;
    struct rh_rip *r = &f->r;
    rh_lv_model_clear(m);
    snprintf(m->source, sizeof m->source, "%s", f->path);
    snprintf(m->exe, sizeof m->exe, "%s", f->hdr_ok ? r->exe : "?");
    m->pid = f->pid;
    m->following = 1;
    m->ended = rh_follow_ended(f);
    /* the title as ps shows it while running; at the end, the trailer's */
    if (!m->ended)
        rh_lv_proc_title(f->pid, m->title, sizeof m->title);
    if (!m->title[0] && f->r.has_trailer && r->tr_has_title)
        snprintf(m->title, sizeof m->title, "%s", r->title);
    if (!m->ended && f->r.has_trailer)
        snprintf(m->state, sizeof m->state, "running, this profile closed");
    else if (!m->ended)
        snprintf(m->state, sizeof m->state, "running");
    else if (f->r.has_trailer)
        snprintf(m->state, sizeof m->state, "program ended%s",
                 r->tr_has_end_reason && r->tr_end_reason == 1 ? " (profile cut at the size limit)"
                                                               : "");
    else
        snprintf(m->state, sizeof m->state, "program ended without closing its profile");
    m->duration_ns = f->hdr_ok ? rh_run_duration(r, f->last_ns) : 0;
    /* the totals: per stack as the converter stores stack_stats (blocks
     * rounded per stack), summed as `summary` sums them */
    m->live_bytes = m->live_blocks = m->alloc_bytes = m->alloc_blocks = 0;
    m->freed_bytes = m->freed_blocks = m->peak_bytes = m->peak_t = 0;
    if (f->agg) {
        const struct rh_agg *a = f->agg;
        m->peak_bytes = a->peak;
        m->peak_t = a->peak_t;
        if (a->have_t && a->total > a->peak) { /* the last time's events */
            m->peak_bytes = a->total;
            m->peak_t = a->cur_t;
        }
    }
    for (size_t i = 0; i < f->nst; i++) {
        const struct rh_agg_stack *as = rh_fl_agg(f, i);
        if (!as)
            continue;
        m->live_bytes += as->live_bytes;
        m->live_blocks += rh_agg_blocks(f->agg, as->live_blocks);
        m->alloc_bytes += as->bytes + as->live_bytes;
        m->alloc_blocks += rh_agg_blocks(f->agg, as->count + as->live_blocks);
        m->freed_bytes += as->freed_bytes;
        m->freed_blocks += rh_agg_blocks(f->agg, as->freed_blocks);
    }
    m->unknown_frees = f->mst.unknown_frees;
    m->events = r->events;
    m->cpu_total = f->cpu_total;
    snprintf(m->skipped, sizeof m->skipped, "%s", f->skipped);
    for (size_t i = 0; i < f->nsites; i++) {
        struct rh_lv_site *s = rh_lv_site_add(m, f->sites[i].label, f->sites[i].func);
        if (!s)
            return -1;
        memcpy(s->trend, f->sites[i].trend, sizeof s->trend);
        s->ntrend = f->sites[i].ntrend;
    }
    struct rh_lv_site *unknown = NULL;
    for (size_t i = 0; i < f->nst; i++) {
        const struct rh_fl_stack *st = &f->st[i];
        const struct rh_agg_stack *as = rh_fl_agg(f, i);
        int64_t alloc_blocks = as ? rh_agg_blocks(f->agg, as->count + as->live_blocks) : 0;
        if (!alloc_blocks && !st->cpu_samples)
            continue;
        if (f->have_re && !rh_fl_matches(f, (uint32_t)i))
            continue;
        struct rh_lv_site *s;
        if (st->site >= 0) {
            s = &m->sites[st->site];
        } else {
            if (!unknown)
                unknown = rh_lv_site_add(m, "(stack not written yet)", "(stack not written yet)");
            if (!unknown)
                return -1;
            s = unknown;
        }
        if (as) {
            int64_t pb, pk;
            rh_agg_peak_now(f->agg, as, &pb, &pk);
            s->peak_bytes += pb;
            s->live_bytes += as->live_bytes;
            s->live_blocks += rh_agg_blocks(f->agg, as->live_blocks);
            s->alloc_bytes += as->bytes + as->live_bytes;
            s->alloc_blocks += alloc_blocks;
            s->freed_bytes += as->freed_bytes;
            s->freed_blocks += rh_agg_blocks(f->agg, as->freed_blocks);
        }
        s->cpu_samples += st->cpu_samples;
    }
    /* sites that never allocated (their stacks' sites moved) are dropped */
    size_t k = 0;
    for (size_t i = 0; i < m->nsites; i++) {
        if (m->sites[i].alloc_blocks || m->sites[i].cpu_samples) {
            m->sites[k++] = m->sites[i];
        } else {
            free(m->sites[i].label);
            free(m->sites[i].func);
            free(m->sites[i].short_label);
        }
    }
    m->nsites = k;
    for (size_t i = 0; i < f->nth; i++) {
        if (rh_grow(&m->threads, &m->capthreads, m->nthreads + 1, sizeof *m->threads))
            return -1;
        struct rh_lv_thread *t = &m->threads[m->nthreads++];
        *t = f->th[i];
        if (f->agg) {
            t->alloc_blocks = rh_agg_blocks(f->agg, t->alloc_blocks);
            t->freed_blocks = rh_agg_blocks(f->agg, t->freed_blocks);
            t->others_blocks = rh_agg_blocks(f->agg, t->others_blocks);
            t->live_blocks = rh_agg_blocks(f->agg, t->live_blocks);
        }
        if (i < r->nthreads) {
            t->tid = r->threads[i].tid;
            if (r->threads[i].named)
                snprintf(t->name, sizeof t->name, "%s", r->threads[i].name);
        }
    }
    for (size_t i = 0; i < f->ntl; i++)
        if (rh_lv_point_add(m, f->tl[i].t, f->tl[i].bytes))
            return -1;
    for (size_t i = 0; i < f->nrss; i++)
        if (rh_lv_rss_add(m, f->rss[i].t, f->rss[i].bytes))
            return -1;
    m->rss_heap = f->rss_heap;
    return 0;
}

void rh_follow_close(struct rh_follow *f)
{
    if (!f)
        return;
    rh_merge_free(f->merge);
    rh_agg_free(f->agg);
    rh_sym_free(f->sym);
    sqlite3_finalize(f->ins_stack);
    sqlite3_finalize(f->ins_frame);
    sqlite3_finalize(f->sel_frame0);
    sqlite3_finalize(f->sel_syms);
    if (f->db)
        sqlite3_close(f->db);
    f->r.mapped = 0; /* the mapping is ours: rh_rip_close must not unmap it */
    rh_rip_close(&f->r);
    rh_map_free(&f->site_map);
    for (size_t i = 0; i < f->nsites; i++) {
        free(f->sites[i].label);
        free(f->sites[i].func);
    }
    free(f->sites);
    free(f->st);
    free(f->th);
    free(f->tl);
    free(f->rss);
    free(f->held);
    if (f->have_re)
        rh_re_free(f->re);
    if (f->map != MAP_FAILED && f->map) {
        rh_fl_bus_unguard(f->map);
        munmap(f->map, f->reserved);
    }
    if (f->fd >= 0)
        close(f->fd);
    free(f);
}
