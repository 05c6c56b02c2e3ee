#!/bin/sh
# run.sh: the call-site test (callsite.c). Builds libstrip.so from
# strip.lib.c without rheaper and strips it (only .dynsym stays), builds
# callsite.c and layer.c with rheaper-cc (two objects: layer.c is a file of
# its own), profiles, converts, checks the program's EXPECT lines, and checks
# that `rheaper top` prints the call sites the database holds.
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR
set -eu
bin=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cd "$work"
cc -O2 -g -fPIC -shared -fomit-frame-pointer -fno-optimize-sibling-calls "$src/strip.lib.c" \
    -o libstrip.so
strip --strip-all libstrip.so
if nm libstrip.so > /dev/null 2>&1 && nm libstrip.so 2>/dev/null | grep -q lib_static_alloc; then
    echo "FAIL: libstrip.so still names lib_static_alloc"
    exit 1
fi
"$bin/rheaper-cc" -O2 -fno-optimize-sibling-calls -I"$src/../../e2e/programs" -c "$src/layer.c" -o layer.o
"$bin/rheaper-cc" -O2 -fno-optimize-sibling-calls -I"$src/../../e2e/programs" -c "$src/callsite.c" -o callsite.o
"$bin/rheaper-cc" callsite.o layer.o -o prog -L. -Wl,-rpath,"$work" -lstrip
export RH_EXPECT_FILE="$work/expect.txt"
: > "$RH_EXPECT_FILE"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog > prog.out 2> prog.err ||
    { echo "FAIL: the profiled program exited with $?"; cat prog.err; exit 1; }
"$bin/rheaper-convert" --quiet rip-* p.db
pass=0 fail=0
. "$src/../../e2e/programs/expect.sh"
expect_each "$RH_EXPECT_FILE" . p.db expect_sql
pass=$ex_pass fail=$ex_fail
# the command a person runs shows the same call sites, and says what it skipped
"$bin/rheaper" top -n 20 --csv p.db > top.csv 2> top.err
for f in grow_list grow_buf node_new lib_entry local_alloc two_lines make_a x1; do
    if grep -q "^$f," top.csv; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: top does not name $f"; fi
done
for f in zrealloc_usable ztryrealloc zrealloc_internal zmalloc layer_twice layer_pair xalloc; do
    if grep -q "^$f," top.csv; then fail=$((fail + 1)); echo "FAIL: top names the wrapper $f"; else pass=$((pass + 1)); fi
done
if grep -q "libstrip.so (no symbol)" top.err; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: the notice does not name libstrip.so's frames: $(cat top.err)"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
