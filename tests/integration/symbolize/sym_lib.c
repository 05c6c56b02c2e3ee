/* sym_lib.c: a shared library for the symbolizer tests. Its DWARF is moved to a
 * separate file found through .gnu_debuglink. lib_entry returns the return
 * address of its call at MARK(lib_entry). */
extern volatile int symt_sink;

__attribute__((noinline)) static void *lib_ret(void)
{
    return __builtin_return_address(0);
}

void *lib_entry(void)
{
    void *r = lib_ret(); /* MARK(lib_entry) */
    symt_sink++;
    return r;
}
