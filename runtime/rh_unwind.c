/* rh_unwind.c: CFI (.eh_frame) steps for frames without a frame pointer.
 *
 * The frame-pointer walk of rh_stack.c is right only while every function on
 * the stack keeps rbp as its frame pointer. Libraries built without frame
 * pointers (libstdc++, libc) break that: a function that does not push rbp hides
 * its caller, because the saved rbp the walk reads belongs to the caller's
 * caller. std::string(200, 'x') in user() reaching operator new from libstdc++'s
 * _M_create reads [_M_create, main] and loses user().
 *
 * This file finds the caller of such a frame from its call-frame information:
 * at a return address pc, the FDE's CFA rule says CFA = rsp + N (no frame
 * pointer) or rbp + N; the return address sits at CFA - 8, and rbp is restored
 * from its save slot when the function saved it. rsp at frame 0's function is
 * exact (the shim's frame address + 16: saved rbp and return address), and a
 * CFI step yields the next frame's rsp (the CFA), so CFI steps chain while the
 * frames are rsp-based; the first frame-pointer function hands the walk back to
 * rh_stack.c at its frame record (rbp).
 *
 * Finding the FDE: the main program's PT_GNU_EH_FRAME from AT_PHDR (static
 * binaries too: _dl_find_object reports no eh_frame there, and rheaper-cc links
 * them with --eh-frame-hdr), otherwise glibc's _dl_find_object (2.35+,
 * lock-free, no allocation); then the binary-search table of .eh_frame_hdr.
 * Only the DWARF CFA instructions compilers emit for these targets are run
 * (advance_loc*, def_cfa*, offset*, restore*, remember/restore_state, nop,
 * undefined, same_value, GNU_args_size, AArch64's negate_ra_state, and
 * expressions on registers that do
 * not matter here); anything else gives up, and a frame we cannot describe takes
 * the frame-pointer step, as before.
 *
 * Safety: every read of CFI is bounds-checked against the PT_LOAD segment that
 * holds .eh_frame_hdr; every stack read against the thread's stack [lo, hi),
 * above the current rsp and strictly increasing. No allocation, no stdio, no
 * locks. The result per return address is cached in a fixed lock-free table
 * (a check word ties each entry's rule to its pc, so a torn entry reads as a
 * miss), so the work is paid once per distinct pc and an event whose frame 0
 * is frame-pointer code costs one inline table probe in rh_stack_walk (13
 * instructions; callgrind counted 590 instructions per 24-frame walk before and
 * after, where an out-of-line probe had cost +84). A walk whose frame 0 lacks a
 * frame pointer pays about 115 more instructions per CFI frame (cache hits).
 *
 * Architectures (rh_arch.h's CFI registers): x86_64 as above. AArch64: x29,
 * sp and x30 for rbp, rsp and the return address, which sits wherever the
 * FDE saved x30 (the rule keeps its slot) and is stripped of its pointer
 * authentication code; a frame record is x29 and x30 saved as a pair, which
 * gcc puts at the bottom of the frame, so the rule of a frame-record function
 * keeps the record's offset from the CFA: after a frame-pointer step the walk
 * knows the caller's sp (rh_unwind_fp_cfa), and the shim's own CFA comes from
 * the rule of the shim's return address into it, found by following the
 * runtime's own frame records up to the shim's (rh_unwind_start_sp).
 * MIPS64: no frame records; every frame is a CFI step, and the shim hands
 * over its CFA and an address inside it (rh_arch.h's RH_ARCH_FP), whose rule
 * says where it saved its caller's $fp. Elsewhere the walk stays
 * frame-pointer only (rh_recording.h stubs rh_unwind_prefix).
 *
 * rh_unwind_prefix is the older, frame-0-only form of the walk, kept for the
 * unit tests of the rules; the walk itself (rh_stack.c, rh_ws_run) asks
 * rh_unwind_lookup for the rule of every frame whose function the inline
 * cache probe does not know as frame-pointer code, anywhere in the stack, and
 * RH_UW_SIGNAL marks a signal trampoline (CIE augmentation 'S': glibc's
 * __restore_rt on x86_64, the kernel vDSO's __kernel_rt_sigreturn on AArch64).
 *
 * Limits: a library unloaded and another loaded at the same address keep the
 * first one's cached rules.
 */
#define _GNU_SOURCE
#include "rh_recording.h"

#if RH_UNWIND_CFI

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

/* DWARF register numbers (rh_arch.h's CFI section): "rbp" and "rsp" below
 * are the architecture's frame and stack pointers (x29 and sp on AArch64). */
#define RH_DW_RBP RH_CFI_FP
#define RH_DW_RSP RH_CFI_SP
#define RH_DW_RA RH_CFI_RA

/* Pointer encodings (DW_EH_PE_*). */
#define RH_PE_OMIT 0xff
#define RH_PE_INDIRECT 0x80

/* Depth of DW_CFA_remember_state. */
#define RH_UW_STATE_STACK 8
/* Longest augmentation string accepted ("zPLRSBG" and friends). */
#define RH_UW_AUG_MAX 8

/* ---- the rule cache ----------------------------------------------------- */

/* The table itself (rh_recording.h has its layout and the inline hot-path test).
 * A packed rule is never 0, so info 0 is an empty slot. */
struct rh_uw_slot rh_uw_cache[1u << RH_UW_CACHE_BITS];
uintptr_t rh_uw_fpset[1u << RH_UW_FPSET_BITS];

static inline uint64_t rh_uw_mixinfo(uint64_t info)
{
    return RH_UW_MIXINFO(info);
}

/* Packed rule: rh_recording.h's rh_uw_info_of_rule / rh_uw_rule_of_info. */
static inline uint64_t rh_uw_pack(const struct rh_unwind_rule *r)
{
    return rh_uw_info_of_rule(r);
}

static inline void rh_uw_unpack(uint64_t v, struct rh_unwind_rule *r)
{
    *r = rh_uw_rule_of_info(v);
}

/* ---- bounded reads of CFI ----------------------------------------------- */

/* A cursor over [p, end); any read past end sets bad and returns 0. */
struct rh_uw_cur {
    const uint8_t *p, *end;
    int bad;
};

static inline int rh_uw_has(struct rh_uw_cur *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n || c->p > c->end) {
        c->bad = 1;
        return 0;
    }
    return 1;
}

static uint64_t rh_uw_u(struct rh_uw_cur *c, size_t n)
{
    if (!rh_uw_has(c, n))
        return 0;
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little-endian targets only (rh_arch.h) */
    c->p += n;
    return v;
}

static uint64_t rh_uw_uleb(struct rh_uw_cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (!rh_uw_has(c, 1) || shift > 63) {
            c->bad = 1;
            return 0;
        }
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

static int64_t rh_uw_sleb(struct rh_uw_cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (!rh_uw_has(c, 1) || shift > 63) {
            c->bad = 1;
            return 0;
        }
        b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* Reads a DW_EH_PE-encoded pointer. pcrel is relative to the field itself,
 * datarel to `data` (the .eh_frame_hdr start); indirect, textrel, funcrel and
 * aligned are refused (bad set), since nothing here needs them. */
static uint64_t rh_uw_encoded(struct rh_uw_cur *c, uint8_t enc, const uint8_t *data)
{
    if (enc == RH_PE_OMIT || (enc & RH_PE_INDIRECT)) {
        c->bad = 1;
        return 0;
    }
    uintptr_t field = (uintptr_t)c->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00:
        v = rh_uw_u(c, 8);
        break; /* absptr */
    case 0x01:
        v = rh_uw_uleb(c);
        break; /* uleb128 */
    case 0x02:
        v = rh_uw_u(c, 2);
        break; /* udata2 */
    case 0x03:
        v = rh_uw_u(c, 4);
        break; /* udata4 */
    case 0x04:
        v = rh_uw_u(c, 8);
        break; /* udata8 */
    case 0x09:
        v = (uint64_t)rh_uw_sleb(c);
        break; /* sleb128 */
    case 0x0a:
        v = (uint64_t)(int64_t)(int16_t)rh_uw_u(c, 2);
        break; /* sdata2 */
    case 0x0b:
        v = (uint64_t)(int64_t)(int32_t)rh_uw_u(c, 4);
        break; /* sdata4 */
    case 0x0c:
        v = rh_uw_u(c, 8);
        break; /* sdata8 */
    default:
        c->bad = 1;
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00:
        return v;
    case 0x10:
        return v + field; /* pcrel */
    case 0x30:
        return v + (uintptr_t)data; /* datarel */
    default:
        c->bad = 1;
        return 0;
    }
}

/* ---- the CFA program ---------------------------------------------------- */

enum { RH_RULE_SAME = 0, RH_RULE_OFFSET, RH_RULE_UNDEF, RH_RULE_OTHER };

/* What the walk needs of one row of the CFI table. */
struct rh_uw_row {
    uint64_t cfa_reg;
    int64_t cfa_off;
    int cfa_expr; /* the CFA is an expression: not describable */
    int rbp_rule, ra_rule;
    int64_t rbp_off, ra_off;
};

struct rh_uw_cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int has_z;
    int signal; /* augmentation 'S': a signal trampoline's frame */
    const uint8_t *insns, *insns_end;
};

/* Sets the rule of register reg; registers other than rbp and the return
 * address are ignored. */
static void rh_uw_set(struct rh_uw_row *r, const struct rh_uw_cie *cie, uint64_t reg, int rule,
                      int64_t off)
{
    if (reg == RH_DW_RBP) {
        r->rbp_rule = rule;
        r->rbp_off = off;
    } else if (reg == cie->ra_reg) {
        r->ra_rule = rule;
        r->ra_off = off;
    }
}

/* Runs the CFA instructions [c.p, c.end) starting at location loc, stopping
 * before the first row that starts beyond target (target = return address - 1,
 * inside the call instruction). init is the CIE's row, for DW_CFA_restore*.
 * Returns 0, or -1 on an instruction this unwinder does not run, a bad operand
 * or a read out of bounds. */
static int rh_uw_run(struct rh_uw_cur *c, const struct rh_uw_cie *cie, uint64_t loc,
                     uint64_t target, struct rh_uw_row *row, const struct rh_uw_row *init,
                     uint8_t fde_enc)
{
    struct rh_uw_row stack[RH_UW_STATE_STACK];
    unsigned depth = 0;
    while (c->p < c->end && !c->bad) {
        uint8_t op = *c->p++;
        uint64_t delta = 0, reg;
        int64_t off;
        switch (op >> 6) {
        case 1: /* DW_CFA_advance_loc */
            delta = (op & 0x3f) * cie->code_align;
            goto advance;
        case 2: /* DW_CFA_offset */
            off = (int64_t)rh_uw_uleb(c) * cie->data_align;
            rh_uw_set(row, cie, op & 0x3f, RH_RULE_OFFSET, off);
            continue;
        case 3: /* DW_CFA_restore */
            reg = op & 0x3f;
            if (reg == RH_DW_RBP)
                row->rbp_rule = init->rbp_rule, row->rbp_off = init->rbp_off;
            else if (reg == cie->ra_reg)
                row->ra_rule = init->ra_rule, row->ra_off = init->ra_off;
            continue;
        }
        switch (op) {
        case 0x00: /* DW_CFA_nop */
            continue;
        case 0x01: /* DW_CFA_set_loc */
        {
            uint64_t to = rh_uw_encoded(c, fde_enc, NULL);
            if (c->bad || to < loc)
                return -1;
            if (to > target)
                return 0;
            loc = to;
            continue;
        }
        case 0x02: /* DW_CFA_advance_loc1 */
            delta = rh_uw_u(c, 1) * cie->code_align;
            goto advance;
        case 0x03: /* DW_CFA_advance_loc2 */
            delta = rh_uw_u(c, 2) * cie->code_align;
            goto advance;
        case 0x04: /* DW_CFA_advance_loc4 */
            delta = rh_uw_u(c, 4) * cie->code_align;
            goto advance;
        case 0x05: /* DW_CFA_offset_extended */
            reg = rh_uw_uleb(c);
            off = (int64_t)rh_uw_uleb(c) * cie->data_align;
            rh_uw_set(row, cie, reg, RH_RULE_OFFSET, off);
            continue;
        case 0x06: /* DW_CFA_restore_extended */
            reg = rh_uw_uleb(c);
            if (reg == RH_DW_RBP)
                row->rbp_rule = init->rbp_rule, row->rbp_off = init->rbp_off;
            else if (reg == cie->ra_reg)
                row->ra_rule = init->ra_rule, row->ra_off = init->ra_off;
            continue;
        case 0x07: /* DW_CFA_undefined */
            rh_uw_set(row, cie, rh_uw_uleb(c), RH_RULE_UNDEF, 0);
            continue;
        case 0x08: /* DW_CFA_same_value */
            rh_uw_set(row, cie, rh_uw_uleb(c), RH_RULE_SAME, 0);
            continue;
        case 0x09: /* DW_CFA_register */
            reg = rh_uw_uleb(c);
            (void)rh_uw_uleb(c);
            rh_uw_set(row, cie, reg, RH_RULE_OTHER, 0);
            continue;
        case 0x0a: /* DW_CFA_remember_state */
            if (depth >= RH_UW_STATE_STACK)
                return -1;
            stack[depth++] = *row;
            continue;
        case 0x0b: /* DW_CFA_restore_state */
            if (depth == 0)
                return -1;
            {
                /* the CFA rule is part of the state too (DWARF 5 6.4.2.4) */
                *row = stack[--depth];
            }
            continue;
        case 0x0c: /* DW_CFA_def_cfa */
            row->cfa_reg = rh_uw_uleb(c);
            row->cfa_off = (int64_t)rh_uw_uleb(c);
            row->cfa_expr = 0;
            continue;
        case 0x0d: /* DW_CFA_def_cfa_register */
            row->cfa_reg = rh_uw_uleb(c);
            row->cfa_expr = 0;
            continue;
        case 0x0e: /* DW_CFA_def_cfa_offset */
            row->cfa_off = (int64_t)rh_uw_uleb(c);
            continue;
        case 0x0f: /* DW_CFA_def_cfa_expression */
            return -1;
        case 0x10: /* DW_CFA_expression */
        case 0x16: /* DW_CFA_val_expression */
        {
            reg = rh_uw_uleb(c);
            uint64_t len = rh_uw_uleb(c);
            if (!rh_uw_has(c, len) || reg == RH_DW_RBP || reg == cie->ra_reg)
                return -1;
            c->p += len; /* a register the walk does not restore */
            continue;
        }
        case 0x11: /* DW_CFA_offset_extended_sf */
            reg = rh_uw_uleb(c);
            off = rh_uw_sleb(c) * cie->data_align;
            rh_uw_set(row, cie, reg, RH_RULE_OFFSET, off);
            continue;
        case 0x12: /* DW_CFA_def_cfa_sf */
            row->cfa_reg = rh_uw_uleb(c);
            row->cfa_off = rh_uw_sleb(c) * cie->data_align;
            row->cfa_expr = 0;
            continue;
        case 0x13: /* DW_CFA_def_cfa_offset_sf */
            row->cfa_off = rh_uw_sleb(c) * cie->data_align;
            continue;
        case 0x14: /* DW_CFA_val_offset */
        case 0x15: /* DW_CFA_val_offset_sf */
            reg = rh_uw_uleb(c);
            if (op == 0x14)
                (void)rh_uw_uleb(c);
            else
                (void)rh_uw_sleb(c);
            if (reg == RH_DW_RBP || reg == cie->ra_reg)
                return -1;
            continue;
        case 0x2e: /* DW_CFA_GNU_args_size */
            (void)rh_uw_uleb(c);
            continue;
#if defined(__aarch64__)
        case 0x2d: /* DW_CFA_AARCH64_negate_ra_state (-mbranch-protection): the
                      return address is signed from here on; the walk strips
                      every return address (rh_arch_ret) whether signed or not */
            continue;
#endif
        default:
            return -1;
        }
    advance:
        if (c->bad)
            return -1;
        if (loc + delta > target)
            return 0; /* the next row starts after the call */
        loc += delta;
    }
    return c->bad ? -1 : 0;
}

/* Parses the CIE at cie_p (inside [lo, hi)) into *cie. Returns 0 or -1. */
static int rh_uw_parse_cie(const uint8_t *cie_p, const uint8_t *lo, const uint8_t *hi,
                           struct rh_uw_cie *cie)
{
    if (cie_p < lo || cie_p >= hi)
        return -1;
    struct rh_uw_cur c = {cie_p, hi, 0};
    uint64_t len = rh_uw_u(&c, 4);
    if (c.bad || len == 0 || len >= 0xfffffff0u || len > (uint64_t)(hi - c.p))
        return -1;
    c.end = c.p + len;
    if (rh_uw_u(&c, 4) != 0) /* CIE id of .eh_frame */
        return -1;
    uint64_t version = rh_uw_u(&c, 1);
    if (c.bad || (version != 1 && version != 3))
        return -1;
    char aug[RH_UW_AUG_MAX + 1];
    size_t na = 0;
    for (;;) {
        if (!rh_uw_has(&c, 1))
            return -1;
        char ch = (char)*c.p++;
        if (!ch)
            break;
        if (na >= RH_UW_AUG_MAX)
            return -1;
        aug[na++] = ch;
    }
    aug[na] = '\0';
    if (na && aug[0] != 'z')
        return -1; /* "eh" and other old augmentations carry data we cannot skip */
    cie->code_align = rh_uw_uleb(&c);
    cie->data_align = rh_uw_sleb(&c);
    cie->ra_reg = version == 1 ? rh_uw_u(&c, 1) : rh_uw_uleb(&c);
    cie->fde_enc = 0; /* absptr */
    cie->has_z = na > 0;
    cie->signal = 0;
    for (size_t i = 1; i < na; i++)
        if (aug[i] == 'S')
            cie->signal = 1;
    if (c.bad || cie->code_align == 0 || cie->code_align > 16 || cie->ra_reg != RH_DW_RA)
        return -1;
    if (cie->has_z) {
        uint64_t alen = rh_uw_uleb(&c);
        if (!rh_uw_has(&c, alen))
            return -1;
        struct rh_uw_cur a = {c.p, c.p + alen, 0};
        for (size_t i = 1; i < na && !a.bad; i++) {
            if (aug[i] == 'R') {
                cie->fde_enc = (uint8_t)rh_uw_u(&a, 1);
            } else if (aug[i] == 'L') {
                (void)rh_uw_u(&a, 1);
            } else if (aug[i] == 'P') {
                uint8_t penc = (uint8_t)rh_uw_u(&a, 1);
                (void)rh_uw_encoded(&a, penc & (uint8_t)~RH_PE_INDIRECT, NULL);
            } else if (aug[i] != 'S' && aug[i] != 'B' && aug[i] != 'G') {
                break; /* unknown letter: the rest is skipped by its length */
            }
        }
        if (a.bad)
            return -1;
        c.p += alen;
    }
    cie->insns = c.p;
    cie->insns_end = c.end;
    return 0;
}

/* Classifies the row in effect at the call into a rule for the walk. */
#if RH_CFI_RA_AT_CFA
static void rh_uw_classify(const struct rh_uw_row *row, struct rh_unwind_rule *r)
{
    r->kind = RH_UW_FP;
    r->cfa_off = 0;
    r->rbp_off = 0;
    r->ra_off = -8;
    if (row->ra_rule == RH_RULE_UNDEF) {
        r->kind = RH_UW_END; /* the outermost frame (_start, clone) */
        return;
    }
    if (row->cfa_expr || row->ra_rule != RH_RULE_OFFSET || row->ra_off != -8)
        return;
    if (row->cfa_off < 8 || row->cfa_off > INT32_MAX || (row->cfa_off & 7))
        return;
    int32_t rbp_off = 0;
    if (row->rbp_rule == RH_RULE_OFFSET) {
        if (row->rbp_off >= 0 || row->rbp_off < -row->cfa_off || row->rbp_off < INT16_MIN ||
            (row->rbp_off & 7))
            return;
        rbp_off = (int32_t)row->rbp_off;
    } else if (row->rbp_rule != RH_RULE_SAME) {
        return;
    }
    if (row->cfa_reg == RH_DW_RBP) {
        if (row->cfa_off == 16 && rbp_off == -16)
            return; /* the standard frame record: the frame-pointer step */
        r->kind = RH_UW_CFA_RBP;
    } else if (row->cfa_reg == RH_DW_RSP) {
        r->kind = RH_UW_CFA_RSP;
    } else {
        return;
    }
    r->cfa_off = (int32_t)row->cfa_off;
    r->rbp_off = rbp_off;
}
#else
/* The same where the return address is saved wherever the FDE says (AArch64:
 * x30's slot). A frame record is the frame pointer and the return address
 * saved as a pair, the return address in the word above: the frame-pointer
 * step is right there, and the rule keeps the record's offset from the CFA
 * (rbp_off), from which the walk knows the caller's stack pointer after a
 * frame-pointer step (rh_unwind_fp_cfa). gcc keeps the CFA of such functions
 * sp-based (the record at the bottom of the frame, x29 = sp); with an
 * x29-based CFA the record must be the one x29 points at. A function that
 * pairs x29 and x30 without making x29 its frame pointer (x29 used as a
 * general register under -fomit-frame-pointer) reads as a frame record too:
 * the frame-pointer step then stops there or misses its caller, as it did
 * without CFI. Anything else that saves the return address in the frame is a
 * CFI step, and so is every frame on MIPS64 (RH_CFI_RECORDS 0: gcc saves ra
 * and fp as a pair there too, but fp points at the frame's bottom). */
static void rh_uw_classify(const struct rh_uw_row *row, struct rh_unwind_rule *r)
{
    r->kind = RH_UW_FP;
    r->cfa_off = 0;
    r->rbp_off = 0;
    r->ra_off = 0;
    if (row->ra_rule == RH_RULE_UNDEF) {
        r->kind = RH_UW_END; /* the outermost frame (_start, clone) */
        return;
    }
    if (row->cfa_expr || row->ra_rule != RH_RULE_OFFSET)
        return;
    int64_t cfa = row->cfa_off, ra = row->ra_off;
    if (cfa < (int64_t)RH_WORD || cfa > RH_UW_CFA_MAX || (cfa & (int64_t)(RH_WORD - 1)))
        return;
    if (ra >= 0 || ra < -cfa || ra < INT16_MIN || (ra & (int64_t)(RH_WORD - 1)))
        return;
    int32_t fp_off = 0;
    if (row->rbp_rule == RH_RULE_OFFSET) {
        if (row->rbp_off >= 0 || row->rbp_off < -cfa || row->rbp_off < INT16_MIN ||
            (row->rbp_off & (int64_t)(RH_WORD - 1)))
            return;
        fp_off = (int32_t)row->rbp_off;
    } else if (row->rbp_rule != RH_RULE_SAME) {
        return;
    }
    if (RH_CFI_RECORDS && fp_off && ra == fp_off + (int64_t)RH_WORD &&
        (row->cfa_reg == RH_DW_RSP || (row->cfa_reg == RH_DW_RBP && fp_off == -cfa))) {
        r->rbp_off = fp_off; /* a frame record at CFA + fp_off */
        return;
    }
    if (row->cfa_reg == RH_DW_RBP)
        r->kind = RH_UW_CFA_RBP;
    else if (row->cfa_reg == RH_DW_RSP)
        r->kind = RH_UW_CFA_RSP;
    else
        return;
    r->cfa_off = (int32_t)cfa;
    r->rbp_off = fp_off;
    r->ra_off = (int32_t)ra;
}
#endif

int rh_unwind_parse(const uint8_t *hdr, const uint8_t *lo, const uint8_t *hi, uintptr_t ret,
                    struct rh_unwind_rule *r)
{
    r->kind = RH_UW_FP;
    r->cfa_off = r->rbp_off = 0;
    r->ra_off = RH_CFI_RA_AT_CFA ? -8 : 0;
    if (!hdr || hdr < lo || hdr >= hi || ret < 2)
        return -1;
    uint64_t target = ret - 1; /* inside the call instruction */
    struct rh_uw_cur c = {hdr, hi, 0};
    uint8_t version = (uint8_t)rh_uw_u(&c, 1);
    uint8_t ptr_enc = (uint8_t)rh_uw_u(&c, 1);
    uint8_t cnt_enc = (uint8_t)rh_uw_u(&c, 1);
    uint8_t tab_enc = (uint8_t)rh_uw_u(&c, 1);
    if (c.bad || version != 1 || tab_enc != 0x3b) /* datarel | sdata4: all linkers */
        return -1;
    (void)rh_uw_encoded(&c, ptr_enc, hdr);
    uint64_t count = rh_uw_encoded(&c, cnt_enc, hdr);
    if (c.bad || count == 0 || count > (uint64_t)(hi - c.p) / 8)
        return -1;
    const uint8_t *tab = c.p;

    /* the last entry whose initial location is <= target */
    uint64_t a = 0, b = count;
    while (b - a > 1) {
        uint64_t m = a + (b - a) / 2;
        int32_t loc;
        memcpy(&loc, tab + m * 8, 4);
        if ((uintptr_t)hdr + (intptr_t)loc <= target)
            a = m;
        else
            b = m;
    }
    int32_t loc0, fde_off;
    memcpy(&loc0, tab + a * 8, 4);
    memcpy(&fde_off, tab + a * 8 + 4, 4);
    if ((uintptr_t)hdr + (intptr_t)loc0 > target)
        return -1;
    const uint8_t *fde = hdr + fde_off;
    if (fde < lo || fde >= hi)
        return -1;

    /* the FDE */
    struct rh_uw_cur f = {fde, hi, 0};
    uint64_t len = rh_uw_u(&f, 4);
    if (f.bad || len == 0 || len >= 0xfffffff0u || len > (uint64_t)(hi - f.p))
        return -1;
    f.end = f.p + len;
    const uint8_t *idfield = f.p;
    uint64_t cie_off = rh_uw_u(&f, 4);
    if (f.bad || cie_off == 0 || cie_off > (uint64_t)(idfield - lo))
        return -1;
    struct rh_uw_cie cie;
    if (rh_uw_parse_cie(idfield - cie_off, lo, hi, &cie) != 0)
        return -1;
    uint64_t pc_begin = rh_uw_encoded(&f, cie.fde_enc, hdr);
    uint64_t pc_range = rh_uw_encoded(&f, cie.fde_enc & 0x0f, hdr);
    if (f.bad || target < pc_begin || target - pc_begin >= pc_range)
        return -1;
#if !defined(__x86_64__) && !defined(__aarch64__)
    if (cie.signal)
        return -1; /* rh_stack.c knows no signal frame of this architecture */
#endif
    if (cie.signal) {
        /* glibc's __restore_rt: the kernel's signal frame is at the CFA (see
         * rh_stack.c, rh_ws_signal); its CFI expressions need not be run */
        r->kind = RH_UW_SIGNAL;
        return 0;
    }
    if (cie.has_z) {
        uint64_t alen = rh_uw_uleb(&f);
        if (!rh_uw_has(&f, alen))
            return -1;
        f.p += alen;
    }

    /* the CIE's initial row, then the FDE's rows up to the call */
    struct rh_uw_row row = {RH_DW_RSP, RH_CFI_RA_AT_CFA ? 8 : 0, 0, RH_RULE_SAME, RH_RULE_SAME, 0,
                            0};
    struct rh_uw_cur ci = {cie.insns, cie.insns_end, 0};
    if (rh_uw_run(&ci, &cie, 0, UINT64_MAX, &row, &row, cie.fde_enc) != 0)
        return -1;
    struct rh_uw_row init = row;
    if (rh_uw_run(&f, &cie, pc_begin, target, &row, &init, cie.fde_enc) != 0)
        return -1;
    rh_uw_classify(&row, r);
    return 0;
}

/* ---- finding the object of a pc ----------------------------------------- */

/* Where to read CFI for one object: .eh_frame_hdr and the PT_LOAD segment that
 * holds it (all reads stay inside [lo, hi)). */
struct rh_uw_obj {
    const uint8_t *hdr, *lo, *hi;
};

/* Fills o from the program headers phdr[0, phnum) of an object loaded at bias.
 * Returns 0, or -1 when it has no PT_GNU_EH_FRAME inside a PT_LOAD. */
static int rh_uw_obj_from_phdrs(const ElfW(Phdr) * phdr, size_t phnum, uintptr_t bias,
                                struct rh_uw_obj *o)
{
    uintptr_t eh = 0;
    for (size_t i = 0; i < phnum; i++)
        if (phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = bias + phdr[i].p_vaddr;
    if (!eh)
        return -1;
    for (size_t i = 0; i < phnum; i++) {
        uintptr_t s = bias + phdr[i].p_vaddr;
        if (phdr[i].p_type == PT_LOAD && (phdr[i].p_flags & PF_R) && eh >= s &&
            eh < s + phdr[i].p_filesz) {
            o->hdr = (const uint8_t *)eh;
            o->lo = (const uint8_t *)s;
            o->hi = (const uint8_t *)(s + phdr[i].p_filesz);
            return 0;
        }
    }
    return -1;
}

/* The main program, from the auxiliary vector: its CFI and the range of its
 * PT_LOAD segments. state (atomic): 0 unknown, 1 ready, 2 unusable, 3 being
 * computed. One thread claims 0 -> 3 and is the only writer of the fields; it
 * publishes 1 or 2 with a release store, and readers look at the fields only
 * after an acquire load of 1. Threads that find 3 skip the main program this
 * once (they fall back to _dl_find_object, or to the frame-pointer walk). */
static struct {
    int state;
    uintptr_t text_lo, text_hi;
    struct rh_uw_obj obj;
} rh_uw_main;

/* Computes rh_uw_main; called only by the thread that claimed it (state 3).
 * The load bias comes from PT_PHDR, or, without it (bfd's
 * static-pie), from the ELF header found at the page start of AT_PHDR. */
static RH_COLD void rh_uw_main_init(void)
{
    const ElfW(Phdr) *phdr = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t phnum = getauxval(AT_PHNUM);
    int st = 2;
    uintptr_t bias = 0, lo = UINTPTR_MAX, hi = 0;
    int have_bias = 0;
    if (!phdr || phnum == 0 || phnum > 256)
        goto out;
    for (size_t i = 0; i < phnum; i++)
        if (phdr[i].p_type == PT_PHDR) {
            bias = (uintptr_t)phdr - phdr[i].p_vaddr;
            have_bias = 1;
        }
    if (!have_bias) {
        const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)((uintptr_t)phdr & ~(uintptr_t)4095);
        if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
            (uintptr_t)eh + eh->e_phoff != (uintptr_t)phdr)
            goto out;
        if (eh->e_type == ET_EXEC) {
            have_bias = 1;
        } else {
            for (size_t i = 0; i < phnum; i++)
                if (phdr[i].p_type == PT_LOAD && phdr[i].p_offset == 0) {
                    bias = (uintptr_t)eh - phdr[i].p_vaddr;
                    have_bias = 1;
                    break;
                }
        }
    }
    if (!have_bias || rh_uw_obj_from_phdrs(phdr, phnum, bias, &rh_uw_main.obj) != 0)
        goto out;
    for (size_t i = 0; i < phnum; i++)
        if (phdr[i].p_type == PT_LOAD) {
            uintptr_t s = bias + phdr[i].p_vaddr;
            if (s < lo)
                lo = s;
            if (s + phdr[i].p_memsz > hi)
                hi = s + phdr[i].p_memsz;
        }
    rh_uw_main.text_lo = lo;
    rh_uw_main.text_hi = hi;
    st = 1;
out:
    __atomic_store_n(&rh_uw_main.state, st, __ATOMIC_RELEASE);
}

/* Finds the CFI of the object holding pc. Returns 0, or -1 (no object, no
 * .eh_frame_hdr, not an ELF image we can read). */
static int rh_uw_find_object(uintptr_t pc, struct rh_uw_obj *o)
{
    int st = __atomic_load_n(&rh_uw_main.state, __ATOMIC_ACQUIRE);
    if (st == 0) {
        int unknown = 0;
        if (__atomic_compare_exchange_n(&rh_uw_main.state, &unknown, 3, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            rh_uw_main_init();
        st = __atomic_load_n(&rh_uw_main.state, __ATOMIC_ACQUIRE);
    }
    if (st == 1 && pc >= rh_uw_main.text_lo && pc < rh_uw_main.text_hi) {
        *o = rh_uw_main.obj;
        return 0;
    }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
    struct dl_find_object dfo;
    if (_dl_find_object((void *)pc, &dfo) != 0 || !dfo.dlfo_eh_frame || !dfo.dlfo_link_map)
        return -1;
    /* The ELF header starts the object's first mapping (shared objects and the
     * dynamic main program); read the program headers from it, bounded. */
    uintptr_t ms = (uintptr_t)dfo.dlfo_map_start, me = (uintptr_t)dfo.dlfo_map_end;
    if (me <= ms || me - ms < sizeof(ElfW(Ehdr)))
        return -1;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)ms;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
        eh->e_phnum == 0 || eh->e_phoff > 4096 ||
        eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)) > 4096 ||
        eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)) > me - ms)
        return -1;
    const ElfW(Phdr) *phdr = (const ElfW(Phdr) *)(ms + eh->e_phoff);
    if (rh_uw_obj_from_phdrs(phdr, eh->e_phnum, dfo.dlfo_link_map->l_addr, o) != 0 ||
        o->hdr != (const uint8_t *)dfo.dlfo_eh_frame)
        return -1;
    return 0;
#else
    return -1; /* no _dl_find_object (musl): the main program's CFI only */
#endif
}

/* ---- the cached rule and the walk --------------------------------------- */

/* Computes the rule of return address ret (cold: once per distinct pc). */
static RH_COLD uint64_t rh_uw_compute(uintptr_t ret)
{
    struct rh_unwind_rule r = {RH_UW_FP, 0, 0, 0};
    struct rh_uw_obj o;
    if (rh_uw_find_object(ret - 1, &o) == 0)
        (void)rh_unwind_parse(o.hdr, o.lo, o.hi, ret, &r);
    return rh_uw_pack(&r);
}

/* AArch64: the outermost frames (_start, clone's child), whose CFI leaves the
 * return address undefined, sit below frame records whose saved x29 is 0
 * (glibc's and musl's start code clear x29), so the frame-pointer step ends
 * the walk there as complete by itself. Counting them as frame-pointer code
 * keeps the walks that reach them (almost all) in the inline walk; as an
 * end rule they would send every walk out of line at its last frame, where
 * finding the shim's CFA re-reads the whole chain of records. */
#define RH_UW_END_IS_FP (RH_CFI_RECORDS && !RH_CFI_RA_AT_CFA)

uint64_t rh_unwind_lookup(uintptr_t ret)
{
    struct rh_uw_slot *s = &rh_uw_cache[(ret * RH_UW_CHECK_K) >> (64 - RH_UW_CACHE_BITS)];
    uint64_t info = __atomic_load_n(&s->info, __ATOMIC_RELAXED);
    uint64_t check = __atomic_load_n(&s->check, __ATOMIC_RELAXED);
    if (!(rh_likely(info && check == (ret ^ rh_uw_mixinfo(info))))) {
        info = rh_uw_compute(ret);
        __atomic_store_n(&s->info, info, __ATOMIC_RELAXED);
        __atomic_store_n(&s->check, ret ^ rh_uw_mixinfo(info), __ATOMIC_RELAXED);
    }
    if ((info & 0xff) == RH_UW_FP || (RH_UW_END_IS_FP && (info & 0xff) == RH_UW_END))
        /* the inline walk's one-word test (rh_unwind_fp_frame) */
        __atomic_store_n(&rh_uw_fpset[RH_UW_FPSLOT(ret)], ret, __ATOMIC_RELAXED);
    return info;
}

void rh_unwind_rule_of(uintptr_t ret, struct rh_unwind_rule *r)
{
    rh_uw_unpack(rh_unwind_lookup(ret), r);
}

#if RH_CFI_RA_AT_CFA
uint32_t rh_unwind_prefix(uintptr_t fp, uintptr_t lo, uintptr_t hi, uint32_t max, uintptr_t *pcs,
                          uintptr_t *resume, uint32_t *cut)
{
    const uintptr_t *f = (const uintptr_t *)fp;
    uintptr_t pc = f[1];
    uint64_t info = rh_unwind_lookup(pc);
    if (rh_likely((info & 0xff) == RH_UW_FP))
        return 0;
    uintptr_t rsp = fp + 16, rbp = f[0];
    uint32_t n = 0;
    *resume = 0;
    *cut = 0;
    if (max > RH_UNWIND_MAX_PREFIX)
        max = RH_UNWIND_MAX_PREFIX;
    for (;;) {
        pcs[n++] = pc;
        struct rh_unwind_rule r;
        rh_uw_unpack(info, &r);
        if (r.kind == RH_UW_END || r.kind == RH_UW_SIGNAL)
            return n;
        if (r.kind == RH_UW_FP) {
            /* frame-pointer code again: its frame record is rbp */
            if (!(rbp & 7) && rbp >= rsp && hi >= 16 && rbp <= hi - 16 &&
                ((const uintptr_t *)rbp)[1] > 4096u)
                *resume = rbp;
            return n;
        }
        uintptr_t cfa = (r.kind == RH_UW_CFA_RSP ? rsp : rbp) + (uintptr_t)(uint32_t)r.cfa_off;
        if ((cfa & 7) || cfa <= rsp || cfa > hi || cfa - 8 < rsp || cfa - 8 < lo)
            return n;
        uintptr_t ret = ((const uintptr_t *)cfa)[-1];
        if (ret <= 4096u)
            return n;
        if (r.rbp_off) {
            uintptr_t slot = cfa + (uintptr_t)(intptr_t)r.rbp_off;
            if (slot < rsp || slot + 8 > cfa)
                return n;
            rbp = *(const uintptr_t *)slot;
        }
        if (n >= max) {
            *cut = 1;
            return n;
        }
        rsp = cfa;
        pc = ret;
        info = rh_unwind_lookup(pc);
    }
}

#elif RH_CFI_RECORDS /* the return address where the FDE says */

uintptr_t rh_unwind_fp_cfa(uintptr_t pc, uintptr_t rec)
{
    struct rh_unwind_rule r = rh_uw_rule_of_info(rh_unwind_lookup(pc));
    if (r.kind == RH_UW_FP && r.rbp_off < 0)
        return rec - (uintptr_t)(intptr_t)r.rbp_off;
    return rec + RH_FRAME_REC;
}

/* Follows the frame records from this function's own (the runtime keeps
 * frame records: -fno-omit-frame-pointer) up the chain that called it to the
 * record whose saved frame pointer is rec: its return address lies in the
 * function that owns rec. Every record read lies between this frame and rec,
 * strictly increasing, on the stack the walk runs on. */
uintptr_t rh_unwind_start_sp(uintptr_t rec)
{
    const uintptr_t *r = (const uintptr_t *)__builtin_frame_address(0);
    for (unsigned i = 0; i < 4096; i++) {
        uintptr_t next = r[0];
        if (next == rec)
            return rh_unwind_fp_cfa(rh_arch_ret(r[1]), rec);
        if (next <= (uintptr_t)r || RH_WORD_MISALIGNED(next) || next > rec)
            break;
        r = (const uintptr_t *)next;
    }
    return rec + RH_FRAME_REC;
}
#else
/* No frame records (MIPS64): the shim's record {0, ret, cfa, pc} (rh_arch.h). */

uintptr_t rh_unwind_start_sp(uintptr_t rec)
{
    return ((const uintptr_t *)rec)[2];
}

/* The shim's rule at the address inside it says where it saved its caller's
 * frame pointer, relative to its CFA (the record's [2]); the slot lies in the
 * shim's frame, on the stack the walk runs on. */
uintptr_t rh_unwind_start_fp(uintptr_t rec, uintptr_t fp)
{
    const uintptr_t *r = (const uintptr_t *)rec;
    struct rh_unwind_rule u = rh_uw_rule_of_info(rh_unwind_lookup(r[3] + 1));
    if ((u.kind == RH_UW_CFA_RSP || u.kind == RH_UW_CFA_RBP) && u.rbp_off < 0 &&
        r[2] > rec + 4 * RH_WORD)
        return *(const uintptr_t *)(r[2] + (uintptr_t)(intptr_t)u.rbp_off);
    return fp;
}
#endif

#endif /* RH_UNWIND_CFI */
