#!/bin/sh
# check_cross.sh: one cross target end to end. Builds the target parts of
# rheaper (RHEAPER_TARGET_ONLY=ON, cmake/toolchains/), builds cross_prog.c
# (and, for i386, cross_prog_cxx.cc) through that build's rheaper-cc, runs it
# under qemu-user (natively for x86_64 musl and i386 dynamic), converts every
# profile with the host's rheaper-convert and checks the database against the
# counts the program knows.
#
#   check_cross.sh SRC_DIR HOST_BIN_DIR WORK_DIR TARGET
#
# TARGET: aarch64, musl, musl-aarch64, i386, armhf, mips64el (see the case
# below for what each runs). A missing cross compiler or qemu skips (exit 77),
# or fails under CI=true.
#
# i386 dynamic programs run natively (an x86_64 kernel runs i386 programs;
# Debian's libc6-i386 provides their loader): under Debian 12's qemu-i386 (7.2)
# any dynamic glibc program hangs in its first pthread_create, rheaper or not.
set -eu
native_runs="" frames=many cxx= cfi_runs= cfi_nofp_flags= cfi_nofp_compare=0
src=$1 hostbin=$2 work=$3 target=$4
here=$src/tests/e2e/cross

case $target in
aarch64) triple=aarch64-linux-gnu qemu=qemu-aarch64 arch=aarch64 runs="dynamic static pac cpu"
    cfi_runs="dynamic static pac" cfi_nofp_compare=1 ;;
musl) triple=musl qemu= arch=x86_64 runs="static dynamic" ;;
musl-aarch64) triple=aarch64-linux-musl qemu=qemu-aarch64 arch=aarch64 runs="static" ;;
# cxx, cxx-static: cross_prog_cxx.cc (operator new takes a 32-bit size_t)
i386) triple=i686-linux-gnu qemu=qemu-i386 arch=x86 runs="static dynamic cxx cxx-static"
    native_runs="dynamic cxx" cxx=i686-linux-gnu-g++ ;;
# ARM (Thumb-2) frames have no frame record: a stack is the allocating
# function alone (runtime/rh_arch.h, docs/platforms.md)
armhf) triple=arm-linux-gnueabihf qemu=qemu-arm arch=arm runs="dynamic static" frames=1 ;;
# MIPS64 has no frame records either: its walk steps by CFI alone
mips64el) triple=mips64el-linux-gnuabi64 qemu=qemu-mips64el arch=mips64 runs="dynamic static"
    cfi_runs="dynamic static" cfi_nofp_flags=-fasynchronous-unwind-tables ;;
*) echo "unknown target $target"; exit 2 ;;
esac
case $triple in
musl) cc=musl-gcc sysroot= ;;
aarch64-linux-musl) cc=$triple-gcc sysroot=/ ;; # static programs only
*) cc=$triple-gcc sysroot=/usr/$triple ;;
esac

missing=""
for tool in $cc $cxx $qemu sqlite3 cmake; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
# the loader of a native i386 program (package libc6-i386)
[ "$target" = i386 ] && [ ! -e /lib/ld-linux.so.2 ] && missing="$missing /lib/ld-linux.so.2"
if [ -n "$missing" ]; then
    if [ "${CI:-}" = true ]; then echo "FAIL: missing:$missing (cmake/quickstart.sh TEST_PKGS)"; exit 1; fi
    echo "SKIP: missing:$missing"; exit 77
fi

rm -rf "$work" && mkdir -p "$work"
build=$work/build
cmake -S "$src" -B "$build" -DRHEAPER_TARGET_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchains/$triple.cmake" > "$work/build.log" 2>&1 &&
    cmake --build "$build" -j2 >> "$work/build.log" 2>&1 ||
    { echo "FAIL: the $target build of the target parts"; tail -30 "$work/build.log"; exit 1; }

pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL [$target/$run]: $*"; }
# q DB SQL: one value
q() { sqlite3 "$1" "$2"; }
# eq DB WHAT SQL WANT
eq() {
    got=$(q "$1" "$3")
    if [ "$got" = "$4" ]; then ok; else bad "$2: got '$got', want '$4'"; fi
}

for run in $runs; do
    d=$work/$run
    mkdir -p "$d"
    flags="-O2 -pthread"
    args=""
    case $run in
    static | cxx-static) flags="$flags -static" ;;
    pac) flags="$flags -mbranch-protection=standard" ;;
    cpu) args=spin ;;
    esac
    driver=rheaper-cc prog=cross_prog.c
    case $run in cxx*) driver=rheaper-c++ prog=cross_prog_cxx.cc ;; esac
    # shellcheck disable=SC2086
    "$build/bin/$driver" $flags -o "$d/prog" "$here/$prog" > "$d/cc.log" 2>&1 ||
        { bad "$driver $flags"; cat "$d/cc.log"; continue; }
    run_env="RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR=$d"
    [ "$run" = cpu ] && run_env="$run_env RHEAPER_CPU_HZ=100"
    native=0
    case " $native_runs " in *" $run "*) native=1 ;; esac
    if [ -n "$qemu" ] && [ $native = 0 ]; then
        set -- "$qemu" -L "$sysroot" "$d/prog"
    else
        set -- "$d/prog"
    fi
    # shellcheck disable=SC2086
    (cd "$d" && env $run_env timeout 120 "$@" $args > prog.out 2> prog.err) ||
        { bad "the program exited with $?"; cat "$d/prog.err"; continue; }
    n=$(ls "$d"/rip-* 2>/dev/null | wc -l)
    [ "$n" -eq 1 ] || { bad "$n profiles written"; continue; }
    db=$d/profile.db
    "$hostbin/rheaper-convert" --quiet "$d"/rip-* "$db" 2> "$d/convert.err" ||
        { bad "rheaper-convert"; cat "$d/convert.err"; continue; }

    case $run in cxx*)
        # the C++ operators' kinds, counts and bytes; the leak; main as frame 1
        mine="(SELECT a.* FROM allocations a JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0
               AND b.sym IN ('f_new','f_new_array','f_new_leak'))"
        eq "$db" "C++ sites (function:kind:count:bytes)" \
            "SELECT b.sym || ':' || a.kind || ':' || count(*) || ':' || sum(a.size) FROM $mine a
             JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 GROUP BY b.sym, a.kind ORDER BY b.sym" \
            "f_new:new:6:144
f_new_array:new[]:3:120
f_new_leak:new:1:24"
        eq "$db" "the C++ program's leaks" "SELECT count(*) || ':' || sum(size) FROM $mine
             WHERE dealloc_after IS NULL" "1:24"
        eq "$db" "frame 1 of the C++ functions" \
            "SELECT group_concat(s, ' ') FROM (SELECT DISTINCT b0.sym || '<' || coalesce(b1.sym, '?') AS s
             FROM (SELECT DISTINCT bt FROM $mine) a
             JOIN backtraces b0 ON b0.id = a.bt AND b0.frame_no = 0
             LEFT JOIN backtraces b1 ON b1.id = a.bt AND b1.frame_no = 1 ORDER BY 1)" \
            "f_new<main f_new_array<main f_new_leak<main"
        eq "$db" "events lost" "SELECT value FROM meta WHERE key = 'events_lost'" "0"
        eq "$db" "unknown frees" "SELECT value FROM meta WHERE key = 'unknown_frees'" "0"
        eq "$db" "architecture" "SELECT value FROM meta WHERE key = 'architecture'" "$arch"
        echo "[$target/$run] $(q "$db" "SELECT count(*) || ' allocations, ' || sum(size) || ' bytes' FROM allocations")"
        continue ;;
    esac

    # The program's allocations: those made by its functions (frame 0, the
    # caller of the allocating function). The rest are the C library's own and
    # must not have a frame of the program's functions anywhere in their stack.
    fns="'f_malloc','f_calloc','f_realloc','f_strdup','f_thread','f_leak'"
    mine="(SELECT a.* FROM allocations a JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0
           AND b.sym IN ($fns))"
    eq "$db" "sites (function:kind:count:bytes)" \
        "SELECT b.sym || ':' || a.kind || ':' || count(*) || ':' || sum(a.size) FROM $mine a
         JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 GROUP BY b.sym, a.kind ORDER BY b.sym, a.kind" \
        "f_calloc:calloc:5:1000
f_leak:malloc:1:777
f_malloc:malloc:10:1000
f_realloc:malloc:1:16
f_realloc:realloc:3:224
f_strdup:strdup:3:36
f_thread:malloc:14:896"
    eq "$db" "the program's allocations" "SELECT count(*) || ':' || sum(size) FROM $mine" "37:3949"
    eq "$db" "the C library's allocations with a frame of the program" \
        "SELECT count(*) FROM allocations a WHERE a.id NOT IN (SELECT id FROM $mine)
         AND EXISTS (SELECT 1 FROM backtraces b WHERE b.id = a.bt AND b.sym IN ($fns))" "0"
    eq "$db" "the program's leaks" "SELECT count(*) || ':' || sum(size) || ':' ||
         (SELECT b.sym FROM backtraces b WHERE b.id = m.bt AND b.frame_no = 0)
         FROM $mine m WHERE dealloc_after IS NULL" "1:777:f_leak"
    eq "$db" "allocating threads of the program" "SELECT count(DISTINCT alloc_thread) FROM $mine" "3"
    eq "$db" "f_thread's threads" "SELECT count(DISTINCT alloc_thread) FROM $mine m
         WHERE alloc_thread <> (SELECT alloc_thread FROM $mine m2 JOIN backtraces b ON b.id = m2.bt
         AND b.frame_no = 0 AND b.sym = 'f_leak') AND m.bt IN (SELECT id FROM backtraces
         WHERE frame_no = 0 AND sym = 'f_thread')" "2"
    eq "$db" "events lost" "SELECT value FROM meta WHERE key = 'events_lost'" "0"
    eq "$db" "unknown frees" "SELECT value FROM meta WHERE key = 'unknown_frees'" "0"
    eq "$db" "architecture" "SELECT value FROM meta WHERE key = 'architecture'" "$arch"
    # the frame-pointer walk: main calls each function of the main thread (on
    # targets without frame records the stack ends at the allocating function)
    want="f_calloc<main f_leak<main f_malloc<main f_realloc<main f_strdup<main"
    [ "$frames" = 1 ] && want="f_calloc<? f_leak<? f_malloc<? f_realloc<? f_strdup<?"
    eq "$db" "frame 1 of the main thread's functions" \
        "SELECT group_concat(s, ' ') FROM (SELECT DISTINCT b0.sym || '<' || coalesce(b1.sym, '?') AS s
         FROM (SELECT DISTINCT bt FROM $mine) a
         JOIN backtraces b0 ON b0.id = a.bt AND b0.frame_no = 0 AND b0.sym <> 'f_thread'
         LEFT JOIN backtraces b1 ON b1.id = a.bt AND b1.frame_no = 1 ORDER BY 1)" "$want"
    if [ "$run" = cpu ]; then
        samples=$(q "$db" "SELECT count(*) FROM cpu_samples")
        spin=$(q "$db" "SELECT count(*) FROM cpu_samples c WHERE EXISTS (SELECT 1 FROM backtraces b
               WHERE b.id = c.stack_id AND b.sym = 'f_spin')
               AND EXISTS (SELECT 1 FROM backtraces b WHERE b.id = c.stack_id AND b.sym = 'main')")
        dropped=$(q "$db" "SELECT coalesce((SELECT value FROM meta WHERE key = 'cpu_samples_dropped'), 0)")
        echo "[$target/$run] cpu samples: $samples, in f_spin called from main: $spin, dropped: $dropped"
        # 0.3 s of thread CPU time at 100 Hz: about 30 periods
        if [ "$samples" -ge 10 ] && [ "$spin" -ge $((samples * 8 / 10)) ]; then ok; else bad "cpu samples"; fi
    fi
    echo "[$target/$run] $(q "$db" "SELECT count(*) || ' allocations, ' || sum(size) || ' bytes' FROM allocations")"
done
# The CFI walk through code without frame records (check_cross_cfi.sh)
if [ -n "$cfi_runs" ]; then
    . "$here/check_cross_cfi.sh"
fi
# AArch64: a part of the suite under qemu as well. The runtime's unit tests,
# built as tests/unit/runtime/CMakeLists.txt builds them, against this build's
# runtime; two are left out: unit-runtime-env re-executes itself, and an
# AArch64 exec from a qemu-user process needs binfmt_misc, which this machine
# does not have; unit-runtime-manythreads asserts that the profile file stays
# sparse, and qemu-user ignores the madvise(MADV_REMOVE) that gives a
# chunk's unused tail back to the file system (it returns 0: the advice is a
# hint to qemu). Then the quick start's example.c, whose own figures (blocks and
# bytes allocated and never freed) the converted database must repeat.
if [ "$target" = aarch64 ]; then
    run=unit
    u=$work/unit
    mkdir -p "$u"
    tests=$(sed -n 's/^set(RT_TESTS \(.*\))$/\1/p' "$src/tests/unit/runtime/CMakeLists.txt")
    [ -n "$tests" ] || bad "no RT_TESTS list in tests/unit/runtime/CMakeLists.txt"
    for t in $tests; do
        case $t in env | manythreads) continue ;; esac
        exe=$u/unit-runtime-$t
        "$cc" -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls \
            -fno-inline-small-functions -pthread -I "$src/runtime" -I "$src/tests/unit/runtime" \
            -I "$src/tests" -I "$build/gen" -o "$exe" "$src/tests/unit/runtime/test_$t.c" \
            "$build/lib/librheaper_rt.a" -pthread > "$exe.cc.log" 2>&1 ||
            { bad "unit-runtime-$t does not build"; cat "$exe.cc.log"; continue; }
        if (cd "$u" && timeout 300 "$qemu" -L "$sysroot" "$exe" > "$exe.out" 2>&1); then
            ok
            echo "[$target/unit] unit-runtime-$t: $(tail -n 1 "$exe.out")"
        else
            bad "unit-runtime-$t"
            tail -n 20 "$exe.out"
        fi
    done

    run=example
    e=$work/example
    mkdir -p "$e"
    if "$build/bin/rheaper-cc" -O2 -pthread -o "$e/example" "$src/tests/example/example.c" > "$e/cc.log" 2>&1 &&
        (cd "$e" && env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$e" timeout 300 "$qemu" -L "$sysroot" ./example \
            > out.txt 2> err.txt) &&
        "$hostbin/rheaper-convert" --quiet "$e"/rip-* "$e/profile.db" 2> "$e/convert.err"; then
        # "example: allocated N blocks, B bytes; never freed: K blocks, KB bytes"
        want=$(sed -n 's/^example: allocated \([0-9]*\) blocks, \([0-9]*\) bytes; never freed: \([0-9]*\) blocks, \([0-9]*\) bytes$/\1:\2:\3:\4/p' "$e/out.txt")
        eq "$e/profile.db" "example.c's blocks (allocated:bytes:kept:kept bytes)" \
            "SELECT count(*) || ':' || sum(a.size) || ':' || sum(a.dealloc_after IS NULL) || ':' ||
             sum(CASE WHEN a.dealloc_after IS NULL THEN a.size ELSE 0 END) FROM allocations a
             JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 AND b.file LIKE '%/example.c'" "${want:-none printed}"
        eq "$e/profile.db" "example: events lost" "SELECT value FROM meta WHERE key = 'events_lost'" "0"
        eq "$e/profile.db" "example: unknown frees" "SELECT value FROM meta WHERE key = 'unknown_frees'" "0"
        echo "[$target/example] the program printed $want (blocks:bytes:kept:kept bytes)"
    else
        bad "example.c: build, run or conversion"
        cat "$e/cc.log" "$e/err.txt" "$e/convert.err" 2>/dev/null
    fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
