/* mock_rt.h: a recording stand-in for the runtime, for testing the wrap shims.
 *
 * mock_rt.c defines everything runtime/rh_hooks.h declares, and what the
 * record fast path the hot shims inline (runtime/rh_hot.h) refers to. Instead of writing a
 * profile it keeps a log of the calls the shims make (the last MOCK_LOG_MAX) and
 * a set of live blocks, and counts anomalies: an allocation of an address that
 * is already live, or a record made without the reentrancy guard set. The test
 * program links the real shims against it with the generated --wrap flags.
 */
#ifndef MOCK_RT_H
#define MOCK_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MOCK_ALLOC = 1, MOCK_FREE, MOCK_REALLOC, MOCK_FAIL };

struct mock_ev {
    int op;        /* MOCK_* */
    unsigned kind; /* RH_KIND_* (0 for FREE) */
    void *p;       /* the block (new block for REALLOC) */
    void *old;     /* REALLOC: the block that ended */
    size_t size;
    uint64_t t1, t2; /* ALLOC/FREE: t1; REALLOC: t_before, t_after */
    void *fp;        /* the shim's frame address */
};

#define MOCK_LOG_MAX 64

extern struct mock_ev mock_log[MOCK_LOG_MAX];
extern int mock_n;            /* events since mock_reset() (may exceed MOCK_LOG_MAX) */
extern int mock_dup_allocs;   /* allocations of an address already live */
extern int mock_reentries;   /* rh_note_reentry calls */
/* rh_hooks.h's guard values (mock_rt.c checks they match) */
#define MOCK_GUARD_CALL 1
#define MOCK_GUARD_LEAF 2
extern int mock_guard_errors; /* records made while rh_guard was not set */
extern int mock_modules_changed;
extern int mock_slow_calls; /* records that reached the inline fast path's slow entries */

/* Forgets the log (not the live set). */
void mock_reset(void);
/* Kind of the live block at p, or -1 when p is not live. */
int mock_live_kind(const void *p);
/* Sets tracking on (1) or off (0), as the runtime would. */
void mock_set_tracking(int on);
/* Sets or clears the calling thread's reentrancy guard. */
void mock_set_guard(int on);
int mock_guard(void);

#ifdef __cplusplus
}
#endif
#endif
