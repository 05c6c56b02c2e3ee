/* rh_report.c: counters kept inside the process, and the reports written
 * from them (docs/environment.md).
 *
 * With RHEAPER_REPORTS=1 (or RHEAPER_REPORT_SIGNAL) the runtime counts, for
 * what the current recording records:
 *   - per thread: blocks and bytes allocated, freed (by this thread), freed by
 *     other threads (of those it allocated) and live: the columns of the
 *     converter's thread_stats;
 *   - per stack: allocations, bytes, frees, bytes freed; in use = the
 *     difference.
 * The hot path takes no lock for them: per-thread figures live in
 * cache-line-aligned per-thread records, per-stack ones in an array parallel
 * to the stack table, all updated with relaxed atomic adds. A free is charged
 * to the stack and thread that allocated its block, which rh_live.c's map
 * remembers (its short per-stripe lock is the one lock of this feature; with
 * sampling the map holds the sampled blocks only, and the counters count the
 * recorded blocks, unweighted).
 *
 * The stacks' frames are kept for the reports: when a new stack's STACK record
 * is written (cold), its frames are decoded into an append-only arena.
 * rheaper_thread_report and rheaper_callsite_report write text or CSV to an fd
 * with raw write(2) (no stdio, no allocation through the wrapped allocator:
 * scratch memory is mmap'd), naming frames from the modules' ELF symbol
 * tables (rh_elfsym.c) beside the raw addresses that `rheaper` can symbolize
 * fully later. RHEAPER_REPORT_SIGNAL's handler only sets a flag; the next
 * hooked call of any thread writes both reports to
 * PROFILE_DIR/rheaper-report-<pid>-<n>.txt (rh_api.c's control work).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rh_recording.h"
#include "rheaper.h"


#define RH_REP_THREADS 4096u
#define RH_REP_ARENA (64u << 20) /* frames arena: 8M frames of address space */

struct rh_tstat {
    uint32_t tid, used;
    int64_t an, ab;   /* allocated */
    int64_t fn, fb;   /* freed by this thread */
    int64_t on, ob;   /* allocated here, freed by another thread */
    int64_t ln, lb;   /* allocated here, still live */
} __attribute__((aligned(RH_CACHE_LINE)));

struct rh_sstat {
    int64_t an, ab, fn, fb;
};

struct rh_sfr {
    uint64_t off;   /* into the arena, in frames */
    uint32_t n;     /* frames; 0 until published */
    uint32_t pad;
};

static struct rh_tstat *rh_rep_thr;
static uint32_t rh_rep_nthr; /* atomic: thread records handed out */
static __thread uint32_t rh_tls_rep_idx __attribute__((tls_model("local-exec"))); /* +1 */

static struct rh_sstat *rh_rep_st;  /* indexed by stack id */
static struct rh_sfr *rh_rep_fr;    /* indexed by stack id */
static uint64_t *rh_rep_arena;
static uint64_t rh_rep_arena_used;  /* atomic, in frames */
static uint32_t rh_rep_nstacks;     /* entries of rh_rep_st / rh_rep_fr */

static int rh_rep_signal;           /* RHEAPER_REPORT_SIGNAL, 0: none */
static int rh_rep_pending;          /* atomic: the signal asked for a report */
static unsigned rh_rep_seq;         /* reports written to files */

static void *rh_rep_map(size_t bytes)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* ---- the hot path's side -------------------------------------------------- */

/* The calling thread's record (index + 1 cached in TLS). */
static inline uint32_t rh_rep_thread(void)
{
    uint32_t i = rh_tls_rep_idx;
    if (rh_likely(i))
        return i - 1;
    i = __atomic_fetch_add(&rh_rep_nthr, 1, __ATOMIC_RELAXED);
    if (i >= RH_REP_THREADS)
        i = RH_REP_THREADS - 1; /* the rest share the last record (tid 0) */
    else
        __atomic_store_n(&rh_rep_thr[i].tid, rh_gettid(), __ATOMIC_RELAXED);
    __atomic_store_n(&rh_rep_thr[i].used, 1, __ATOMIC_RELEASE);
    rh_tls_rep_idx = i + 1;
    return i;
}

#define RH_ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

void rh_live_note_alloc(void *p, size_t size, uint32_t id)
{
    if ((intptr_t)p < 0)
        return; /* pool requests: not in the map */
    uint32_t th = __atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED) ? rh_rep_thread() : 0;
    if (!rh_live_add((uintptr_t)p, size, id, th))
        return;
    if (!__atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED))
        return;
    struct rh_tstat *t = &rh_rep_thr[th];
    RH_ADD(t->an, 1);
    RH_ADD(t->ab, (int64_t)size);
    RH_ADD(t->ln, 1);
    RH_ADD(t->lb, (int64_t)size);
    if (id < rh_rep_nstacks) {
        RH_ADD(rh_rep_st[id].an, 1);
        RH_ADD(rh_rep_st[id].ab, (int64_t)size);
    }
}

int rh_live_note_free(void *p)
{
    if ((intptr_t)p < 0)
        return 1;
    uint64_t size;
    uint32_t id, th;
    if (!rh_live_take((uintptr_t)p, &size, &id, &th))
        return !rh_sample_mode; /* unsampled: no event; full: an unknown free */
    if (__atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED)) {
        uint32_t me = rh_rep_thread();
        struct rh_tstat *a = &rh_rep_thr[th], *f = &rh_rep_thr[me];
        RH_ADD(f->fn, 1);
        RH_ADD(f->fb, (int64_t)size);
        RH_ADD(a->ln, -1);
        RH_ADD(a->lb, -(int64_t)size);
        if (me != th) {
            RH_ADD(a->on, 1);
            RH_ADD(a->ob, (int64_t)size);
        }
        if (id < rh_rep_nstacks) {
            RH_ADD(rh_rep_st[id].fn, 1);
            RH_ADD(rh_rep_st[id].fb, (int64_t)size);
        }
    }
    return 1;
}

void rh_report_stack(uint32_t id, const uint8_t *enc, const uint8_t *end, uint32_t nframes)
{
    if (!__atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED) || id >= rh_rep_nstacks || !nframes)
        return;
    uint64_t off = __atomic_fetch_add(&rh_rep_arena_used, nframes, __ATOMIC_RELAXED);
    if (off + nframes > RH_REP_ARENA / sizeof(uint64_t))
        return; /* arena full: the stack is reported without frames */
    uint64_t prev = 0;
    uint32_t n = 0;
    while (n < nframes) {
        uint64_t v = 0;
        if (rip_get_varint(&enc, end, &v) != 0)
            break;
        prev += (uint64_t)rip_unzigzag(v);
        rh_rep_arena[off + n++] = prev;
    }
    rh_rep_fr[id].off = off;
    __atomic_store_n(&rh_rep_fr[id].n, n, __ATOMIC_RELEASE);
}

/* ---- setup --------------------------------------------------------------- */

static void rh_rep_handler(int sig)
{
    (void)sig;
    __atomic_store_n(&rh_rep_pending, 1, __ATOMIC_RELEASE);
    rh_ctl_request();
}

void rh_report_init(void)
{
    const char *r = secure_getenv("RHEAPER_REPORTS");
    const char *s = secure_getenv("RHEAPER_REPORT_SIGNAL");
    int want = r && !strcmp(r, "1");
    if (s && *s) {
        int sig = rh_parse_signal(s);
        if (sig <= 0 || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
            sig == SIGILL || sig == SIGFPE || sig == SIGABRT || sig == SIGCHLD ||
            (rh_cfg.enable == RH_ENABLE_SIGNAL && sig == rh_cfg.ctl_signal))
            rh_warn("ignoring RHEAPER_REPORT_SIGNAL=%s: expected a free signal such as USR1 "
                    "or RTMAX-4", s);
        else {
            rh_rep_signal = sig;
            want = 1;
        }
    }
    if (!want)
        return;
    rh_rep_thr = rh_rep_map(RH_REP_THREADS * sizeof(struct rh_tstat));
    rh_rep_arena = rh_rep_map(RH_REP_ARENA);
    if (!rh_rep_thr || !rh_rep_arena) {
        rh_warn("cannot map the report counters: reports are off");
        return;
    }
    if (rh_rep_signal) {
        struct sigaction old, sa;
        memset(&old, 0, sizeof old);
        memset(&sa, 0, sizeof sa);
        rh_ctl_self = 1;
        if (sigaction(rh_rep_signal, NULL, &old) == 0 &&
            ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)) {
            rh_warn("signal %d already has a handler in this program: RHEAPER_REPORT_SIGNAL "
                    "has no effect", rh_rep_signal);
        } else {
            sa.sa_handler = rh_rep_handler;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_RESTART | SA_ONSTACK;
            if (sigaction(rh_rep_signal, &sa, NULL) != 0)
                rh_warn("cannot install the handler of signal %d: reports by signal are off",
                        rh_rep_signal);
        }
        rh_ctl_self = 0;
    }
    __atomic_store_n(&rh_reports_on, 1, __ATOMIC_RELEASE);
}

void rh_report_file_start(struct rh_stack_table *stacks)
{
    if (!__atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED))
        return;
    /* Per-stack arrays sized to the new table; the old ones are given back
     * (a thread still counting for the old file writes into zero pages). */
    uint32_t n = stacks ? (uint32_t)stacks->limit + 2 : 0;
    if (n > rh_rep_nstacks) {
        struct rh_sstat *st = rh_rep_map((size_t)n * sizeof *st);
        struct rh_sfr *fr = rh_rep_map((size_t)n * sizeof *fr);
        if (st && fr) {
            rh_rep_st = st;
            rh_rep_fr = fr;
            __atomic_store_n(&rh_rep_nstacks, n, __ATOMIC_RELEASE);
        }
    } else if (rh_rep_nstacks) {
        madvise(rh_rep_st, (size_t)rh_rep_nstacks * sizeof *rh_rep_st, MADV_DONTNEED);
        madvise(rh_rep_fr, (size_t)rh_rep_nstacks * sizeof *rh_rep_fr, MADV_DONTNEED);
    }
    madvise(rh_rep_arena, RH_REP_ARENA, MADV_DONTNEED);
    __atomic_store_n(&rh_rep_arena_used, 0, __ATOMIC_RELAXED);
    uint32_t nt = __atomic_load_n(&rh_rep_nthr, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < nt && i < RH_REP_THREADS; i++) {
        struct rh_tstat *t = &rh_rep_thr[i];
        t->an = t->ab = t->fn = t->fb = t->on = t->ob = t->ln = t->lb = 0;
    }
}

/* ---- writing ------------------------------------------------------------- */

struct rh_out {
    int fd, err;
    size_t n;
    char buf[8192];
};

static void rh_out_flush(struct rh_out *o)
{
    size_t off = 0;
    while (off < o->n && !o->err) {
        ssize_t w = rh_sys_write(o->fd, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->err = w < 0 ? errno : EIO;
            break;
        }
        off += (size_t)w;
    }
    o->n = 0;
}

static void rh_out(struct rh_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rh_out(struct rh_out *o, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    size_t n = rh_vfmt(line, sizeof line, fmt, ap);
    va_end(ap);
    if (o->n + n > sizeof o->buf)
        rh_out_flush(o);
    memcpy(o->buf + o->n, line, n);
    o->n += n;
}

/* Text columns: s right-aligned in width (left-aligned when width < 0);
 * rh_fmt has no field widths. */
static void rh_out_col(struct rh_out *o, const char *s, int width)
{
    int n = (int)strlen(s), w = width < 0 ? -width : width;
    if (width < 0)
        rh_out(o, "%s", s);
    for (int i = n; i < w; i++)
        rh_out(o, " ");
    if (width >= 0)
        rh_out(o, "%s", s);
}

static void rh_out_num(struct rh_out *o, long long v, int width)
{
    char b[32];
    rh_fmt(b, sizeof b, "%lld", v);
    rh_out(o, " ");
    rh_out_col(o, b, width);
}

/* CSV: a field quoted when it holds a comma, quote or line end. */
static void rh_out_csv(struct rh_out *o, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        rh_out(o, "%s", s);
        return;
    }
    rh_out(o, "\"");
    for (; *s; s++)
        rh_out(o, *s == '"' ? "\"\"" : "%c", *s);
    rh_out(o, "\"");
}

/* /proc/self/task/TID/comm into name ("?" when the thread is gone). */
static void rh_rep_comm(uint32_t tid, char *name, size_t len)
{
    char path[64];
    rh_fmt(path, sizeof path, "/proc/self/task/%u/comm", tid);
    int fd = tid ? rh_open_proc(path, O_RDONLY) : -1;
    ssize_t r = fd >= 0 ? rh_sys_read(fd, name, len - 1) : -1;
    if (fd >= 0)
        rh_sys_close(fd);
    if (r <= 0)
        r = 0, name[r++] = '?';
    name[r] = 0;
    for (ssize_t i = 0; i < r; i++)
        if (name[i] == '\n')
            name[i] = 0;
}

int rheaper_thread_report(int fd, int format)
{
    if (!__atomic_load_n(&rh_reports_on, __ATOMIC_ACQUIRE))
        return RHEAPER_ERR_NO_REPORTS;
    int g = rh_guard_enter();
    int e = errno;
    struct rh_out *o = rh_rep_map(sizeof *o);
    if (!o) {
        rh_guard_leave(g);
        return RHEAPER_ERR_NOMEM;
    }
    o->fd = fd;
    uint32_t nt = __atomic_load_n(&rh_rep_nthr, __ATOMIC_ACQUIRE);
    if (nt > RH_REP_THREADS)
        nt = RH_REP_THREADS;
    if (format == RHEAPER_REPORT_CSV)
        rh_out(o, "tid,name,alloc_blocks,alloc_bytes,freed_blocks,freed_bytes,"
                  "freed_by_others_blocks,freed_by_others_bytes,live_blocks,live_bytes\n");
    else {
        static const char *const hd[] = {"alloc_blocks", "alloc_bytes", "freed_blocks",
                                         "freed_bytes", "others_blocks", "others_bytes",
                                         "live_blocks", "live_bytes"};
        rh_out(o, "# rheaper thread report, pid %d%s; others_*: allocated by the thread, freed "
                  "by another\n",
               (int)getpid(), rh_sample_mode ? " (sampled: recorded blocks only)" : "");
        rh_out_col(o, "tid", 8);
        rh_out(o, " ");
        rh_out_col(o, "name", -16);
        for (int k = 0; k < 8; k++) {
            rh_out(o, " ");
            rh_out_col(o, hd[k], 13);
        }
        rh_out(o, "\n");
    }
    for (uint32_t i = 0; i < nt; i++) {
        struct rh_tstat *t = &rh_rep_thr[i];
        if (!__atomic_load_n(&t->used, __ATOMIC_ACQUIRE))
            continue;
        char name[64];
        rh_rep_comm(t->tid, name, sizeof name);
        long long v[8] = {__atomic_load_n(&t->an, __ATOMIC_RELAXED), __atomic_load_n(&t->ab, __ATOMIC_RELAXED),
                          __atomic_load_n(&t->fn, __ATOMIC_RELAXED), __atomic_load_n(&t->fb, __ATOMIC_RELAXED),
                          __atomic_load_n(&t->on, __ATOMIC_RELAXED), __atomic_load_n(&t->ob, __ATOMIC_RELAXED),
                          __atomic_load_n(&t->ln, __ATOMIC_RELAXED), __atomic_load_n(&t->lb, __ATOMIC_RELAXED)};
        if (format == RHEAPER_REPORT_CSV) {
            rh_out(o, "%u,", t->tid);
            rh_out_csv(o, name);
            rh_out(o, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", v[0], v[1], v[2], v[3], v[4],
                   v[5], v[6], v[7]);
        } else {
            char tb[16];
            rh_fmt(tb, sizeof tb, "%u", t->tid);
            rh_out_col(o, tb, 8);
            rh_out(o, " ");
            rh_out_col(o, name, -16);
            for (int k = 0; k < 8; k++)
                rh_out_num(o, v[k], 13);
            rh_out(o, "\n");
        }
    }
    rh_out_flush(o);
    int rc = o->err ? RHEAPER_ERR_FILE : RHEAPER_OK;
    munmap(o, sizeof *o);
    errno = e;
    rh_guard_leave(g);
    return rc;
}

/* In-use bytes of stack id (a snapshot of relaxed counters). */
static int64_t rh_rep_inuse(uint32_t id)
{
    return __atomic_load_n(&rh_rep_st[id].ab, __ATOMIC_RELAXED) -
           __atomic_load_n(&rh_rep_st[id].fb, __ATOMIC_RELAXED);
}

/* Sift-down of a min-heap of n entries from r (keys with their ids). */
static void rh_rep_sift(uint32_t *ids, int64_t *key, uint64_t n, uint64_t r)
{
    for (uint64_t c; (c = 2 * r + 1) < n; r = c) {
        if (c + 1 < n && key[c + 1] < key[c])
            c++;
        if (key[r] <= key[c])
            return;
        int64_t tk = key[r];
        key[r] = key[c];
        key[c] = tk;
        uint32_t ti = ids[r];
        ids[r] = ids[c];
        ids[c] = ti;
    }
}

/* Sorts ids by in-use bytes, largest first: heap sort on a min-heap (no libc
 * qsort, which may allocate). */
static void rh_rep_sort(uint32_t *ids, int64_t *key, uint64_t n)
{
    for (uint64_t k = n / 2; k > 0;)
        rh_rep_sift(ids, key, n, --k);
    for (uint64_t end = n; end > 1;) {
        end--;
        int64_t tk = key[0];
        key[0] = key[end];
        key[end] = tk;
        uint32_t ti = ids[0];
        ids[0] = ids[end];
        ids[end] = ti;
        rh_rep_sift(ids, key, end, 0);
    }
}

int rheaper_callsite_report(int fd, int format, const struct rheaper_report_filter *f)
{
    if (!__atomic_load_n(&rh_reports_on, __ATOMIC_ACQUIRE))
        return RHEAPER_ERR_NO_REPORTS;
    int g = rh_guard_enter();
    int e = errno;
    int rc = RHEAPER_ERR_NOMEM;
    uint32_t n = __atomic_load_n(&rh_rep_nstacks, __ATOMIC_ACQUIRE);
    struct rh_stack_table *tb = rh_prof.stacks;
    uint32_t used = tb ? __atomic_load_n(&tb->next_id, __ATOMIC_ACQUIRE) : 0;
    if (used < n)
        n = used;
    int64_t min = f && f->min_bytes_in_use > 0 ? (int64_t)f->min_bytes_in_use : INT64_MIN;
    const char *sub = f && f->function_substring && *f->function_substring ? f->function_substring
                                                                          : NULL;
    size_t idb = ((size_t)n + 1) * sizeof(uint32_t), kb = ((size_t)n + 1) * sizeof(int64_t);
    struct rh_out *o = rh_rep_map(sizeof *o);
    uint32_t *ids = rh_rep_map(idb);
    int64_t *key = rh_rep_map(kb);
    struct rh_sym_ctx *sym = NULL;
    if (!o || !ids || !key)
        goto out;
    o->fd = fd;
    /* the bytes test first, over the counters only */
    uint64_t k = 0;
    for (uint32_t id = 1; id < n; id++) {
        if (!__atomic_load_n(&rh_rep_st[id].an, __ATOMIC_RELAXED))
            continue;
        int64_t u = rh_rep_inuse(id);
        if (u < min)
            continue;
        ids[k] = id;
        key[k++] = u;
    }
    rh_rep_sort(ids, key, k);
    sym = rh_sym_open();
    if (format == RHEAPER_REPORT_CSV)
        rh_out(o, "stack,in_use_bytes,in_use_blocks,allocs,bytes,frees,freed_bytes,frames,"
                  "functions\n");
    else
        rh_out(o, "# rheaper call-site report, pid %d: %llu stacks with at least %lld bytes in "
                  "use%s%s%s\n",
               (int)getpid(), (unsigned long long)k, min == INT64_MIN ? 0LL : (long long)min,
               sub ? ", a function containing \"" : "", sub ? sub : "", sub ? "\"" : "");
    unsigned shown = 0, limit = f && f->max_stacks ? f->max_stacks : 0;
    for (uint64_t i = 0; i < k && (!limit || shown < limit); i++) {
        uint32_t id = ids[i];
        uint32_t nf = __atomic_load_n(&rh_rep_fr[id].n, __ATOMIC_ACQUIRE);
        const uint64_t *fr = rh_rep_arena + rh_rep_fr[id].off;
        char names[16][160];
        const char *mods[16];
        uint32_t nn = nf < 16 ? nf : 16;
        int match = !sub;
        for (uint32_t j = 0; j < nn; j++) {
            rh_sym_name(sym, (uintptr_t)fr[j] - 1, names[j], sizeof names[j], &mods[j]);
            if (sub && strstr(names[j], sub))
                match = 1;
        }
        if (!match)
            continue;
        shown++;
        struct rh_sstat *s = &rh_rep_st[id];
        long long an = __atomic_load_n(&s->an, __ATOMIC_RELAXED), ab = __atomic_load_n(&s->ab, __ATOMIC_RELAXED),
                  fn = __atomic_load_n(&s->fn, __ATOMIC_RELAXED), fb = __atomic_load_n(&s->fb, __ATOMIC_RELAXED);
        if (format == RHEAPER_REPORT_CSV) {
            rh_out(o, "%u,%lld,%lld,%lld,%lld,%lld,%lld,", id, ab - fb, an - fn, an, ab, fn, fb);
            for (uint32_t j = 0; j < nf; j++)
                rh_out(o, "%s0x%llx", j ? ";" : "", (unsigned long long)fr[j]);
            rh_out(o, ",");
            for (uint32_t j = 0; j < nn; j++)
                rh_out(o, "%s%s", j ? ";" : "", names[j][0] ? names[j] : "?");
            rh_out(o, "\n");
        } else {
            rh_out(o, "\nstack %u: %lld bytes in use in %lld blocks; %lld allocations, %lld bytes; "
                      "%lld frees, %lld bytes\n",
                   id, ab - fb, an - fn, an, ab, fn, fb);
            for (uint32_t j = 0; j < nf; j++) {
                if (j < nn)
                    rh_out(o, "  #%u 0x%llx %s (%s)\n", j, (unsigned long long)fr[j],
                           names[j][0] ? names[j] : "?", mods[j]);
                else
                    rh_out(o, "  #%u 0x%llx\n", j, (unsigned long long)fr[j]);
            }
        }
    }
    if (format != RHEAPER_REPORT_CSV)
        rh_out(o, "\n# %u shown\n", shown);
    rh_out_flush(o);
    rc = o->err ? RHEAPER_ERR_FILE : RHEAPER_OK;
out:
    rh_sym_close(sym);
    if (o)
        munmap(o, sizeof *o);
    if (ids)
        munmap(ids, idb);
    if (key)
        munmap(key, kb);
    errno = e;
    rh_guard_leave(g);
    return rc;
}

/* The control work's part (rh_api.c, at the next hooked call after the
 * signal): both reports, text, into a new file in the profile directory. */
void rh_report_ctl(void)
{
    if (!__atomic_exchange_n(&rh_rep_pending, 0, __ATOMIC_ACQ_REL))
        return;
    char path[RH_PATH_MAX];
    int fd = -1;
    for (unsigned k = 0; k < 1000 && fd < 0; k++) {
        rh_fmt(path, sizeof path, "%s/rheaper-report-%d-%u.txt", rh_cfg.profile_dir, (int)getpid(),
               ++rh_rep_seq);
        fd = rh_open_safe(path, O_WRONLY | O_CREAT | O_EXCL, 0600, 0, NULL, NULL);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        rh_warn("cannot create the report %s: %s", path, rh_arch_strerror(errno));
        return;
    }
    rheaper_thread_report(fd, RHEAPER_REPORT_TEXT);
    rheaper_callsite_report(fd, RHEAPER_REPORT_TEXT, NULL);
    rh_sys_close(fd);
    rh_notice("wrote report %s", path);
}
