#!/bin/sh
# check_alloc.sh: build one allocator test program with rheaper-cc, profile it,
# convert the profile and check every EXPECT line it printed (tests/e2e/programs's
# expect.h format) against the database.
#
#   check_alloc.sh BIN_DIR SRC_DIR WORK_DIR NAME [EXTRA LINK ARGUMENTS...]
#
# An argument @SRC/FILE has @SRC replaced by SRC_DIR (for
# --rheaper-allocator=@SRC/NAME.alloc). NAME.warnings, when present, lists
# patterns the link's stderr must match (the warnings about names that cannot
# be wrapped).
#
# NAME.c is the program; NAME.lib.c and NAME.lib2.c, when present, are
# compiled first into objects of their own (with rheaper-cc -c, as a
# project's own allocator would be) and linked in. Extra arguments go to the link (for example -ljemalloc or
# --rheaper-allocator=FILE). Prints "N passed, N failed".
set -eu
bin=$1 src=$2 work=$3 name=$4
shift 4

# A test linking a system allocator fails under CI=true and skips (77)
# elsewhere when its package is missing (tests/lib/require.sh).
. "$(dirname "$0")/../../lib/require.sh"
case " $* " in
*" -ljemalloc "*) require_file /usr/include/jemalloc/jemalloc.h libjemalloc-dev ;;
esac

rm -rf "$work" && mkdir -p "$work"
cd "$work"
cflags="-O2 -std=gnu11 -I$src -I$src/../../e2e/programs"
objs=""
for lib in lib lib2; do
    if [ -f "$src/$name.$lib.c" ]; then
        "$bin/rheaper-cc" $cflags -c "$src/$name.$lib.c" -o "$work/$name.$lib.o"
        objs="$objs $work/$name.$lib.o"
    fi
done
extra=""
for x in "$@"; do extra="$extra $(printf '%s' "$x" | sed "s|@SRC|$src|")"; done
# shellcheck disable=SC2086
"$bin/rheaper-cc" $cflags -I"$src/../../../runtime" -c "$src/$name.c" -o "$work/$name.o"
# shellcheck disable=SC2086
"$bin/rheaper-cc" "$work/$name.o" $objs -o "$work/prog" $extra \
    2> link.err || { echo "FAIL: link"; cat link.err; exit 1; }
cat link.err >&2

# NAME.warnings: one grep pattern a line that the link's stderr must match.
pass=0 fail=0
if [ -f "$src/$name.warnings" ]; then
    while IFS= read -r pat; do
        [ -n "$pat" ] || continue
        if grep -q -- "$pat" link.err; then pass=$((pass + 1))
        else fail=$((fail + 1)); echo "FAIL: the link did not warn: $pat"; fi
    done < "$src/$name.warnings"
fi

export RH_EXPECT_FILE="$work/expect.txt"
: > "$RH_EXPECT_FILE"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > prog.out 2> prog.err || {
    echo "FAIL: the profiled program exited with $?"; cat prog.err; exit 1; }
rip=$(ls rip-* | head -n 1)
"$bin/rheaper-convert" --quiet "$rip" "$rip.db" || { echo "FAIL: conversion of $rip"; exit 1; }

. "$src/../../e2e/programs/expect.sh"
expect_each "$RH_EXPECT_FILE" . "$rip.db" expect_sql
pass=$((pass + ex_pass)) fail=$((fail + ex_fail))
# NAME.cli.sh, when present: checks of the rheaper commands on the database
# ($bin, $rip.db), adding to pass and fail.
if [ -f "$src/$name.cli.sh" ]; then
    db="$rip.db"
    . "$src/$name.cli.sh"
fi
[ $((pass + fail)) -gt 0 ] || { echo "FAIL: the program stated no expectations"; fail=1; }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
