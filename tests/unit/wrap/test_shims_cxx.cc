// test_shims_cxx.cc: the C++ half of test_shims.c: a throwing operator new that
// fails, so that std::bad_alloc unwinds through the C shim __wrap__Znwm.
#include <cstddef>
#include <new>

extern "C" int cxx_new_throws(size_t n)
{
    try {
        void *volatile p = ::operator new(n);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        return 1;
    }
    return 0;
}
