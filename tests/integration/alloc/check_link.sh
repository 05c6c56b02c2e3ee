#!/bin/sh
# check_link.sh: an allocator library named on the link line is kept and used
# as in the plain build. Builds linkprog.c (which calls only malloc, calloc,
# realloc and free) once with the plain compiler and once with rheaper-cc, with
# the allocator given in one form, then checks:
#   - the link: for a shared library, DT_NEEDED (readelf -d) holds it, and every
#     library the plain build needs is needed by rheaper-cc's build too; for an
#     archive, the executable defines the allocator's malloc (nm);
#   - the program, untracked: it runs on that allocator (linkprog.c proves it)
#     and writes no profile;
#   - the program, tracked (RHEAPER_ENABLE=1): the same, and the converted
#     profile holds exactly the rows linkprog.c states (EXPECT).
#
#   check_link.sh BIN_DIR SRC_DIR WORK_DIR ALLOCATOR FORM
#
# ALLOCATOR: jemalloc | tcmalloc | mimalloc (Debian's libjemalloc-dev,
# libgoogle-perftools-dev, libmimalloc-dev). FORM: l (-lNAME), l-as-needed
# (-Wl,--as-needed -lNAME), l-no-as-needed (-Wl,--no-as-needed -lNAME), so (the
# path of libNAME.so), a (the path of libNAME.a in a dynamic link), static
# (-static -lNAME). Prints "N passed, N failed".
set -u
bin=$1 src=$2 work=$3 alloc=$4 form=$5
. "$(dirname "$0")/../../lib/require.sh"
CASE="$alloc-$form" RH_DUMP=
. "$(dirname "$0")/../../lib/check.sh" # ok, bad, checks_done
require_tool readelf binutils
require_tool sqlite3 sqlite3
cc=${RHEAPER_CC:-cc}

# the library's name, the define linkprog.c takes, the package, the
# libraries an archive of it needs besides, and a function of its malloc's
# object file (the proof that its malloc was taken out of the archive)
case $alloc in
jemalloc) lib=jemalloc def=RH_LINK_JE pkg=libjemalloc-dev deps="-lm -lpthread" sym=mallctl
    hdr=/usr/include/jemalloc/jemalloc.h ;;
tcmalloc) lib=tcmalloc def=RH_LINK_TC pkg=libgoogle-perftools-dev deps="-lstdc++ -lm -lpthread"
    sym=tc_mallinfo hdr=/usr/include/gperftools/tcmalloc.h ;;
mimalloc) lib=mimalloc def=RH_LINK_MI pkg=libmimalloc-dev deps="" sym=mi_version
    hdr=/usr/include/mimalloc.h ;;
*) echo "FAIL: unknown allocator $alloc"; exit 1 ;;
esac
require_file "$hdr" "$pkg"
# libtcmalloc.a needs libunwind's archive, whose _Unwind_Backtrace collides
# with libgcc's in a static link: the minimal tcmalloc is the one to link whole
[ "$alloc" = tcmalloc ] && case $form in a | static) lib=tcmalloc_minimal ;; esac

so=$($cc -print-file-name="lib$lib.so")
ar=$($cc -print-file-name="lib$lib.a")
static=0
case $form in
l) link="-l$lib" ;;
l-as-needed) link="-Wl,--as-needed -l$lib" ;;
l-no-as-needed) link="-Wl,--no-as-needed -l$lib" ;;
so) link=$so ;;
a | static)
    [ -f "$ar" ] || { echo "FAIL: $pkg ships no lib$lib.a"; exit 1; }
    static=1
    if [ "$form" = a ]; then link="$ar $deps"; else link="-static -l$lib $deps"; fi ;;
*) echo "FAIL: unknown form $form"; exit 1 ;;
esac

rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
cflags="-O2 -std=gnu11 -D$def -I$src/../../e2e/programs"
[ "$static" = 1 ] && cflags="$cflags -DRH_LINK_STATIC"

# shellcheck disable=SC2086
$cc $cflags "$src/linkprog.c" -o plain $link -ldl 2> plain.err ||
    { echo "FAIL: the plain build does not link: $(head -c 400 plain.err)"; exit 1; }
# shellcheck disable=SC2086
"$bin/rheaper-cc" $cflags "$src/linkprog.c" -o prog $link -ldl 2> link.err
check_rc=$?
[ "$check_rc" = 0 ] || { echo "FAIL: rheaper-cc does not link: $(head -c 600 link.err)"; exit 1; }

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort; }
if [ "$form" = static ]; then
    if readelf -d prog | grep -q NEEDED; then bad "-static: prog needs a shared library"; else ok; fi
elif [ "$static" = 0 ]; then
    soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    if needed prog | grep -qxF "$soname"; then ok
    else bad "DT_NEEDED of prog lacks $soname: $(needed prog | tr '\n' ' ')"; fi
    for n in $(needed plain); do
        if needed prog | grep -qxF "$n"; then ok
        else bad "the plain build needs $n, rheaper-cc's does not"; fi
    done
fi
if [ "$static" = 1 ]; then
    if nm prog | grep -qE " T $sym\$"; then ok; else bad "prog defines no $sym (lib$lib.a's malloc not taken)"; fi
fi

# untracked, then tracked
unset RHEAPER_ENABLE
mkdir off on
RHEAPER_PROFILE_DIR="$work/off" RH_EXPECT_FILE=/dev/null ./prog > off.out 2> off.err
check_rc=$?
if [ "$check_rc" = 0 ] && grep -qx "allocator: $alloc" off.out; then ok
else bad "untracked run: exit $check_rc, $(cat off.out off.err | head -c 400)"; fi
if [ -z "$(ls off)" ]; then ok; else bad "untracked run wrote $(ls off)"; fi

export RH_EXPECT_FILE="$work/expect.txt"
: > "$RH_EXPECT_FILE"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work/on" ./prog > on.out 2> on.err
check_rc=$?
if [ "$check_rc" = 0 ] && grep -qx "allocator: $alloc" on.out; then ok
else bad "tracked run: exit $check_rc, $(cat on.out on.err | head -c 400)"; fi
rip=$(ls on/rip-* 2> /dev/null | head -n 1)
if [ -n "$rip" ] && "$bin/rheaper-convert" --quiet "$rip" "$work/prog.db"; then
    . "$src/../../e2e/programs/expect.sh"
    expect_each "$RH_EXPECT_FILE" . "$work/prog.db" expect_sql
    rh_passed=$((rh_passed + ex_pass)) rh_failed=$((rh_failed + ex_fail))
    [ "$ex_pass" -ge 12 ] || bad "only $ex_pass of the program's expectations held"
else
    bad "tracked run: no profile or conversion failed ($(ls on))"
fi
checks_done
