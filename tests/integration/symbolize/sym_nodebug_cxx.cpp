// sym_nodebug_cxx.cpp: a C++ function in the stripped library; its .dynsym name
// _ZN2nd5Thing3runEl must come back demangled as "nd::Thing::run(long)".
extern "C" void *nodebug_ret(void);
extern "C" volatile int symt_sink;

namespace nd {
struct Thing {
    static void *run(long n);
};

__attribute__((noinline)) void *Thing::run(long n)
{
    void *r = nodebug_ret();
    symt_sink += (int)n;
    return r;
}
} // namespace nd

extern "C" void *nodebug_cxx_call(void)
{
    return nd::Thing::run(2);
}
