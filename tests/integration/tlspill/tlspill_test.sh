#!/bin/sh
# tlspill_test.sh: the timeline's temp file when its writes fail.
#
#   tlspill_test.sh BIN TESTS WORK FAILWRITE_SO
#
# golden.rip (tests/golden) is converted once as the reference. Then, with
# failwrite.so preloaded (fwrite fails with ENOSPC on the files whose path
# holds $RH_FAILWRITE):
#   1. matching nothing, the conversion equals the reference (the shim alone
#      changes nothing);
#   2. matching the timeline's temp file, rheaper-convert exits 1 with one
#      line naming it and the error, leaves no database and no other file,
#      and the file it failed on was beside the database and unlinked;
#   3. the same with --force over an existing database leaves it as it was;
#   4. matching the row index's temp file (rh_postings.c, the same helper):
#      one line naming stack_rows;
#   5. a filtered `rheaper timeline` whose temp file (in $TMPDIR) cannot be
#      written, or cannot be made, says so in one line and draws the same
#      chart as when it can, from the rows.
set -eu
BIN=$1 TESTS=$2 W=$3 SO=$4
rm -rf "$W"
mkdir -p "$W/conv" "$W/tmp"
CASE= RH_DUMP=
. "$TESTS/lib/check.sh" # ok, bad, expect, checks_done
conv() { "$BIN/rheaper-convert" --quiet --search "$TESTS/golden" "$@"; }
# same A B TABLE: the table's rows are the same in both databases
same() {
    d=$(sqlite3 "$1" "ATTACH '$2' AS o; SELECT (SELECT count(*) FROM (SELECT * FROM main.$3
        EXCEPT SELECT * FROM o.$3)) + (SELECT count(*) FROM (SELECT * FROM o.$3
        EXCEPT SELECT * FROM main.$3))")
    expect "$3 rows differing between $(basename "$1") and $(basename "$2")" "$d" 0
}
rip="$TESTS/golden/golden.rip"
conv "$rip" "$W/ref.db"
n=$(sqlite3 "$W/ref.db" "SELECT count(*) FROM timeline_stacks")
[ "$n" -gt 0 ] && ok || bad "the reference has no timeline_stacks rows"

# 1. the shim loaded, failing nothing
LD_PRELOAD=$SO RH_FAILWRITE=no-such-file conv "$rip" "$W/conv/ok.db" 2> "$W/ok.err" && rc=0 || rc=$?
expect "exit status with the shim failing nothing" "$rc" 0
for t in timeline_stacks timeline stack_stats leak_curve; do
    same "$W/ref.db" "$W/conv/ok.db" $t
done
rm -f "$W/conv/ok.db"

# 2. the timeline's temp file: every write fails
LD_PRELOAD=$SO RH_FAILWRITE=.db.tl. RH_FAILWRITE_LOG="$W/tl.log" conv "$rip" "$W/conv/out.db" \
    2> "$W/tl.err" && rc=0 || rc=$?
expect "exit status when the timeline's temp file fails" "$rc" 1
expect "its error" "$(cat "$W/tl.err")" \
    "rheaper-convert: timeline_stacks: cannot write its temp file (No space left on device)"
expect "files left in the output directory" "$(ls -A "$W/conv" | tr '\n' ' ')" ""
first=$(head -n 1 "$W/tl.log" 2>/dev/null || true)
case "$first" in
"$W/conv/out.db.tl."??????" (deleted)") ok ;;
*) bad "the failing file was '$first', expected $W/conv/out.db.tl.XXXXXX, unlinked" ;;
esac

# 3. with --force over an existing database: it stays as it was
cp "$W/ref.db" "$W/conv/keep.db"
LD_PRELOAD=$SO RH_FAILWRITE=.db.tl. conv --force "$rip" "$W/conv/keep.db" 2> "$W/keep.err" &&
    rc=0 || rc=$?
expect "exit status with --force" "$rc" 1
cmp -s "$W/ref.db" "$W/conv/keep.db" && ok || bad "--force: the existing database changed"
expect "files left with --force" "$(ls -A "$W/conv" | tr '\n' ' ')" "keep.db "
rm -f "$W/conv/keep.db"

# 4. the row index's temp file
LD_PRELOAD=$SO RH_FAILWRITE=.db.rows. conv "$rip" "$W/conv/rows.db" 2> "$W/rows.err" && rc=0 ||
    rc=$?
expect "exit status when the row index's temp file fails" "$rc" 1
expect "its error" "$(cat "$W/rows.err")" \
    "rheaper-convert: stack_rows: cannot write its temp file (No space left on device)"
expect "files left after it" "$(ls -A "$W/conv" | tr '\n' ' ')" ""

# 5. the rheaper command's filtered pass (--min-size 1 keeps every row)
export RHEAPER_QUIET_NOTICES=1
TMPDIR="$W/tmp" "$BIN/rheaper" timeline "$W/ref.db" --min-size 1 -o "$W/a.svg" 2> "$W/a.err" &&
    rc=0 || rc=$?
expect "filtered timeline exit status" "$rc" 0
expect "its messages" "$(cat "$W/a.err")" ""
LD_PRELOAD=$SO RH_FAILWRITE=/rheaper-tl. RH_FAILWRITE_LOG="$W/cli.log" TMPDIR="$W/tmp" \
    "$BIN/rheaper" timeline "$W/ref.db" --min-size 1 -o "$W/b.svg" 2> "$W/b.err" && rc=0 || rc=$?
expect "filtered timeline exit status, temp file failing" "$rc" 0
expect "its message" "$(cat "$W/b.err")" "rheaper: filter: cannot write a temp file in $W/tmp (No space \
left on device); the timeline is replayed from the rows"
cmp -s "$W/a.svg" "$W/b.svg" && ok || bad "the chart differs when the temp file fails"
first=$(head -n 1 "$W/cli.log" 2>/dev/null || true)
case "$first" in
"$W/tmp/rheaper-tl."??????" (deleted)") ok ;;
*) bad "the filtered pass's file was '$first', expected $W/tmp/rheaper-tl.XXXXXX, unlinked" ;;
esac
TMPDIR="$W/none" "$BIN/rheaper" timeline "$W/ref.db" --min-size 1 -o "$W/c.svg" 2> "$W/c.err" &&
    rc=0 || rc=$?
expect "filtered timeline exit status, no temp directory" "$rc" 0
expect "its message" "$(cat "$W/c.err")" "rheaper: filter: cannot make a temp file in $W/none (No such \
file or directory); the timeline is replayed from the rows"
cmp -s "$W/a.svg" "$W/c.svg" && ok || bad "the chart differs without a temp directory"
expect "temp files left in TMPDIR" "$(ls -A "$W/tmp" | tr '\n' ' ')" ""

checks_done
