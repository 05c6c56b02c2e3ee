#!/bin/sh
# thirdparty_hello.sh: an autotools build through rheaper-cc. GNU hello is
# configured from its unmodified Debian source with `./configure CC=rheaper-cc`
# (configure compiles and links its test programs through the wrapper), built
# with make and profiled. hello makes exactly one allocation of its own for the
# greeting: (length + 1) wide characters, in xmalloc called from main.
#
#   thirdparty_hello.sh BIN_DIR SRC_DIR WORK_DIR
set -eu
bin=$1 src=$2 work=$3
mkdir -p "$work"
cd "$work"
rc=0
sh "$src/fetch_source.sh" hello "$work/hello" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

rm -rf build && cp -a hello/src build   # -a: timestamps, or make reruns automake
(cd build && ./configure -q CC="$bin/rheaper-cc" && make -s -j2) > build.log 2>&1 ||
    { echo "FAIL: configure or make"; tail -20 build.log; exit 1; }
nm build/hello | grep -q ' T __wrap_malloc' || { echo "FAIL: hello was not linked with the runtime"; exit 1; }

greeting="profiled by rheaper"
rm -f rip-* hello.db
out=$(RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" build/hello -g "$greeting")
[ "$out" = "$greeting" ] || { echo "FAIL: hello printed '$out'"; exit 1; }
"$bin/rheaper-convert" --quiet rip-* hello.db

pass=0 fail=0
expect() { # expect VALUE SQL
    got=$(sqlite3 hello.db "$2")
    if [ "$got" = "$1" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: expected $1, got '$got' from: $2"; fi
}
size=$(( (${#greeting} + 1) * 4 ))
expect 1 "SELECT count(*) FROM allocations a JOIN backtraces b ON b.id = a.bt AND b.frame_no = 1 WHERE b.sym = 'main' AND b.file LIKE '%src/hello.c' AND a.size = $size AND a.kind = 'malloc'"
# whole-process scope also records libc's own blocks (locale data of the same
# size among them): the block main asked for is the one made through xmalloc
expect xmalloc "SELECT sym FROM backtraces WHERE frame_no = 0 AND id IN (SELECT a.bt FROM allocations a JOIN backtraces b ON b.id = a.bt AND b.frame_no = 1 WHERE b.sym = 'main' AND a.size = $size)"
expect 1 "SELECT value FROM meta WHERE key = 'clean'"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
