#!/bin/sh
# run.sh: one reliability test case: runs a helper program built with
# rheaper-cc under RHEAPER_ENABLE=1, breaks something around it, converts what
# it wrote and checks the facts the program stated about itself (EXPECT lines,
# as in tests/e2e/programs/check.sh) plus the case's own checks on exit status, stderr
# and files.
#
#   run.sh BIN_DIR HELPER_DIR WORK_DIR CASE
#
# Prints "N passed, N failed" and exits 1 on a failure, 77 when the case cannot
# run here (it says why), 0 otherwise.
set -eu
bin=$1 helpers=$2 w=$3 case=$4

# a tmpfs left mounted by an interrupted full-disk run
if [ -d "$w/prof" ] && command -v mountpoint > /dev/null && mountpoint -q "$w/prof"; then
    umount "$w/prof" || true
fi
rm -rf "$w" && mkdir -p "$w/prof"
w=$(cd "$w" && pwd)
prof=$w/prof
cd "$w"
export RH_EXPECT_FILE="$w/expect.txt"
: > "$RH_EXPECT_FILE"
unset RHEAPER_ENABLE RHEAPER_PROFILE_DIR RHEAPER_MAX_STACK_DEPTH RHEAPER_MAX_TRACKERS \
    RHEAPER_BUFFER_SIZE 2>/dev/null || true

CASE= RH_DUMP=
. "$(dirname "$0")/../../lib/check.sh" # ok, bad, expect, checks_done
# yes WHAT COMMAND...: the command must succeed
yes_() { w_=$1; shift; if "$@"; then ok; else bad "$w_"; fi; }
skip() { echo "SKIP: $*"; exit 77; }
finish() {
    checks_done || { echo "--- stderr of the last run:"; cat "$w/err" 2>/dev/null || true; exit 1; }
    exit 0
}

# prog [ENV=VALUE...] HELPER ARGS...: runs a helper with tracking on into $prof;
# sets rc, out and err files.
prog() {
    set +e
    env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$prof" "$@" > "$w/out" 2> "$w/err"
    rc=$?
    set -e
}
# Number of lines the runtime printed.
rh_lines() { grep -c '^rheaper: ' "$w/err" || true; }
rips() { (cd "$prof" && ls rip-* 2>/dev/null | grep -v '\.db$' || true); }
nrips() { rips | wc -l | tr -d ' '; }

# convert_all [--loud]: converts every profile; each must exit 0. With --loud
# the converter's stderr is kept in $w/conv.err (one profile expected).
convert_all() {
    : > "$w/conv.err"
    for r in $(rips); do
        set +e
        if [ "${1:-}" = --loud ]; then
            "$bin/rheaper-convert" "$prof/$r" "$prof/$r.db" 2>> "$w/conv.err"
        else
            "$bin/rheaper-convert" --quiet "$prof/$r" "$prof/$r.db" 2>> "$w/conv.err"
        fi
        crc=$?
        set -e
        expect "rheaper-convert $r exit status" "$crc" 0
    done
}

# sql DB SQL: one value from a converted profile.
sql() { sqlite3 "$1" "$2" 2>&1 || true; }

# check_expect: every EXPECT line the program wrote (read by tests/e2e/programs/expect.sh),
# against the only profile or the one named by a leading "@rip-NAME ".
expect_one() { n=$((n + 1)); expect "$3" "$(sql "$2" "$3")" "$1"; }   # VALUE DB SQL
check_expect() {
    n=0
    expect_each "$RH_EXPECT_FILE" "$prof" "$prof/$(rips | head -n 1).db" expect_one
    [ "$n" -gt 0 ] || bad "the program stated no expectations"
}

# meta DB KEY
meta() { sql "$1" "SELECT value FROM meta WHERE key = '$2'"; }

. "$(dirname "$0")/../../e2e/programs/expect.sh"
. "$(dirname "$0")/cases.sh"

case_fn=$(echo "case_$case" | tr - _)
command -v "$case_fn" > /dev/null 2>&1 || { echo "FAIL: no case $case"; exit 1; }
"$case_fn"
finish
