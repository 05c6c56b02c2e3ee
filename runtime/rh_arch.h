/* rh_arch.h: what differs between the architectures and C libraries the
 * runtime runs on, in one place.
 *
 * The rest of the runtime is written for "a Linux with frame records": it asks
 * this header for the few things that change with the CPU (frame record size,
 * return-address signing, the registers in a signal's ucontext) and with the C
 * library (glibc-only symbols, system calls that newer ports dropped).
 * docs/platforms.md says which targets are tested. Nothing here allocates or
 * calls anything above the system layer.
 */
#ifndef RH_ARCH_H
#define RH_ARCH_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- frame records ---------------------------------------------------------
 * A frame record is {saved frame pointer, return address}, two words. On
 * x86_64 (rbp), i386 (ebp) and AArch64 (x29, x30) it sits at the frame
 * pointer, and the saved frame pointer is the caller's record. ARM code
 * built with -marm (rheaper-cc passes it there) keeps one too: gcc's
 * prologue is `push {..., fp, lr}; add fp, sp, #4*k`, so fp points at the
 * saved lr and the record starts a word below it, and its saved fp points at
 * the caller's saved lr: the next record is the saved fp minus a word. The
 * walk reads a record at rec as rec[0] (through rh_arch_rec_next) and rec[1]
 * (the return address), and never adds the bias itself. gcc's Thumb-2 code
 * (Debian armhf's default) and MIPS64 frames keep no record at a fixed place
 * (RH_ARCH_FP below, docs/platforms.md). */
#define RH_WORD ((uintptr_t)sizeof(uintptr_t))
#define RH_FRAME_REC (2u * RH_WORD) /* bytes of a frame record */
#define RH_WORD_MISALIGNED(p) (((uintptr_t)(p)) & (RH_WORD - 1u))
#if defined(__arm__) && !defined(__thumb__)
#define RH_ARCH_REC_BIAS 4u /* bytes from a frame record up to its frame pointer */
#else
#define RH_ARCH_REC_BIAS 0u
#endif

/* The frame record a frame pointer value designates; 0 (the outermost frame's
 * saved frame pointer) stays 0. */
static inline __attribute__((always_inline)) uintptr_t rh_arch_rec_of_fp(uintptr_t fp)
{
    return RH_ARCH_REC_BIAS && fp ? fp - RH_ARCH_REC_BIAS : fp;
}
/* The caller's frame record from the record at rec (its saved frame
 * pointer, as a record), or 0 at the outermost one. */
static inline __attribute__((always_inline)) uintptr_t rh_arch_rec_next(uintptr_t rec)
{
    return rh_arch_rec_of_fp(((const uintptr_t *)rec)[0]);
}

/* 1 when the return address ret read from a record cannot be one because it
 * lies in the stack [lo, hi) being walked: on ARM a leaf function saves only
 * fp (`push {fp}; add fp, sp, #0`), so the word above the record its fp
 * designates is the caller's saved fp. Only a CPU sample's walk starts in a
 * leaf; it stops there (the leaf is frame 0, its caller is unknown). Never
 * on the other targets, whose leaf functions keep whole records or none. */
#if RH_ARCH_REC_BIAS
#define RH_ARCH_NOT_A_RECORD(ret, lo, hi) ((ret) >= (lo) && (ret) < (hi))
#else
#define RH_ARCH_NOT_A_RECORD(ret, lo, hi) 0
#endif

/* The frame record a wrapper records (wrap/rh_shims.h's RH_FP): where the
 * walk starts, [1] being the return address into the wrapper's caller. Where
 * gcc keeps no record at a fixed offset from the frame pointer (Thumb-2,
 * MIPS64) the wrapper hands over a record of its own, on its own stack for
 * as long as the call that records it: {0, its return address}. The
 * frame-pointer walk reads the caller from it and stops at the 0
 * (docs/platforms.md: one frame in Thumb-2 code). On MIPS64 the record goes
 * on with what the CFI walk starts from (rh_unwind.c, rh_unwind_start_sp):
 * the wrapper's CFA (its caller's stack pointer at the call) and an address
 * inside the wrapper, whose FDE says where the wrapper saved its caller's
 * frame pointer. Must be used in the wrapper's own body, in the block of the
 * call. */
#if defined(__mips__)
#define RH_ARCH_FRAME_RECORDS 0
#define RH_ARCH_FP()                                                                               \
    ((void *)(uintptr_t[4]){0, (uintptr_t)__builtin_return_address(0),                             \
                            (uintptr_t)__builtin_dwarf_cfa(), ({                                   \
                                __label__ rh_fp_here;                                              \
                            rh_fp_here:                                                            \
                                (uintptr_t) && rh_fp_here;                                         \
                            })})
#elif defined(__arm__) && defined(__thumb__)
#define RH_ARCH_FRAME_RECORDS 0
#define RH_ARCH_FP() ((void *)(uintptr_t[2]){0, (uintptr_t)__builtin_return_address(0)})
#else
#define RH_ARCH_FRAME_RECORDS 1
#define RH_ARCH_FP() ((void *)rh_arch_rec_of_fp((uintptr_t)__builtin_frame_address(0)))
#endif

/* A return address as the program can use it: AArch64 code built with
 * -mbranch-protection=pac-ret stores return addresses signed (authentication
 * code in the high bits). xpaclri (a hint: a no-op on CPUs without pointer
 * authentication) strips them; elsewhere the value is the address. */
static inline __attribute__((always_inline)) uintptr_t rh_arch_ret(uintptr_t r)
{
#if defined(__aarch64__)
    register uintptr_t x30 __asm__("x30") = r;
    __asm__("hint 7" /* xpaclri */ : "+r"(x30));
    return x30;
#else
    return r;
#endif
}

/* ---- CFI registers ---------------------------------------------------------
 * What the CFI walk (rh_unwind.c) needs of an architecture: the DWARF numbers
 * of its frame pointer, stack pointer and return-address column, and where a
 * return address is found. RH_ARCH_CFI is 0 where the walk does not run CFI.
 *   x86_64: rbp 6, rsp 7, return address 16, always at CFA - 8 (the call
 *     pushed it); a frame record {rbp, ret} sits at CFA - 16.
 *   AArch64: x29 29, sp 31, x30 30; x30 is saved wherever the function's FDE
 *     says (signed under pac-ret: rh_arch_ret strips it). A frame record
 *     {x29, x30} sits where the FDE saves the pair, anywhere in the frame
 *     (gcc: at its bottom, below the locals), so the CFA of a frame-record
 *     function is the record's address minus the x29 slot's offset.
 *   MIPS64 (little-endian, n64): fp 30, sp 29, ra 31. gcc saves ra and fp at
 *     CFA - 8 and CFA - 16 but points fp at the bottom of the frame, so there
 *     are no frame records: every step is a CFI step, and the walk needs
 *     .eh_frame everywhere (rheaper-cc and the MIPS64 toolchain file add
 *     -fasynchronous-unwind-tables; Debian's libc has it).
 * RH_CFI_RA_AT_CFA: the return address is always the word below the CFA.
 * RH_CFI_RECORDS: the frame pointer points at a frame record. */
#if defined(__x86_64__)
#define RH_ARCH_CFI 1
#define RH_CFI_FP 6
#define RH_CFI_SP 7
#define RH_CFI_RA 16
#define RH_CFI_RA_AT_CFA 1
#define RH_CFI_RECORDS 1
#elif defined(__aarch64__)
#define RH_ARCH_CFI 1
#define RH_CFI_FP 29
#define RH_CFI_SP 31
#define RH_CFI_RA 30
#define RH_CFI_RA_AT_CFA 0
#define RH_CFI_RECORDS 1
#elif defined(__mips__) && defined(__mips64) && defined(__MIPSEL__)
#define RH_ARCH_CFI 1
#define RH_CFI_FP 30
#define RH_CFI_SP 29
#define RH_CFI_RA 31
#define RH_CFI_RA_AT_CFA 0
#define RH_CFI_RECORDS 0
#else
#define RH_ARCH_CFI 0
#endif

/* ---- signal contexts ------------------------------------------------------
 * The interrupted pc, stack pointer and frame pointer of a signal's ucontext
 * (the CPU sampler; on ARM the frame pointer's record, rh_arch_rec_of_fp).
 * Returns 0, or -1 where this port does not know them. The
 * gregs indices are the kernel ABI's (REG_RIP 16, REG_RSP 15, REG_RBP 10 on
 * x86_64; REG_EIP 14, REG_ESP 7, REG_EBP 6 on i386), written as numbers so
 * that no file needs _GNU_SOURCE for them. */
#include <ucontext.h>
static inline int rh_arch_uc_regs(const void *ucv, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
{
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    *pc = (uintptr_t)uc->uc_mcontext.gregs[16];
    *sp = (uintptr_t)uc->uc_mcontext.gregs[15];
    *fp = (uintptr_t)uc->uc_mcontext.gregs[10];
    return 0;
#elif defined(__i386__)
    *pc = (uintptr_t)uc->uc_mcontext.gregs[14];
    *sp = (uintptr_t)uc->uc_mcontext.gregs[7];
    *fp = (uintptr_t)uc->uc_mcontext.gregs[6];
    return 0;
#elif defined(__aarch64__)
    *pc = (uintptr_t)uc->uc_mcontext.pc;
    *sp = (uintptr_t)uc->uc_mcontext.sp;
    *fp = (uintptr_t)uc->uc_mcontext.regs[29];
    return 0;
#elif defined(__arm__) && !defined(__thumb__)
    /* fp as the frame record it designates (ARM code: see frame records) */
    *pc = (uintptr_t)uc->uc_mcontext.arm_pc;
    *sp = (uintptr_t)uc->uc_mcontext.arm_sp;
    *fp = rh_arch_rec_of_fp((uintptr_t)uc->uc_mcontext.arm_fp);
    return 0;
#else
    (void)uc, (void)pc, (void)sp, (void)fp;
    return -1;
#endif
}

/* Where a signal trampoline frame's registers are, for the walk through it
 * (rh_stack.c), in words from byte RH_UC_GREGS above the trampoline's CFA
 * (x86_64: the CFA is the ucontext_t, whose uc_mcontext.gregs starts at
 * byte 40; REG_RBP 10, REG_RSP 15, REG_RIP 16). AArch64: the handler's CFA
 * is the kernel's rt_sigframe, a siginfo_t (128 bytes) then the ucontext_t,
 * whose uc_mcontext.regs start at byte 184, with sp and pc after x30. */
#if defined(__aarch64__)
#define RH_UC_GREGS (128 + 184)
#define RH_REG_RBP 29
#define RH_REG_RSP 31
#define RH_REG_RIP 32
#else
#define RH_UC_GREGS 40
#define RH_REG_RBP 10
#define RH_REG_RSP 15
#define RH_REG_RIP 16
#endif

/* ---- system calls ---------------------------------------------------------
 * AArch64 (and every newer port) has only the *at forms. */
static inline long rh_arch_unlink(const char *path)
{
    return syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}
static inline long rh_arch_rename(const char *from, const char *to)
{
#if defined(SYS_renameat)
    return syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, to);
#else
    return syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0);
#endif
}

/* mmap with a byte offset: 32-bit ports take it in 4096-byte units
 * (mmap2); their SYS_mmap is an older call that takes a struct. */
static inline long rh_arch_mmap(void *addr, size_t len, int prot, int flags, int fd, uint64_t off)
{
#if defined(SYS_mmap2)
    return syscall(SYS_mmap2, addr, len, prot, flags, fd, (unsigned long)(off >> 12));
#else
    return syscall(SYS_mmap, addr, len, prot, flags, fd, (long)off);
#endif
}

/* File calls with 64-bit offsets. 32-bit ports pass them as two registers,
 * low word first (little-endian i386 and ARM), ARM's EABI on an even pair. */
#if UINTPTR_MAX == 0xffffffffu
#define RH_LO(v) ((unsigned long)((uint64_t)(v)&0xffffffffu))
#define RH_HI(v) ((unsigned long)((uint64_t)(v) >> 32))
#if defined(__arm__)
#define RH_PAIR_PAD 0,
#else
#define RH_PAIR_PAD
#endif
static inline long rh_arch_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
    return syscall(SYS_pwrite64, fd, buf, n, RH_PAIR_PAD RH_LO(off), RH_HI(off));
}
static inline long rh_arch_ftruncate(int fd, uint64_t len)
{
    return syscall(SYS_ftruncate64, fd, RH_PAIR_PAD RH_LO(len), RH_HI(len));
}
static inline long rh_arch_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
    return syscall(SYS_fallocate, fd, mode, RH_LO(off), RH_HI(off), RH_LO(len), RH_HI(len));
}
#else
static inline long rh_arch_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
    return syscall(SYS_pwrite64, fd, buf, n, (long)off);
}
static inline long rh_arch_ftruncate(int fd, uint64_t len)
{
    return syscall(SYS_ftruncate, fd, (long)len);
}
static inline long rh_arch_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
    return syscall(SYS_fallocate, fd, mode, (long)off, (long)len);
}
#endif
/* open flags: 32-bit ports need O_LARGEFILE for files past 2 GiB (0 on
 * 64-bit ones, where the kernel implies it) */
#if defined(O_LARGEFILE)
#define RH_O_LARGEFILE O_LARGEFILE
#else
#define RH_O_LARGEFILE 0
#endif

/* futex operations (musl ships no linux/futex.h; the numbers are the kernel's). */
#define RH_FUTEX_WAIT 0
#define RH_FUTEX_WAKE 1
#define RH_FUTEX_PRIVATE 128

/* ---- C library --------------------------------------------------------------
 * The text of an errno value without allocating: glibc's strerrordesc_np
 * (async-signal-safe, not translated); musl's strerror returns a constant
 * string and allocates nothing either. */
static inline const char *rh_arch_strerror(int err)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
    extern const char *strerrordesc_np(int);
    return strerrordesc_np(err);
#else
    return strerror(err);
#endif
}

/* The top of the main thread's stack without allocating, or 0 when the C
 * library does not say (musl: the caller then asks pthread_getattr_np, which
 * on musl allocates nothing). */
#if defined(__GLIBC__)
extern void *__libc_stack_end;
static inline uintptr_t rh_arch_main_stack_end(void)
{
    return (uintptr_t)__libc_stack_end;
}
#else
static inline uintptr_t rh_arch_main_stack_end(void)
{
    return 0;
}
#endif

/* struct sigevent's thread id (SIGEV_THREAD_ID): glibc and musl name it
 * differently. */
#if defined(sigev_notify_thread_id)
#define RH_SIGEV_TID(sev) ((sev).sigev_notify_thread_id)
#elif defined(__GLIBC__)
#define RH_SIGEV_TID(sev) ((sev)._sigev_un._tid)
#else
#define RH_SIGEV_TID(sev) ((sev).__sev_fields.sigev_notify_thread_id)
#endif

/* ---- arithmetic -------------------------------------------------------------
 * a * b / c without overflow in the product (c > 0; the quotient must fit in
 * 64 bits). 32-bit targets have no __int128. */
static inline uint64_t rh_arch_muldiv64(uint64_t a, uint64_t b, uint64_t c)
{
#if defined(__SIZEOF_INT128__)
    return (uint64_t)((unsigned __int128)a * b / c);
#else
    uint64_t q = a / c, r = a % c; /* a*b/c = q*b + r*b/c, r < c */
    /* r*b as 128 bits (hi, lo) from 32-bit halves */
    uint64_t rl = r & 0xffffffffu, rh = r >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    uint64_t p0 = rl * bl, p1 = rl * bh, p2 = rh * bl, p3 = rh * bh;
    uint64_t mid = (p0 >> 32) + (p1 & 0xffffffffu) + (p2 & 0xffffffffu);
    uint64_t lo = (mid << 32) | (p0 & 0xffffffffu);
    uint64_t hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
    /* long division by c, one bit at a time; the remainder stays below c */
    uint64_t quo = 0, rem = 0;
    for (int i = 127; i >= 0; i--) {
        uint64_t carry = rem >> 63;
        uint64_t bit = i >= 64 ? (hi >> (i - 64)) & 1u : (lo >> i) & 1u;
        rem = (rem << 1) | bit;
        quo <<= 1;
        if (carry || rem >= c) {
            rem -= c;
            quo |= 1u;
        }
    }
    return q * b + quo;
#endif
}

#endif /* RH_ARCH_H */
