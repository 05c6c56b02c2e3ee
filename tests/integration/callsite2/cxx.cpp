/* cxx.cpp: a C++ program whose allocations go through the standard library's
 * templates (std::string, std::vector, std::map, std::make_shared,
 * std::function) from five named functions. Its call sites must be those five
 * functions, not the library's frames (std::__new_allocator::allocate,
 * basic_string::_M_construct, inlined from /usr/include/c++ or linked from
 * libstdc++.a). Each function's allocations per call are fixed by what it
 * does; run.sh reads "SITE function count" lines from stdout and compares
 * them with `rheaper top`.
 */
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))
static volatile size_t sink;

/* a 100-character string (one block), then 40 more characters: past its
 * capacity, so the string moves to a new block: 2 */
NOINLINE void make_names(int i)
{
    std::string s(100, 'a' + i % 26);
    s += "0123456789012345678901234567890123456789";
    sink = sink + s.size();
}
/* reserve(8), then 5 push_backs within it: 1 */
NOINLINE void fill_vector(int i)
{
    std::vector<int> v;
    v.reserve(8);
    for (int k = 0; k < 5; k++)
        v.push_back(k + i);
    sink = sink + v.size();
}
/* three keys, three tree nodes: 3 */
NOINLINE void index_words(int i)
{
    std::map<int, int> m;
    m[i] = 1;
    m[i + 1] = 2;
    m[i + 2] = 3;
    sink = sink + m.size();
}
/* the object and its count in one block: 1 */
struct Obj {
    long v[6];
};
NOINLINE void share_obj(int i)
{
    auto p = std::make_shared<Obj>();
    p->v[0] = i;
    sink = sink + (size_t)p->v[0];
}
/* a 64-byte capture does not fit std::function's local buffer: 1 */
struct Big {
    char b[64];
};
NOINLINE void make_callback(int i)
{
    Big big{};
    big.b[0] = (char)i;
    std::function<int()> f = [big]() { return (int)big.b[0]; };
    sink = sink + (size_t)f();
}

int main()
{
    const int n = 50;
    for (int i = 0; i < n; i++) {
        make_names(i);
        fill_vector(i);
        index_words(i);
        share_obj(i);
        make_callback(i);
    }
    std::printf("SITE make_names(int) %d\nSITE fill_vector(int) %d\nSITE index_words(int) %d\n"
                "SITE share_obj(int) %d\nSITE make_callback(int) %d\n",
                2 * n, n, 3 * n, n, n);
    return 0;
}
