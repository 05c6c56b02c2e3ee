/* test_stacks.c: stack walks, depth limits, stack ids, and re-enable naming.
 *
 * A recursion of known depth records through the fake shim; each level keeps
 * its own return address, so the test knows every frame the walk must find.
 * With max depth 5 the stack is cut (flag set, exactly 5 frames); with 1024 it
 * is whole. The same call site shares one id, another kind gets another. A walk
 * that starts on a foreign stack (a ucontext coroutine) keeps frame 0 only, is
 * marked truncated (the walk could not go on) and
 * does not fault. The second enable writes rip-<pid>.1 with ids from 1 again.
 */
#include <sys/mman.h>
#include <ucontext.h>

#include "rt_test.h"

static void *ra[64];

__attribute__((noinline)) static void recurse(int d, unsigned kind, uintptr_t p)
{
    if (d == 0)
        ra[0] = tr_alloc(kind, p, 16);
    else
        recurse(d - 1, kind, p);
    ra[d + 1] = __builtin_return_address(0);
    __asm__ __volatile__("");
}

static ucontext_t uc_main, uc_co;
static void *co_f0;

static void coroutine(void)
{
    co_f0 = tr_alloc(1, 0x5000, 32);
}

static int frames_match(const struct tr_stack *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s->frames[i] != (uintptr_t)ra[i])
            return 0;
    return 1;
}

int main(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "stacks");

    /* ---- file 1: max depth 5 ---- */
    CHECK_EQ(tr_enable(dir, 5, 0, 0), RHEAPER_OK);
    recurse(10, 1, 0x1000);
    void *ra5[6];
    memcpy(ra5, ra, sizeof ra5);
    recurse(10, 1, 0x1010);  /* same stack again: same id */
    recurse(10, 10, 0x1020); /* kind new: another id */
    /* a coroutine stack outside the thread's stack */
    size_t cosz = 256 * 1024;
    void *costack = mmap(NULL, cosz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    getcontext(&uc_co);
    uc_co.uc_stack.ss_sp = costack;
    uc_co.uc_stack.ss_size = cosz;
    uc_co.uc_link = &uc_main;
    makecontext(&uc_co, coroutine, 0);
    swapcontext(&uc_main, &uc_co);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    char path1[512];
    snprintf(path1, sizeof path1, "%s/rip-%d", dir, (int)getpid());
    CHECK(strcmp(rheaper_profile_path(), path1) == 0);

    /* ---- file 2: max depth 1024, named .1 ---- */
    CHECK_EQ(tr_enable(dir, 1024, 0, 0), RHEAPER_OK);
    char path2[512];
    snprintf(path2, sizeof path2, "%s/rip-%d.1", dir, (int)getpid());
    CHECK(strcmp(rheaper_profile_path(), path2) == 0);
    recurse(10, 1, 0x2000);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);

    struct tr_file f;
    CHECK_EQ(tr_read(path1, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.hdr.max_stack_depth, 5);
    CHECK_EQ(f.nev, 4);
    CHECK_EQ(f.nst, 3);
    CHECK_EQ(f.tr_stacks, 3);
    if (f.nev == 4 && f.nst == 3) {
        CHECK_EQ(f.ev[0].stack, 1);
        CHECK_EQ(f.ev[1].stack, 1);
        CHECK_EQ(f.ev[2].stack, 2);
        CHECK_EQ(f.ev[3].stack, 3);
        const struct tr_stack *s = tr_stack_by_id(&f, 1);
        CHECK(s && s->n == 5 && s->cut == 1 && s->kind == 1);
        if (s)
            for (int i = 0; i < 5; i++)
                CHECK(s->frames[i] == (uintptr_t)ra5[i]);
        s = tr_stack_by_id(&f, 2);
        CHECK(s && s->n == 5 && s->cut == 1 && s->kind == 10);
        s = tr_stack_by_id(&f, 3);
        CHECK(s && s->n == 1 && s->cut == 1 && s->frames[0] == (uintptr_t)co_f0);
        CHECK(f.ev[3].addr == 0x5000);
    }
    tr_free_file(&f);

    CHECK_EQ(tr_read(path2, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.hdr.max_stack_depth, 1024);
    CHECK_EQ(f.nev, 1);
    CHECK_EQ(f.nst, 1);
    if (f.nev == 1 && f.nst == 1) {
        CHECK_EQ(f.ev[0].stack, 1);
        CHECK(f.ev[0].addr == 0x2000);
        const struct tr_stack *s = &f.st[0];
        CHECK_EQ(s->cut, 0);
        CHECK(s->n >= 12 && s->n < 1024);
        CHECK(frames_match(s, 12));
    }
    CHECK(f.has_trailer);
    CHECK_EQ(f.tr_events, 1);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
