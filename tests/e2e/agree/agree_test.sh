#!/bin/sh
# agree_test.sh: rheaper's answers against the reference tools and the user's view.
#
#   agree_test.sh STEP BIN_DIR SRC_DIR WORK_DIR
#
# STEP is one ctest entry:
#   seq, turns  agree_prog.c's scripts (one thread with interleaved frees; two
#               threads in strict turns): four temporary counts must be equal:
#               the program's own (EXPECT), `rheaper summary`, heaptrack_print
#               on `rheaper export heaptrack`, and heaptrack_print on real
#               heaptrack's recording of the plain (non-rheaper) build
#   example     the same three tool counts on tests/example/example.c. Its two
#               worker threads are not forced into turns; when real heaptrack's
#               run and rheaper's run interleave them differently, the pair of
#               runs is repeated (at most 3 times). rheaper and its export, the
#               same recording, must always agree.
#   cli         what a user reads: summary shows the command line quoted as a
#               shell needs it (empty arguments as '', read back by the shell
#               into the same arguments); `rheaper query` builds `sel` for a
#               statement that reads it in any letter case, and not for one
#               that does not; the report is titled with the program's name;
#               converting the profile of a running program says it is still
#               being recorded and by which process, and no longer says so
#               once the program has ended
#   flamegraph  the SVG carries its labels as text: rsvg-convert renders it,
#               the frames of agree_prog's functions are labelled with their
#               names, every label fits its frame (7 px per character plus 6)
#               and is the name or its start followed by "..", in the
#               flamegraph and in the report's embedded copy
# Prints "FAIL: ..." lines and "N passed, N failed"; exits 1 on failure, 77 when
# a needed tool (heaptrack, heaptrack_print) is missing.
set -eu
step=$1 bin=$2 src=$3 work=$4
rheaper="$bin/rheaper"
pass=0 fail=0

fail() { fail=$((fail + 1)); echo "FAIL: $1"; }
ok() { pass=$((pass + 1)); echo "ok: $1"; }
check() { # check MESSAGE COMMAND...
    msg=$1; shift
    if "$@"; then ok "$msg"; else fail "$msg"; fi
}
eq() { [ -n "$1" ] && [ "$1" = "$2" ]; } # equal, and not empty
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}
. "$(dirname "$0")/../../lib/require.sh"
need() { require_tool "$1" "$2"; }   # need TOOL PACKAGE

dir="$work/$step"
rm -rf "$dir"
mkdir -p "$dir"
out="$dir/stdout" err="$dir/stderr"

# run CMD...: stdout in $out, stderr in $err; a failure is a FAIL line.
run() {
    rc=0; "$@" > "$out" 2> "$err" || rc=$?
    [ "$rc" -eq 0 ] || fail "$* exited $rc: $(tail -c 400 "$err")"
}

# ht_temporary FILE: heaptrack_print's "temporary memory allocations" count
ht_temporary() {
    heaptrack_print -f "$1" 2> /dev/null | awk '/^temporary memory allocations:/ { print $4 }'
}

# build PROG CFLAGS...: $dir/PROG (rheaper-cc) and $dir/PROG.plain (cc)
build() {
    _p=$1; shift
    run "$bin/rheaper-cc" "$@" -o "$dir/$_p" "$srcfile"
    run cc "$@" -o "$dir/$_p.plain" "$srcfile"
}

# rheaper_counts PROG ARGS...: records with rheaper in $dir/rh, converts, and
# sets rh_tmp (summary) and exp_tmp (heaptrack_print on the export); the
# program's stdout is left in $dir/prog.out
rheaper_counts() {
    _p=$1; shift
    rm -rf "$dir/rh"
    mkdir -p "$dir/rh"
    run env RHEAPER_ENABLE=1 RHEAPER_SCOPE="${scope:-process}" RHEAPER_PROFILE_DIR="$dir/rh" "$dir/$_p" "$@"
    cp "$out" "$dir/prog.out"
    run "$bin/rheaper-convert" "$(ls "$dir"/rh/rip-* | head -n 1)" "$dir/rh/p.db"
    run "$rheaper" summary "$dir/rh/p.db" --json
    rh_tmp=$(sed -n 's/.*"temporary_blocks": *\([0-9]*\).*/\1/p' "$out")
    run "$rheaper" export heaptrack "$dir/rh/p.db" -o "$dir/rh/export.txt"
    exp_tmp=$(ht_temporary "$dir/rh/export.txt")
}

# heaptrack_count PROG ARGS...: real heaptrack on the plain build; sets real_tmp
heaptrack_count() {
    _p=$1; shift
    rm -f "$dir"/real.*
    run heaptrack -o "$dir/real" "$dir/$_p.plain" "$@"
    real_tmp=$(ht_temporary "$(ls "$dir"/real.* | head -n 1)")
}

case $step in
seq | turns)
    need heaptrack heaptrack
    need heaptrack_print heaptrack
    srcfile="$src/agree_prog.c"
    build prog -O1 -g -pthread
    rheaper_counts prog "$step"
    want=$(awk '$1 == "EXPECT" && $2 == "temporary" { print $3 }' "$dir/prog.out")
    heaptrack_count prog "$step"
    echo "temporary: program $want, rheaper $rh_tmp, heaptrack_print on the export $exp_tmp, real heaptrack $real_tmp"
    check "$step: rheaper summary's temporary count is the program's ($rh_tmp, $want)" eq "$rh_tmp" "$want"
    check "$step: heaptrack_print on the export agrees ($exp_tmp)" eq "$exp_tmp" "$want"
    check "$step: real heaptrack agrees ($real_tmp)" eq "$real_tmp" "$want"
    [ "$want" -gt 0 ] 2> /dev/null || fail "$step: the script expects no temporary allocation"
    ;;
example)
    need heaptrack heaptrack
    need heaptrack_print heaptrack
    srcfile="$src/../../example/example.c"
    build example -O2 -pthread -g
    # Program scope, as the three counts were settled on. In the
    # default whole-process scope rheaper also records libc's own blocks and
    # its count of this unsynchronised two-thread program varies between runs
    # (1 or 2 against heaptrack's 3): an open point, noted in docs/sql.md.
    scope=program
    tries=0
    while :; do
        tries=$((tries + 1))
        rheaper_counts example
        heaptrack_count example
        echo "try $tries: temporary: rheaper $rh_tmp, heaptrack_print on the export $exp_tmp, real heaptrack $real_tmp"
        if eq "$rh_tmp" "$real_tmp" || [ "$tries" -ge 3 ]; then break; fi
    done
    check "example: heaptrack_print on the export agrees with rheaper ($exp_tmp, $rh_tmp)" eq "$exp_tmp" "$rh_tmp"
    check "example: real heaptrack agrees with rheaper ($real_tmp, $rh_tmp)" eq "$real_tmp" "$rh_tmp"
    ;;
cli)
    srcfile="$src/agree_prog.c"
    run "$bin/rheaper-cc" -O1 -g -pthread -o "$dir/agree-titled" "$srcfile"
    # quoting: arguments a shell must quote, empty ones among them
    mkdir -p "$dir/q"
    run env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$dir/q" "$dir/agree-titled" seq '' "it's" 'a b' \
        /srv/log/server.log ''
    run "$bin/rheaper-convert" "$(ls "$dir"/q/rip-* | head -n 1)" "$dir/q.db"
    run "$rheaper" summary "$dir/q.db"
    line=$(sed -n 's/^program  *//p' "$out")
    echo "summary's program line: $line"
    eval "set -- $line"
    check "summary: 7 arguments read back by the shell ($#)" [ "$#" -eq 7 ]
    check "summary: the empty arguments stay ('$3', '$7')" eq "x$3.$7" "x."
    check "summary: a quote and a space stay ('$4', '$5')" eq "$4|$5" "it's|a b"
    check "summary: the program comes first ($1)" eq "$1" "$dir/agree-titled"
    check "summary: empty arguments show as ''" eq "${line#*seq }" "'' 'it'\\''s' 'a b' /srv/log/server.log ''"

    # query: sel for a statement that reads it, in any letter case, and only then
    q() { run "$rheaper" query "$dir/q.db" "$1" --csv; tail -n 1 "$out"; }
    rows=$(q "SELECT count(*) FROM allocations")
    built="; select count(*) from temp.sqlite_master where name = 'sel_bt'"
    check "query: 'select count(*) from sel' reads every row ($rows)" eq "$(q "select count(*) from sel")" "$rows"
    check "query: 'SELECT COUNT(*) FROM SEL' too" eq "$(q "SELECT COUNT(*) FROM SEL")" "$rows"
    check "query: 'select 1' does not build sel" eq "$(q "select 1$built")" 0
    check "query: 'SELECT 1' does not build sel" eq "$(q "SELECT 1$built")" 0
    # Unfiltered, sel is a view of allocations (nothing to build); the answer
    # through it must be the table's, in any letter case.
    check "query: 'SeLeCt sum(size) FROM sel' reads it" \
        eq "$(q "SeLeCt sum(size) FROM sel")" "$(q "select sum(size) from allocations")"
    rc=0; "$rheaper" query "$dir/q.db" "delete from meta" > "$out" 2> "$err" || rc=$?
    check "query: a writing statement fails with a read-only message" \
        sh -c '[ "$1" -ne 0 ] && grep -q "read-only" "$2"' - "$rc" "$err"

    # report title: the program's name, not the last piece of its arguments
    run "$rheaper" report "$dir/q.db" -o "$dir/q.html"
    check "report: titled with the program's name" grep -qF "<title>rheaper report: agree-titled</title>" "$dir/q.html"
    check "report: heading too" grep -qF "<h1>rheaper report: agree-titled</h1>" "$dir/q.html"

    # still recording: a running program's profile, then the same one after it ended
    mkdir -p "$dir/live"
    rm -f "$dir/fifo"
    mkfifo "$dir/fifo"
    env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$dir/live" "$dir/agree-titled" wait \
        < "$dir/fifo" > "$dir/live.out" 2>&1 &
    pid=$!
    exec 3> "$dir/fifo"
    i=0
    while ! grep -q READY "$dir/live.out" && [ "$i" -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    rip="$dir/live/rip-$pid"
    rc=0; "$bin/rheaper-convert" "$rip" "$dir/live1.db" > "$out" 2> "$err" || rc=$?
    cat "$err"
    check "convert while running: succeeds" [ "$rc" -eq 0 ]
    check "convert while running: says still being recorded by process $pid" \
        grep -q "still being recorded by process $pid" "$err"
    rc=0; "$rheaper" convert "$rip" "$dir/live2.db" > "$out" 2> "$err" || rc=$?
    check "rheaper convert while running: says so too" grep -q "still being recorded by process $pid" "$err"
    exec 3>&-
    wait "$pid" || fail "the waiting program failed"
    rc=0; "$bin/rheaper-convert" "$rip" "$dir/live3.db" --force > "$out" 2> "$err" || rc=$?
    cat "$err"
    check "convert after the end: no longer says still being recorded" sh -c '! grep -q "still being recorded" "$1"' - "$err"
    ;;
flamegraph)
    need rsvg-convert librsvg2-bin
    srcfile="$src/agree_prog.c"
    run "$bin/rheaper-cc" -O1 -g -pthread -o "$dir/prog" "$srcfile"
    # program scope: the frame widths planned below are the program's own sites
    run env RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$dir" "$dir/prog" seq
    run "$bin/rheaper-convert" "$(ls "$dir"/rip-* | head -n 1)" "$dir/p.db"
    run "$rheaper" flamegraph "$dir/p.db" -o "$dir/f.svg"
    run "$rheaper" report "$dir/p.db" -o "$dir/r.html"
    run rsvg-convert "$dir/f.svg" -o "$dir/f.png"
    check "rsvg-convert renders the flamegraph" [ -s "$dir/f.png" ]
    # frames: "NAME<TAB>WIDTH<TAB>LABEL", one per <g class="fg-n"> line
    frames() {
        sed -n 's/.*<g class="fg-n"[^>]* data-n="\([^"]*\)">.*<rect [^>]*width="\([0-9.]*\)".*<text [^>]*>\([^<]*\)<\/text><\/g>.*/\1	\2	\3/p' "$1"
    }
    for f in f.svg r.html; do
        frames "$dir/$f" > "$dir/$f.frames"
        long=site3_reallocates_a_block_under_a_name_longer_than_its_frame
        check "$f: the frame $long is labelled with its start and '..'" \
            awk -F '\t' -v fn="$long" '$1 == fn && $3 ~ /^site3_.*[.][.]$/ && length($3) < length(fn) { found = 1 } END { exit !found }' "$dir/$f.frames"
        for fn in main perform site0 site1 site2; do
            check "$f: the frame $fn is labelled $fn" \
                awk -F '	' -v fn="$fn" '$1 == fn && $3 == fn { found = 1 } END { exit !found }' "$dir/$f.frames"
        done
        check "$f: every label fits its frame and is its name or the name's start and '..'" awk -F '	' '
            { n++; if (length($3) * 7 + 6 > $2 + 0.5 + 1e-9 && $3 != "") { print "too wide: " $0; bad = 1 }
              if ($3 != $1 && $3 != "" && !(substr($3, length($3) - 1) == ".." && index($1, substr($3, 1, length($3) - 2)) == 1)) { print "not its name: " $0; bad = 1 } }
            END { exit bad || n < 6 }' "$dir/$f.frames"
    done
    ;;
*)
    echo "unknown step $step" >&2
    exit 2
    ;;
esac
finish
