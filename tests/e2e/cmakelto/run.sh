#!/bin/sh
# run.sh: a Release build of a small C and C++ project (project/) through
# rheaper gets the LTO the plain compilers get. CMake finds a GNU compiler's
# gcc-ar/gcc-ranlib (Clang's llvm-ar/llvm-ranlib) under the compiler's name
# prefix: for rheaper-cc and rheaper-c++ that is rheaper-gcc-ar and the rest,
# linked beside the wrappers in the build tree and in an installed bindir.
# check_ipo_supported(LANGUAGES C CXX) must say YES, as with CC=cc CXX=c++,
# for the build tree's wrappers, its toolchain file, the wrappers installed
# by `cmake --install` into a fresh prefix, and (when clang is there) the
# installed wrappers driving clang; each build's objects must be LTO objects
# (-flto in the compile commands, LTO sections or LLVM bitcode in the files)
# and the program must record its 40 items and 30 buffers.
#
#   run.sh BIN_DIR BUILD_DIR SRC_DIR WORK_DIR
set -u
bin=$1 build=$2 src=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
. "$src/../../lib/require.sh"
CASE=cmakelto RH_DUMP=
. "$src/../../lib/check.sh" # ok, bad, checks_done
require_tool sqlite3 sqlite3
configure() { # NAME, then cmake arguments; prints the IPO answer
    name=$1
    shift
    cmake -S "$src/project" -B "$name" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
        "$@" > "$name.log" 2>&1 || { cat "$name.log" >&2; bad "configuring $name failed"; return 1; }
    sed -n 's/^-- ltoprobe: IPO //p' "$name.log"
}
# lto_objects NAME KIND: every object of the build is an LTO object of KIND
# (gcc: .gnu.lto_ sections; clang: LLVM bitcode)
lto_objects() {
    n=0
    for o in $(find "$1/CMakeFiles/ltoprobe.dir" "$1/CMakeFiles/buffers.dir" -name '*.o'); do
        n=$((n + 1))
        if [ "$2" = gcc ]; then
            readelf -S "$o" 2> /dev/null | grep -q '\.gnu\.lto_' || { bad "$1: $o is no LTO object"; return; }
        else
            [ "$(head -c 2 "$o")" = BC ] || { bad "$1: $o is not LLVM bitcode"; return; }
        fi
    done
    if [ "$n" -eq 3 ]; then ok; else bad "$1: $n objects, the project has 3"; fi
}
# build_run NAME KIND PREFIX: builds, checks the tools CMake found (under
# PREFIX, rheaper's names), the LTO objects, and the profile's rows
build_run() {
    name=$1 kind=$2 prefix=$3
    case $kind in gcc) ar=gcc-ar ranlib=gcc-ranlib ;; *) ar=llvm-ar ranlib=llvm-ranlib ;; esac
    for lang in C CXX; do
        grep -q "ltoprobe: $lang AR $prefix/rheaper-$ar\$" "$name.log" && ok ||
            bad "$name: CMake's $lang archiver: $(grep "ltoprobe: $lang AR" "$name.log")"
        grep -q "ltoprobe: $lang RANLIB $prefix/rheaper-$ranlib\$" "$name.log" && ok ||
            bad "$name: CMake's $lang ranlib: $(grep "ltoprobe: $lang RANLIB" "$name.log")"
    done
    cmake --build "$name" > "$name.build.log" 2>&1 || { cat "$name.build.log"; bad "building $name failed"; return; }
    for f in buffers.c items.cpp main.cpp; do
        grep -A3 "\"file\": \".*/$f\"" "$name/compile_commands.json" > /dev/null &&
            grep -B3 "\"file\": \".*/$f\"" "$name/compile_commands.json" | grep -q -- '-flto' && ok ||
            bad "$name: $f is not compiled with -flto"
    done
    lto_objects "$name" "$kind"
    (cd "$name" && rm -f rip-* && RHEAPER_ENABLE=1 ./ltoprobe > out.txt 2> err.txt) || { bad "$name: ltoprobe failed"; return; }
    "$bin/rheaper-convert" --quiet "$name"/rip-* "$name.db" || { bad "$name: conversion failed"; return; }
    expect "$name: allocations of an item" "$(sqlite3 "$name.db" "SELECT count(*) FROM allocations WHERE size = 40")" 40
    expect "$name: malloc of a buffer" "$(sqlite3 "$name.db" "SELECT count(*) FROM allocations WHERE size = 24 AND kind = 'malloc'")" 30
}

plain=$(CC=cc CXX=c++ configure plain)
echo "check_ipo_supported: plain '$plain'"
[ "$plain" = YES ] || bad "the plain compilers have no IPO here ('$plain'): nothing to compare"

# the build tree's wrappers and its toolchain file
wrapped=$(CC="$bin/rheaper-cc" CXX="$bin/rheaper-c++" configure wrapped)
expect "CC=rheaper-cc CXX=rheaper-c++ (build tree): IPO" "$wrapped" YES
build_run wrapped gcc "$bin"
tc=$(configure toolchain "-DCMAKE_TOOLCHAIN_FILE=$build/cmake/rheaper-toolchain.cmake")
expect "the toolchain file (build tree): IPO" "$tc" YES
build_run toolchain gcc "$bin"

# the installed wrappers, in a prefix of their own
cmake --install "$build" --prefix "$work/prefix" > install.log 2>&1 || { cat install.log; bad "cmake --install failed"; }
ibin=$work/prefix/bin
installed=$(CC="$ibin/rheaper-cc" CXX="$ibin/rheaper-c++" configure installed)
expect "CC=rheaper-cc CXX=rheaper-c++ (installed): IPO" "$installed" YES
build_run installed gcc "$ibin"

# the installed wrappers driving clang (CMake then asks for rheaper-llvm-ar)
if command -v clang > /dev/null 2>&1; then
    cplain=$(CC=clang CXX=clang++ configure clang-plain)
    export RHEAPER_CC=clang RHEAPER_CXX=clang++
    clang=$(CC="$ibin/rheaper-cc" CXX="$ibin/rheaper-c++" configure installed-clang)
    expect "RHEAPER_CC=clang, installed wrappers: IPO as plain clang" "$clang" "$cplain"
    [ "$cplain" = YES ] && build_run installed-clang clang "$ibin"
    unset RHEAPER_CC RHEAPER_CXX
else
    require_tool clang clang
fi
checks_done
