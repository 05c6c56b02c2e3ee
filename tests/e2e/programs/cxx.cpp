/* cxx.cpp: C++ operators new/delete in all their forms, std containers, and
 * allocations libstdc++ makes itself (std::string, ostringstream), which need
 * its static link (rheaper-c++'s default) and the runtime's CFI step to show
 * the user's frames above libstdc++'s frame-pointer-less code.
 *
 * Each block is made in a named extern "C" function so the test can find it by
 * any frame of its stack (frame 0 may be an inlined std:: function). Counts and
 * sizes are the program's own.
 */
#include "expect.h"

#include <map>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))
#define IN_STACK(f) "bt IN (SELECT id FROM backtraces WHERE sym = '" f "')"

struct alignas(64) Big {
    char b[128];
};

extern "C" {

NOINLINE void plain_new(int n)
{
    for (int i = 0; i < n; i++) {
        int *p = new int(i);
        KEEP(p);
        delete p;
    }
}

NOINLINE void array_new(int n)
{
    for (int i = 0; i < n; i++) {
        char *p = new char[100];
        KEEP(p);
        delete[] p;
    }
}

NOINLINE void nothrow_new(void)
{
    double *p = new (std::nothrow) double[3];
    KEEP(p);
    delete[] p;
}

NOINLINE void aligned_new(void)
{
    Big *b = new Big;
    KEEP(b);
    delete b;
}

NOINLINE void leak_new(void)
{
    KEEP(new long[25]);
}

NOINLINE size_t fill_vector(void)
{
    std::vector<int> v;
    v.reserve(1000);
    for (int i = 0; i < 1000; i++)
        v.push_back(i);
    KEEP(v.data());
    return v.capacity();
}

NOINLINE size_t fill_map(int n)
{
    std::map<int, int> m;
    for (int i = 0; i < n; i++)
        m[i] = i;
    return m.size();
}

NOINLINE size_t long_string(void)
{
    std::string s(200, 'x');
    KEEP(s.data());
    return s.capacity();
}

/* An ostringstream grows its buffer inside libstdc++ (overflow, xsputn), then
 * str() copies it into a string of exactly its length. Returns that length. */
NOINLINE size_t stream_text(int n)
{
    std::ostringstream os;
    for (int i = 0; i < n; i++)
        os << "line " << i << '\n';
    std::string s = os.str();
    KEEP(s.data());
    return s.size();
}

} // extern "C"

int main()
{
    plain_new(10);
    EXPECT(10, "SELECT count(*) FROM allocations WHERE kind = 'new' AND size = %zu AND dealloc_after IS NOT NULL AND " IN_STACK("plain_new"), sizeof(int));
    array_new(5);
    EXPECT(5, "SELECT count(*) FROM allocations WHERE kind = 'new[]' AND size = 100 AND dealloc_after IS NOT NULL AND " IN_STACK("array_new"));
    nothrow_new();
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'new[]' AND size = %zu AND " IN_STACK("nothrow_new"), 3 * sizeof(double));
    aligned_new();
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'new' AND size = %zu AND addr %% 64 = 0 AND dealloc_after IS NOT NULL AND " IN_STACK("aligned_new"), sizeof(Big));
    leak_new();
    EXPECT(1, "SELECT count(*) FROM leaks WHERE kind = 'new[]' AND size = %zu AND " IN_STACK("leak_new"), 25 * sizeof(long));

    size_t cap = fill_vector();
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'new' AND size = %zu AND dealloc_after IS NOT NULL AND " IN_STACK("fill_vector"), cap * sizeof(int));
    EXPECT(1, "SELECT count(*) FROM allocations WHERE " IN_STACK("fill_vector"));

    size_t nodes = fill_map(50);
    EXPECT((long long)nodes, "SELECT count(*) FROM allocations WHERE kind = 'new' AND dealloc_after IS NOT NULL AND " IN_STACK("fill_map"));

    size_t scap = long_string();
    EXPECT(1, "SELECT count(*) FROM allocations WHERE size = %zu AND dealloc_after IS NOT NULL AND " IN_STACK("long_string"), scap + 1);

    size_t text = stream_text(100);
    if (text <= 15) /* the copy must leave the small-string buffer */
        text = 0;
    /* the copy made by str(), exactly its length plus the terminator */
    EXPECT(1, "SELECT count(*) FROM allocations WHERE size = %zu AND dealloc_after IS NOT NULL AND " IN_STACK("stream_text"), text + 1);
    /* and the buffer the stream grew before it (inside libstdc++): more rows, all freed */
    EXPECT(1, "SELECT count(*) >= 2 AND count(*) = count(dealloc_after) FROM allocations WHERE " IN_STACK("stream_text"));

    /* no row is counted twice by the layered operators of a static libstdc++ */
    EXPECT(0, "SELECT count(*) FROM (SELECT addr, alloc_after FROM allocations GROUP BY addr, alloc_after HAVING count(*) > 1)");
    return 0;
}
