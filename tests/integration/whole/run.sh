#!/bin/sh
# run.sh: one whole-process test. Builds NAME.c (or NAME.cpp) with rheaper-cc
# (rheaper-c++), profiles it, converts the profile and checks every EXPECT line
# the program printed (tests/e2e/programs/expect.h) against the database.
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR NAME MODE [VAR=VALUE...] [-- LINK ARGS...]
#
# MODE is dynamic or static. VAR=VALUE pairs go into the profiled run's
# environment (RHEAPER_SCOPE=program). When NAME.lib.c exists it is built
# WITHOUT rheaper and without frame pointers into libwhole.so, which the
# program links (-lwhole); NAME.plugin.c likewise into plugin.so, which it
# dlopens ($RH_WHOLE_PLUGIN). When the program prints
# "VALGRIND" on stdout of a plain run, the row count of the profile must equal
# valgrind's "total heap usage" allocs of an untracked run of the same program:
# every allocation in the process, in any library, is a row.
set -eu
# The runtime's "wrote" notice is checked: on stderr although it is no terminal.
export RHEAPER_LOG=stderr
bin=$1 src=$2 work=$3 name=$4 mode=$5
shift 5
envs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
[ $# -gt 0 ] && shift
# the system libraries some cases link (cmake/quickstart.sh's TEST_PKGS)
. "$src/../../lib/require.sh"
case " $* " in *" -ljemalloc "*) require_file /usr/include/jemalloc/jemalloc.h libjemalloc-dev ;; esac
case " $* " in *" -lz "*) require_file /usr/include/zlib.h zlib1g-dev ;; esac
case " $* " in *" -lxml2 "*) require_file /usr/include/libxml2/libxml/parser.h libxml2-dev ;; esac

rm -rf "$work" && mkdir -p "$work"
cd "$work"
e2e="$src/../../e2e/programs"
cflags="-O2 -pthread -I$src -I$e2e"
libflags=""
if [ -f "$src/$name.lib.c" ]; then
    # a system-style library: no rheaper, no frame pointers
    cc -O2 -fomit-frame-pointer -g -fPIC -shared "$src/$name.lib.c" -o "$work/libwhole.so"
    libflags="-L$work -Wl,-rpath,$work -lwhole"
    export RH_WHOLE_LIB="$work/libwhole.so"
fi
if [ -f "$src/$name.plugin.c" ]; then
    # a plugin the program (or its library) dlopens: no rheaper either
    cc -O2 -fomit-frame-pointer -g -fPIC -shared "$src/$name.plugin.c" -o "$work/plugin.so"
    export RH_WHOLE_PLUGIN="$work/plugin.so"
fi
ldflags=""
[ "$mode" = static ] && ldflags="-static"
if [ -f "$src/$name.cpp" ]; then
    # shellcheck disable=SC2086
    "$bin/rheaper-c++" $cflags "$src/$name.cpp" -o prog $ldflags $libflags "$@"
else
    # shellcheck disable=SC2086
    "$bin/rheaper-cc" -std=gnu11 $cflags "$src/$name.c" -o prog $ldflags $libflags "$@" -ldl
fi

export RH_EXPECT_FILE="$work/expect.txt"
: > "$RH_EXPECT_FILE"
# shellcheck disable=SC2086
env $envs RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > prog.out 2> prog.err || {
    echo "FAIL: the profiled program exited with $?"; cat prog.err; exit 1; }
grep -q '^rheaper: wrote ' prog.err || { echo "FAIL: no 'rheaper: wrote' line"; cat prog.err; exit 1; }
for rip in rip-*; do
    "$bin/rheaper-convert" --quiet "$rip" "$rip.db" || { echo "FAIL: conversion of $rip"; exit 1; }
done
db=$(ls rip-*.db | head -n 1)

pass=0 fail=0
. "$e2e/expect.sh"
expect_each "$RH_EXPECT_FILE" . "$db" expect_sql

if grep -q '^VALGRIND$' prog.out; then
    # the same program untracked under valgrind: every allocation it counts
    # must be a row (allocs = malloc-family calls, reallocs included)
    env $envs RH_EXPECT_FILE=/dev/null valgrind ./prog > vg.out 2> vg.err ||
        { echo "FAIL: valgrind run"; tail -5 vg.err; exit 1; }
    vg=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' vg.err | tr -d ,)
    rows=$(sqlite3 "$db" "SELECT count(*) FROM allocations")
    expect_sql "$vg" "$db" "SELECT count(*) FROM allocations"
    echo "valgrind allocs $vg, profile rows $rows"
fi
pass=$((pass + ex_pass)) fail=$((fail + ex_fail))
[ $((pass + fail)) -gt 0 ] || { echo "FAIL: the program stated no expectations"; fail=1; }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
