#!/bin/sh
# attacks.sh: an unprivileged local user (nobody, through setpriv) attacks a
# root program built with rheaper-cc, and the tools root runs on it (record,
# live), through the files of the profile directory. docs/security.md says
# what each case defends.
#
#   attacks.sh BIN_DIR SRC_DIR WORK_DIR CASE
#
# The directory is root's and 1777 (standing for /tmp), or, for swap, the
# layout docs/servers.md recommends for a server that drops privileges: owned
# by the worker user (nobody), 0755. The program (sec_prog.c) does nothing
# before its first command, so the attacker, who knows its pid, prepares the
# directory first. Cases:
#   marker    a directory at the temporary marker name and a FIFO at the
#             marker's before the program arms
#   swap      the worker user swaps the root program's marker for a FIFO (and
#             blocks the temporary name) at each toggle, then for a marker of
#             its own (signal 9) that record must refuse, then for one that
#             sends live to a FIFO
#   rate      a FIFO, then a forged rate (10000) at rheaper-PID.cpu-hz; then
#             root's own --cpu-hz over a planted FIFO
#   forged    markers for processes that were never armed: start 0 and signal
#             9; the right start time for a program not built with rheaper-cc;
#             a root-owned stale marker for a program whose environment a title
#             overwrote (signal 10, which it does not catch); and the armed
#             program with an overwritten environment, which record must still
#             record
#   log       RHEAPER_LOG at a FIFO (no reader, then a reader), a file nobody
#             made, a symlink to a root file, nobody's hard link; and unplanted
#   hardlink  hard links to a root-only file at the log's, the profile's and
#             the marker's names (made by root: protected_hardlinks=1 on this
#             host keeps nobody from linking root's files), then a privilege
#             drop to nobody
#   rootdir   servers.md's root-owned 0755 directory: a recording across a
#             privilege drop, the marker rewritten in place (only its own inode)
# Every step is bounded (the program must answer each command within 10 s,
# every tool runs under timeout). The checks: nothing hangs, nothing is
# signalled (alive, not stopped), chowned, appended to or read that should not
# be, and each profile converts clean with exactly the rows the program made.
# Needs root; skips (77) otherwise.
set -u
bin=$1 src=$2 work=$3 CASE=$4
RH_DUMP="$work/err $work/out $work/rec.err"
. "$src/../../lib/check.sh"   # fail, ok, eq
. "$src/../../lib/require.sh" # require_tool
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: not root (the attacks are on a root program)"
    exit 77
fi
require_tool setpriv util-linux
require_tool timeout coreutils
require_tool sqlite3 sqlite3
nuid=$(id -u nobody) || fail "no user nobody"
ngid=$(getent group nogroup | cut -d: -f3)
[ -n "$ngid" ] || ngid=$(id -g nobody)
RH=$bin/rheaper
SIG=$(($(kill -l RTMAX 2>/dev/null || echo 64) - 5))

rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
RHEAPER_CC=gcc "$bin/rheaper-cc" -O1 -g -I"$src/../../../runtime" -o prog "$src/sec_prog.c" \
    2> build.err || { cat build.err; fail "rheaper-cc build"; }
chmod 0755 "$work" prog

# Directories: D the attacked one, R root's own (0700) for files nobody may
# touch. Removed on every exit; every process started here is stopped by pid.
D=$(mktemp -d /tmp/rh-sec.XXXXXX) && R=$(mktemp -d /tmp/rh-sec-root.XXXXXX) || fail "mktemp"
chmod 1777 "$D" && chmod 0700 "$R"
SPID= OTHER=
cleanup() {
    for p in $SPID $OTHER; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$D" "$R"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# worker_dir: D becomes servers.md's layout (the worker user's, 0755)
worker_dir() { chown "$nuid:$ngid" "$D" && chmod 0755 "$D"; }

# as_nobody CMD...: runs a shell command as nobody:nogroup, no groups, in /
as_nobody() {
    (cd / && timeout 10 setpriv --reuid="$nuid" --regid="$ngid" --clear-groups -- sh -c "$1") ||
        fail "the attacker's step failed: $1"
}

# wait_for FILE REGEX SECONDS WHAT: polls until FILE has a matching line
wait_for() {
    _n=0 _max=$(($3 * 50))
    while ! grep -q "$2" "$1" 2>/dev/null; do
        _n=$((_n + 1))
        [ $_n -gt $_max ] && fail "$4 (nothing matching '$2' in $1 after $3 s)"
        sleep 0.02
    done
}

# start_prog DIR VAR=VALUE...: the root program, working directory DIR,
# commands through a FIFO on fd 3; SPID its pid
start_prog() {
    _dir=$1
    shift
    rm -f in out err && mkfifo in && : > out
    (cd "$_dir" && exec env "$@" "$work/prog" "$nuid" "$ngid" < "$work/in" > "$work/out" \
        2> "$work/err") &
    SPID=$!
    exec 3> in
    NCMD=0
}

# cmd C...: sends each command and waits (10 s) for the program's answer
cmd() {
    for _c in "$@"; do
        NCMD=$((NCMD + 1))
        printf '%s' "$_c" >&3
        wait_for out "^ok $_c $NCMD\$" 10 "the program hung: no answer to '$_c'"
    done
}

# alive: the program runs and is not stopped (no signal reached it)
alive() {
    kill -0 "$SPID" 2>/dev/null || fail "the program is gone: $1"
    _st=$(sed 's/.*) //' "/proc/$SPID/stat" | cut -d' ' -f1)
    case $_st in T | t) fail "the program is stopped: $1" ;; esac
    ok "the program runs (state $_st): $1"
}

# finish ON OFF: quit, within 10 s, with exit status 0 and these batch counts
finish() {
    printf q >&3
    exec 3>&-
    _n=0
    while kill -0 "$SPID" 2>/dev/null; do
        _n=$((_n + 1))
        [ $_n -gt 500 ] && fail "the program hung at exit"
        sleep 0.02
    done
    wait "$SPID"
    _rc=$?
    SPID=
    [ "$_rc" = 0 ] || fail "the program exited $_rc"
    eq "the program's batches" "$(tail -n 1 out)" "batches on $1 off $2 mixed 0"
}

# rows DB: blocks of the program's batch size in DB
rows() { sqlite3 "$1" "select count(*) from allocations where size = 4242"; }
meta() { sqlite3 "$1" "select value from meta where key = '$2'"; }

# check_rip RIP OWNER N: RIP belongs to OWNER, 0600, converts clean, N batches
check_rip() {
    eq "owner and mode of $(basename "$1")" "$(stat -c '%U %a' "$1")" "$2 600"
    timeout 60 "$RH" convert --quiet "$1" "$work/check.db" > conv.err 2>&1 ||
        { cat conv.err; fail "conversion of $1"; }
    eq "clean" "$(meta "$work/check.db" clean)" 1
    eq "rows of 4242 bytes in $(basename "$1")" "$(rows "$work/check.db")" $(($3 * 100))
    rm -f "$work/check.db"
}

# record_window N ARGS...: root runs `rheaper record -p SPID ARGS` (under
# timeout), the program is poked until it records, makes N batches, and is
# poked until record ends; RREC is record's exit status
record_window() {
    _k=$1
    shift
    rm -f rec.out rec.err
    timeout 40 "$RH" record -p "$SPID" "$@" > rec.out 2> rec.err &
    _r=$!
    OTHER=$_r
    _i=0
    while ! grep -q 'recording process' rec.err 2>/dev/null; do
        kill -0 "$_r" 2>/dev/null || break
        cmd p
        _i=$((_i + 1))
        [ $_i -gt 1000 ] && fail "record did not start"
    done
    grep -q 'recording process' rec.err || { wait "$_r"; fail "record did not start: $(cat rec.err)"; }
    _i=0
    while [ $_i -lt "$_k" ]; do cmd a; _i=$((_i + 1)); done
    while kill -0 "$_r" 2>/dev/null; do
        cmd p
        sleep 0.02
    done
    wait "$_r"
    RREC=$?
    OTHER=
}

# refused_record WHY: root's record must fail (under timeout) saying WHY,
# and send nothing
refused_record() {
    rm -f rec.out rec.err
    timeout 30 "$RH" record -p "$SPID" -d 1s -o "$work/no.db" > rec.out 2> rec.err
    _rc=$?
    [ "$_rc" = 124 ] && fail "record hung"
    [ "$_rc" != 0 ] || fail "record recorded: $(cat rec.err)"
    grep -q "$1" rec.err || fail "record's message lacks '$1': $(cat rec.err)"
    grep -q 'nothing was sent' rec.err || fail "record does not say nothing was sent: $(cat rec.err)"
    [ -e "$work/no.db" ] && fail "record wrote a database"
    ok "record refused: $(grep -v '^rheaper: record: ignored' rec.err | head -n 1)"
}

start_of() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; }

case $CASE in
marker)
    start_prog "$D" RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$D"
    [ -e "$D/rheaper-$SPID.ctl" ] && fail "a marker before the first allocation"
    as_nobody "mkdir '$D/.rheaper-$SPID.ctl.tmp' && mkfifo '$D/rheaper-$SPID.ctl'"
    cmd p # arms: the marker's first write
    eq "the marker" "$(stat -c '%F %U %a' "$D/rheaper-$SPID.ctl")" "regular file root 600"
    grep -qx 'state armed' "$D/rheaper-$SPID.ctl" || fail "the marker does not say armed"
    record_window 3 -d 2s -o "$work/rec.db"
    [ "$RREC" = 0 ] || fail "record failed ($RREC)"
    eq "clean" "$(meta rec.db clean)" 1
    eq "rows of 4242 bytes recorded" "$(rows rec.db)" 300
    alive "after the blocked temporary name and the FIFO"
    finish 3 0
    ;;
swap)
    worker_dir
    start_prog "$D" RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$D"
    cmd p
    M=$D/rheaper-$SPID.ctl
    eq "the root program's marker in the worker's directory" "$(stat -c '%U' "$M")" root
    # the worker user swaps it for a FIFO and blocks the temporary name; a
    # toggle then makes the program rewrite the marker
    as_nobody "mv '$M' '$D/old.ctl' && mkfifo '$M' && mkdir '$D/.rheaper-$SPID.ctl.tmp'"
    kill -s "$SIG" "$SPID"
    cmd p
    eq "the marker after a toggle" "$(stat -c '%F %U' "$M")" "regular file root"
    grep -qx 'state recording' "$M" || fail "the marker does not say recording: $(cat "$M")"
    cmd a a
    as_nobody "rm -f '$M' && mkfifo '$M'"
    kill -s "$SIG" "$SPID"
    cmd p
    grep -qx 'state armed' "$M" || fail "the marker does not say armed after the second toggle"
    check_rip "$D/rip-$SPID" root 2
    # a marker of the worker user's own, naming the program (pid and start
    # time right) with signal 9
    st=$(start_of "$SPID")
    as_nobody "rm -f '$M' && printf 'rheaper-control 1\npid $SPID\nstart $st\nsignal 9\nstate armed\nseq 1\nend normal\nprofile \n' > '$M'"
    refused_record "belongs to uid $nuid"
    alive "the worker user's marker said signal 9"
    # one that says recording into a FIFO: live must not follow it
    as_nobody "mkfifo '$D/fake' && printf 'rheaper-control 1\npid $SPID\nstart $st\nsignal $SIG\nstate recording\nseq 2\nend normal\nprofile $D/fake\n' > '$D/m2' && mv -f '$D/m2' '$M'"
    timeout 20 "$RH" live --once --json "$SPID" > live.out 2> live.err
    rc=$?
    [ "$rc" = 124 ] && fail "live hung on the forged marker"
    grep -q "ignored a marker that is not this process's: .*belongs to uid $nuid" live.err ||
        fail "live did not say it ignored the marker: $(cat live.err)"
    ok "live ignored the worker user's marker (exit $rc)"
    cmd a
    alive "after the swaps"
    finish 2 1
    ;;
rate)
    start_prog "$D" RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$D"
    cmd p
    F=$D/rheaper-$SPID.cpu-hz
    as_nobody "mkfifo '$F'"
    record_window 2 -d 2s -o "$work/r1.db"
    [ "$RREC" = 0 ] || fail "record failed with a FIFO at the rate file ($RREC)"
    eq "rows of 4242 bytes (FIFO at the rate name)" "$(rows r1.db)" 200
    eq "CPU rate (FIFO at the rate name)" "$(meta r1.db cpu_hz)" ""
    grep -q "ignoring the CPU rate request $F: not a regular file" err ||
        fail "no line about the FIFO: $(cat err)"
    st=$(start_of "$SPID")
    as_nobody "rm -f '$F' && printf '10000\npid $SPID\nstart $st\n' > '$F'"
    record_window 2 -d 2s -o "$work/r2.db"
    [ "$RREC" = 0 ] || fail "record failed with a forged rate ($RREC)"
    eq "rows of 4242 bytes (forged rate)" "$(rows r2.db)" 200
    eq "CPU rate (the forged 10000)" "$(meta r2.db cpu_hz)" ""
    grep -q "ignoring the CPU rate request $F: it belongs to another user" err ||
        fail "no line about the forged rate: $(cat err)"
    eq "the forged rate file, left alone" "$(head -n 1 "$F")" 10000
    # root's own request replaces whatever the attacker placed there
    as_nobody "rm -f '$F' && mkfifo '$F'"
    record_window 2 -d 2s --cpu-hz 99 -o "$work/r3.db"
    [ "$RREC" = 0 ] || fail "record --cpu-hz 99 failed ($RREC)"
    eq "CPU rate (root's --cpu-hz 99)" "$(meta r3.db cpu_hz)" 99
    eq "rows of 4242 bytes (--cpu-hz 99)" "$(rows r3.db)" 200
    [ -e "$F" ] && fail "the rate request was not consumed"
    alive "after the rate files"
    finish 6 0
    ;;
forged)
    # 1. never armed (no RHEAPER_ENABLE), a marker with start 0 and signal 9
    start_prog "$D"
    cmd p
    as_nobody "printf 'rheaper-control 1\npid $SPID\nstart 0\nsignal 9\nstate armed\nseq 0\nend normal\nprofile \n' > '$D/rheaper-$SPID.ctl'"
    refused_record "is not armed"
    alive "a marker with start 0 and signal 9 for an unarmed program"
    # the same with the right start time and SIGSTOP
    st=$(start_of "$SPID")
    as_nobody "printf 'rheaper-control 1\npid $SPID\nstart $st\nsignal 19\nstate armed\nseq 0\nend normal\nprofile \n' > '$D/m' && mv -f '$D/m' '$D/rheaper-$SPID.ctl'"
    refused_record "is not armed"
    alive "a marker with the right start time and SIGSTOP"
    cmd a
    finish 0 1
    # 2. armed by its environment but not built with rheaper-cc (no marker
    # of its own): the attacker's marker names it exactly
    (cd "$D" && exec env RHEAPER_ENABLE=signal sleep 60) &
    SPID=$!
    sleep 0.2
    st=$(start_of "$SPID")
    as_nobody "printf 'rheaper-control 1\npid $SPID\nstart $st\nsignal 9\nstate armed\nseq 0\nend normal\nprofile \n' > '$D/rheaper-$SPID.ctl'"
    refused_record "belongs to uid $nuid"
    alive "sleep, armed by its environment, with the attacker's signal 9"
    kill "$SPID"
    wait "$SPID" 2>/dev/null
    SPID=
    # 3. never armed, its environment overwritten by a title (record cannot
    # read it), and a stale root-owned marker naming it with signal 10,
    # which it does not catch
    start_prog "$D"
    cmd p t
    eq "bytes left in its environment" "$(tr -d '\000' < "/proc/$SPID/environ" | wc -c)" 0
    st=$(start_of "$SPID")
    printf 'rheaper-control 1\npid %s\nstart %s\nsignal 10\nstate armed\nseq 0\nend normal\nprofile \n' \
        "$SPID" "$st" > "$D/rheaper-$SPID.ctl"
    refused_record "does not catch signal 10"
    alive "a root-owned stale marker with signal 10"
    finish 0 0
    # 4. armed, environment overwritten: its own marker is enough
    start_prog "$D" RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$D"
    cmd p t
    eq "bytes left in its environment" "$(tr -d '\000' < "/proc/$SPID/environ" | wc -c)" 0
    record_window 1 -d 1s -o "$work/rec.db"
    [ "$RREC" = 0 ] || fail "record of an armed program without environment failed: $(cat rec.err)"
    eq "rows of 4242 bytes (environment overwritten)" "$(rows rec.db)" 100
    finish 1 0
    ;;
log)
    # RHEAPER_PROFILE_NAME=a/b makes the runtime warn at its start: the line
    # goes to the log file, or to stderr when the log file is refused
    W='ignoring RHEAPER_PROFILE_NAME=a/b'
    run_log() { # LOGNAME: one run logging to D/LOGNAME, one batch
        start_prog "$D" RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$D" RHEAPER_LOG="$D/$1" \
            RHEAPER_PROFILE_NAME=a/b
        cmd p a # the first allocation starts the runtime
        P=$SPID
        finish 1 0
        check_rip "$D/rip-$P" root 1
    }
    as_nobody "mkfifo '$D/fifo.log'"
    run_log fifo.log
    grep -q "$W" err || fail "the warning was lost (FIFO log): $(cat err)"
    ok "a FIFO at the log path without a reader: the program went on and exited"
    as_nobody "mkfifo '$D/fifo2.log'"
    (cd / && exec timeout 30 setpriv --reuid="$nuid" --regid="$ngid" --clear-groups -- \
        cat "$D/fifo2.log") > got &
    OTHER=$!
    sleep 0.2
    run_log fifo2.log
    kill "$OTHER" 2>/dev/null
    wait "$OTHER" 2>/dev/null
    OTHER=
    eq "bytes the attacker's reader got" "$(wc -c < got)" 0
    as_nobody "echo mine > '$D/pre.log'"
    run_log pre.log
    eq "the attacker's pre-created log" "$(cat "$D/pre.log")" mine
    grep -q "$W" err || fail "the warning was lost (pre-created log)"
    echo victim > "$R/victim" && chmod 0600 "$R/victim"
    as_nobody "ln -s '$R/victim' '$D/link.log'"
    run_log link.log
    eq "the symlink's target" "$(cat "$R/victim") $(stat -c '%U %a' "$R/victim")" "victim root 600"
    as_nobody "echo mine > '$D/mine' && ln '$D/mine' '$D/hard.log'"
    run_log hard.log
    eq "the attacker's hard-linked file" "$(cat "$D/mine")" mine
    run_log own.log
    eq "the log nobody planted" "$(stat -c '%U %a' "$D/own.log")" "root 600"
    grep -q "$W" "$D/own.log" || fail "the unplanted log lacks the warning: $(cat "$D/own.log")"
    ;;
hardlink)
    printf 'secret\n' > "$R/secret" && chmod 0600 "$R/secret"
    before=$(stat -c '%U:%G %a' "$R/secret")
    start_prog "$D" RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$D" RHEAPER_LOG="$D/rh.log" \
        RHEAPER_PROFILE_NAME=a/b
    ln "$R/secret" "$D/rh.log" && ln "$R/secret" "$D/rip-$SPID"
    P=$SPID
    cmd p a d a
    finish 2 0
    eq "the root-only file after the drop" "$(stat -c '%U:%G %a' "$R/secret")" "$before"
    eq "its content" "$(cat "$R/secret")" secret
    check_rip "$D/rip-$P.1" nobody 2
    # armed: the marker's name too, then a recording made after the drop
    rm -f "$D/rh.log"
    start_prog "$D" RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$D" RHEAPER_LOG="$D/rh.log" \
        RHEAPER_PROFILE_NAME=a/b
    ln "$R/secret" "$D/rh.log" && ln "$R/secret" "$D/rheaper-$SPID.ctl"
    P=$SPID
    cmd p d
    eq "the root-only file after the drop (armed)" "$(stat -c '%U:%G %a' "$R/secret")" "$before"
    eq "its content (armed)" "$(cat "$R/secret")" secret
    eq "the marker after the drop" "$(stat -c '%F %U %a' "$D/rheaper-$P.ctl")" "regular file nobody 600"
    kill -s "$SIG" "$SPID"
    cmd p a
    grep -qx 'state recording' "$D/rheaper-$P.ctl" || fail "the marker does not say recording"
    kill -s "$SIG" "$SPID"
    cmd p
    finish 1 0
    eq "the root-only file at the end" "$(stat -c '%U:%G %a' "$R/secret") $(cat "$R/secret")" \
        "$before secret"
    check_rip "$D/rip-$P" nobody 1
    ;;
rootdir)
    # servers.md's third layout, root's 0755 directory: no one else can place
    # a name, and after the drop the program can create nothing there, so its
    # marker is rewritten in place, which must still work with the identity
    # check
    chmod 0755 "$D"
    start_prog "$D" RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$D"
    M=$D/rheaper-$SPID.ctl
    cmd p
    kill -s "$SIG" "$SPID"
    cmd p a d a
    eq "the marker after the drop" "$(stat -c '%U %a' "$M")" "nobody 600"
    grep -qx 'state recording' "$M" || fail "the marker does not say recording: $(cat "$M")"
    kill -s "$SIG" "$SPID"
    cmd p
    grep -qx 'state armed' "$M" || fail "the marker was not rewritten in place: $(cat "$M")"
    P=$SPID
    finish 2 0
    check_rip "$D/rip-$P" nobody 2
    ;;
*) fail "unknown case $CASE" ;;
esac
echo "PASS: $CASE"
