/* test_unwind_nofp.c: the frames without a frame pointer that test_unwind.c
 * puts between its fake shim and its frame-pointer callers.
 *
 * Compiled with -O2 -fomit-frame-pointer (tests/unit/runtime/CMakeLists.txt),
 * like libstdc++ and libc. Two kinds:
 *   uw_nofp_a -> uw_nofp_b -> shim: compiler-generated, rsp-based CFI;
 *   uw_asm_mid -> shim: hand-written, so its CFI is known exactly: it saves rbp
 *     and rbx, keeps a 40-byte frame (CFA = rsp + 64, rbp at CFA - 16), uses
 *     remember/restore_state around an early return, and calls the shim with
 *     rbp = 0x1234, so a frame-pointer walk stops right after frame 0.
 * Each records the return address it will go back to, for the test to compare.
 */
#include <stddef.h>
#include <stdint.h>

typedef void *(*uw_shim_fn)(unsigned kind, uintptr_t p, size_t size);

uintptr_t uw_asm_mid_ra, uw_nofp_a_ra, uw_nofp_b_ra;
void *uw_nofp_b_f0; /* what the shim returned: frame 0 of the stack */

/* void *uw_asm_mid(unsigned kind, uintptr_t p, size_t size, uw_shim_fn shim):
 * calls shim(kind, p, size) and returns its result; NULL without a shim. */
__asm__(".text\n"
        ".globl uw_asm_mid\n"
        ".type uw_asm_mid, @function\n"
        "uw_asm_mid:\n"
        ".cfi_startproc\n"
        "movq (%rsp), %rax\n"
        "movq %rax, uw_asm_mid_ra(%rip)\n"
        "pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "pushq %rbx\n"
        ".cfi_def_cfa_offset 24\n"
        ".cfi_offset %rbx, -24\n"
        "subq $40, %rsp\n"
        ".cfi_def_cfa_offset 64\n"
        "testq %rcx, %rcx\n"
        "jne 1f\n"
        ".cfi_remember_state\n"
        "addq $40, %rsp\n"
        ".cfi_def_cfa_offset 24\n"
        "popq %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        "popq %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "xorl %eax, %eax\n"
        "ret\n"
        "1:\n"
        ".cfi_restore_state\n"
        "movq $0x1234, %rbp\n"
        "movq $0x777, %rbx\n"
        "call *%rcx\n"
        "addq $40, %rsp\n"
        ".cfi_def_cfa_offset 24\n"
        "popq %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        "popq %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size uw_asm_mid, .-uw_asm_mid\n");

/* Keeps the locals and the calls real. */
static volatile uintptr_t uw_sink;

__attribute__((noinline)) void *uw_nofp_b(uw_shim_fn shim, unsigned kind, uintptr_t p)
{
    volatile uintptr_t pad[7];
    for (int i = 0; i < 7; i++)
        pad[i] = p + (uintptr_t)i;
    uw_nofp_b_ra = (uintptr_t)__builtin_return_address(0);
    void *f0 = shim(kind, p, 48);
    uw_sink = pad[3];
    return f0;
}

__attribute__((noinline)) void uw_nofp_a(uw_shim_fn shim, unsigned kind, uintptr_t p)
{
    volatile uintptr_t pad[3];
    for (int i = 0; i < 3; i++)
        pad[i] = p ^ (uintptr_t)i;
    uw_nofp_a_ra = (uintptr_t)__builtin_return_address(0);
    uw_nofp_b_f0 = uw_nofp_b(shim, kind, p);
    uw_sink = pad[1];
}
