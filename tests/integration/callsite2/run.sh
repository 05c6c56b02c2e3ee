#!/bin/sh
# run.sh: the call-site rule past library layers, on programs that know their
# answers (one ctest entry per case):
#   cxx   cxx.cpp (rheaper-c++): allocations through std::string, std::vector,
#         std::map, std::make_shared and std::function from five functions;
#         `rheaper top` names those five with the counts the program prints,
#         no standard-library frame is a call site, the notice names the
#         system headers, --no-skip shows frame 0 (the library's), text
#         output folds template arguments and the database keeps full names.
#   pool  app.c, pool.c, memory.c, xmalloc.c (rheaper-cc): an nginx-shaped
#         two-level pool and single-caller xcalloc/xstrdup over xmalloc; the
#         callers are the call sites with the program's counts, no layer
#         function is one, and two_lines (two allocating lines) stays one.
#   wrapper  wrapapp.c, wrapper.c (rheaper-cc): git's wrapper.c shape, an
#         xmalloc with three callers beside an xcalloc and an xstrdup that
#         call calloc and strdup themselves; the callers of xcalloc and
#         xstrdup are the call sites, with the program's count per function
#         and per calling line, and no x-allocator is one.
#   skip  skipapp.c, skipmcxt.c, skipctx.c (rheaper-cc): PostgreSQL's shape,
#         an AllocSetAlloc (ctx_alloc) that mallocs at two lines under a
#         palloc (my_palloc, through a method pointer) and a pstrdup over it:
#         ctx_alloc is the site; with --skip-function '^ctx_alloc$' the
#         wrappers above it are recomputed, so the program's four functions
#         are the sites with its counts (not my_palloc, not my_pstrdup), the
#         notice names what was skipped, and a second --skip-function over a
#         caller moves on from there.
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR CASE
set -u
bin=$1 src=$2 work=$3 case=$4
CASE=$case RH_DUMP=
. "$(dirname "$0")/../../lib/check.sh" # fail, ok, bad, checks_done
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

# sums `rheaper top --csv` counts per function; compares with SITE lines
check_sites() {
    "$bin/rheaper" top -n 1000 --csv p.db > top.csv 2> top.err || { bad "rheaper top failed: $(cat top.err)"; return; }
    awk -F, 'NR > 1 { n[$1] += $3 } END { for (f in n) print f, n[f] }' top.csv > got.txt
    while read -r tag fn want; do
        [ "$tag" = SITE ] || continue
        got=$(awk -v f="$fn" '$1 == f { print $2 }' got.txt)
        if [ "${got:-0}" = "$want" ]; then ok; else bad "$fn: top counts ${got:-0}, the program made $want"; fi
    done < out.txt
}

case $case in
cxx)
    "$bin/rheaper-c++" -O2 -o prog "$src/cxx.cpp" || fail "rheaper-c++ failed"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > out.txt 2> prog.err || fail "the program failed"
    "$bin/rheaper-convert" --quiet rip-* p.db || fail "conversion failed"
    check_sites
    # no call site is a frame of the standard library
    if awk -F, 'NR > 1 && ($1 ~ /^std::/ || $2 ~ /\.h:/)' top.csv | grep -q .; then
        bad "standard-library call sites: $(awk -F, 'NR > 1 && $1 ~ /^std::/' top.csv | head -3)"
    else ok; fi
    grep -q '/usr/include/c++/[0-9]* (system headers)' top.err && ok || bad "the notice does not name the system headers: $(cat top.err)"
    # --no-skip: frame 0 is the library's own frame again
    "$bin/rheaper" top -n 100 --no-skip --csv p.db > noskip.csv 2>/dev/null
    grep -q '^"\{0,1\}std::__new_allocator<' noskip.csv && ok || bad "--no-skip does not show std::__new_allocator"
    # text output folds template arguments; the database keeps the full name
    "$bin/rheaper" top -n 100 --no-skip p.db > noskip.txt 2>/dev/null
    grep -q 'std::__new_allocator<…>::allocate' noskip.txt && ok || bad "text output does not fold template arguments"
    n=$(sqlite3 p.db "SELECT count(*) FROM backtraces WHERE sym LIKE 'std::__new_allocator<int>::allocate%'")
    [ "$n" -gt 0 ] && ok || bad "the database lost the full name of std::__new_allocator<int>::allocate"
    ;;
pool)
    for f in app pool memory xmalloc; do
        "$bin/rheaper-cc" -O2 -c "$src/$f.c" -o "$f.o" || fail "rheaper-cc $f.c failed"
    done
    "$bin/rheaper-cc" app.o pool.o memory.o xmalloc.o -o prog || fail "link failed"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > out.txt 2> prog.err || fail "the program failed"
    "$bin/rheaper-convert" --quiet rip-* p.db || fail "conversion failed"
    check_sites
    for f in pool_create pool_alloc pool_calloc pool_block pool_alloc_small pool_alloc_large mem_align mem_alloc xmalloc xcalloc xstrdup; do
        if grep -q "^$f," top.csv; then bad "the layer function $f is a call site"; else ok; fi
        grep -q "[ ,]$f[ ,]" top.err && ok || bad "the notice does not name $f: $(cat top.err)"
    done
    n=$(awk -F, '$1 == "two_lines"' top.csv | wc -l)
    [ "$n" = 2 ] && ok || bad "two_lines has $n call sites, expected its two lines"
    ;;
wrapper)
    for f in wrapapp wrapper; do
        "$bin/rheaper-cc" -O2 -c "$src/$f.c" -o "$f.o" || fail "rheaper-cc $f.c failed"
    done
    "$bin/rheaper-cc" wrapapp.o wrapper.o -o prog || fail "link failed"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > out.txt 2> prog.err || fail "the program failed"
    "$bin/rheaper-convert" --quiet rip-* p.db || fail "conversion failed"
    check_sites
    # per calling line: `rheaper top` keeps function and file:line apart
    while read -r tag fn line want; do
        [ "$tag" = LINE ] || continue
        got=$(awk -F, -v f="$fn" -v l="wrapapp.c:$line" '$1 == f && $2 == l { n += $3 } END { print n + 0 }' top.csv)
        if [ "$got" = "$want" ]; then ok; else bad "$fn at wrapapp.c:$line: top counts $got, the program made $want"; fi
    done < out.txt
    for f in xmalloc xcalloc xstrdup; do
        if grep -q "^$f," top.csv; then bad "the x-allocator $f is a call site"; else ok; fi
        grep -q "[ ,]$f[ ,]" top.err && ok || bad "the notice does not name $f: $(cat top.err)"
    done
    # nothing but the six callers (and no row of wrapper.c)
    n=$(awk -F, 'NR > 1' top.csv | wc -l)
    [ "$n" = 7 ] && ok || bad "top has $n rows, expected 7 (six callers, two_tables twice): $(cat top.csv)"
    ;;
skip)
    for f in skipapp skipmcxt skipctx; do
        "$bin/rheaper-cc" -O2 -c "$src/$f.c" -o "$f.o" || fail "rheaper-cc $f.c failed"
    done
    "$bin/rheaper-cc" skipapp.o skipmcxt.o skipctx.o -o prog || fail "link failed"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > out.txt 2> prog.err || fail "the program failed"
    "$bin/rheaper-convert" --quiet rip-* p.db || fail "conversion failed"
    total=$(awk '$1 == "SITE" { n += $3 } END { print n }' out.txt)
    # without --skip-function: the allocator that mallocs at two lines is the site
    "$bin/rheaper" top -n 100 --csv p.db > plain.csv 2>/dev/null || fail "rheaper top"
    n=$(awk -F, '$1 == "ctx_alloc" { n += $3 } END { print n + 0 }' plain.csv)
    [ "$n" = "$total" ] && ok || bad "without --skip-function ctx_alloc has $n rows, expected all $total: $(cat plain.csv)"
    # skipping it: palloc and pstrdup are wrappers over it, their callers the sites
    "$bin/rheaper" top -n 100 --skip-function '^ctx_alloc$' --csv p.db > top.csv 2> top.err ||
        fail "rheaper top --skip-function"
    awk -F, 'NR > 1 { n[$1] += $3 } END { for (f in n) print f, n[f] }' top.csv > got.txt
    while read -r tag fn want; do
        [ "$tag" = SITE ] || continue
        got=$(awk -v f="$fn" '$1 == f { print $2 }' got.txt)
        if [ "${got:-0}" = "$want" ]; then ok; else bad "--skip-function: $fn has ${got:-0} rows, the program made $want: $(cat top.csv)"; fi
    done < out.txt
    for f in ctx_alloc my_palloc my_pstrdup; do
        if grep -q "^$f," top.csv; then bad "--skip-function: $f is still a call site"; else ok; fi
        grep -q "[ ,]$f[ ,]" top.err && ok || bad "the notice does not name $f: $(cat top.err)"
    done
    # the four, and main's printf (stdio's buffer)
    n=$(awk -F, 'NR > 1 && $1 != "main"' top.csv | wc -l)
    [ "$n" = 4 ] && ok || bad "--skip-function: $n sites, expected the program's 4: $(cat top.csv)"
    # leaks agrees (nothing is freed)
    "$bin/rheaper" leaks -n 100 --skip-function '^ctx_alloc$' --csv p.db > leaks.csv 2>/dev/null
    grep -q "plan_query" leaks.csv && ! grep -q "my_palloc" leaks.csv && ok ||
        bad "leaks --skip-function: $(cat leaks.csv)"
    # a further skip goes on from the recomputed site
    "$bin/rheaper" top -n 100 --skip-function '^ctx_alloc$' --skip-function '^plan_query$' --csv p.db > two.csv 2>/dev/null
    if grep -q "^plan_query," two.csv; then bad "plan_query skipped and still a site"; else ok; fi
    want=$(awk '$2 == "plan_query" { print $3 }' out.txt)
    got=$(($(awk -F, '$1 == "main" { n += $3 } END { print n + 0 }' two.csv) -
           $(awk -F, '$1 == "main" { n += $3 } END { print n + 0 }' top.csv)))
    [ "$got" = "$want" ] && ok || bad "plan_query's $want rows go to main: got $got ($(cat two.csv))"
    ;;
*)
    fail "unknown case" ;;
esac
checks_done
