/* names_test.c: the short names of rh_names.c on the names real C++ and C
 * programs carry (libstdc++'s strings, vectors and streams, lambdas,
 * operators, anonymous namespaces, Lua's C functions), and their bounds: a
 * name whose brackets do not balance, NULL, a buffer too small for it (cut at a
 * character boundary, never past the end).
 */
#include <string.h>

#include "harness.h"
#include "rh_names.h"

#define E RH_NAME_ELLIPSIS

static const char *const cases[][2] = {
    {"index_word(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
     "const&, int)",
     "index_word(" E ")"},
    {"std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_"
     "iterator<int*, std::vector<int, std::allocator<int> > >, int const&)",
     "std::vector<" E ">::_M_realloc_insert<" E ">(" E ")"},
    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate("
     "unsigned long, unsigned long, char const*, unsigned long)",
     "std::__cxx11::basic_string<" E ">::_M_mutate(" E ")"},
    {"std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> "
     ">(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
     "std::basic_ostream<" E ">& std::operator<< <" E ">(" E ")"},
    {"main::{lambda(int)#1}::operator()(int) const",
     "main::{lambda(" E ")#1}::operator()(" E ") const"},
    {"(anonymous namespace)::Cache::insert(std::pair<int, int>)",
     "(anonymous namespace)::Cache::insert(" E ")"},
    {"Foo::operator->() const", "Foo::operator->() const"},
    {"bool operator< <int>(Box<int> const&, Box<int> const&)", "bool operator< <" E ">(" E ")"},
    {"Foo::operator std::vector<int, std::allocator<int> >() const",
     "Foo::operator std::vector<" E ">() const"},
    {"operator new(unsigned long)", "operator new(" E ")"},
    {"operator delete[](void*)", "operator delete[](" E ")"},
    {"std::enable_if<(3>0), int>::type f<3>(int)", "std::enable_if<" E ">::type f<" E ">(" E ")"},
    {"f(std::function<void (int)>, int) [clone .cold]", "f(" E ") [clone .cold]"},
    {"Tree::walk()", "Tree::walk()"},
    {"std::vector<int, std::allocator<int> >::vector()", "std::vector<" E ">::vector()"},
    {"operator_call(int)", "operator_call(" E ")"},
    {"luaH_resize", "luaH_resize"},
    {"luaM_malloc_", "luaM_malloc_"},
    {"g_hash_table_insert", "g_hash_table_insert"},
    {"", ""},
    /* unbalanced: copied as it is from the first open bracket on */
    {"broken<int(", "broken<int("},
    {"half(int", "half(int"},
    {"ok<a>::bad(", "ok<" E ">::bad("},
};

int main(void)
{
    char buf[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t k = rh_name_short(cases[i][0], buf, sizeof buf);
        if (strcmp(buf, cases[i][1]) != 0)
            fprintf(stderr, "case %zu: %s\n  gave     %s\n  expected %s\n", i, cases[i][0], buf,
                    cases[i][1]);
        CHECK(strcmp(buf, cases[i][1]) == 0);
        CHECK_EQ(k, strlen(cases[i][1]));
        CHECK_EQ(rh_name_shortens(cases[i][0]), strcmp(cases[i][0], cases[i][1]) != 0);
    }

    /* NULL gives "" */
    CHECK_EQ(rh_name_short(NULL, buf, sizeof buf), 0);
    CHECK(buf[0] == '\0');
    CHECK_EQ(rh_name_shortens(NULL), 0);

    /* a small buffer: never past its end, cut before a split ellipsis */
    char small[16];
    memset(small, 'X', sizeof small);
    size_t k = rh_name_short("abcdefghijklm<int>()", small, 16);
    /* "abcdefghijklm<" is 14 bytes, the ellipsis does not fit in the last 1 */
    CHECK_EQ(k, 14);
    CHECK(strcmp(small, "abcdefghijklm<") == 0);
    char one[1] = {'X'};
    CHECK_EQ(rh_name_short("abc", one, 1), 0);
    CHECK(one[0] == '\0');
    for (size_t n = 1; n < 40; n++) {
        char b2[64];
        memset(b2, 'Y', sizeof b2);
        size_t w = rh_name_short(cases[0][0], b2, n);
        CHECK(w < n && b2[w] == '\0' && b2[n] == 'Y');
    }
    /* non-ASCII plain characters in a small buffer: "caf\u00e9_\u03bb" is
     * c a f (0xC3 0xA9) _ (0xCE 0xBB); every size keeps whole characters */
    const char *u = "caf\xc3\xa9_\xce\xbb";
    static const size_t fits[] = {0, 0, 1, 2, 3, 3, 5, 6, 6, 8, 8};
    for (size_t n = 1; n < sizeof fits / sizeof fits[0]; n++) {
        char b3[16];
        memset(b3, 'Z', sizeof b3);
        size_t w = rh_name_short(u, b3, n);
        CHECK_EQ(w, fits[n]);
        CHECK(b3[w] == '\0' && strncmp(b3, u, w) == 0);
    }
    return rh_test_summary();
}
