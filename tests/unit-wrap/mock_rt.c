/* mock_rt.c: the recording stand-in for the runtime (see mock_rt.h).
 *
 * Single-threaded test use only. Uses no wrapped function: the live set is a
 * fixed array, so recording never re-enters the shims.
 */
#include <time.h>

#include "mock_rt.h"
#include "rh_hooks.h"

int rh_state = RH_UNINIT;
__thread volatile int rh_guard __attribute__((tls_model("initial-exec")));
int rh_clock_tsc = 1;

struct mock_ev mock_log[MOCK_LOG_MAX];
int mock_n, mock_dup_allocs, mock_guard_errors, mock_modules_changed;

#define MOCK_LIVE_MAX 8192
static struct {
    void *p;
    unsigned kind;
} mock_live[MOCK_LIVE_MAX];

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

void rh_modules_changed(void)
{
    if (!rh_guard)
        mock_guard_errors++;
    mock_modules_changed++;
}
