#!/bin/sh
# check.sh: build one test program with rheaper-cc, profile it, convert the
# profile and check every EXPECT line the program printed against the database.
#
#   check.sh BIN_DIR SRC_DIR WORK_DIR NAME LANG CC LINKMODE LINKER [SOURCES...]
#
# LANG is c or c++; CC the underlying compiler (gcc, clang, g++, clang++);
# LINKMODE dynamic or static; LINKER bfd, gold or lld. Prints "N passed, N failed"
# and exits non-zero when any expectation fails or a step breaks.
set -eu
# The runtime's "wrote" notice is checked: on stderr although it is no terminal.
export RHEAPER_LOG=stderr
bin=$1 src=$2 work=$3 name=$4 lang=$5 cc=$6 mode=$7 linker=$8
shift 8

rm -rf "$work" && mkdir -p "$work"
cd "$work"

if [ "$lang" = c++ ]; then wrapper="$bin/rheaper-c++"; export RHEAPER_CXX="$cc"
else wrapper="$bin/rheaper-cc"; export RHEAPER_CC="$cc"; fi

ldflags="-fuse-ld=$linker"
[ "$mode" = static ] && ldflags="$ldflags -static"
cflags="-O2 -pthread -I$src"
[ "$lang" = c ] && cflags="$cflags -std=gnu11"
# C++17 for every compiler: aligned new (operator new with align_val_t for an
# alignas(64) type) is C++17; clang 14 defaults to C++14 and calls the plain
# operator new, whose block is 64-aligned only by the heap's chance.
[ "$lang" = c++ ] && cflags="$cflags -std=gnu++17"

# Extra pieces a case needs (a plugin built as an instrumented shared library).
if [ -f "$src/$name.plugin.c" ]; then
    RHEAPER_CC=${cc%++} "$bin/rheaper-cc" $cflags -fPIC -shared "$src/$name.plugin.c" \
        -o "$work/plugin.so"
fi

srcs=""
for s in "$@"; do srcs="$srcs $src/$s"; done
# shellcheck disable=SC2086
"$wrapper" $cflags $srcs -o "$work/prog" $ldflags -ldl

export RH_EXPECT_FILE="$work/expect.txt"
export RH_PLUGIN="$work/plugin.so"
: > "$RH_EXPECT_FILE"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > prog.out 2> prog.err || {
    echo "FAIL: the profiled program exited with $?"; cat prog.err; exit 1; }
grep -q '^rheaper: wrote ' prog.err || { echo "FAIL: no 'rheaper: wrote' line"; cat prog.err; exit 1; }

pass=0 fail=0
for rip in rip-*; do
    [ -e "$rip" ] || { echo "FAIL: no profile written"; exit 1; }
    "$bin/rheaper-convert" --quiet "$rip" "$rip.db" || { echo "FAIL: conversion of $rip"; exit 1; }
done

# An EXPECT line may name its profile (fork); otherwise the only one is used.
. "$src/expect.sh"
expect_each "$RH_EXPECT_FILE" . "$(ls rip-*.db | head -n 1)" expect_sql

pass=$((pass + ex_pass)) fail=$((fail + ex_fail))
[ $((pass + fail)) -gt 0 ] || { echo "FAIL: the program stated no expectations"; fail=1; }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
