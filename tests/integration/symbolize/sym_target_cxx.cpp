// sym_target_cxx.cpp: a C++ method for the symbolizer's demangling test; the
// driver expects the frame "ns::Klass::method(int)" at the MARK(method) line.
#include "sym_target.h"

namespace ns {
struct Klass {
    int v;
    __attribute__((noinline)) int method(int x);
};

__attribute__((noinline)) int Klass::method(int x)
{
    symt_record(SYMT_CXX); /* MARK(method) */
    symt_sink++;
    return v + x;
}
} // namespace ns

extern "C" void symt_cxx_call(void)
{
    ns::Klass k{symt_sink};
    symt_sink = k.method(3);
}
