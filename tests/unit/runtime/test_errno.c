/* test_errno.c: recording never changes the caller's errno.
 *
 * runtime/rh_hooks.h promises that rh_record_* preserve errno, so the shims do
 * not save it. This sets errno to a value no runtime call produces before
 * every kind of record and checks it afterwards, on the paths that make
 * system calls: a thread's first event (slot, stack bounds, first chunk), new
 * stacks, full chunks (seal, map the next one), a failure, frees, reallocs,
 * and a thread beyond max_trackers (the shared path). It then checks that
 * every event made it into the profile.
 */
#include <pthread.h>

#include "rt_test.h"

#define BASE ((uintptr_t)0x7f3400100000ull)
#define N 3000 /* with a 64-event buffer: dozens of chunk changes */
#define MARK 4242

static int errno_changed;

static void check_errno(void)
{
    if (errno != MARK)
        errno_changed++;
    errno = MARK;
}

/* Distinct call sites make new stacks; the loop repeats known ones. */
__attribute__((noinline)) static void site(int k, uintptr_t p)
{
    errno = MARK;
    if (k % 3 == 0)
        tr_alloc(1, p, 16);
    else if (k % 3 == 1)
        tr_alloc(2, p, 32);
    else
        tr_alloc(3, p, 48);
    check_errno();
}

static void *work(void *arg)
{
    uintptr_t base = (uintptr_t)arg;
    for (int i = 0; i < N; i++) {
        site(i, base + 64 * (uintptr_t)i);
        if (i % 2) {
            tr_free(base + 64 * (uintptr_t)i);
            check_errno();
        } else {
            tr_realloc(3, base + 64 * (uintptr_t)i, base + 64 * (uintptr_t)i, 80);
            check_errno();
        }
    }
    tr_fail(1, 1u << 30);
    check_errno();
    return NULL;
}

int main(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "errno");
    /* one slot: the main thread takes it, the two others use the shared path */
    CHECK_EQ(tr_enable(dir, 0, 1, 64), RHEAPER_OK);
    errno = MARK;
    work((void *)BASE);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, (void *)(BASE + ((uintptr_t)(i + 1) << 24)));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    CHECK_EQ(errno_changed, 0);

    struct tr_file f;
    CHECK_EQ(tr_read(rheaper_profile_path(), &f), 0);
    CHECK_EQ(tr_count(&f, RIP_OP_ALLOC, 0), 3 * N);
    CHECK_EQ(tr_count(&f, RIP_OP_FREE, 0), 3 * (N / 2));
    CHECK_EQ(tr_count(&f, RIP_OP_REALLOC, 0), 3 * (N / 2));
    CHECK_EQ(tr_count(&f, RIP_OP_FAIL, 0), 3);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
