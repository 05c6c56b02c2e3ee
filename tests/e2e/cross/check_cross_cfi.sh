# check_cross_cfi.sh: the CFI walk on a cross target, sourced by
# check_cross.sh (its variables and eq/ok/bad helpers) for the targets whose
# walk runs CFI. cross_cfi.c calls functions built without frame records
# (cross_cfi_nofp.c, compiled by the plain cross compiler the way Debian
# builds its C library); each allocation's whole caller chain, function and
# line, must be in the converted database, down to the C library's start code
# (complete on AArch64; truncated there on MIPS64, whose glibc has no CFI for
# it, and with musl, whose start code is assembly without it): dynamic, static
# and, on AArch64, with pointer authentication (-mbranch-protection=standard);
# AArch64 musl static. Then, on AArch64, the same program on a
# runtime built without CFI (RH_NO_UNWIND_CFI), whose stacks miss the callers
# of the functions without a record: what the CFI walk adds.
#
# Lines come from the marker comments (/* @name */) in the two sources. In a
# dynamic program the C library's frames are '?' (the host cannot open the
# target's libc.so.6); in a static one they are named.

cfi_line() { grep -n "/\* @$1 \*/" "$here/$2" | cut -d: -f1; }
L_n_alloc=$(cfi_line n_alloc cross_cfi_nofp.c) L_n_mid=$(cfi_line n_mid cross_cfi_nofp.c)
L_n_apply=$(cfi_line n_apply cross_cfi_nofp.c)
L_a_outer=$(cfi_line a_outer cross_cfi.c) L_b_cb=$(cfi_line b_cb cross_cfi.c)
L_b_outer=$(cfi_line b_outer cross_cfi.c) L_q_cmp=$(cfi_line q_cmp cross_cfi.c)
L_q_outer=$(cfi_line q_outer cross_cfi.c) L_t_start=$(cfi_line t_start cross_cfi.c)
L_main_a=$(cfi_line main:a cross_cfi.c) L_main_b=$(cfi_line main:b cross_cfi.c)
L_main_q=$(cfi_line main:q cross_cfi.c) L_main_s=$(cfi_line main:s cross_cfi.c)
L_s_handler=$(cfi_line s_handler cross_cfi.c) L_s_outer=$(cfi_line s_outer cross_cfi.c)

# cfi_chain DB SIZE FRAME0: "truncated|frames" of the allocation of SIZE
# bytes whose frame 0 is FRAME0, frames as sym:line ('?' unresolved)
cfi_chain() {
    q "$1" "SELECT (SELECT truncated FROM stacks s WHERE s.id = a.bt) || '|' ||
        (SELECT group_concat(f, ' ') FROM (SELECT coalesce(sym, '?') ||
          CASE WHEN line IS NULL THEN '' ELSE ':' || line END AS f
          FROM backtraces b WHERE b.id = a.bt ORDER BY frame_no))
        FROM allocations a JOIN backtraces b0 ON b0.id = a.bt AND b0.frame_no = 0
        AND b0.sym = '$3' WHERE a.size = $2"
}

cfi_eq() {
    if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

# cfi_run NAME CFLAGS [LIBDIR]: builds, runs and converts; sets db
cfi_run() {
    run=cfi-$1
    d=$work/$run
    mkdir -p "$d"
    db=
    # shellcheck disable=SC2086
    "$cc" -g -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -fno-inline $cfi_nofp_flags $2 \
        -c -o "$d/nofp.o" "$here/cross_cfi_nofp.c" > "$d/cc.log" 2>&1 &&
        env ${3:+RHEAPER_LIBDIR=$3} "$build/bin/rheaper-cc" -O2 -pthread $2 -o "$d/prog" \
            "$here/cross_cfi.c" "$d/nofp.o" >> "$d/cc.log" 2>&1 ||
        { bad "build"; cat "$d/cc.log"; return; }
    (cd "$d" && env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d" timeout 120 "$qemu" -L "$sysroot" ./prog \
        > prog.out 2> prog.err) || { bad "the program exited with $?"; cat "$d/prog.err"; return; }
    "$hostbin/rheaper-convert" --quiet "$d"/rip-* "$d/profile.db" 2> "$d/convert.err" ||
        { bad "rheaper-convert"; cat "$d/convert.err"; return; }
    db=$d/profile.db
}

for cfi in $cfi_runs; do
    flags=
    case $cfi in
    static) flags=-static ;;
    pac) flags=-mbranch-protection=standard ;;
    esac
    cfi_run "$cfi" "$flags"
    [ -n "$db" ] || continue
    # the base of the stacks: AArch64's glibc marks _start and thread_start
    # (clone's child) as outermost in its CFI; Debian's mips64el glibc has no
    # CFI for __start and start_thread, so the walk ends there truncated
    if [ "$target" = mips64el ]; then
        end=1 start_fn=__start thread_s=start_thread thread_d="?"
    else
        end=0 start_fn=_start thread_s="start_thread thread_start" thread_d="? ?"
    fi
    sig_any=0
    if [ "$target" = musl-aarch64 ]; then
        # musl (static): its start code and clone are assembly without CFI,
        # so stacks end, truncated, at the last C function with it; its qsort
        # is a smoothsort (sift). The signal trampoline's frame is named by
        # the byte before __restore_rt (frames are named by their call
        # instruction), which is the end of whatever function precedes it,
        # so that one frame is not compared.
        end=1 start="libc_start_main_stage2" thread="start __clone" qsort="sift qsort_r"
        raise="raise" sig_any=1
    elif [ "$cfi" = static ]; then
        start="__libc_start_call_main __libc_start_main $start_fn"
        thread=$thread_s qsort="msort_with_tmp.part.0"
        qsort="$qsort $qsort $qsort $qsort $qsort $qsort qsort_r"
        raise="__pthread_kill_implementation.constprop.0 raise"
    else
        start="? ? $start_fn" thread=$thread_d qsort="? ? ? ? ? ? ?" raise="? ?"
    fi
    # A signal handler's: the handler returns to qemu-user's trampoline (no
    # CFI, '?'); on AArch64 the walk goes on through the frame record qemu,
    # like the kernel, pushes with the signal frame: {the interrupted x29, x30},
    # so the next frame is the interrupted code's x30, here inside glibc's
    # __pthread_kill_implementation, which raise called. MIPS64: not crossed.
    if [ "$target" = mips64el ]; then
        sig="1|s_handler:$L_s_handler ?"
    elif [ "$sig_any" = 1 ]; then
        sig="$end|s_handler:$L_s_handler * $raise s_outer:$L_s_outer main:$L_main_s $start"
    else
        sig="0|s_handler:$L_s_handler ? $raise s_outer:$L_s_outer main:$L_main_s $start"
    fi
    # truncated|frames, innermost first
    cfi_eq "frame 0 without a record (40 bytes)" "$(cfi_chain "$db" 40 n_alloc)" \
        "$end|n_alloc:$L_n_alloc n_mid:$L_n_mid a_outer:$L_a_outer main:$L_main_a $start"
    cfi_eq "a callback through a frame without a record (48 bytes)" "$(cfi_chain "$db" 48 b_cb)" \
        "$end|b_cb:$L_b_cb n_apply:$L_n_apply b_outer:$L_b_outer main:$L_main_b $start"
    cfi_eq "a qsort comparator (24 bytes)" "$(cfi_chain "$db" 24 q_cmp)" \
        "$end|q_cmp:$L_q_cmp $qsort q_outer:$L_q_outer main:$L_main_q $start"
    cfi_eq "a thread's (56 bytes)" "$(cfi_chain "$db" 56 n_alloc)" \
        "$end|n_alloc:$L_n_alloc n_mid:$L_n_mid t_start:$L_t_start $thread"
    got=$(cfi_chain "$db" 72 s_handler)
    [ "$sig_any" = 1 ] && got=$(echo "$got" | awk '{ $2 = "*"; print }')
    cfi_eq "a signal handler's (72 bytes)" "$got" "$sig"
    echo "[$target/$run] $(cfi_chain "$db" 24 q_cmp)"
    echo "[$target/$run] $(cfi_chain "$db" 72 s_handler)"
done

# AArch64: the rules and steps of hand-written functions whose CFI is known
# exactly (tests/unit/runtime/test_unwind_aarch64.c), built as
# tests/unit/runtime/CMakeLists.txt builds its programs, under qemu
if [ "$target" = aarch64 ]; then
    run=unit-unwind
    u=$work/unit-unwind
    mkdir -p "$u"
    if "$cc" -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls \
        -fno-inline-small-functions -pthread -I "$src/runtime" -I "$src/tests/unit/runtime" \
        -I "$src/tests" -I "$build/gen" -o "$u/test" "$src/tests/unit/runtime/test_unwind_aarch64.c" \
        "$build/lib/librheaper_rt.a" -pthread > "$u/cc.log" 2>&1; then
        if (cd "$u" && timeout 120 "$qemu" -L "$sysroot" ./test > out.txt 2>&1); then
            ok
            echo "[$target/$run] test_unwind_aarch64: $(tail -n 1 "$u/out.txt")"
        else
            bad "test_unwind_aarch64"
            tail -n 20 "$u/out.txt"
        fi
    else
        bad "test_unwind_aarch64 does not build"
        cat "$u/cc.log"
    fi
fi

# The same program on a runtime without CFI: the frame-pointer walk alone.
# A function without a record hides its caller: n_alloc's stack jumps from
# n_alloc to main (n_mid and a_outer lost), b_cb's from n_apply to main.
if [ -n "$cfi_runs" ] && [ "$cfi_nofp_compare" = 1 ]; then
    nb=$work/build-nocfi
    if cmake -S "$src" -B "$nb" -DRHEAPER_TARGET_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchains/$triple.cmake" \
        -DCMAKE_C_FLAGS=-DRH_NO_UNWIND_CFI > "$work/build-nocfi.log" 2>&1 &&
        cmake --build "$nb" -j2 >> "$work/build-nocfi.log" 2>&1; then
        cfi_run nocfi "" "$nb/lib"
        if [ -n "$db" ]; then
            cfi_eq "without CFI: frame 0 without a record (40 bytes)" "$(cfi_chain "$db" 40 n_alloc)" \
                "0|n_alloc:$L_n_alloc main:$L_main_a ? ? _start"
            cfi_eq "without CFI: a callback (48 bytes)" "$(cfi_chain "$db" 48 b_cb)" \
                "0|b_cb:$L_b_cb n_apply:$L_n_apply main:$L_main_b ? ? _start"
            echo "[$target/$run] without CFI: $(cfi_chain "$db" 40 n_alloc)"
        fi
    else
        bad "the build of the runtime without CFI"
        tail -20 "$work/build-nocfi.log"
    fi
fi
