/* sym_target.c: a program that records its own return addresses for the
 * symbolizer tests.
 *
 * It calls a noinline recorder from lines marked MARK(name) in this file and in
 * the files it links (sym_target_cxx.cpp, sym_lib.c, sym_nodebug.c): from a plain
 * function, from two always_inline functions (a real inline chain), from a C++
 * method, and from two shared libraries, one with DWARF in a separate debuglink
 * file and one stripped to .dynsym. It prints its module map ("M" lines, see
 * sym_modules.h) and each recorded address ("A name hex") on stdout. The test
 * driver (test_symbolize.c) resolves them and compares with the marked lines.
 */
#include "sym_modules.h"

#include <stdint.h>
#include <stdio.h>

#include "sym_target.h"

volatile int symt_sink;
void *symt_addr[SYMT_NADDR];

__attribute__((noinline)) void symt_record(int slot)
{
    symt_addr[slot] = __builtin_return_address(0);
    symt_sink++;
}

__attribute__((noinline)) void caller_plain(void)
{
    symt_record(SYMT_PLAIN); /* MARK(plain) */
    symt_sink++;
}

static inline __attribute__((always_inline)) void inl_inner(void)
{
    symt_record(SYMT_INL); /* MARK(inl_inner) */
    symt_sink++;
}

static inline __attribute__((always_inline)) void inl_outer(void)
{
    inl_inner(); /* MARK(inl_outer) */
    symt_sink++;
}

__attribute__((noinline)) void caller_inl(void)
{
    symt_sink++;
    inl_outer(); /* MARK(caller_inl) */
    symt_sink++;
}

static void print_hex(const uint8_t *p, unsigned n)
{
    if (!n)
        putchar('-');
    for (unsigned i = 0; i < n; i++)
        printf("%02x", p[i]);
}

int main(void)
{
    caller_plain();
    caller_inl();
    symt_cxx_call();
    symt_addr[SYMT_LIB] = lib_entry();
    symt_addr[SYMT_NODEBUG] = nodebug_func();
    symt_addr[SYMT_NODEBUG_CXX] = nodebug_cxx_call();

    static struct symt_list l;
    symt_collect(&l);
    for (int i = 0; i < l.n; i++) {
        const struct symt_mod *m = &l.mods[i];
        printf("M %llx ", (unsigned long long)m->base);
        print_hex(m->build_id, m->build_id_len);
        printf(" %u", m->nranges);
        for (unsigned r = 0; r < 2 * m->nranges; r++)
            printf(" %llx", (unsigned long long)m->ranges[r]);
        printf(" %s\n", m->path);
    }
    static const char *const names[SYMT_NADDR] = {"plain", "inl", "cxx", "lib", "nodebug",
                                                  "nodebug_cxx"};
    for (int i = 0; i < SYMT_NADDR; i++)
        printf("A %s %llx\n", names[i], (unsigned long long)(uintptr_t)symt_addr[i]);
    return 0;
}
