#!/bin/sh
# run.sh: CPU samples of every thread (cpuall.c, spinlib.c). Four threads
# compute and never allocate: one started before tracking is enabled, one
# after, one by a shared library with libc's own pthread_create, and main.
# Each thread's share of the samples must equal its share of the CPU time
# the kernel reports in /proc/self/task/TID/stat over the recording window,
# within 2 points; no sample may be dropped.
#
# Case noself: no stack of this test's profiles (cpuall's, and noself.c's:
# heap and CPU, threads, wrapped pthread_create) holds a function of the
# runtime, as `nm` lists the runtime archive's code symbols.
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR [threads|noself]
set -u
bin=$1 src=$2 work=$3 case=${4:-threads}
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail=0
bad() { fail=$((fail + 1)); echo "FAIL: cpuall: $*"; }
cc -O2 -g -fPIC -shared -pthread "$src/spinlib.c" -o libspinlib.so || { echo "FAIL: cpuall: cc spinlib.c"; exit 1; }
"$bin/rheaper-cc" -O2 -g -pthread -I"$src/../../../runtime" "$src/cpuall.c" -o cpuall -L. -lspinlib \
    -Wl,-rpath,"$work" || { echo "FAIL: cpuall: rheaper-cc cpuall.c"; exit 1; }
RHEAPER_PROFILE_DIR="$work" ./cpuall 120 > out.txt 2> err.txt || { echo "FAIL: cpuall: the program failed"; cat err.txt; exit 1; }
"$bin/rheaper-convert" --quiet rip-* p.db || { echo "FAIL: cpuall: conversion failed"; exit 1; }
total=$(sqlite3 p.db "SELECT sum(samples) FROM cpu_thread_stats")
[ "${total:-0}" -gt 300 ] || bad "only ${total:-0} samples"
dropped=$(sqlite3 p.db "SELECT value FROM meta WHERE key = 'cpu_samples_dropped'")
[ "$dropped" = 0 ] || bad "$dropped periods dropped"
for name in before after libthread cpuall; do
    want=$(awk -v n="$name" '$1 == "SHARE" && $2 == n { print $3 }' out.txt)
    tid=$(awk -v n="$name" '$1 == "TID" && $2 == n { print $3 }' out.txt)
    n=$(sqlite3 p.db "SELECT coalesce(sum(s.samples), 0) FROM cpu_thread_stats s JOIN threads t ON t.id = s.thread WHERE t.tid = $tid")
    got=$(awk -v a="$n" -v t="$total" 'BEGIN { printf "%.2f", 100 * a / t }')
    if awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 2) }'; then
        echo "ok: $name: $got % of the samples, $want % of the CPU time"
    else
        bad "$name (tid $tid): $got % of the samples, $want % of the CPU time"
    fi
done
if [ "$case" = noself ]; then
    "$bin/rheaper-cc" -O2 -g -pthread "$src/noself.c" -o noself || { echo "FAIL: noself: rheaper-cc"; exit 1; }
    mkdir -p ns
    RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=999 RHEAPER_PROFILE_DIR="$work/ns" ./noself > ns.out 2> ns.err ||
        { echo "FAIL: noself: the program failed"; cat ns.err; exit 1; }
    "$bin/rheaper-convert" --quiet ns/rip-* ns.db || { echo "FAIL: noself: conversion failed"; exit 1; }
    lib=$bin/../lib/librheaper_rt.a
    [ -f "$lib" ] || { echo "FAIL: noself: no runtime archive at $lib"; exit 1; }
    nm -C --defined-only "$lib" 2>/dev/null | awk 'NF >= 3 && $2 ~ /^[TtWw]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }' |
        sort -u > runtime.syms
    [ "$(wc -l < runtime.syms)" -gt 100 ] || bad "nm lists only $(wc -l < runtime.syms) runtime functions"
    for db in p.db ns.db; do
        sqlite3 "$db" "SELECT DISTINCT sym FROM backtraces WHERE sym IS NOT NULL" | sort -u > "$db.syms"
        [ "$(wc -l < "$db.syms")" -gt 5 ] || bad "$db has almost no frames"
        comm -12 runtime.syms "$db.syms" > "$db.ours"
        [ -s "$db.ours" ] && bad "$db: stacks hold runtime functions: $(head -5 "$db.ours" | tr '\n' ' ')"
    done
    n=$(sqlite3 ns.db "SELECT count(*) FROM cpu_samples")
    [ "$n" -gt 0 ] || bad "noself has no CPU samples"
    echo "noself: $fail failed"
    [ "$fail" -eq 0 ]
    exit
fi
# `rheaper top cpu --thread` reads the same thread
n=$("$bin/rheaper" top cpu p.db --thread libthread -n 50 --csv 2>/dev/null | awk -F, 'NR > 1 { s += $3 } END { print s + 0 }')
[ "$n" -gt 0 ] || bad "top cpu --thread libthread shows no samples"
"$bin/rheaper" top cpu p.db -n 50 --csv 2>/dev/null | grep -q '^lib_spin,' || bad "top cpu does not name lib_spin"
echo "cpuall: $fail failed"
[ "$fail" -eq 0 ]
