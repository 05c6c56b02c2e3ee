#!/bin/sh
# tests/integration/control/run.sh BIN HELPERS WORK CASE: one case of the control
# tests (see CMakeLists.txt). Prints "FAIL: ..." and exits 1 on a failure.
# The runtime's "wrote" notice is checked: on stderr although it is no terminal.
export RHEAPER_LOG=stderr
set -u
BIN=$1 H=$2 WORK=$3 CASE=$4
RH=$BIN/rheaper
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
SIG=$(( $(kill -l RTMAX 2>/dev/null || echo 64) - 5 ))

. "$(dirname "$0")/../../lib/check.sh"   # fail, ok, eq
. "$(dirname "$0")/../../lib/require.sh" # require_tool
RH_DUMP='server.err rec.err err out'
require_tool sqlite3 sqlite3
q() { sqlite3 "$1" "$2"; }
meta() { q "$1" "select value from meta where key = '$2'"; }

# Waits (up to 20 s) until file $1 has a line matching $2.
wait_line() {
    _w=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        _w=$((_w + 1))
        [ $_w -gt 2000 ] && fail "timed out waiting for '$2' in $1"
        sleep 0.01
    done
}

# Starts ctl_server armed ($@: extra env assignments), stdin from fifo in;
# $AS (unset: nothing) is a command prefix that runs it as another user.
start_server() {
    mkfifo in
    ${AS:-} env RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$WORK" "$@" "$H/ctl_server" <in >out 2>server.err &
    SPID=$!
    exec 3>in
    wait_line out '^ready'
    wait_line "rheaper-$SPID.ctl" '^state armed$' # armed at its first allocation
}
send() { printf '%s\n' "$@" >&3; }
nreq() { _r=0; while [ $_r -lt "$1" ]; do echo req; _r=$((_r + 1)); done >&3; }
# sync N: waits until the server served every request so far (N in total).
sync_to() { send sync; wait_line out "^synced $1\$"; }
stop_server() { send quit; exec 3>&-; wait "$SPID"; SRC=$?; OLDPID=$SPID; SPID=; }
now_ns() { date +%s%N; }
# iso_ns 2026-01-02T03:04:05.123456789Z: nanoseconds since the epoch
iso_ns() { date -d "$1" +%s%N; }
# The runtime's helper threads of process $1 (threads named rheaper).
helpers_of() { cat /proc/"$1"/task/*/comm 2>/dev/null | grep -cx rheaper; }

case $CASE in
record-server)
    # Exact counts inside the window: 40 requests before, 300 during, 50 after.
    start_server
    nreq 40; sync_to 40
    [ -f "rheaper-$SPID.ctl" ] || fail "no marker rheaper-$SPID.ctl"
    grep -q '^state armed$' "rheaper-$SPID.ctl" || fail "marker does not say armed"
    grep -q "^signal $SIG\$" "rheaper-$SPID.ctl" || fail "marker does not name signal $SIG"
    ls rip-* >/dev/null 2>&1 && fail "armed process wrote a profile before the signal"
    "$RH" record -p "$SPID" -d 2s -o rec.db >rec.out 2>rec.err &
    RPID=$!
    wait_line rec.err 'recording process'
    grep -q '^state recording$' "rheaper-$SPID.ctl" || fail "marker does not say recording"
    nreq 300; sync_to 340
    wait "$RPID" || fail "rheaper record failed"
    nreq 50; sync_to 390
    stop_server
    [ "$SRC" = 0 ] || fail "server exited $SRC"
    grep -q '^served 300 on 90 off 0 mixed$' server.err || fail "server counts: $(grep served server.err)"
    [ "$(meta rec.db clean)" = 1 ] || fail "profile not clean"
    [ "$(meta rec.db pid)" = "$OLDPID" ] || fail "profile of another pid"
    n=$(q rec.db "select count(*) from allocations where size = 777")
    [ "$n" = 1200 ] || fail "expected 1200 request blocks (4 x 300) in the window, got $n"
    n=$(q rec.db "select count(*) from allocations where size = 777 and dealloc_after is null")
    [ "$n" = 0 ] || fail "$n request blocks not freed"
    n=$(q rec.db "select count(distinct alloc_thread) from allocations where size = 777")
    [ "$n" = 3 ] || fail "expected the 3 workers, got $n threads"
    grep -q "wrote .*rip-$OLDPID (" server.err || fail "runtime did not report the profile"
    [ "$(grep -c . server.err)" = 2 ] || fail "runtime printed more than one line"
    grep -q 'handle_request' rec.out || fail "summary lacks handle_request"
    [ -f "rheaper-$OLDPID.ctl" ] && fail "marker left behind after exit"
    ;;
vfork-first)
    # The process's first allocation is a vfork child's (it then execs): the
    # runtime starts in the parent, not in the child (whose helper thread
    # would die at exec and whose pid the marker would carry). The parent is
    # armed under its own pid with one helper, and `record -p` records it.
    start_server CTL_IDLE=1 CTL_VFORK=1
    nreq 5; sync_to 5
    [ "$(helpers_of "$SPID")" = 1 ] || fail "expected one thread named rheaper, got $(helpers_of "$SPID")"
    [ "$(ls rheaper-*.ctl | wc -l)" = 1 ] || fail "markers: $(ls rheaper-*.ctl)"
    "$RH" record -p "$SPID" -d 1s -o rec.db >rec.out 2>rec.err &
    RPID=$!
    wait_line rec.err 'recording process'
    nreq 20; sync_to 25
    wait "$RPID" || fail "rheaper record failed: $(cat rec.err)"
    stop_server
    [ "$SRC" = 0 ] || fail "server exited $SRC"
    grep -q '^served 20 on 5 off 0 mixed$' server.err || fail "server counts: $(grep served server.err)"
    [ "$(meta rec.db pid)" = "$OLDPID" ] || fail "profile of another pid: $(meta rec.db pid)"
    n=$(q rec.db "select count(*) from allocations where size = 777")
    echo "vfork-first: $n request blocks recorded"
    [ "$n" = 80 ] || fail "expected 80 request blocks (4 x 20) in the window, got $n"
    [ -f "rheaper-$OLDPID.ctl" ] && fail "marker left behind after exit"
    ;;
real-create)
    # The runtime's own threads (the helper, the stream sender) are created
    # with libc's pthread_create, not the program's wrap of it (which hands
    # each new thread to the CPU sampler): in the linked program, the two
    # creators call rh_sys_thread_create only, which calls the wrap layer's
    # rh_shim_real_pthread_create, which calls libc's pthread_create.
    require_tool objdump binutils
    objdump -d --no-show-raw-insn "$H/ctl_server" >dis || fail "objdump"
    calls() { awk -v f="<$1>:" '$2 == f { on = 1; next } /^$/ { on = 0 } on && /(call|jmp) /' dis; }
    for f in rh_helper_start rh_stream_start; do
        c=$(calls $f)
        echo "$f: $(printf '%s\n' "$c" | grep -c thread_create) thread creations"
        printf '%s\n' "$c" | grep -q '<rh_sys_thread_create>' || fail "$f does not call rh_sys_thread_create"
        printf '%s\n' "$c" | grep -q 'pthread_create' && fail "$f calls a pthread_create: $c"
    done
    calls rh_sys_thread_create | grep -q '<rh_shim_real_pthread_create>' ||
        fail "rh_sys_thread_create does not reach the wrap layer's real pthread_create"
    calls rh_shim_real_pthread_create | grep -q '<pthread_create@plt>' ||
        fail "rh_shim_real_pthread_create does not call libc's pthread_create: $(calls rh_shim_real_pthread_create)"
    ;;
record-idle)
    # A server that makes no allocation once it is warm (CTL_IDLE=1: no
    # timer; "nop" requests touch memory set aside at start, as a full cache
    # reusing its slabs does). The runtime's helper thread takes the toggles:
    # the recording starts and stops within a second without an allocation,
    # and holds exactly the requests sent inside its window.
    start_server CTL_IDLE=1
    nreq 5; sync_to 5 # the first allocations: the runtime starts and arms
    [ "$(helpers_of "$SPID")" = 1 ] || fail "expected one thread named rheaper, got $(helpers_of "$SPID")"
    (k=0; while [ $k -lt 300 ]; do echo nop; k=$((k + 1)); sleep 0.01; done) >&3 &
    LPID=$!
    t0=$(now_ns)
    "$RH" record -p "$SPID" -d 2s -o rec.db >rec.out 2>rec.err &
    RPID=$!
    wait_line rec.err 'recording process'
    t1=$(now_ns)
    nreq 30; sync_to 35
    wait "$RPID" || fail "rheaper record failed: $(cat rec.err)"
    t2=$(now_ns)
    nreq 10; sync_to 45
    wait "$LPID"
    stop_server
    [ "$SRC" = 0 ] || fail "server exited $SRC"
    grep -q '^served 30 on 15 off 0 mixed$' server.err || fail "server counts: $(grep served server.err)"
    grep -q '^nops 300$' server.err || fail "nops: $(grep nops server.err)"
    start=$(iso_ns "$(meta rec.db start_time)") dur=$(meta rec.db duration_ns)
    echo "record-idle: started $(( (start - t0) / 1000000 )) ms after the request, seen by record after $(( (t1 - t0) / 1000000 )) ms; recorded $(( dur / 1000000 )) ms; record took $(( (t2 - t0) / 1000000 )) ms"
    # Started by the helper: after the request, and before record saw it
    # start (t1), which is before the first allocating request was sent; in
    # between only nops came, which allocate nothing. The delays are printed
    # above, not bounded (a loaded machine stretches them); 10 s would mean
    # the toggle waited for something else.
    [ "$start" -ge "$t0" ] && [ "$start" -le "$t1" ] ||
        fail "recording started $(( (start - t0) / 1000000 )) ms after the request, record saw it after $(( (t1 - t0) / 1000000 )) ms"
    [ "$start" -le $((t0 + 10000000000)) ] || fail "recording started $(( (start - t0) / 1000000 )) ms after the request"
    [ "$dur" -ge 2000000000 ] && [ "$dur" -le 10000000000 ] || fail "recorded $dur ns for a 2 s window"
    [ $((start + dur)) -le "$t2" ] || fail "the recording ended after record returned"
    [ "$(meta rec.db clean)" = 1 ] || fail "profile not clean"
    n=$(q rec.db "select count(*) from allocations where size = 777")
    [ "$n" = 120 ] || fail "expected 120 request blocks (4 x 30) in the window, got $n"
    n=$(q rec.db "select count(*) from allocations")
    [ "$n" = 120 ] || fail "expected no rows but the requests', got $n"
    n=$(q rec.db "select count(*) from threads where name = 'rheaper'")
    [ "$n" = 0 ] || fail "the helper thread is in the profile's thread list"
    n=$(q rec.db "select count(distinct alloc_thread) from allocations")
    [ "$n" = 3 ] || fail "expected the 3 workers' rows, got $n threads"
    [ "$(grep -c . server.err)" = 3 ] || fail "runtime printed more than its one line: $(cat server.err)"
    ;;
idle-cancel)
    # Without the helper thread (the process may not create a thread: run
    # as a user of its own with RLIMIT_NPROC 1, serving from its main thread
    # alone), a toggle
    # waits for an allocation as before, with one line saying so. An idle
    # server never takes it; record gives up after 10 s and cancels it, so
    # the server's later requests start no recording.
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run the server as another user"; exit 77; }
    chown 47291:47291 "$WORK"
    AS="setpriv --reuid=47291 --regid=47291 --clear-groups prlimit --nproc=1 --"
    start_server CTL_IDLE=1 CTL_INLINE=1
    AS=
    nreq 5; sync_to 5
    wait_line server.err 'cannot start the helper thread'
    [ "$(helpers_of "$SPID")" = 0 ] || fail "a helper thread runs"
    "$RH" record -p "$SPID" -d 1s -o rec.db >rec.out 2>rec.err && fail "record succeeded on an idle process"
    grep -q 'the request is cancelled' rec.err || fail "record did not cancel: $(cat rec.err)"
    nreq 20; sync_to 25
    grep -q '^state armed$' "rheaper-$SPID.ctl" || fail "marker does not say armed after the cancel"
    ls rip-* >/dev/null 2>&1 && fail "a cancelled toggle started a recording"
    stop_server
    grep -q '^served 0 on 25 off 0 mixed$' server.err || fail "server counts: $(grep served server.err)"
    [ "$(grep -c 'rheaper' server.err)" = 1 ] || fail "expected one rheaper line: $(cat server.err)"
    ls rip-* >/dev/null 2>&1 && fail "a profile was written at exit"
    ;;
start-fails)
    # The directory refuses the recording's file once the server runs (it
    # belongs to the server's user, who made it read-only): the helper takes
    # the toggle, the start fails with one line, the marker counts it
    # ("failed 1"), and record says so at once instead of waiting 10 s and
    # sending a second signal, which would now be a new request. Nothing is
    # pending: the directory writable again, the server's requests start no
    # recording; a new record then works.
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run the server as another user"; exit 77; }
    chown 47291:47291 "$WORK"
    AS="setpriv --reuid=47291 --regid=47291 --clear-groups"
    start_server CTL_IDLE=1
    AS=
    nreq 5; sync_to 5
    grep -q '^failed 0$' "rheaper-$SPID.ctl" || fail "marker has no failed 0: $(cat "rheaper-$SPID.ctl")"
    chmod 0555 "$WORK"
    t0=$(now_ns)
    "$RH" record -p "$SPID" -d 1s -o rec.db >rec.out 2>rec.err && fail "record succeeded"
    t1=$(now_ns)
    chmod 0755 "$WORK"
    grep -q "process $SPID could not start recording" rec.err || fail "record did not say the start failed: $(cat rec.err)"
    ms=$(( (t1 - t0) / 1000000 ))
    echo "start-fails: record reported the failed start after $ms ms"
    # record's 10 s wait for an idle process would end in a cancel, not this
    [ $ms -lt 10000 ] || fail "record took $ms ms to report the failed start"
    grep -q '^failed 1$' "rheaper-$SPID.ctl" || fail "marker does not count the failed start"
    grep -q '^state armed$' "rheaper-$SPID.ctl" || fail "marker does not say armed"
    nreq 10; sync_to 15
    sleep 0.3
    ls rip-* >/dev/null 2>&1 && fail "a recording started after the failed one"
    "$RH" record -p "$SPID" -d 0.5s -o rec2.db >rec2.out 2>rec2.err || fail "record after the failure: $(cat rec2.err)"
    stop_server
    grep -q "cannot use profile directory $WORK: Permission denied" server.err ||
        fail "no line says why the start failed: $(cat server.err)"
    [ "$(grep -c 'cannot use profile directory' server.err)" = 1 ] || fail "more than one line for the failure"
    [ "$(meta rec2.db clean)" = 1 ] || fail "the later recording is not clean"
    [ "$(ls rip-* | wc -l)" = 1 ] || fail "expected the later recording's profile alone: $(ls rip-*)"
    ;;
ownsig-after|ownsig-before)
    mode=${CASE#ownsig-}
    RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$WORK" "$H/ctl_ownsig" "$mode" >out 2>err ||
        fail "program failed: $(cat out)"
    grep -q '^handled 3$' out || fail "program's handler did not get its signals"
    grep -q '^helpers 0$' out || fail "the helper thread did not go when rheaper stood aside: $(cat out)"
    if [ "$mode" = after ]; then
        grep -q '^armed helpers 1$' out || fail "no helper thread while armed: $(cat out)"
    fi
    [ "$(grep -c 'stands aside' err)" = 1 ] || fail "expected one warning"
    [ "$(grep -c . err)" = 1 ] || fail "expected exactly one line on stderr"
    ls rip-* >/dev/null 2>&1 && fail "a profile was written"
    ;;
ownsig-record)
    mkfifo in
    RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$WORK" "$H/ctl_ownsig" hold <in >out 2>err &
    SPID=$!
    exec 3>in
    wait_line out '^ready'
    "$RH" record -p "$SPID" -d 1s -o rec.db 2>rec.err && fail "record succeeded"
    grep -q "handles signal $SIG itself" rec.err || fail "record did not say the signal is owned"
    send quit; exec 3>&-; wait "$SPID" || fail "program failed"
    grep -q '^handled 3$' out || fail "program's handler did not get its signals"
    ;;
size-limit)
    RHEAPER_ENABLE=1 RHEAPER_MAX_PROFILE_SIZE=256k "$H/ctl_churn" 200000 2 2>err ||
        fail "program failed"
    [ "$(grep -c 'reached RHEAPER_MAX_PROFILE_SIZE' err)" = 1 ] || fail "expected one warning"
    rip=$(ls rip-*) || fail "no profile"
    size=$(stat -c %s "$rip")
    [ "$size" -le $((262144 + 8192)) ] || fail "profile is $size bytes, limit 256k"
    "$RH" convert "$rip" s.db 2>conv.err || fail "convert failed: $(cat conv.err)"
    grep -q 'cut at the size limit' conv.err || fail "converter did not say cut at the size limit"
    grep -q 'not clean' conv.err && fail "converter called it damaged"
    [ "$(meta s.db clean)" = 1 ] || fail "not clean"
    [ "$(meta s.db damaged)" = 0 ] || fail "damaged"
    [ "$(meta s.db cut_at_size_limit)" = 1 ] || fail "meta cut_at_size_limit not 1"
    ev=$(meta s.db events) rec=$(meta s.db events_recorded)
    a=$(meta s.db allocs) f=$(meta s.db frees)
    [ "$ev" = $((a + f)) ] || fail "events $ev != allocs $a + frees $f"
    # a thread already inside a hooked call when the limit hit finishes its event
    [ "$ev" -ge "$rec" ] && [ "$ev" -le $((rec + 2)) ] || fail "events $ev vs trailer $rec"
    n=$(q s.db "select count(*) from allocations where size <> 100 and kind = 'malloc'")
    [ "$f" -le "$a" ] || fail "more frees than allocations"
    ;;
size-limit-record)
    # Armed, the limit ends the recording; record notices and converts.
    start_server RHEAPER_MAX_PROFILE_SIZE=128k
    "$RH" record -p "$SPID" -d 20s -o rec.db >rec.out 2>rec.err &
    RPID=$!
    wait_line rec.err 'recording process'
    i=0
    while kill -0 "$RPID" 2>/dev/null; do
        nreq 200; sync_to $(( (i + 1) * 200 )); i=$((i + 1))
        [ $i -gt 200 ] && fail "the limit never ended the recording"
    done
    wait "$RPID" || fail "rheaper record failed"
    grep -q 'stopped at RHEAPER_MAX_PROFILE_SIZE' rec.err || fail "record did not say the limit stopped it"
    grep -q 'cut at the size limit' rec.err || fail "converter did not say cut at the size limit"
    grep -q '^end size-limit$' "rheaper-$SPID.ctl" || fail "marker does not say size-limit"
    grep -q '^state armed$' "rheaper-$SPID.ctl" || fail "marker does not say armed again"
    stop_server
    [ "$(meta rec.db cut_at_size_limit)" = 1 ] || fail "meta cut_at_size_limit not 1"
    [ "$(meta rec.db clean)" = 1 ] || fail "not clean"
    [ "$(grep -c 'reached RHEAPER_MAX_PROFILE_SIZE' server.err)" = 1 ] || fail "expected one warning"
    ;;
name-template)
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_NAME='heap-%e-%p-%n-%t-%%' "$H/ctl_churn" 10 1 2>err || fail "run 1"
    f=$(ls heap-ctl_churn-*) || fail "no heap-ctl_churn-* file"
    echo "$f" | grep -Eq '^heap-ctl_churn-[0-9]+-1-[0-9]{10}-%$' || fail "bad name $f"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_NAME=fixed "$H/ctl_churn" 10 1 2>>err || fail "run 2"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_NAME=fixed "$H/ctl_churn" 10 1 2>>err || fail "run 3"
    [ -f fixed ] && [ -f fixed.1 ] || fail "second run overwrote: $(ls)"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_NAME='a/b' "$H/ctl_churn" 10 1 2>bad || fail "run 4"
    grep -q 'ignoring RHEAPER_PROFILE_NAME=a/b' bad || fail "no warning for a/b"
    ls rip-* >/dev/null 2>&1 || fail "bad template did not fall back to rip-%p"
    # %n counts recordings: two toggles of an armed server, two files
    start_server RHEAPER_PROFILE_NAME='srv-%n'
    for k in 1 2; do
        "$RH" record -p "$SPID" -d 0.2s -o "r$k.db" >/dev/null 2>rec.err || fail "record $k"
    done
    stop_server
    [ -f srv-1 ] && [ -f srv-2 ] || fail "expected srv-1 and srv-2: $(ls)"
    [ "$(meta r2.db clean)" = 1 ] || fail "second recording not clean"
    ;;
not-armed)
    mkfifo in
    RHEAPER_PROFILE_DIR="$WORK" "$H/ctl_server" <in >out 2>server.err &
    SPID=$!
    exec 3>in
    wait_line out '^ready'
    "$RH" record -p "$SPID" -d 1s 2>rec.err && fail "record succeeded"
    grep -q "process $SPID is not armed: its environment (/proc/$SPID/environ) has no RHEAPER_ENABLE=signal" rec.err ||
        fail "unclear message: $(cat rec.err)"
    kill -0 "$SPID" || fail "the process died"
    nreq 5; sync_to 5; stop_server
    [ "$SRC" = 0 ] || fail "server exited $SRC"
    "$RH" record -p 999999999 2>rec.err && fail "record of no process succeeded"
    grep -q 'no process' rec.err || fail "no-process message: $(cat rec.err)"
    ;;
not-armed-no-marker)
    # RHEAPER_ENABLE=signal, but a program not built with rheaper-cc
    mkfifo in
    RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$WORK" cat in >/dev/null &
    SPID=$!
    exec 3>in
    sleep 0.2
    "$RH" record -p "$SPID" -d 1s 2>rec.err && fail "record succeeded"
    grep -q "is not armed: no marker" rec.err || fail "unclear message: $(cat rec.err)"
    kill -0 "$SPID" || fail "the process died (a signal was sent)"
    exec 3>&-; wait "$SPID"
    ;;
api-race)
    RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$WORK" "$H/ctl_race" 60 >out 2>err &
    SPID=$!
    wait_line out '^ready'
    i=0
    while kill -0 "$SPID" 2>/dev/null && [ $i -lt 60 ]; do
        kill -s "$SIG" "$SPID" 2>/dev/null
        i=$((i + 1))
        sleep 0.001
    done
    wait "$SPID" || fail "program failed ($?)"
    grep -q '^api ' out || fail "program did not finish"
    n=0
    for f in rip-*; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        "$RH" convert "$f" "$f.db" --quiet 2>conv.err || fail "convert $f: $(cat conv.err)"
        [ "$(meta "$f.db" clean)" = 1 ] || fail "$f not clean: $(cat conv.err)"
    done
    [ $n -gt 0 ] || fail "no profiles"
    echo "api-race: $n profiles, $(cat out | tail -1)"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "PASS: $CASE"
