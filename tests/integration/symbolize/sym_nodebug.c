/* sym_nodebug.c: a shared library built without -g and stripped to .dynsym; the
 * symbolizer names its frames from the dynamic symbol table. */
extern volatile int symt_sink;

__attribute__((noinline)) void *nodebug_ret(void)
{
    return __builtin_return_address(0);
}

void *nodebug_func(void)
{
    void *r = nodebug_ret();
    symt_sink++;
    return r;
}
