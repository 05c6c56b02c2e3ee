/* test_unwind_aarch64.c: the CFI step of the stack walk on AArch64
 * (runtime/rh_unwind.c with rh_arch.h's AArch64 CFI registers).
 *
 * Two hand-written functions, so that their CFI is known exactly, sit between
 * the fake shim (tr_alloc) and frame-pointer callers:
 *   a64_mid: no frame record; signs its return address (paciasp, CFI
 *     negate_ra_state), keeps a 48-byte frame with x30 at CFA - 24 and leaves
 *     x29 alone: CFA = sp + 48, the return address from its slot, stripped;
 *   a64_rec: a frame record whose CFA is x29-based (CFA = x29 + 32, the
 *     record at CFA - 32), as clang lays it out: the frame-pointer step, with
 *     the caller's sp from the record's offset.
 * Each notes the return address it goes back to, so the test knows the exact
 * chain the profile must hold (recorded through the real runtime, read back
 * from the rip file); then the rules themselves, the depth limit, and fake
 * stacks whose CFI steps lead nowhere, which must end without faulting.
 * Built and run under qemu-aarch64 by tests/e2e/cross/check_cross_cfi.sh, and
 * natively on an AArch64 host (CMakeLists.txt).
 */
#include <sys/mman.h>

#include "rh_runtime.h"
#include "rt_test.h"

typedef void *(*a64_shim_fn)(unsigned kind, uintptr_t p, size_t size);
extern void *a64_mid(unsigned kind, uintptr_t p, size_t size, a64_shim_fn shim);
extern void *a64_rec(unsigned kind, uintptr_t p, size_t size, a64_shim_fn shim);
extern char a64_mid_call[]; /* a64_mid's call instruction */
uintptr_t a64_mid_ra, a64_rec_ra;

/* void *a64_mid(kind, p, size, shim): shim(kind, p, size). */
__asm__(".text\n"
        ".globl a64_mid\n"
        ".type a64_mid, %function\n"
        "a64_mid:\n"
        ".cfi_startproc\n"
        "adrp x9, a64_mid_ra\n"
        "str x30, [x9, :lo12:a64_mid_ra]\n"
        "hint 25\n" /* paciasp */
        ".cfi_negate_ra_state\n"
        "sub sp, sp, #48\n"
        ".cfi_def_cfa_offset 48\n"
        "str x30, [sp, #24]\n"
        ".cfi_offset 30, -24\n"
        ".globl a64_mid_call\n"
        "a64_mid_call:\n"
        "blr x3\n"
        "ldr x30, [sp, #24]\n"
        ".cfi_restore 30\n"
        "add sp, sp, #48\n"
        ".cfi_def_cfa_offset 0\n"
        "hint 29\n" /* autiasp */
        ".cfi_negate_ra_state\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size a64_mid, .-a64_mid\n"
        /* void *a64_rec(kind, p, size, shim): a64_mid(kind, p, size, shim) */
        ".globl a64_rec\n"
        ".type a64_rec, %function\n"
        "a64_rec:\n"
        ".cfi_startproc\n"
        "adrp x9, a64_rec_ra\n"
        "str x30, [x9, :lo12:a64_rec_ra]\n"
        "stp x29, x30, [sp, #-32]!\n"
        ".cfi_def_cfa_offset 32\n"
        ".cfi_offset 29, -32\n"
        ".cfi_offset 30, -24\n"
        "mov x29, sp\n"
        ".cfi_def_cfa 29, 32\n"
        "bl a64_mid\n"
        "a64_rec_back:\n"
        "ldp x29, x30, [sp], #32\n"
        ".cfi_def_cfa 31, 0\n"
        ".cfi_restore 29\n"
        ".cfi_restore 30\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size a64_rec, .-a64_rec\n"
        ".data\n"
        ".balign 8\n"
        ".globl a64_rec_mid_ra_init\n" /* the return address into a64_rec */
        "a64_rec_mid_ra_init: .quad a64_rec_back\n"
        ".text\n");
extern uintptr_t a64_rec_mid_ra_init;

static uintptr_t outer_ra, outer_f0, outer2_ra, outer2_f0;

/* Frame-pointer caller of a64_mid. */
__attribute__((noinline)) static void fp_outer(uintptr_t p)
{
    outer_ra = (uintptr_t)__builtin_return_address(0);
    outer_f0 = (uintptr_t)a64_mid(1, p, 16, tr_alloc);
    __asm__ __volatile__("");
}

/* Frame-pointer caller of a64_rec -> a64_mid. */
__attribute__((noinline)) static void fp_outer2(uintptr_t p)
{
    outer2_ra = (uintptr_t)__builtin_return_address(0);
    outer2_f0 = (uintptr_t)a64_rec(2, p, 16, tr_alloc);
    __asm__ __volatile__("");
}

/* The stack of the event at address addr, or NULL. */
static const struct tr_stack *stack_of(const struct tr_file *f, uint64_t addr)
{
    for (int i = 0; i < f->nev; i++)
        if (f->ev[i].addr == addr)
            return tr_stack_by_id(f, f->ev[i].stack);
    return NULL;
}

static void test_recorded_chains(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "unwind");
    CHECK_EQ(tr_enable(dir, 64, 0, 0), RHEAPER_OK);
    fp_outer(0x1000);
    uintptr_t mid_ra_1 = a64_mid_ra;
    fp_outer2(0x2000);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/rip-%d", dir, (int)getpid());
    struct tr_file f;
    CHECK_EQ(tr_read(path, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.nev, 2);

    /* shim <- a64_mid (no record, x30 signed in its slot) <- fp_outer <- here */
    const struct tr_stack *s = stack_of(&f, 0x1000);
    CHECK(s != NULL);
    if (s) {
        CHECK(s->n >= 4);
        CHECK_EQ(s->cut, 0);
        CHECK(s->frames[0] == outer_f0);
        CHECK(s->frames[1] == mid_ra_1);
        CHECK(s->n >= 3 && s->frames[2] == outer_ra);
    }
    /* shim <- a64_mid <- a64_rec (x29-based CFA) <- fp_outer2 <- here */
    s = stack_of(&f, 0x2000);
    CHECK(s != NULL);
    if (s) {
        CHECK(s->n >= 5);
        CHECK_EQ(s->cut, 0);
        CHECK(s->frames[0] == outer2_f0);
        CHECK(s->n >= 2 && s->frames[1] == a64_rec_mid_ra_init);
        CHECK(s->n >= 3 && s->frames[2] == a64_rec_ra);
        CHECK(s->n >= 4 && s->frames[3] == outer2_ra);
    }
    tr_free_file(&f);

    /* the depth limit cuts inside the CFI steps too: 2 frames, cut */
    CHECK_EQ(tr_enable(dir, 2, 0, 0), RHEAPER_OK);
    snprintf(path, sizeof path, "%s", rheaper_profile_path());
    fp_outer(0x4000);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    CHECK_EQ(tr_read(path, &f), 0);
    CHECK_EQ(f.err[0], 0);
    s = stack_of(&f, 0x4000);
    CHECK(s && s->n == 2 && s->cut == 1);
    if (s && s->n == 2) {
        CHECK(s->frames[0] == outer_f0);
        CHECK(s->frames[1] == a64_mid_ra);
    }
    tr_free_file(&f);
    tr_rmdir(dir);
}

static void test_rules(void)
{
    struct rh_unwind_rule r;
    /* a64_mid at its call: CFA = sp + 48, x30 at CFA - 24, x29 unchanged */
    rh_unwind_rule_of(outer_f0, &r);
    CHECK_EQ(r.kind, RH_UW_CFA_RSP);
    CHECK_EQ(r.cfa_off, 48);
    CHECK_EQ(r.ra_off, -24);
    CHECK_EQ(r.rbp_off, 0);
    /* a64_rec at its call: a frame record 32 bytes below the CFA */
    rh_unwind_rule_of(a64_rec_mid_ra_init, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    CHECK_EQ(r.rbp_off, -32);
    CHECK_EQ(rh_unwind_fp_cfa(a64_rec_mid_ra_init, 0x10000), 0x10020);
    /* gcc's frame-pointer code: a frame record at the frame's bottom */
    rh_unwind_rule_of(a64_mid_ra, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    CHECK(r.rbp_off < 0 && r.rbp_off % 8 == 0);
    /* a pc in no object, one in anonymous memory, one in the stack: no CFI */
    rh_unwind_rule_of(0x1234, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    CHECK_EQ(r.rbp_off, 0);
    CHECK_EQ(rh_unwind_fp_cfa(0x1234, 0x10000), 0x10000 + RH_FRAME_REC);
    void *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(anon != MAP_FAILED);
    rh_unwind_rule_of((uintptr_t)anon + 100, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    munmap(anon, 4096);
    rh_unwind_rule_of((uintptr_t)&r, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
}

/* Fake stacks from a sample's registers inside a64_mid (its CFA = sp + 48,
 * its return address at CFA - 24): the walk reads only its own stack, in
 * increasing order, and ends truncated. */
static void test_fake_stacks(void)
{
    uintptr_t lo, hi;
    rh_stack_bounds(&lo, &hi);
    volatile uintptr_t buf[64];
    uintptr_t ip = (uintptr_t)a64_mid_call;
    uintptr_t pcs[16];
    struct rh_walk w;
    /* a return address <= 4096: frame 0 only */
    for (int i = 0; i < 64; i++)
        buf[i] = 0;
    buf[3] = 0x10;
    rh_stack_walk_regs(ip, (uintptr_t)&buf[0], 0, 1, 64, &w, pcs, 16);
    CHECK_EQ(w.nframes, 1);
    CHECK_EQ(w.cut, 1);
    CHECK(pcs[0] == ip + 1);
    /* a64_mid again, then a bad one: two frames */
    buf[3] = ip + 4;
    buf[9] = 0x20;
    rh_stack_walk_regs(ip, (uintptr_t)&buf[0], 0, 1, 64, &w, pcs, 16);
    CHECK_EQ(w.nframes, 2);
    CHECK_EQ(w.cut, 1);
    CHECK(pcs[1] == ip + 4);
    /* a64_mid over and over: 48 bytes up each time until the slots run out
     * of the buffer; whatever lies above, the walk ends inside the stack */
    for (int i = 0; i < 64; i++)
        buf[i] = ip + 4;
    rh_stack_walk_regs(ip, (uintptr_t)&buf[0], 0, 1, 64, &w, pcs, 16);
    CHECK(w.nframes >= 10);
    for (int i = 1; i < 10 && i < (int)w.nframes; i++)
        CHECK(pcs[i] == ip + 4);
    /* a misaligned sp, and one outside every stack: frame 0, cut */
    rh_stack_walk_regs(ip, (uintptr_t)&buf[0] + 4, 0, 1, 64, &w, pcs, 16);
    CHECK_EQ(w.nframes, 1);
    CHECK_EQ(w.cut, 1);
    rh_stack_walk_regs(ip, 0x1000, 0, 1, 64, &w, pcs, 16);
    CHECK_EQ(w.nframes, 1);
    CHECK_EQ(w.cut, 1);
    (void)lo, (void)hi;
}

int main(void)
{
    test_recorded_chains();
    test_rules();
    test_fake_stacks();
    return rh_test_summary();
}
