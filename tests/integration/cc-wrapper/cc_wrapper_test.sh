#!/bin/sh
# cc_wrapper_test.sh: rheaper-cc / rheaper-c++ as drop-in compilers, end to end.
#
# Usage: cc_wrapper_test.sh BINDIR CASE
#   BINDIR  the directory holding rheaper-cc and rheaper-c++ (build/bin)
#   CASE    passthrough | info | errors | compile-flags | link-gcc | link-clang |
#           static | static-cxx | shared | lto
# Each case builds small programs in a fresh temporary directory, checks what
# the programs print, what the wrapper added (RHEAPER_CC_VERBOSE=1) and what the
# linker produced (nm), and exits with the number of failed checks.
set -u
. "$(dirname "$0")/../../lib/require.sh"
CASE= RH_DUMP=
. "$(dirname "$0")/../../lib/check.sh" # ok, bad, checks_done
bindir=$1
case_name=$2
RCC="$bindir/rheaper-cc"
RCXX="$bindir/rheaper-c++"
work=$(mktemp -d "${TMPDIR:-/tmp}/rh-cc-test.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
unset RHEAPER_CC RHEAPER_CXX RHEAPER_LIBDIR RHEAPER_CC_VERBOSE RHEAPER_CC_FAMILY RHEAPER_ENABLE
# check DESCRIPTION EXPECTED ACTUAL
check() { if [ "$2" = "$3" ]; then ok; else bad "$1: expected [$2], got [$3]"; fi; }
# has DESCRIPTION FILE FIXED-STRING: the file contains the string
has() { if grep -qF -- "$3" "$2"; then ok; else bad "$1: no [$3] in $2: $(head -c 300 "$2")"; fi; }
hasnt() { if grep -qF -- "$3" "$2"; then bad "$1: unexpected [$3] in $2"; else ok; fi; }
# have TOOL: the tool is there; without it the case fails under CI=true and
# skips elsewhere (tests/lib/require.sh), never passes untested
have() {
    case $1 in
    clang | clang++) require_tool "$1" clang ;;
    ld.lld) require_tool "$1" lld ;;
    ld.*) require_tool "$1" binutils ;;
    *) require_tool "$1" "$1" ;;
    esac
}

cat >alloc.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    char *volatile p = malloc(100);
    char *volatile s = strdup("rheaper");
    p[0] = 'x';
    printf("%c %s %d\n", p[0], s, argc);
    free(p);
    free(s);
    return 0;
}
EOF
cat >alloc.cc <<'EOF'
#include <cstdio>
#include <string>
#include <vector>
int main()
{
    std::vector<int> v;
    for (int i = 0; i < 100; i++)
        v.push_back(i);
    int *volatile p = new int[10];
    p[3] = 7;
    std::string s(200, 'y');
    std::printf("%zu %d %zu\n", v.size(), p[3], s.size());
    delete[] p;
    return 0;
}
EOF

cat > newonly.cc <<'EOF'
#include <cstdio>
int *volatile sink;
int main()
{
    for (int i = 0; i < 5; i++) {
        sink = new int[10];
        delete[] sink;
    }
    sink = new int(3);
    delete sink;
    std::puts("done");
    return 0;
}
EOF

# profiled DESCRIPTION PROGRAM EXPECTED-OUTPUT: the program prints the expected
# line both untracked and with RHEAPER_ENABLE=1, and the latter leaves a profile.
profiled() {
    check "$1: output" "$3" "$("./$2" 2>&1)"
    rm -rf prof && mkdir prof
    out=$(RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work/prof" "./$2" 2>/dev/null)
    check "$1: tracked output" "$3" "$out"
    check "$1: profile written" 1 "$(ls prof | grep -c '^rip-')"
}

case_passthrough() {
    # A -D with spaces and both kinds of quotes, through a response file, and
    # another one directly: both reach the compiler intact.
    cat >msg.c <<'EOF'
#include <stdio.h>
int main(void) { printf("[%s] [%s]\n", MSG, MSG2); return 0; }
EOF
    cat >args.rsp <<'EOF'
-DMSG="\"it's a \\\"test\\\"  with  spaces\""
EOF
    "$RCC" @args.rsp '-DMSG2="two  words"' msg.c -o msg_w 2>err.txt
    check "response-file build status" 0 $?
    cc @args.rsp '-DMSG2="two  words"' msg.c -o msg_p
    check "macro via response file" "$(./msg_p)" "$(./msg_w 2>&1)"
    check "macro text" "[it's a \"test\"  with  spaces] [two  words]" "$(./msg_w 2>&1)"
    # The response file is passed as is, not expanded, and not rewritten.
    RHEAPER_CC_VERBOSE=1 "$RCC" -c @args.rsp '-DMSG2="x"' msg.c -o msg.o 2>verbose.txt
    has "response file passed" verbose.txt " @args.rsp "
    check "response file untouched" 1 "$(wc -l <args.rsp)"
    # A -c inside a response file means compile only: no link flags.
    printf -- '-c\n' >c.rsp
    RHEAPER_CC_VERBOSE=1 "$RCC" @c.rsp alloc.c -o alloc.o 2>verbose.txt
    check "compile via @file status" 0 $?
    hasnt "no wrap flags with -c in @file" verbose.txt "--wrap"
    # Arguments keep their order: the last -D wins, as with the compiler.
    "$RCC" -DMSG='"a"' -UMSG -DMSG='"b"' -DMSG2='"c"' msg.c -o msg2 2>/dev/null
    check "argument order" "[b] [c]" "$(./msg2)"
}

case_info() {
    printf '#define X 42\nint x = X;\n' >pp.c
    cc -E pp.c >plain.i
    "$RCC" -E pp.c >wrapped.i
    check "-E output identical" "" "$(cmp plain.i wrapped.i 2>&1)"
    cc -M pp.c >plain.d
    "$RCC" -M pp.c >wrapped.d
    check "-M output identical" "" "$(cmp plain.d wrapped.d 2>&1)"
    check "--version identical" "$(cc --version)" "$("$RCC" --version)"
    check "c++ --version identical" "$(c++ --version)" "$("$RCXX" --version)"
    check "-dumpmachine identical" "$(cc -dumpmachine)" "$("$RCC" -dumpmachine)"
    check "-print-file-name identical" "$(cc -print-file-name=libc.a)" \
        "$("$RCC" -print-file-name=libc.a)"
    RHEAPER_CC_VERBOSE=1 "$RCC" -E pp.c 2>verbose.txt >/dev/null
    check "-E adds nothing" "rheaper-cc: cc -E pp.c" "$(cat verbose.txt)"
    RHEAPER_CC_VERBOSE=1 "$RCC" --version 2>verbose.txt >/dev/null
    check "--version adds nothing" "rheaper-cc: cc --version" "$(cat verbose.txt)"
    if have clang; then
        check "clang --version identical" "$(clang --version)" \
            "$(RHEAPER_CC=clang "$RCC" --version)"
    fi
}

case_errors() {
    printf 'int main(void) { return syntax error; }\n' >bad.c
    cc -c bad.c -o bad.o 2>/dev/null
    want=$?
    "$RCC" -c bad.c -o bad.o 2>err.txt
    check "failing compile status" "$want" $?
    has "compiler's diagnostic passes through" err.txt "error"
    "$RCC" bad.c -o bad 2>/dev/null
    check "failing link-mode compile status" "$want" $?
    RHEAPER_CC=/nonexistent/xyz-cc "$RCC" -c alloc.c 2>err.txt
    check "missing compiler status" 127 $?
    check "missing compiler message" \
        "rheaper-cc: cannot run compiler '/nonexistent/xyz-cc': No such file or directory" \
        "$(cat err.txt)"
    RHEAPER_CXX=xyz-no-such-c++ "$RCXX" -c alloc.cc 2>err.txt
    check "missing c++ compiler status" 127 $?
    check "missing c++ compiler message" \
        "rheaper-c++: cannot run compiler 'xyz-no-such-c++': No such file or directory" \
        "$(cat err.txt)"
    # No runtime: a link fails with one line; compiling needs no runtime.
    RHEAPER_LIBDIR="$work/nolib" "$RCC" alloc.c -o a 2>err.txt
    check "missing runtime status" 1 $?
    check "missing runtime: one line" 1 "$(wc -l <err.txt)"
    has "missing runtime message" err.txt "cannot find librheaper_rt.a"
    RHEAPER_LIBDIR="$work/nolib" "$RCC" -c alloc.c -o a.o 2>err.txt
    check "compile without runtime" 0 $?
    # RHEAPER_CC pointing back at rheaper-cc is a loop, stopped with a message.
    RHEAPER_CC="$RCC" "$RCC" -c alloc.c -o a.o 2>err.txt
    check "loop status" 1 $?
    has "loop message" err.txt "loop"
}

case_compile_flags() {
    RHEAPER_CC_VERBOSE=1 "$RCC" -c alloc.c -o a.o 2>v.txt
    check "compile status" 0 $?
    check "gcc compile flags" \
        "rheaper-cc: cc -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1 -c alloc.c -o a.o" \
        "$(cat v.txt)"
    RHEAPER_CC_VERBOSE=1 "$RCC" -O2 -g0 -c alloc.c -o a.o 2>v.txt
    hasnt "no -g1 when the user gave -g0" v.txt "-g1"
    has "frame pointers with -O2" v.txt "-fno-omit-frame-pointer"
    RHEAPER_CC_VERBOSE=1 "$RCC" -ggdb3 -c alloc.c -o a.o 2>v.txt
    hasnt "no -g1 with -ggdb3" v.txt "-g1"
    # The object really has frame pointers and line tables: -### shows the flags
    # reaching cc1, and the object carries .debug_line.
    "$RCC" -### -c alloc.c -o a.o 2>hash.txt
    has "-### shows the flags at cc1" hash.txt "-fno-omit-frame-pointer"
    "$RCC" -O2 -c alloc.c -o a.o
    check "line tables in the object" 1 "$(objdump -h a.o | grep -c ' .debug_line ')"
    RHEAPER_CC_VERBOSE=1 "$RCXX" -c alloc.cc -o b.o 2>v.txt
    check "c++ compile flags" \
        "rheaper-c++: c++ -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1 -c alloc.cc -o b.o" \
        "$(cat v.txt)"
    if have clang; then
        RHEAPER_CC=clang RHEAPER_CC_VERBOSE=1 "$RCC" -c alloc.c -o a.o 2>v.txt
        check "clang compile status" 0 $?
        has "clang gets -gline-tables-only" v.txt " -gline-tables-only "
        RHEAPER_CC=clang RHEAPER_CC_FAMILY=gcc RHEAPER_CC_VERBOSE=1 "$RCC" -c alloc.c -o a.o 2>v.txt
        has "RHEAPER_CC_FAMILY overrides" v.txt " -g1 "
    fi
}

# link_matrix COMPILER C++COMPILER: C and C++ programs with bfd, gold and lld.
link_matrix() {
    for ld in bfd gold lld; do
        if ! have "ld.$ld"; then
            echo "SKIP: ld.$ld not installed"
            continue
        fi
        RHEAPER_CC=$1 RHEAPER_CC_VERBOSE=1 "$RCC" -fuse-ld=$ld -O2 alloc.c -o c_$ld 2>v.txt
        check "$1/$ld: C link status" 0 $?
        has "$1/$ld: wrap flag" v.txt "-Wl,--wrap=malloc"
        has "$1/$ld: export flag" v.txt "-Wl,--export-dynamic-symbol=__wrap_malloc"
        has "$1/$ld: runtime" v.txt "-Wl,--whole-archive"
        check "$1/$ld: __wrap_malloc exported" 1 \
            "$(nm -D --defined-only c_$ld 2>/dev/null | grep -c ' T __wrap_malloc$')"
        check "$1/$ld: __wrap__Znwm exported" 1 \
            "$(nm -D --defined-only c_$ld 2>/dev/null | grep -c ' T __wrap__Znwm$')"
        profiled "$1/$ld: C" c_$ld "x rheaper 1"
        RHEAPER_CXX=$2 "$RCXX" -fuse-ld=$ld -O2 alloc.cc -o cc_$ld 2>err.txt
        check "$1/$ld: C++ link status" 0 $?
        profiled "$1/$ld: C++" cc_$ld "100 7 200"
    done
}

case_link_gcc() {
    link_matrix gcc g++
}

case_link_clang() {
    if ! have clang || ! have clang++; then
        echo "SKIP: clang not installed"
        return
    fi
    link_matrix clang clang++
}

case_static() {
    "$RCC" -static alloc.c -o s_c 2>err.txt
    check "C -static status" 0 $?
    hasnt "no dlopen warning" err.txt "dlopen"
    check "static: no dynamic section" 0 "$(readelf -d s_c 2>/dev/null | grep -c NEEDED)"
    profiled "C -static" s_c "x rheaper 1"
    RHEAPER_CC_VERBOSE=1 "$RCXX" -static alloc.cc -o s_cc 2>v.txt
    check "C++ -static status" 0 $?
    has "C++ -static pulls the real operators" v.txt "-Wl,-u,_Znwm"
    hasnt "no export flags when static" v.txt "--export-dynamic-symbol"
    hasnt "no dlopen wrap when static" v.txt "--wrap=dlopen"
    check "static operator new is libstdc++'s" 1 "$(nm s_cc | grep -c ' T _Znwm$')"
    profiled "C++ -static" s_cc "100 7 200"
    "$RCXX" -static-libstdc++ alloc.cc -o sl_cc 2>err.txt
    check "C++ -static-libstdc++ status" 0 $?
    profiled "C++ -static-libstdc++" sl_cc "100 7 200"
    if have clang; then
        RHEAPER_CC=clang "$RCC" -static -fuse-ld=lld alloc.c -o s_clang 2>err.txt
        check "clang -static lld status" 0 $?
        profiled "clang -static lld" s_clang "x rheaper 1"
    fi
}

# rheaper-c++ links libstdc++ statically by default (its internal allocations
# are then wrapped); RHEAPER_STATIC_LIBSTDCXX=0 and -shared-libstdc++ opt out.
case_static_cxx() {
    have sqlite3
    for cxx in g++ clang++; do
        if ! have "$cxx"; then
            echo "SKIP: $cxx not installed"
            continue
        fi
        RHEAPER_CXX=$cxx RHEAPER_CC_VERBOSE=1 "$RCXX" -O2 alloc.cc -o d_$cxx 2>v.txt
        check "$cxx default: link status" 0 $?
        has "$cxx default: -static-libstdc++ added" v.txt " -static-libstdc++ "
        has "$cxx default: operators pulled in" v.txt "-Wl,-u,_Znwm"
        check "$cxx default: no libstdc++.so needed" 0 \
            "$(readelf -d d_$cxx | grep -c 'NEEDED.*libstdc++')"
        check "$cxx default: operator new linked in" 1 "$(nm d_$cxx | grep -c ' T _Znwm$')"
        check "$cxx default: std::string code linked in" 1 \
            "$(nm d_$cxx | grep -c ' [TW] _ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm$')"
        profiled "$cxx default" d_$cxx "100 7 200"
        RHEAPER_STATIC_LIBSTDCXX=0 RHEAPER_CXX=$cxx RHEAPER_CC_VERBOSE=1 "$RCXX" -O2 alloc.cc \
            -o e_$cxx 2>v.txt
        check "$cxx RHEAPER_STATIC_LIBSTDCXX=0: link status" 0 $?
        hasnt "$cxx RHEAPER_STATIC_LIBSTDCXX=0: nothing added" v.txt "-static-libstdc++"
        check "$cxx RHEAPER_STATIC_LIBSTDCXX=0: libstdc++.so needed" 1 \
            "$(readelf -d e_$cxx | grep -c 'NEEDED.*libstdc++')"
        profiled "$cxx RHEAPER_STATIC_LIBSTDCXX=0" e_$cxx "100 7 200"
        RHEAPER_CXX=$cxx RHEAPER_CC_VERBOSE=1 "$RCXX" -O2 alloc.cc -shared-libstdc++ -o f_$cxx \
            2>v.txt
        check "$cxx -shared-libstdc++: link status" 0 $?
        hasnt "$cxx -shared-libstdc++: not passed to the compiler" v.txt "libstdc++"
        check "$cxx -shared-libstdc++: libstdc++.so needed" 1 \
            "$(readelf -d f_$cxx | grep -c 'NEEDED.*libstdc++')"
        # A program whose only C++ library calls are new and delete: the
        # executable defines the operators, and libstdc++ must stay needed
        # for their real definitions (--as-needed would drop it).
        RHEAPER_CXX=$cxx "$RCXX" -O1 newonly.cc -shared-libstdc++ -o n_$cxx
        check "$cxx -shared-libstdc++, new only: link status" 0 $?
        check "$cxx -shared-libstdc++, new only: libstdc++.so needed" 1 \
            "$(readelf -d n_$cxx | grep -c 'NEEDED.*libstdc++')"
        profiled "$cxx -shared-libstdc++, new only" n_$cxx "done"
        "$bindir/rheaper-convert" --quiet prof/rip-* n_$cxx.db 2>/dev/null
        check "$cxx -shared-libstdc++, new only: new[] and new recorded" "new|1|4 new[]|5|200" \
            "$(sqlite3 n_$cxx.db "SELECT kind, count(*), sum(size) FROM allocations
                                  WHERE kind LIKE 'new%' GROUP BY kind ORDER BY kind" | tr '\n' ' ' | sed 's/ $//')"
    done
    # Compiling, a C++ shared library and the C driver naming -lstdc++: unchanged.
    RHEAPER_CC_VERBOSE=1 "$RCXX" -c alloc.cc -o a.o 2>v.txt
    hasnt "compile: no -static-libstdc++" v.txt "-static-libstdc++"
    RHEAPER_CC_VERBOSE=1 "$RCXX" -shared -fPIC alloc.cc -o liba.so 2>v.txt
    hasnt "-shared: no -static-libstdc++" v.txt "-static-libstdc++"
    RHEAPER_CC_VERBOSE=1 "$RCC" a.o -lstdc++ -o c_lstdcxx 2>v.txt
    check "C driver -lstdc++: link status" 0 $?
    hasnt "C driver -lstdc++: no -static-libstdc++" v.txt "-static-libstdc++"
    # -static: the runtime's CFI step needs PT_GNU_EH_FRAME, which gcc omits there.
    RHEAPER_CC_VERBOSE=1 "$RCXX" -static alloc.cc -o s_cc 2>v.txt
    check "-static: link status" 0 $?
    has "-static: --eh-frame-hdr added" v.txt "-Wl,--eh-frame-hdr"
    hasnt "-static: no -static-libstdc++ on top" v.txt "-static-libstdc++"
    check "-static: PT_GNU_EH_FRAME" 1 "$(readelf -lW s_cc | grep -c 'GNU_EH_FRAME')"
    profiled "-static" s_cc "100 7 200"
}

case_shared() {
    cat >plug.c <<'EOF'
#include <stdlib.h>
#include <string.h>
char *plug_greet(const char *who)
{
    char *s = malloc(strlen(who) + 7);
    strcpy(s, "hello ");
    strcat(s, who);
    char *d = strdup(s);
    free(s);
    return d;
}
EOF
    cat >plugxx.cc <<'EOF'
#include <string>
#include <cstring>
#include <cstdlib>
extern "C" char *plug_greet(const char *who)
{
    std::string *s = new std::string("hi ");
    *s += who;
    char *d = strdup(s->c_str());
    delete s;
    return d;
}
EOF
    cat >host.c <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    char *(*greet)(const char *) = (char *(*)(const char *))dlsym(h, "plug_greet");
    char *s = greet("world");
    printf("%s\n", s);
    free(s);
    dlclose(h);
    return 0;
}
EOF
    RHEAPER_CC_VERBOSE=1 "$RCC" -shared -fPIC -Wl,-z,defs plug.c -o libplug.so 2>v.txt
    check "C shared link status (-z defs)" 0 $?
    has "shared: wrap flags" v.txt "-Wl,--wrap=malloc"
    has "shared: weak fallbacks" v.txt "librheaper_weak.a"
    hasnt "shared: no runtime" v.txt "librheaper_rt.a"
    hasnt "shared: no export flags" v.txt "--export-dynamic-symbol"
    check "shared: weak __wrap_malloc" 1 "$(nm -D libplug.so | grep -c ' W __wrap_malloc$')"
    check "shared: only the fallbacks it uses" 0 "$(nm -D libplug.so | grep -c '_Znwm')"
    check "shared: no runtime symbols" 0 "$(nm -D libplug.so | grep -c 'rh_record')"
    RHEAPER_CXX=g++ "$RCXX" -shared -fPIC plugxx.cc -o libplugxx.so 2>err.txt
    check "C++ shared link status" 0 $?
    # A plain, uninstrumented host: the weak fallbacks make the libraries work.
    cc host.c -o host_plain -ldl
    check "plain host + C plugin" "hello world" "$(./host_plain ./libplug.so 2>&1)"
    check "plain host + C++ plugin" "hi world" "$(./host_plain ./libplugxx.so 2>&1)"
    check "plain host: fallback used" 1 "$(LD_DEBUG=bindings ./host_plain ./libplug.so 2>&1 |
        grep -c "libplug.so .* to ./libplug.so .*normal symbol \`__wrap_malloc'")"
    # An instrumented host: the plugin binds to the host's exported __wrap_malloc.
    "$RCC" host.c -o host_rh 2>err.txt
    check "instrumented host link" 0 $?
    check "instrumented host + C plugin" "hello world" "$(./host_rh ./libplug.so 2>&1)"
    check "instrumented host: host's wrapper used" 1 "$(LD_DEBUG=bindings ./host_rh ./libplug.so 2>&1 |
        grep -c "libplug.so .* to ./host_rh .*normal symbol \`__wrap_malloc'")"
    check "instrumented C host + C++ plugin" "hi world" "$(./host_rh ./libplugxx.so 2>&1)"
    rm -rf prof && mkdir prof
    out=$(RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work/prof" ./host_rh ./libplugxx.so 2>/dev/null)
    check "tracked C host + C++ plugin" "hi world" "$out"
    # A library that names its allocator keeps it, as its plain link does:
    # --as-needed (given here, whatever the distribution's default) would drop
    # libjemalloc once the wraps renamed malloc and free.
    if [ -e /usr/include/jemalloc/jemalloc.h ]; then
        cc -shared -fPIC -Wl,--as-needed plug.c -o libplug_plain_je.so -ljemalloc
        "$RCC" -shared -fPIC -Wl,--as-needed plug.c -o libplug_je.so -ljemalloc 2>err.txt
        check "shared -ljemalloc: link status" 0 $?
        check "shared -ljemalloc: plain link needs it" 1 \
            "$(readelf -d libplug_plain_je.so | grep -c 'NEEDED.*libjemalloc')"
        check "shared -ljemalloc: needed" 1 "$(readelf -d libplug_je.so | grep -c 'NEEDED.*libjemalloc')"
        # (not dlopened: jemalloc's initial-exec TLS does not fit a dlopen)
    else
        require_file /usr/include/jemalloc/jemalloc.h libjemalloc-dev
    fi
}

case_lto() {
    "$RCC" -O2 -flto alloc.c -o lto_bfd 2>err.txt
    check "gcc -flto bfd status" 0 $?
    profiled "gcc -flto bfd" lto_bfd "x rheaper 1"
    "$RCC" -O2 -flto -fuse-ld=gold alloc.c -o lto_gold 2>err.txt
    check "gcc -flto gold status" 0 $?
    profiled "gcc -flto gold" lto_gold "x rheaper 1"
    if have clang && have ld.lld; then
        RHEAPER_CC=clang "$RCC" -O2 -flto -fuse-ld=lld alloc.c -o lto_lld 2>err.txt
        check "clang -flto lld status" 0 $?
        profiled "clang -flto lld" lto_lld "x rheaper 1"
    fi
}

case "$case_name" in
passthrough | info | errors | compile-flags | link-gcc | link-clang | static | static-cxx | shared | lto)
    "case_$(echo "$case_name" | tr - _)"
    ;;
*)
    echo "unknown case: $case_name"
    exit 1
    ;;
esac
checks_done
