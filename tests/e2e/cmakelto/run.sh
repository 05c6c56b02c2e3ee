#!/bin/sh
# run.sh: a Release build of a small C++ project (project/) through rheaper
# gets the LTO the plain compiler gets. CMake finds a GNU compiler's
# gcc-ar/gcc-ranlib under the compiler's name prefix: for rheaper-c++ that is
# rheaper-gcc-ar, linked beside the wrappers. The project's
# check_ipo_supported() must give the same answer with CXX=c++, with
# CXX=rheaper-c++ and with rheaper's toolchain file; with rheaper its objects
# must be compiled with -flto, and the program must still record its 40 items.
#
#   run.sh BIN_DIR BUILD_DIR SRC_DIR WORK_DIR
set -u
bin=$1 build=$2 src=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail=0
bad() { fail=$((fail + 1)); echo "FAIL: cmakelto: $*"; }
configure() { # NAME, then cmake arguments
    name=$1
    shift
    cmake -S "$src/project" -B "$name" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
        "$@" > "$name.log" 2>&1 || { cat "$name.log"; bad "configuring $name failed"; return 1; }
    sed -n 's/^-- ltoprobe: IPO //p' "$name.log"
}
plain=$(CXX=c++ configure plain)
wrapped=$(CXX="$bin/rheaper-c++" configure wrapped)
tc=$(configure toolchain "-DCMAKE_TOOLCHAIN_FILE=$build/cmake/rheaper-toolchain.cmake")
echo "check_ipo_supported: plain '$plain', CXX=rheaper-c++ '$wrapped', toolchain file '$tc'"
[ "$plain" = YES ] || bad "the plain compiler has no IPO here ('$plain'): nothing to compare"
[ "$wrapped" = "$plain" ] || bad "CXX=rheaper-c++ gives IPO '$wrapped', the plain compiler '$plain'"
[ "$tc" = "$plain" ] || bad "the toolchain file gives IPO '$tc', the plain compiler '$plain'"
grep -q 'ltoprobe: AR .*rheaper-gcc-ar' wrapped.log || bad "CMake did not find rheaper-gcc-ar: $(grep 'ltoprobe: AR' wrapped.log)"
for name in wrapped toolchain; do
    cmake --build "$name" > "$name.build.log" 2>&1 || { cat "$name.build.log"; bad "building $name failed"; continue; }
    grep -q -- '-flto' "$name/compile_commands.json" || bad "$name: objects are not compiled with -flto"
    (cd "$name" && rm -f rip-* && RHEAPER_ENABLE=1 ./ltoprobe > out.txt 2> err.txt) || { bad "$name: ltoprobe failed"; continue; }
    "$bin/rheaper-convert" --quiet "$name"/rip-* "$name.db" || { bad "$name: conversion failed"; continue; }
    n=$(sqlite3 "$name.db" "SELECT count(*) FROM allocations WHERE size = 40")
    [ "$n" = 40 ] || bad "$name: $n allocations of an item, the program made 40"
done
echo "cmakelto: $fail failed"
[ "$fail" -eq 0 ]
