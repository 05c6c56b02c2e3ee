#!/bin/sh
# check_cross.sh: one cross target end to end. Builds the target parts of
# rheaper (RHEAPER_TARGET_ONLY=ON, cmake/toolchains/), builds cross_prog.c
# (and, for i386, cross_prog_cxx.cc; for armhf, cross_libc_calls.c) through
# that build's rheaper-cc, runs it under qemu-user (natively for x86_64 musl
# and i386 dynamic), converts every
# profile with the host's rheaper-convert and checks the database against the
# counts the program knows. For aarch64, live_stream.sh then checks the live
# view and streaming.
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
musl-aarch64) triple=aarch64-linux-musl qemu=qemu-aarch64 arch=aarch64 runs="static" cfi_runs="static" ;;
# cxx, cxx-static: cross_prog_cxx.cc (operator new takes a 32-bit size_t)
i386) triple=i686-linux-gnu qemu=qemu-i386 arch=x86 runs="static dynamic cxx cxx-static"
    native_runs="dynamic cxx" cxx=i686-linux-gnu-g++ ;;
# ARM: rheaper-cc builds ARM code (-marm), whose frames keep a frame record;
# the C library is Thumb-2 code, which keeps none (checked below).
# libc: cross_libc_calls.c, static: allocations inside the C library
armhf) triple=arm-linux-gnueabihf qemu=qemu-arm arch=arm runs="dynamic static cpu cpuleaf libc" ;;
# MIPS64 has no frame records: its walk steps by CFI alone
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
    static | cxx-static | libc) flags="$flags -static" ;;
    pac) flags="$flags -mbranch-protection=standard" ;;
    cpu) args=spin ;;
    cpuleaf) args=leafspin ;;
    esac
    driver=rheaper-cc prog=cross_prog.c
    case $run in
    cxx*) driver=rheaper-c++ prog=cross_prog_cxx.cc ;;
    libc) prog=cross_libc_calls.c ;;
    esac
    # shellcheck disable=SC2086
    "$build/bin/$driver" $flags -o "$d/prog" "$here/$prog" > "$d/cc.log" 2>&1 ||
        { bad "$driver $flags"; cat "$d/cc.log"; continue; }
    run_env="RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR=$d"
    case $run in cpu*) run_env="$run_env RHEAPER_CPU_HZ=100" ;; esac
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

    if [ "$run" = libc ]; then
        # ARM: glibc's Thumb-2 code keeps no frame record. A comparator's
        # stack ends at the glibc function that called it (msort, marked
        # complete: its r11 is 0); glibc's fopen leaves r11 as f_open set
        # it, so __fopen_internal's stack goes on at f_open's record, whose
        # return address is main's: f_open itself is missing.
        ncmp=$(sed -n 's/^cmp \([0-9]*\)$/\1/p' "$d/prog.out")
        eq "$db" "cmp's allocations (count:bytes:stack:truncated)" \
            "SELECT count(*) || ':' || sum(a.size) || ':' || (SELECT group_concat(sym, '<') FROM
             (SELECT coalesce(b.sym, '?') AS sym FROM backtraces b WHERE b.id = a.bt ORDER BY b.frame_no))
             || ':' || st.truncated FROM allocations a JOIN stacks st ON st.id = a.bt
             JOIN backtraces b0 ON b0.id = a.bt AND b0.frame_no = 0 AND b0.sym = 'cmp' GROUP BY a.bt" \
            "${ncmp:-none printed}:$((${ncmp:-0} * 10)):cmp<msort_with_tmp.part.0:0"
        eq "$db" "fopen's allocation (count:stack)" \
            "SELECT count(*) || ':' || (SELECT group_concat(sym, '<') FROM
             (SELECT coalesce(b.sym, '?') AS sym FROM backtraces b WHERE b.id = a.bt ORDER BY b.frame_no))
             FROM allocations a JOIN backtraces b0 ON b0.id = a.bt AND b0.frame_no = 0
             AND b0.sym = '__fopen_internal' GROUP BY a.bt" "1:__fopen_internal<main<__libc_start_call_main"
        eq "$db" "events lost" "SELECT value FROM meta WHERE key = 'events_lost'" "0"
        eq "$db" "unknown frees" "SELECT value FROM meta WHERE key = 'unknown_frees'" "0"
        echo "[$target/$run] cmp called $ncmp times; $(q "$db" "SELECT count(*) || ' allocations, ' || sum(size) || ' bytes' FROM allocations")"
        continue
    fi
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
    if [ "$target" = armhf ]; then
        # The whole stack of each of the program's functions, with the stack's
        # truncated flag: main calls them (f_thread is a thread's start
        # function). The walk then takes main's return address into the C
        # library (__libc_start_call_main; in a dynamic program a frame of
        # libc.so.6, which the host cannot name) and stops: Debian's glibc is
        # Thumb-2 code, whose r11 is no frame pointer. A thread's walk ends
        # complete at start_thread.
        fr="coalesce(b.sym, '[' || replace(b.module, rtrim(b.module, replace(b.module, '/', '')), '') || ']')"
        base=__libc_start_call_main tbase=start_thread
        [ "$run" != static ] && base="[libc.so.6]" tbase="[libc.so.6]"
        eq "$db" "the program's stacks (frames:truncated)" \
            "SELECT group_concat(s, ' ') FROM (SELECT DISTINCT (SELECT group_concat(f, '<') FROM
             (SELECT $fr AS f FROM backtraces b WHERE b.id = a.bt ORDER BY b.frame_no)) || ':' || st.truncated AS s
             FROM (SELECT DISTINCT bt FROM $mine) a JOIN stacks st ON st.id = a.bt ORDER BY 1)" \
            "f_calloc<main<$base:1 f_leak<main<$base:1 f_malloc<main<$base:1 f_realloc<main<$base:1 f_strdup<main<$base:1 f_thread<$tbase:0"
        # The C library's own allocations (a static program's start-up, each
        # thread's TLS block) keep one frame, the glibc function that called
        # malloc: its Thumb-2 frame hides every caller.
        eq "$db" "depth of the C library's own stacks" \
            "SELECT group_concat(DISTINCT st.depth) FROM allocations a JOIN stacks st ON st.id = a.bt
             WHERE a.id NOT IN (SELECT id FROM $mine)" "1"
        if [ "$run" = static ]; then
            eq "$db" "the threads' TLS blocks (function:count)" \
                "SELECT b.sym || ':' || count(*) FROM allocations a JOIN backtraces b ON b.id = a.bt
                 AND b.frame_no = 0 AND b.sym = '_dl_allocate_tls'" "_dl_allocate_tls:2"
        fi
    fi
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
    if [ "$run" = cpuleaf ]; then
        # ARM: a leaf function saves only fp, so a sample in it has no record
        # to go on from: the leaf alone, truncated (not a stray frame above)
        samples=$(q "$db" "SELECT count(*) FROM cpu_samples")
        leaf=$(q "$db" "SELECT count(*) FROM cpu_samples c JOIN stacks st ON st.id = c.stack_id
               AND st.depth = 1 AND st.truncated = 1 JOIN backtraces b ON b.id = c.stack_id
               AND b.frame_no = 0 AND b.sym = 'f_leafspin'")
        echo "[$target/$run] cpu samples: $samples, f_leafspin alone: $leaf"
        if [ "$samples" -ge 10 ] && [ "$leaf" -ge $((samples * 8 / 10)) ]; then ok; else bad "cpu samples in a leaf"; fi
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
# hint to qemu). unit-runtime-fork runs with RHEAPER_PREFAULT=0 (no helper
# thread): Debian 12's qemu-aarch64 aborts on its own assertions
# (qemu_plugin_vcpu_init_hook, cpu_exec's cpu == current_cpu) in about one
# run of three when a child forked from a threaded process creates a thread,
# which the helper does at the child's first safe point; natively, and under
# qemu without the helper, the test passes every time. Then the quick start's
# example.c, whose own figures (blocks and
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
        pf=
        [ "$t" = fork ] && pf=0
        if (cd "$u" && env ${pf:+RHEAPER_PREFAULT=$pf} timeout 300 "$qemu" -L "$sysroot" "$exe" > "$exe.out" 2>&1); then
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
# AArch64: the live view and streaming, read by the host's tools
[ "$target" = aarch64 ] && . "$here/live_stream.sh"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
