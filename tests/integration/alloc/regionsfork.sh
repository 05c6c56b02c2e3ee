#!/bin/sh
# regionsfork.sh BIN_DIR SRC_DIR WORK_DIR: regionsfork.c's child profile
# (fork inheritance of region chunks), checked like check_alloc.sh checks its
# programs, on the profile of the process that stated the expectations.
set -eu
bin=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
cflags="-O2 -std=gnu11 -I$src -I$src/../../e2e/programs"
"$bin/rheaper-cc" $cflags -c "$src/regionsfork.lib.c" -o lib.o
"$bin/rheaper-cc" $cflags -c "$src/regionsfork.c" -o prog.o
"$bin/rheaper-cc" prog.o lib.o -o prog --rheaper-allocator="$src/regions.alloc" 2> link.err ||
    { echo "FAIL: link"; cat link.err; exit 1; }
export RH_EXPECT_FILE="$work/expect.txt"
: > "$RH_EXPECT_FILE"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > prog.out 2> prog.err ||
    { echo "FAIL: the program exited with $?"; cat prog.err; exit 1; }
cpid=$(sed -n "s/^EXPECT	\([0-9]*\)	SELECT value FROM meta WHERE key = 'pid'$/\1/p" expect.txt)
[ -n "$cpid" ] && [ -f "rip-$cpid" ] || { echo "FAIL: no child profile"; ls; exit 1; }
"$bin/rheaper-convert" --quiet "rip-$cpid" child.db || { echo "FAIL: conversion"; exit 1; }
. "$src/../../e2e/programs/expect.sh"
expect_each "$RH_EXPECT_FILE" . child.db expect_sql
echo "$ex_pass passed, $ex_fail failed"
[ "$ex_fail" -eq 0 ] && [ "$ex_pass" -gt 0 ]
