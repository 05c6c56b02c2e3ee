/* rh_names.h: the names a person reads.
 *
 * A C++ frame's demangled name carries every template argument and every
 * parameter type: `index_word(std::__cxx11::basic_string<char,
 * std::char_traits<char>, std::allocator<char> > const&, int)`. Tables, trees,
 * flamegraph titles and terminal columns show the short form instead,
 * `index_word(…)`, as heaptrack_gui does, and keep the full name for a hover,
 * a detail line or a toggle. This is the one place that shortens a name; the
 * web UI (through the server's JSON), the terminal views, the HTML report and
 * the SVG titles all call it. C names (Lua's, glibc's) come back unchanged.
 */
#ifndef RH_NAMES_H
#define RH_NAMES_H

#include <stddef.h>
#include <stdio.h>

/* The ellipsis the short names use, U+2026 in UTF-8 (3 bytes). */
#define RH_NAME_ELLIPSIS "\xe2\x80\xa6"

/* Writes into out (n bytes, n >= 1; always NUL-terminated) the short form of
 * the name full: each outermost template argument list `<...>` becomes
 * `<…>` and each parameter list `(...)` becomes `(…)` (an empty one stays
 * `()`); `(anonymous namespace)`, the `operator` tokens (`operator<<`,
 * `operator()`, `operator->`, ...), qualifiers after the parameters (` const`)
 * and clone suffixes stay as they are. A name whose brackets do not balance
 * is copied unchanged from the first unbalanced one on. full NULL gives "".
 * When out is too small the name is cut at a UTF-8 character boundary.
 * Returns the length written (excluding the NUL). Thread-safe, allocates
 * nothing. */
__attribute__((visibility("hidden"))) size_t rh_name_short(const char *full, char *out, size_t n);

/* 1 when rh_name_short would change full (the name has a template argument or
 * parameter list with something in it), else 0: callers show the full name
 * apart (a title, a detail line) only when it differs. */
__attribute__((visibility("hidden"))) int rh_name_shortens(const char *full);

/* (rh_query_out.c) Writes `,"short":NAME` to out, NAME the short form of full as a JSON
 * string: the member every JSON answer puts right after a "function", so a
 * page shows the short name and keeps the full one (NULL: ""). */
__attribute__((visibility("hidden"))) void rh_json_short_name(FILE *out, const char *full);

#endif
