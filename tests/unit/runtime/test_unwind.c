/* test_unwind.c: the CFI step of the stack walk (runtime/rh_unwind.c).
 *
 * Functions without a frame pointer (test_unwind_nofp.c, built with
 * -fomit-frame-pointer, and a hand-written one with known CFI) sit between the
 * fake shim and frame-pointer callers. Each function notes the return address
 * it goes back to, so the test knows the exact caller chain the profile must
 * hold: recorded through the real runtime and read back from the rip file.
 * Then the rules themselves: the hand-written function's exact CFA offset and
 * rbp slot, frame-pointer code, a pc in no object. Then hostile input: a
 * synthetic .eh_frame_hdr/CIE/FDE between two PROT_NONE pages, parsed as
 * written (every row checked), then damaged in known ways and with random
 * bytes, which must give up (or parse) without reading outside; and fake stacks
 * whose CFI steps lead nowhere, which must end without faulting.
 */
#include <sys/mman.h>

#include "rh_runtime.h"
#include "rt_test.h"

typedef void *(*uw_shim_fn)(unsigned kind, uintptr_t p, size_t size);
extern void *uw_asm_mid(unsigned kind, uintptr_t p, size_t size, uw_shim_fn shim);
extern void uw_nofp_a(uw_shim_fn shim, unsigned kind, uintptr_t p);
extern uintptr_t uw_asm_mid_ra, uw_nofp_a_ra, uw_nofp_b_ra;
extern void *uw_nofp_b_f0;

static uintptr_t outer_ra, outer_f0, outer2_ra;
static volatile int uw_two = 2;

/* Frame-pointer caller of the hand-written function. */
__attribute__((noinline)) static void fp_outer(uintptr_t p)
{
    outer_ra = (uintptr_t)__builtin_return_address(0);
    outer_f0 = (uintptr_t)uw_asm_mid(1, p, 16, tr_alloc);
    __asm__ __volatile__("");
}

/* Frame-pointer caller of the compiler-built pair. */
__attribute__((noinline)) static void fp_outer2(uintptr_t p)
{
    outer2_ra = (uintptr_t)__builtin_return_address(0);
    uw_nofp_a(tr_alloc, 2, p);
    __asm__ __volatile__("");
}

/* Frame-pointer code called back from frame-pointer-less code (a qsort
 * comparator, a library callback): the walk must cross uw_nofp_b and uw_nofp_a
 * in the middle of the stack and come back to fp_outer3's frame record. */
static uintptr_t cb_f0, cb_ra, outer3_ra;

__attribute__((noinline)) static void *fp_mid_cb(unsigned kind, uintptr_t p, size_t size)
{
    cb_f0 = (uintptr_t)tr_alloc(kind, p, size);
    cb_ra = (uintptr_t)__builtin_return_address(0);
    __asm__ __volatile__("");
    return (void *)cb_f0;
}

__attribute__((noinline)) static void fp_outer3(uintptr_t p)
{
    outer3_ra = (uintptr_t)__builtin_return_address(0);
    uw_nofp_a(fp_mid_cb, 3, p);
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
    fp_outer2(0x2000);
    /* one call site twice (a volatile trip count keeps it from being unrolled):
     * 0x3000 is the same stack again, its rules from the cache: the same id */
    uintptr_t ras[2];
    for (int i = 0; i < uw_two; i++) {
        fp_outer(0x1000 + 0x2000 * (uintptr_t)i);
        ras[i] = outer_ra;
    }
    CHECK(ras[0] == ras[1]);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/rip-%d", dir, (int)getpid());
    struct tr_file f;
    CHECK_EQ(tr_read(path, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.nev, 3);

    /* shim <- uw_asm_mid (no frame pointer, rbp = 0x1234) <- fp_outer <- here */
    const struct tr_stack *s = stack_of(&f, 0x1000);
    CHECK(s != NULL);
    if (s) {
        CHECK(s->n >= 4);
        CHECK_EQ(s->cut, 0);
        CHECK(s->frames[0] == outer_f0);
        CHECK(s->frames[1] == uw_asm_mid_ra);
        CHECK(s->frames[2] == outer_ra);
        CHECK(s->n >= 4 && s->frames[3] > 4096);
    }
    const struct tr_stack *s3 = stack_of(&f, 0x3000);
    CHECK(s && s3 && s->id == s3->id);

    /* shim <- uw_nofp_b <- uw_nofp_a (both rsp-based) <- fp_outer2 <- here */
    s = stack_of(&f, 0x2000);
    CHECK(s != NULL);
    if (s) {
        CHECK(s->n >= 5);
        CHECK(s->frames[0] == (uintptr_t)uw_nofp_b_f0);
        CHECK(s->frames[1] == uw_nofp_b_ra);
        CHECK(s->frames[2] == uw_nofp_a_ra);
        CHECK(s->frames[3] == outer2_ra);
    }
    tr_free_file(&f);

    /* The depth limit cuts inside the CFI prefix too: 2 frames, cut. */
    CHECK_EQ(tr_enable(dir, 2, 0, 0), RHEAPER_OK);
    snprintf(path, sizeof path, "%s", rheaper_profile_path());
    fp_outer2(0x4000);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    CHECK_EQ(tr_read(path, &f), 0);
    CHECK_EQ(f.err[0], 0);
    s = stack_of(&f, 0x4000);
    CHECK(s && s->n == 2 && s->cut == 1);
    if (s && s->n == 2) {
        CHECK(s->frames[0] == (uintptr_t)uw_nofp_b_f0);
        CHECK(s->frames[1] == uw_nofp_b_ra);
    }
    tr_free_file(&f);
    tr_rmdir(dir);
}

static void test_rules(void)
{
    struct rh_unwind_rule r;
    /* the hand-written function at its call: CFA = rsp + 64, rbp at CFA - 16 */
    rh_unwind_rule_of(outer_f0, &r);
    CHECK_EQ(r.kind, RH_UW_CFA_RSP);
    CHECK_EQ(r.cfa_off, 64);
    CHECK_EQ(r.rbp_off, -16);
    /* compiler-built, no frame pointer: rsp-based */
    rh_unwind_rule_of((uintptr_t)uw_nofp_b_f0, &r);
    CHECK_EQ(r.kind, RH_UW_CFA_RSP);
    CHECK(r.cfa_off >= 8 + 7 * 8);
    /* frame-pointer code: the frame-pointer step */
    rh_unwind_rule_of(uw_asm_mid_ra, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    rh_unwind_rule_of(outer_ra, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    /* a pc in no object, one in anonymous memory, one in the stack */
    rh_unwind_rule_of(0x1234, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    void *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(anon != MAP_FAILED);
    rh_unwind_rule_of((uintptr_t)anon + 100, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
    munmap(anon, 4096);
    rh_unwind_rule_of((uintptr_t)&r, &r);
    CHECK_EQ(r.kind, RH_UW_FP);
}

/* ---- synthetic CFI between guard pages ---------------------------------- */

struct synth {
    uint8_t *page; /* the readable page; pages before and after are PROT_NONE */
    uint8_t *hdr, *cie, *fde;
    uintptr_t pc_begin;
    size_t end; /* bytes used */
};

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
    return p + 4;
}

/* Writes .eh_frame_hdr (1 entry), a "zR" CIE and one FDE with the rows below
 * for pc_begin + [0, 0x100):
 *   [0,1) CFA rsp+8 | [1,5) rsp+16, rbp@-16 | [5,13) rsp+48 (remembered)
 *   [13,15) rsp+8, rbp restored | [15,31) rsp+48 again | [31,..) an expression */
static void synth_build(struct synth *s)
{
    uint8_t *b = s->page;
    memset(b, 0, 4096);
    s->hdr = b;
    s->pc_begin = (uintptr_t)b + 0x10000;
    uint8_t *p = b;
    *p++ = 1;    /* version */
    *p++ = 0x1b; /* eh_frame_ptr: pcrel sdata4 */
    *p++ = 0x03; /* fde_count: udata4 */
    *p++ = 0x3b; /* table: datarel sdata4 */
    uint8_t *ehptr = p;
    p += 4;
    p = put32(p, 1);
    uint8_t *tab = p;
    p += 8;
    s->cie = p;
    put32(ehptr, (uint32_t)(s->cie - ehptr));
    static const uint8_t cie_body[] = {
        0,    0,    0,    0, /* CIE id */
        1,    'z',  'R',  0, /* version, augmentation */
        1,    0x78, 16,      /* code align 1, data align -8, RA column 16 */
        1,    0x1b,          /* augmentation data: FDE encoding pcrel sdata4 */
        0x0c, 0x07, 0x08,    /* def_cfa rsp+8 */
        0x90, 0x01,          /* offset r16 at cfa-8 */
        0,    0,             /* nops */
    };
    p = put32(p, sizeof cie_body);
    memcpy(p, cie_body, sizeof cie_body);
    p += sizeof cie_body;
    s->fde = p;
    static const uint8_t fde_insns[] = {
        0x41, 0x0e, 0x10, 0x86, 0x02, /* +1: cfa off 16, rbp at cfa-16 */
        0x44, 0x0e, 0x30, 0x0a,       /* +4: cfa off 48, remember */
        0x48, 0x0e, 0x08, 0xc6,       /* +8: cfa off 8, restore rbp */
        0x42, 0x0b,                   /* +2: restore_state */
        0x50, 0x0f, 0x01, 0x9c,       /* +16: def_cfa_expression */
        0,                            /* nop */
    };
    uint32_t fde_len = 4 + 4 + 4 + 1 + sizeof fde_insns;
    p = put32(p, fde_len);
    uint8_t *idf = p;
    p = put32(p, (uint32_t)(idf - s->cie));
    p = put32(p, (uint32_t)(int32_t)(s->pc_begin - (uintptr_t)p));
    p = put32(p, 0x100);
    *p++ = 0; /* augmentation data length */
    memcpy(p, fde_insns, sizeof fde_insns);
    p += sizeof fde_insns;
    put32(tab, (uint32_t)(int32_t)(s->pc_begin - (uintptr_t)s->hdr));
    put32(tab + 4, (uint32_t)(s->fde - s->hdr));
    s->end = (size_t)(p - b);
}

/* Parses the rule at pc_begin + k (the call ends at k + 1). */
static int synth_rule(const struct synth *s, uintptr_t k, struct rh_unwind_rule *r)
{
    return rh_unwind_parse(s->hdr, s->page, s->page + 4096, s->pc_begin + k + 1, r);
}

static void test_synthetic(void)
{
    uint8_t *m = mmap(NULL, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    CHECK_EQ(mprotect(m + 4096, 4096, PROT_READ | PROT_WRITE), 0);
    struct synth s = {.page = m + 4096};
    synth_build(&s);

    struct {
        uintptr_t k;
        int rc, kind, cfa, rbp;
    } rows[] = {
        {0, 0, RH_UW_CFA_RSP, 8, 0},     {1, 0, RH_UW_CFA_RSP, 16, -16},
        {4, 0, RH_UW_CFA_RSP, 16, -16},  {5, 0, RH_UW_CFA_RSP, 48, -16},
        {12, 0, RH_UW_CFA_RSP, 48, -16}, {13, 0, RH_UW_CFA_RSP, 8, 0},
        {14, 0, RH_UW_CFA_RSP, 8, 0},    {15, 0, RH_UW_CFA_RSP, 48, -16},
        {30, 0, RH_UW_CFA_RSP, 48, -16}, {31, -1, RH_UW_FP, 0, 0},
        {0xff, -1, RH_UW_FP, 0, 0},      {0x100, -1, RH_UW_FP, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct rh_unwind_rule r;
        int rc = synth_rule(&s, rows[i].k, &r);
        CHECK_EQ(rc, rows[i].rc);
        CHECK_EQ(r.kind, rows[i].kind);
        if (rc == 0) {
            CHECK_EQ(r.cfa_off, rows[i].cfa);
            CHECK_EQ(r.rbp_off, rows[i].rbp);
        }
    }
    struct rh_unwind_rule r;
    CHECK_EQ(rh_unwind_parse(s.hdr, s.page, s.page + 4096, s.pc_begin - 4, &r), -1);

    /* known damage: each must give up */
    struct {
        const char *what;
        size_t off; /* from cie (c), fde (f) or hdr (h) */
        char base;
        uint8_t len, bytes[4];
    } damage[] = {
        {"CIE length past the end", 0, 'c', 4, {0xf0, 0xff, 0, 0}},
        {"CIE 64-bit length", 0, 'c', 4, {0xff, 0xff, 0xff, 0xff}},
        {"CIE id not 0", 4, 'c', 1, {1}},
        {"CIE version 2", 8, 'c', 1, {2}},
        {"old 'eh' augmentation", 9, 'c', 2, {'e', 'h'}},
        {"return column not 16", 14, 'c', 1, {3}},
        {"FDE points at no CIE", 4, 'f', 4, {0xff, 0xff, 0xff, 0x7f}},
        {"FDE length past the end", 0, 'f', 4, {0x00, 0x10, 0, 0}},
        {"unknown CFA opcode", 17, 'f', 1, {0x3f}},
        {"remember_state underflow", 17, 'f', 1, {0x0b}},
        {"table count huge", 8, 'h', 4, {0xff, 0xff, 0xff, 0x0f}},
        {"table entry points outside", 16, 'h', 4, {0x00, 0x00, 0x10, 0x00}},
        {"header version 2", 0, 'h', 1, {2}},
        {"table not datarel sdata4", 3, 'h', 1, {0x03}},
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        synth_build(&s);
        uint8_t *base = damage[i].base == 'c' ? s.cie : damage[i].base == 'f' ? s.fde : s.hdr;
        memcpy(base + damage[i].off, damage[i].bytes, damage[i].len);
        int rc = synth_rule(&s, 5, &r);
        if (rc != -1 || r.kind != RH_UW_FP)
            fprintf(stderr, "damage not refused: %s (rc %d kind %d)\n", damage[i].what, rc, r.kind);
        CHECK_EQ(rc, -1);
    }

    /* truncated: the readable range ends inside the FDE */
    synth_build(&s);
    CHECK_EQ(rh_unwind_parse(s.hdr, s.page, s.fde + 10, s.pc_begin + 6, &r), -1);
    CHECK_EQ(rh_unwind_parse(s.hdr, s.page, s.hdr + 8, s.pc_begin + 6, &r), -1);
    CHECK_EQ(rh_unwind_parse(NULL, s.page, s.page + 4096, s.pc_begin + 6, &r), -1);

    /* random bytes over the CIE and FDE, and over everything: never a fault
     * (the guard pages would kill the test), and a rule only when rc is 0 */
    uint64_t x = 0x2545f4914f6cdd1dull;
    int parsed = 0, refused = 0;
    for (int it = 0; it < 20000; it++) {
        synth_build(&s);
        size_t from = it % 4 == 0 ? 0 : (size_t)(s.cie - s.page);
        size_t n = 1 + it % 6;
        for (size_t j = 0; j < n; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s.page[from + x % (s.end - from)] = (uint8_t)(x >> 32);
        }
        uintptr_t k = (x >> 40) % 0x120;
        if (synth_rule(&s, k, &r) == 0) {
            parsed++;
            CHECK(r.kind >= RH_UW_FP && r.kind <= RH_UW_SIGNAL);
        } else {
            refused++;
            CHECK_EQ(r.kind, RH_UW_FP);
        }
    }
    CHECK(parsed > 0 && refused > 0);
    munmap(m, 3 * 4096);
}

/* ---- fake stacks -------------------------------------------------------- */

/* Runs rh_unwind_prefix over a fake shim frame at fake[0..1] on this stack. */
static uint32_t fake_prefix(uintptr_t *fake, uint32_t max, uintptr_t *pcs, uintptr_t *resume,
                            uint32_t *cut)
{
    uintptr_t lo, hi;
    rh_stack_bounds(&lo, &hi);
    *resume = 0;
    *cut = 0;
    return rh_unwind_prefix((uintptr_t)fake, lo, hi, max, pcs, resume, cut);
}

static void test_fake_stacks(void)
{
    uintptr_t fake[64], pcs[RH_UNWIND_MAX_PREFIX], resume;
    uint32_t cut;
    /* frame 0 in no object: the frame-pointer walk's business */
    memset(fake, 0, sizeof fake);
    fake[1] = 0x1234;
    CHECK_EQ(fake_prefix(fake, 64, pcs, &resume, &cut), 0);
    /* frame 0 in uw_asm_mid (CFA = rsp + 64): the return address slot at
     * fake[2 + 7] holds 0, so the walk ends after frame 0 */
    fake[1] = outer_f0;
    CHECK_EQ(fake_prefix(fake, 64, pcs, &resume, &cut), 1);
    CHECK(pcs[0] == outer_f0);
    CHECK(resume == 0 && cut == 0);
    /* ... and when it returns into uw_asm_mid again and again, every step moves
     * 64 bytes up until the fake array is left; the prefix limit or the stack
     * top ends it, never a fault */
    for (int i = 0; i < 64; i++)
        fake[i] = outer_f0;
    uint32_t n = fake_prefix(fake, 64, pcs, &resume, &cut);
    CHECK(n >= 2 && n <= RH_UNWIND_MAX_PREFIX);
    CHECK_EQ(pcs[1], outer_f0);
    /* its saved rbp slot (CFA - 16 = fake[8]) points below the frame: the
     * frame-pointer hand-over refuses it */
    memset(fake, 0, sizeof fake);
    fake[1] = outer_f0;
    fake[9] = uw_asm_mid_ra; /* return into fp_outer, frame-pointer code */
    fake[8] = (uintptr_t)&fake[0];
    n = fake_prefix(fake, 64, pcs, &resume, &cut);
    CHECK_EQ(n, 2);
    CHECK(pcs[1] == uw_asm_mid_ra);
    CHECK_EQ(resume, 0);
    /* a good saved rbp: the walk resumes at that frame record */
    fake[8] = (uintptr_t)&fake[20];
    fake[21] = outer_ra;
    n = fake_prefix(fake, 64, pcs, &resume, &cut);
    CHECK_EQ(n, 2);
    CHECK(resume == (uintptr_t)&fake[20]);
    /* max 1: one frame, cut */
    n = fake_prefix(fake, 1, pcs, &resume, &cut);
    CHECK(n == 1 && cut == 1 && resume == 0);
}

/* fp_mid_cb <- uw_nofp_b <- uw_nofp_a <- fp_outer3 <- here: every frame, in
 * order, and the stack not truncated (it goes on to _start). The same stack
 * walked twice (rule cache and tail memo warm) gives the same id. */
static void test_mid_stack(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "unwind-mid");
    CHECK_EQ(tr_enable(dir, 64, 0, 0), RHEAPER_OK);
    uintptr_t ras[2];
    for (int i = 0; i < uw_two; i++) {
        fp_outer3(0x5000 + 0x1000 * (uintptr_t)i);
        ras[i] = outer3_ra;
    }
    CHECK(ras[0] == ras[1]);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/rip-%d", dir, (int)getpid());
    struct tr_file f;
    CHECK_EQ(tr_read(path, &f), 0);
    CHECK_EQ(f.err[0], 0);
    const struct tr_stack *s = stack_of(&f, 0x5000), *s2 = stack_of(&f, 0x6000);
    CHECK(s != NULL && s2 != NULL && s->id == s2->id);
    if (s) {
        CHECK(s->n >= 6);
        CHECK_EQ(s->cut, 0);
        CHECK(s->frames[0] == cb_f0);
        CHECK(s->frames[1] == cb_ra);
        CHECK(s->frames[2] == uw_nofp_b_ra);
        CHECK(s->frames[3] == uw_nofp_a_ra);
        CHECK(s->frames[4] == outer3_ra);
    }
    tr_free_file(&f);
    tr_rmdir(dir);
}

int main(void)
{
    test_recorded_chains();
    test_rules();
    test_synthetic();
    test_fake_stacks();
    test_mid_stack(); /* last: it overwrites uw_nofp_*'s globals test_rules reads */
    return rh_test_summary();
}
