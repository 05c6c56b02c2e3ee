#!/bin/sh
# run_consumer.sh: the consumer tests (tests/e2e/consumer/CMakeLists.txt).
#
#   sh run_consumer.sh MODE BUILD_DIR SOURCE_DIR WORK_DIR LIBDIR GENERATOR
#
# MODE toolchain: installs BUILD_DIR into WORK_DIR/p1, moves it to WORK_DIR/p2,
#   builds tests/e2e/consumer/project with p2's toolchain file and find_package, runs
#   it, converts its profile with p2's rheaper-convert and checks with sqlite3
#   that the allocation rows are exactly the blocks the program reports.
# MODE runtime: the same, but the project uses the plain compiler and links
#   rheaper::runtime (no toolchain file).
# MODE example: builds tests/example/example.c with BUILD_DIR/bin/rheaper-cc (as
#   the quick start does), runs it with RHEAPER_ENABLE=1 and checks the rows
#   against the totals it prints.
# Prints "consumer-MODE: FAIL: <why>" and exits 1 on the first problem; every
# step that runs a program is bounded by `timeout`, so nothing hangs.
set -eu

[ $# -eq 6 ] || { echo "usage: $0 MODE BUILD_DIR SOURCE_DIR WORK_DIR LIBDIR GENERATOR" >&2; exit 2; }
mode=$1 build=$2 src=$3 work=$4 libdir=$5 generator=$6

fail() { echo "consumer-$mode: FAIL: $*" >&2; exit 1; }
step() { echo "consumer-$mode: $*"; }

# check_eq WHAT GOT WANT
check_eq() {
    if [ "$2" = "$3" ]; then
        step "ok: $1 = $2"
    else
        fail "$1: profile says '$2', the program made '$3'"
    fi
}

command -v sqlite3 >/dev/null 2>&1 || fail "the sqlite3 command-line tool is missing (apt-get install -y sqlite3)"
unset RHEAPER_ENABLE RHEAPER_PROFILE_DIR RHEAPER_MAX_STACK_DEPTH RHEAPER_MAX_TRACKERS \
    RHEAPER_BUFFER_SIZE 2>/dev/null || true
rm -rf "$work"
mkdir -p "$work/run"

# run_and_convert CONVERT PROGRAM...: runs PROGRAM in $work/run, converts the one
# rip file it leaves there into $work/profile.db; its stdout goes to $work/out.
run_and_convert() {
    convert=$1
    shift
    step "running $*"
    (cd "$work/run" && timeout 60 "$@") >"$work/out" 2>"$work/err" ||
        { rc=$?; cat "$work/out" "$work/err" >&2; fail "$* exited with status $rc"; }
    cat "$work/out" "$work/err"
    set -- "$work"/run/rip-*
    [ -f "$1" ] || fail "no rip-* profile was written in $work/run"
    [ $# -eq 1 ] || fail "expected one profile, found: $*"
    step "converting $1"
    timeout 120 "$convert" "$1" "$work/profile.db" ||
        fail "$convert $1 $work/profile.db failed with status $?"
}

# q SQL: one value from the converted profile.
q() { sqlite3 "$work/profile.db" "$1" || fail "query failed: $1"; }

if [ "$mode" = example ]; then
    for tool in rheaper-cc rheaper-convert; do
        [ -x "$build/bin/$tool" ] || fail "$build/bin/$tool is missing (did the build finish?)"
    done
    step "compiling tests/example/example.c with rheaper-cc"
    timeout 120 "$build/bin/rheaper-cc" -O2 -pthread -o "$work/example" "$src/tests/example/example.c" ||
        fail "rheaper-cc could not build the example"
    RHEAPER_ENABLE=1
    RHEAPER_SCOPE=program # the example counts its own blocks, not libc's
    export RHEAPER_ENABLE RHEAPER_SCOPE
    run_and_convert "$build/bin/rheaper-convert" "$work/example"
    unset RHEAPER_ENABLE RHEAPER_SCOPE
    # "example: allocated N blocks, B bytes; never freed: K blocks, L bytes"
    # shellcheck disable=SC2046 # the four numbers become $1..$4
    set -- $(sed -n 's/^example: allocated \([0-9]*\) blocks, \([0-9]*\) bytes; never freed: \([0-9]*\) blocks, \([0-9]*\) bytes$/\1 \2 \3 \4/p' "$work/out")
    [ $# -eq 4 ] || fail "the example did not print its totals"
    check_eq "allocation rows" "$(q 'SELECT count(*) FROM allocations')" "$1"
    check_eq "bytes allocated" "$(q 'SELECT sum(size) FROM allocations')" "$2"
    check_eq "rows never freed" "$(q 'SELECT count(*) FROM allocations WHERE dealloc_after IS NULL')" "$3"
    check_eq "bytes never freed" \
        "$(q 'SELECT coalesce(sum(size), 0) FROM allocations WHERE dealloc_after IS NULL')" "$4"
    check_eq "rows in the leaks view" "$(q 'SELECT count(*) FROM leaks')" "$3"
    check_eq "threads that allocated" "$(q 'SELECT count(DISTINCT alloc_thread) FROM allocations')" 3
    check_eq "rows whose frame 0 is in example.c" "$(q "SELECT count(*) FROM allocations a
        JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 WHERE b.file LIKE '%example.c'")" "$1"
    step "PASS"
    exit 0
fi

case "$mode" in
toolchain | runtime) ;;
*) fail "unknown mode '$mode' (toolchain, runtime or example)" ;;
esac

step "installing $build into $work/p1"
cmake --install "$build" --prefix "$work/p1" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "cmake --install $build failed"; }
mv "$work/p1" "$work/p2"
p2=$work/p2
step "moved the prefix to $p2"
cfgdir=$p2/$libdir/cmake/rheaper
for f in bin/rheaper-cc bin/rheaper-c++ bin/rheaper-convert include/rheaper.h \
    "$libdir/cmake/rheaper/rheaperConfig.cmake" "$libdir/cmake/rheaper/rheaper-toolchain.cmake" \
    "$libdir/rheaper/rheaper_wrap.flags"; do
    [ -e "$p2/$f" ] || fail "the installed tree has no $f"
done
if grep -rlF "$work/p1" "$p2" >"$work/baked" 2>/dev/null; then
    fail "installed files name the original prefix $work/p1: $(tr '\n' ' ' <"$work/baked")"
fi

if [ "$mode" = toolchain ]; then
    set -- "-DCMAKE_TOOLCHAIN_FILE=$cfgdir/rheaper-toolchain.cmake"
    want_cc=$p2/bin/rheaper-cc
else
    set -- -DRHEAPER_CONSUMER_MODE=runtime
    want_cc=""
fi
step "configuring tests/e2e/consumer/project ($mode)"
timeout 120 cmake -S "$src/tests/e2e/consumer/project" -B "$work/build" -G "$generator" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_PREFIX_PATH=$p2" "$@" >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log" >&2; fail "configuring the consumer project failed"; }
cat "$work/configure.log"
got_cc=$(sed -n 's/^-- consumer: C compiler //p' "$work/configure.log")
if [ -n "$want_cc" ]; then
    check_eq "C compiler" "$got_cc" "$want_cc"
else
    case "$got_cc" in *rheaper*) fail "runtime mode must use the plain compiler, got $got_cc" ;; esac
fi
check_eq "RHEAPER_CONVERT" "$(sed -n 's/^-- consumer: RHEAPER_CONVERT //p' "$work/configure.log")" \
    "$p2/bin/rheaper-convert"
timeout 300 cmake --build "$work/build" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; fail "building the consumer project failed"; }

run_and_convert "$p2/bin/rheaper-convert" "$work/build/consumer"
# shellcheck disable=SC2046 # the three numbers become $1..$3
set -- $(sed -n 's/^consumer: blocks \([0-9]*\) bytes \([0-9]*\) freed \([0-9]*\)$/\1 \2 \3/p' "$work/out")
[ $# -eq 3 ] || fail "the consumer did not print its totals"
path=$(sed -n 's/^consumer: profile //p' "$work/out")
case "$path" in *rip-*) ;; *) fail "rheaper_profile_path() gave '$path'" ;; esac
check_eq "allocation rows" "$(q 'SELECT count(*) FROM allocations')" "$1"
check_eq "bytes allocated" "$(q 'SELECT sum(size) FROM allocations')" "$2"
check_eq "rows freed" "$(q 'SELECT count(*) FROM allocations WHERE dealloc_after IS NOT NULL')" "$3"
check_eq "rows whose frame 0 is main() in main.c" "$(q "SELECT count(*) FROM allocations a
    JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0
    WHERE b.file LIKE '%main.c' AND b.sym = 'main'")" "$1"
step "PASS"
