/* cxx_shared.cpp: a C++ program linked with the shared libstdc++
 * (-shared-libstdc++): what libstdc++.so allocates inside itself is recorded.
 *
 * std::string(200, 'x') allocates in libstdc++.so's _M_create, which calls
 * operator new through its PLT: the executable's own operator new (rheaper's
 * interposition) records it as kind new, and the walk crosses libstdc++'s
 * frame-pointer-less frames back to churn(). An ostringstream grows its buffer
 * inside the library too. The program's own new/delete[] arrive through the
 * wrap shims as before: one row each, of kind new[].
 */
#include <sstream>
#include <string>

extern "C" {
#include "expect.h"
}

#define STRINGS 60
#define ARRAYS 15

static int churn_line;

__attribute__((noinline)) size_t churn(int i)
{
    churn_line = __LINE__ + 1;
    std::string s(200 + (size_t)i, 'x');
    KEEP(s.data());
    return s.size();
}

int main()
{
    size_t total = 0;
    for (int i = 0; i < STRINGS; i++)
        total += churn(i);
    int arr_line = 0;
    for (int i = 0; i < ARRAYS; i++) {
        arr_line = __LINE__ + 1;
        int *a = new int[50];
        KEEP(a);
        delete[] a;
    }
    std::ostringstream os;
    for (int i = 0; i < 1000; i++)
        os << "line " << i << "\n";
    total += os.str().size();

    EXPECT(STRINGS,
           "SELECT count(*) FROM allocations a JOIN stacks s ON s.id = a.bt WHERE a.kind = 'new' "
           "AND s.truncated = 0 AND a.dealloc_after IS NOT NULL AND a.bt IN (SELECT id FROM "
           "backtraces WHERE sym LIKE '%%churn%%' AND line = %d)",
           churn_line);
    EXPECT(ARRAYS,
           "SELECT count(*) FROM allocations WHERE kind = 'new[]' AND size = %d AND bt IN "
           "(SELECT id FROM backtraces WHERE frame_no = 0 AND sym = 'main' AND line = %d)",
           (int)(50 * sizeof(int)), arr_line);
    EXPECT(1, "SELECT count(*) > 0 FROM allocations WHERE bt IN (SELECT id FROM backtraces "
              "WHERE sym LIKE '%%basic_stringbuf%%' OR sym LIKE '%%_M_mutate%%')");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    if (write(1, "VALGRIND\n", 9) != 9 || total == 0)
        return 1;
    return 0;
}
