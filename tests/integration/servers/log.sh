#!/bin/sh
# log.sh: where the runtime's own lines go (RHEAPER_LOG; docs/servers.md
# "Logs"). log_prog.c makes three warnings of one cause, one of another, and
# one "wrote" notice.
#
#   log.sh BIN_DIR SRC_DIR WORK_DIR
#
# Checks, each against the exact lines expected:
#   default, stderr a file:     the two warnings once each, no notice
#   default, stderr a terminal: the same plus the notice (run under script(1))
#   RHEAPER_LOG=stderr:         the two warnings once each and the notice
#   RHEAPER_LOG=off:            nothing
#   RHEAPER_LOG=DIR/%e-%p.log:  nothing on stderr; all three lines in that file
#   the same as root switching to nobody (when root): the file follows the
#                               drop, belongs to nobody, mode 0600
set -eu
bin=$1 src=$2 work=$3
CASE= RH_DUMP=
. "$src/../../lib/check.sh" # fail, ok, eq
rm -rf "$work" && mkdir -p "$work"
cd "$work"
RHEAPER_CC=gcc "$bin/rheaper-cc" -O2 -g -I"$src/../../../runtime" -o log_prog "$src/log_prog.c" \
    2> build.err || { cat build.err; fail "rheaper-cc build"; }
mkdir -p prof

# expect FILE A B N: FILE has A lines of cause one, B of cause two, N notices
expect() {
    a=$(grep -c '^rheaper: cannot use profile directory /nonexistent' "$1" || true)
    b=$(grep -c '^rheaper: profile directory name empty' "$1" || true)
    n=$(grep -c '^rheaper: wrote .*/rip-[0-9]* (' "$1" || true)
    all=$(grep -c 'rheaper' "$1" || true)
    [ "$a $b $n" = "$2 $3 $4" ] && [ "$all" = $(($2 + $3 + $4)) ] ||
        { cat "$1"; fail "$5: $a $b $n lines (cause one, cause two, notices), expected $2 $3 $4"; }
    echo "ok: $5"
}
rc_ok() { grep -qx 'rc -2 -2 -2 -2 0' out || fail "$1: results $(cat out)"; }

./log_prog "$work/prof" > out 2> err.default
rc_ok default
expect err.default 1 1 0 "default, stderr a file: warnings once per cause, no notice"

script -qec "./log_prog '$work/prof' 2> /dev/tty" /dev/null > tty.out 2>&1 || true
tr -d '\r' < tty.out > err.tty
expect err.tty 1 1 1 "default, stderr a terminal: the notice too"

RHEAPER_LOG=stderr ./log_prog "$work/prof" > out 2> err.stderr
expect err.stderr 1 1 1 "RHEAPER_LOG=stderr"

RHEAPER_LOG=off ./log_prog "$work/prof" > out 2> err.off
rc_ok off
expect err.off 0 0 0 "RHEAPER_LOG=off"

mkdir -p logs
RHEAPER_LOG="$work/logs/%e-%p.log" ./log_prog "$work/prof" > out 2> err.file
rc_ok file
expect err.file 0 0 0 "RHEAPER_LOG=FILE: nothing on stderr"
set -- logs/log_prog-*.log
[ $# = 1 ] && [ -f "$1" ] || fail "expected one log file, found: $*"
expect "$1" 1 1 1 "RHEAPER_LOG=FILE: the lines in $1"

if [ "$(id -u)" = 0 ]; then
    # the drop: a root-owned 0755 directory that nobody cannot write
    d=$(mktemp -d /tmp/rh-log.XXXXXX)
    trap 'rm -rf "$d"' EXIT
    mkdir "$d/prof" "$d/logs"
    chown nobody "$d/prof"
    chmod 0755 "$d" "$d/prof" "$d/logs"
    RHEAPER_LOG="$d/logs/%e-%p.log" ./log_prog "$d/prof" "$(id -u nobody)" > out 2> err.drop
    rc_ok drop
    expect err.drop 0 0 0 "after a drop: nothing on stderr"
    set -- "$d"/logs/*.log
    expect "$1" 1 1 1 "after a drop: the lines before and after it in $1"
    got=$(stat -c '%U %a' "$1")
    [ "$got" = "nobody 600" ] || fail "the log file is '$got', not 'nobody 600'"
    echo "ok: the log file followed the drop ($got)"
elif [ -n "${CI:-}" ]; then
    fail "must run as root under CI (the drop case)"
fi
echo PASS
