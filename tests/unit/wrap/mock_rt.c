/* mock_rt.c: the recording stand-in for the runtime (see mock_rt.h).
 *
 * Single-threaded test use only. Uses no wrapped function: the live set is a
 * fixed array, so recording never re-enters the shims.
 *
 * The hot shims (malloc, realloc, free, operator new and delete) record through
 * the runtime's inline fast path (rh_record_*_inline in rh_hot.h). Here the
 * calling thread never has a slot (rh_tls_slot stays NULL), so that path always
 * leaves through its slow entry points, rh_record_*_slow, which take exactly
 * rh_record_*'s arguments: they log through the same functions. The rest of
 * what the inline path refers to (the walk, the stack table, the calibration)
 * must never run; it aborts the test if it does.
 */
#include <stdlib.h>
#include <time.h>

#include "mock_rt.h"
#include "rh_runtime.h"

int rh_state = RH_UNINIT;
int rh_scope_process = 1;
__thread volatile int rh_guard __attribute__((tls_model("local-exec")));
int rh_clock_tsc = 1;

struct mock_ev mock_log[MOCK_LOG_MAX];
int mock_n, mock_dup_allocs, mock_guard_errors, mock_modules_changed;

#define MOCK_LIVE_MAX 8192
static struct {
    void *p;
    unsigned kind;
} mock_live[MOCK_LIVE_MAX];

int mock_reentries;
_Static_assert(MOCK_GUARD_CALL == RH_GUARD_CALL && MOCK_GUARD_LEAF == RH_GUARD_LEAF,
               "mock_rt.h's guard values follow rh_hooks.h");

void rh_note_reentry(void)
{
    mock_reentries++;
}

/* CPU sampling's carried periods (rh_hooks.h): never any without a sampler */
__thread unsigned rh_tls_cpu_carry __attribute__((tls_model("local-exec")));
void rh_cpu_carry_flush(void)
{
    rh_tls_cpu_carry = 0;
}

int rh_init_lazy(void)
{
    rh_state = RH_ON;
    return 1;
}

uint64_t rh_now_slow(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void mock_reset(void)
{
    mock_n = 0;
}

void mock_set_tracking(int on)
{
    rh_state = on ? RH_ON : RH_OFF;
}

void mock_set_guard(int on)
{
    rh_guard = on;
}

int mock_guard(void)
{
    return rh_guard;
}

static int mock_find(const void *p)
{
    for (int i = 0; i < MOCK_LIVE_MAX; i++)
        if (mock_live[i].p == p)
            return i;
    return -1;
}

int mock_live_kind(const void *p)
{
    int i = p ? mock_find(p) : -1;
    return i < 0 ? -1 : (int)mock_live[i].kind;
}

static void mock_add(void *p, unsigned kind)
{
    if (mock_find(p) >= 0) {
        mock_dup_allocs++;
        return;
    }
    int i = mock_find(NULL);
    if (i >= 0) {
        mock_live[i].p = p;
        mock_live[i].kind = kind;
    }
}

static void mock_del(void *p)
{
    int i = mock_find(p);
    if (i >= 0)
        mock_live[i].p = NULL; /* unknown frees (libc's own blocks) are fine */
}

static struct mock_ev *mock_push(int op)
{
    if (!rh_guard)
        mock_guard_errors++;
    struct mock_ev *e = &mock_log[mock_n % MOCK_LOG_MAX];
    mock_n++;
    *e = (struct mock_ev){.op = op};
    return e;
}

void rh_record_alloc(unsigned kind, void *p, size_t size, uint64_t t_after, void *fp)
{
    struct mock_ev *e = mock_push(MOCK_ALLOC);
    e->kind = kind;
    e->p = p;
    e->size = size;
    e->t1 = t_after;
    e->fp = fp;
    mock_add(p, kind);
}

void rh_record_free(void *p, uint64_t t_before)
{
    struct mock_ev *e = mock_push(MOCK_FREE);
    e->p = p;
    e->t1 = t_before;
    mock_del(p);
}

void rh_record_realloc(unsigned kind, void *old, void *p, size_t size, uint64_t t_before,
                       uint64_t t_after, void *fp)
{
    struct mock_ev *e = mock_push(MOCK_REALLOC);
    e->kind = kind;
    e->old = old;
    e->p = p;
    e->size = size;
    e->t1 = t_before;
    e->t2 = t_after;
    e->fp = fp;
    mock_del(old);
    mock_add(p, kind);
}

void rh_record_fail(unsigned kind, size_t size, void *fp)
{
    struct mock_ev *e = mock_push(MOCK_FAIL);
    e->kind = kind;
    e->size = size;
    e->fp = fp;
}

/* ---- the inline fast path's out-of-line parts (rh_hot.h) ---------------- */

__thread struct rh_slot *rh_tls_slot __attribute__((tls_model("local-exec"))); /* always NULL */
uint32_t rh_epoch;
uint32_t rh_clock_shift;
struct rh_config rh_cfg;
__thread uintptr_t rh_tls_stack_lo __attribute__((tls_model("local-exec")));
__thread uintptr_t rh_tls_stack_hi __attribute__((tls_model("local-exec")));
#if RH_UNWIND_CFI
struct rh_uw_slot rh_uw_cache[1u << RH_UW_CACHE_BITS];
uintptr_t rh_uw_fpset[1u << RH_UW_FPSET_BITS];
__thread struct rh_tail rh_tls_tail __attribute__((tls_model("local-exec")));
#endif
int mock_slow_calls;

void rh_record_alloc_slow(unsigned kind, void *p, size_t size, uint64_t t_after, void *fp)
{
    mock_slow_calls++;
    rh_record_alloc(kind, p, size, t_after, fp);
}

void rh_record_free_slow(void *p, uint64_t t_before)
{
    mock_slow_calls++;
    if (!p)
        mock_guard_errors++; /* the inline free requires p != NULL */
    rh_record_free(p, t_before);
}

void rh_record_realloc_slow(unsigned kind, void *old, void *p, size_t size, uint64_t t_before,
                            uint64_t t_after, void *fp)
{
    mock_slow_calls++;
    rh_record_realloc(kind, old, p, size, t_before, t_after, fp);
}

/* Reached only with a slot: never here. */
void rh_writer_recalibrate(struct rh_writer *w)
{
    (void)w;
    abort();
}

uint32_t rh_stack_id_slow_fast(struct rh_writer *w, unsigned kind, void *fp, uint64_t hash,
                               uint32_t nframes, uint32_t cut, uint64_t t)
{
    (void)w, (void)kind, (void)fp, (void)hash, (void)nframes, (void)cut, (void)t;
    abort();
}

void rh_stack_bounds_compute(void)
{
    abort();
}

/* Sampling and reports are off in the mock: rh_sample_mode and
 * rh_live_on stay 0 and the keys RH_SAMPLE_NOKEY, so their entry points are
 * never reached. */
_Atomic int rh_sample_mode;
__thread struct rh_tls_sampler rh_tls_samp __attribute__((tls_model("local-exec")));
__thread uint64_t rh_tls_rng __attribute__((tls_model("local-exec")));
_Atomic uint64_t rh_sample_bkey = RH_SAMPLE_NOKEY, rh_sample_rkey = RH_SAMPLE_NOKEY;
_Atomic uint64_t rh_sample_threshold;
int rh_sample_alloc_slow(void *p, size_t size)
{
    (void)p, (void)size;
    abort();
}
int rh_live_on;
uint8_t rh_lv_filter[1u << RH_LV_FILTER_BITS];
int rh_live_note_free(void *p)
{
    (void)p;
    abort();
}
void rh_live_note_alloc(void *p, size_t size, uint32_t id)
{
    (void)p, (void)size, (void)id;
    abort();
}
void rh_sample_realloc_rec(unsigned kind, void *old, void *p, size_t size, int was, int now,
                           uint64_t t_before, uint64_t t_after, void *fp)
{
    (void)kind, (void)old, (void)p, (void)size, (void)was, (void)now, (void)t_before,
        (void)t_after, (void)fp;
    abort();
}

void rh_stack_walk_cont(uintptr_t ret, uintptr_t rsp, uintptr_t rbp, uintptr_t lo, uintptr_t hi,
                        unsigned max, uint64_t h, uint32_t n, struct rh_walk_rest *o)
{
    (void)ret, (void)rsp, (void)rbp, (void)lo, (void)hi, (void)max, (void)h, (void)n, (void)o;
    abort();
}

void rh_stack_walk_cached(void *fp, unsigned kind, unsigned max, struct rh_walk *w)
{
    (void)fp, (void)kind, (void)max, (void)w;
    abort();
}
__thread struct rh_wcache rh_tls_wc __attribute__((tls_model("local-exec")));
int rh_wc_on;
int rh_wc_take(uintptr_t start, int m, uint32_t k, uint32_t nsofar, uint32_t max, uint64_t h,
               struct rh_walk_rest *o)
{
    (void)start, (void)m, (void)k, (void)nsofar, (void)max, (void)h, (void)o;
    abort();
}
void rh_wc_fill(uintptr_t start, uint32_t k, uintptr_t cur, uintptr_t raw, uintptr_t term_next,
                const uintptr_t *tail, uint32_t tail_n, uint32_t cut)
{
    (void)start, (void)k, (void)cur, (void)raw, (void)term_next, (void)tail, (void)tail_n, (void)cut;
    abort();
}

void rh_stack_walk_far(uintptr_t fp, unsigned max, uint64_t h, struct rh_walk_rest *o)
{
    (void)fp, (void)max, (void)h, (void)o;
    abort();
}

void rh_modules_changed(void)
{
    if (!rh_guard)
        mock_guard_errors++;
    mock_modules_changed++;
}

/* The mmap and mallopt records (shims_mmap.c): the mock counts them only. */
int mock_ext_records;
void rh_record_ext(unsigned kind, unsigned sub, const uint64_t *v, unsigned n, uint64_t t,
                   void *fp)
{
    (void)kind, (void)sub, (void)v, (void)n, (void)t, (void)fp;
    mock_ext_records++;
}
int rh_thread_recording(void)
{
    return 1;
}

/* Memory samples are off in the mock: the deadline never comes. */
uint64_t rh_mem_next = UINT64_MAX;
void rh_mem_due(struct rh_writer *w, uint64_t t)
{
    (void)w, (void)t;
    abort();
}
