#!/bin/sh
# thirdparty_lua.sh: build Lua from its unmodified Debian source with
# `make CC=rheaper-cc`, profile it on workload.lua under valgrind in the same
# run, and check rheaper's row count against valgrind's "total heap usage".
#
#   thirdparty_lua.sh BIN_DIR SRC_DIR WORK_DIR
#
# valgrind counts every allocation in the process; rheaper sees those made by
# Lua's own code. The difference is what glibc allocates inside libc.so for
# itself (stdio buffers of fopen and stdout), which a dynamically linked program
# cannot see (docs/limits.md). It must be small and never negative.
# Skips (exit 77) when the source cannot be fetched.
set -eu
bin=$1 src=$2 work=$3
. "$(dirname "$0")/../../lib/require.sh"
require_tool valgrind valgrind
mkdir -p "$work"
cd "$work"

rc=0
sh "$src/fetch_source.sh" lua5.4 "$work/lua" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

rm -rf build && cp -r lua/src build
make -s -C build linux CC="$bin/rheaper-cc -std=gnu99" > make.log 2>&1 || { echo "FAIL: make"; cat make.log; exit 1; }
nm build/src/lua | grep -q ' T __wrap_malloc' || { echo "FAIL: lua was not linked with the runtime"; exit 1; }

rm -f rip-* lua.db
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" valgrind --tool=memcheck --leak-check=no \
    build/src/lua "$src/workload.lua" 20000 > lua.out 2> valgrind.log
vg=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' valgrind.log | tr -d ,)
[ -n "$vg" ] || { echo "FAIL: no valgrind summary"; cat valgrind.log; exit 1; }
"$bin/rheaper-convert" --quiet rip-* lua.db
rows=$(sqlite3 lua.db "SELECT count(*) FROM allocations")
diff=$((vg - rows))
echo "valgrind total heap usage: $vg allocs; rheaper rows: $rows; made inside libc.so: $diff"
if [ "$rows" -lt 100000 ] || [ "$diff" -lt 0 ] || [ "$diff" -gt 16 ]; then
    echo "FAIL: row count does not match valgrind"
    exit 1
fi
# Call sites past Lua's allocator wrappers (docs/call-sites.md): top names
# Lua's allocating functions, not l_alloc, and one line
# names the skipped wrappers.
"$bin/rheaper" top lua.db -n 20 > top.txt 2> top.err
for f in luaH_resize createstrobj luaF_newLclosure; do
    grep -q "^$f " top.txt || { echo "FAIL: rheaper top does not show $f"; cat top.txt; exit 1; }
done
if grep -qE "^(l_alloc|luaM_malloc_|luaM_realloc_|luaC_newobj) " top.txt; then
    echo "FAIL: rheaper top shows an allocator wrapper"; cat top.txt; exit 1
fi
grep -q "^rheaper: call sites skip allocator wrappers: .*l_alloc.*luaM_malloc_" top.err ||
    { echo "FAIL: no line naming the skipped wrappers"; cat top.err; exit 1; }
[ "$(wc -l < top.err)" -eq 1 ] || { echo "FAIL: more than one line on stderr"; cat top.err; exit 1; }
echo "2 passed, 0 failed"
