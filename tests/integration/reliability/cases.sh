# cases.sh: the cases of run.sh, one function each (sourced; see run.sh for
# the helpers: prog, convert_all, check_expect, expect, ok, bad, skip, meta).

# ---- crash safety -----------------------------------------------------------

# crash SIGNAL-NAME STATUS: the program dies; its profile converts with exit 0,
# one warning line naming the cut, and every fact it stated holds.
crash() {
    prog "$helpers/rel_crash" "$1"
    expect "exit status of a program ended by $1" "$rc" "$2"
    expect "profiles written" "$(nrips)" 1
    convert_all --loud
    expect "converter warning lines" "$(wc -l < "$w/conv.err" | tr -d ' ')" 1
    yes_ "the converter's line says the profile was cut" grep -q 'cut short' "$w/conv.err"
    check_expect
}
case_crash_sigkill() { crash sigkill 137; }
case_crash_abort() { crash abort 134; }
case_crash_segv() { crash segv 139; }

# ---- faults around the program ----------------------------------------------

# A missing profile directory: the program runs as usual, one warning line.
case_fault_missing_dir() {
    prof=$w/does-not-exist
    prog "$helpers/rel_faults" workload
    expect "exit status" "$rc" 0
    expect "runtime lines" "$(rh_lines)" 1
    yes_ "the line names the directory" grep -q "does-not-exist" "$w/err"
    yes_ "no directory was created" test ! -e "$prof"
}

# A read-only profile directory (as root, the program runs as nobody, since
# root writes anyway).
case_fault_readonly_dir() {
    chmod 0555 "$prof"
    chmod 0777 "$w"
    : > "$w/expect.txt"; chmod 0666 "$w/expect.txt"
    if [ "$(id -u)" -eq 0 ]; then
        command -v setpriv > /dev/null || skip "setpriv (util-linux) is needed to drop root"
        prog setpriv --reuid=nobody --regid=nogroup --clear-groups "$helpers/rel_faults" workload
    else
        prog "$helpers/rel_faults" workload
    fi
    expect "exit status" "$rc" 0
    expect "runtime lines" "$(rh_lines)" 1
    yes_ "the line says why" grep -q "Permission denied" "$w/err"
    expect "files in the read-only directory" "$(ls -A "$prof" | wc -l | tr -d ' ')" 0
}

# grow_case: the program fills what it may write; tracking stops with one
# line, the program finishes, and the profile holds a prefix of its events.
grow_case() {
    expect "exit status" "$rc" 0
    expect "runtime lines" "$(rh_lines)" 1
    yes_ "the line says tracking stopped" grep -q "tracking stopped" "$w/err"
    expect "profiles written" "$(nrips)" 1
    convert_all
    check_expect
}

# A full disk: a 128 KiB tmpfs as the profile directory (root only).
case_fault_full_disk() {
    [ "$(id -u)" -eq 0 ] || skip "mounting a small tmpfs needs root"
    mount -t tmpfs -o size=128k rheaper-rel "$prof" 2> "$w/mount.err" ||
        skip "cannot mount a tmpfs here: $(cat "$w/mount.err")"
    prog "$helpers/rel_faults" grow
    mkdir -p "$w/out.d"
    cp "$prof"/rip-* "$w/out.d/" 2> /dev/null || true
    umount "$prof"
    cp "$w/out.d"/rip-* "$prof/" 2> /dev/null || true
    grow_case
}

# RLIMIT_FSIZE with SIGXFSZ at its default (kill): the profiler must not be the
# one that raises it.
case_fault_fsize() {
    prog "$helpers/rel_faults" fsize
    grow_case
}

# No fd left at the first allocation.
case_fault_nofile() {
    prog "$helpers/rel_faults" nofile
    expect "exit status" "$rc" 0
    expect "runtime lines" "$(rh_lines)" 1
    yes_ "the line says the profile could not be created" grep -q "cannot create profile" "$w/err"
    expect "profiles written" "$(nrips)" 0
}

# No fd left once the profile is open: the runtime holds no fd, so its lost
# events are counted (one line) and a child at the limit writes no profile
# (one line); the program's fds are untouched.
case_fault_nofile_fork() {
    prog "$helpers/rel_faults" nofile-fork
    expect "exit status" "$rc" 0
    expect "runtime warnings" "$(grep '^rheaper: ' "$w/err" | grep -vc ': wrote ' || true)" 2
    yes_ "the parent says it has no fd to grow its profile" grep -q "no free file descriptor" "$w/err"
    yes_ "the child says it cannot create its profile" grep -q "cannot create profile" "$w/err"
    expect "profiles written" "$(nrips)" 1
    convert_all
    check_expect
}

# The real allocator returns NULL.
case_fault_null_alloc() {
    prog "$helpers/rel_faults" nullalloc
    expect "exit status" "$rc" 0
    convert_all
    check_expect
}

# EINTR: a periodic signal without SA_RESTART; small chunks so the runtime
# opens many, and module maps written on each dlopen and dlclose.
case_fault_eintr() {
    prog RHEAPER_BUFFER_SIZE=64 "$helpers/rel_faults" eintr "$helpers/rel_lib.so"
    expect "exit status" "$rc" 0
    convert_all
    check_expect
}

# ---- the program's lifecycle -------------------------------------------------

# life MODE [ARG]: the program exits 0, every profile converts, facts hold.
life() {
    prog "$helpers/rel_life" "$@"
    expect "exit status of rel_life $1" "$rc" 0
    convert_all
    check_expect
}
case_life_threads10k() { life threads10k; }
case_life_fork_threads() { life fork-threads; expect "profiles" "$(nrips)" 21; }
case_life_fork100() { life fork100; expect "profiles" "$(nrips)" 101; }
case_life_exec() {
    life exec "$helpers/rel_life"
    # parent, fork child before exec, its exec'd image, the vfork'd and the
    # spawned instrumented images; /bin/true writes nothing
    expect "profiles" "$(nrips)" 5
}
case_life_sigalloc() { life sigalloc; }
case_life_dlclose() { life dlclose "$helpers/rel_lib.so"; }

# exit() from one thread while others allocate, ten times over.
case_life_exit_thread() {
    for i in 1 2 3 4 5 6 7 8 9 10; do
        rm -rf "$prof" && mkdir -p "$prof"
        : > "$RH_EXPECT_FILE"
        life exit-thread
        expect "profiles" "$(nrips)" 1
    done
}

# Events after the exit trailer open chunks that stay unsealed: still clean.
case_life_exit_late() { life exit-late; expect "profiles" "$(nrips)" 1; }

# ---- exits that run no exit handler --------------------------------------------

# exits MODE PROFILES [ARG]: rel_exit ends one of its processes without exit
# handlers; every profile is whole: `rheaper list` says complete (no
# damaged), the converter says nothing (no "cut short"), and the rows are the
# program's.
exits() {
    prog RHEAPER_LOG=stderr "$helpers/rel_exit" "$1" ${3:-}
    expect "exit status of rel_exit $1" "$rc" 0
    expect "profiles" "$(nrips)" "$2"
    "$bin/rheaper" list "$prof" > "$w/list.txt" 2>&1
    expect "profiles listed complete" "$(grep -c ' complete ' "$w/list.txt")" "$2"
    expect "profiles listed damaged" "$(grep -c 'damaged' "$w/list.txt" || true)" 0
    convert_all --loud
    expect "converter lines" "$(grep -c . "$w/conv.err" || true)" 0
    if grep -q 'cut short' "$w/conv.err"; then bad "the converter says: $(cat "$w/conv.err")"; fi
    check_expect
}
case_exit_exit() { exits _exit 1; }
case_exit_Exit() { exits _Exit 1; }
case_exit_fork_exit() { exits fork-_exit 2; }
case_exit_signal_exit() { exits signal-_exit 1; }
# exec: the two fork children's profiles end in an exec (the trailer says so:
# they exec /bin/true, which writes no profile of its own to infer it from),
# listed exec'd, not damaged; the parent's is complete. A failed exec goes on
# recording and its profile ends as a normal one.
case_exit_exec() {
    prog RHEAPER_LOG=stderr "$helpers/rel_exit" exec
    expect "exit status of rel_exit exec" "$rc" 0
    expect "profiles" "$(nrips)" 3
    "$bin/rheaper" list "$prof" > "$w/list.txt" 2>&1
    expect "profiles listed complete" "$(grep -c ' complete ' "$w/list.txt")" 1
    expect "profiles listed exec'd" "$(grep -c " exec'd " "$w/list.txt")" 2
    expect "profiles listed damaged" "$(grep -c 'damaged' "$w/list.txt" || true)" 0
    convert_all --loud
    expect "converter lines" "$(grep -c . "$w/conv.err" || true)" 0
    n=0
    for r in $(rips); do
        [ "$(meta "$prof/$r.db" end_reason)" = exec ] && n=$((n + 1))
    done
    expect "profiles whose end_reason is exec" "$n" 2
    check_expect
}
case_exit_exec_fail() { exits exec-fail 2; }
# The vfork child's _exit leaves its parent's profile alone: one close, by the
# parent at its exit, counting all 5 of its blocks' events (a close by the
# child, in the memory it shares with its parent, would count 3).
case_exit_vfork_exit() {
    exits vfork-_exit 1
    expect "close notices" "$(grep -c '^rheaper: wrote ' "$w/err" || true)" 1
    yes_ "the close counts the parent's 5 events" grep -q '^rheaper: wrote .* (5 events)' "$w/err"
}
# glibc's daemon(3): the start-up process ends in _exit inside libc; the daemon
# goes on and returns from main. Its pid is known once it wrote it.
case_exit_daemon() {
    prog "$helpers/rel_exit" daemon "$w/daemon.pid"
    expect "exit status of rel_exit daemon" "$rc" 0
    i=0
    while [ $i -lt 100 ]; do
        if [ -s "$w/daemon.pid" ] && ! kill -0 "$(cat "$w/daemon.pid")" 2> /dev/null; then break; fi
        sleep 0.1
        i=$((i + 1))
    done
    [ $i -lt 100 ] || bad "the daemon did not end within 10 s"
    expect "profiles" "$(nrips)" 2
    "$bin/rheaper" list "$prof" > "$w/list.txt" 2>&1
    expect "profiles listed complete" "$(grep -c ' complete ' "$w/list.txt")" 2
    expect "profiles listed damaged" "$(grep -c 'damaged' "$w/list.txt" || true)" 0
    convert_all --loud
    expect "converter lines" "$(grep -c . "$w/conv.err" || true)" 0
    check_expect
}

# ---- files and privileges ----------------------------------------------------

# Profiles are mode 0600 whatever the umask.
case_files_mode() {
    umask 000
    prog "$helpers/rel_faults" workload
    expect "exit status" "$rc" 0
    expect "profiles" "$(nrips)" 1
    expect "mode of the profile" "$(stat -c %a "$prof/$(rips)")" 600
    convert_all
    check_expect
}

# start_waiting HELPER ARGS...: starts a helper that waits for "go" on a fifo
# before it execs, so its pid (and so its profile's name) is known in advance.
start_waiting() {
    rm -f "$w/go" && mkfifo "$w/go"
    (read -r _ < "$w/go"; RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$prof" exec "$@" > "$w/out" 2> "$w/err") &
    pid=$!
}
go() {
    echo go > "$w/go"
    set +e; wait "$pid"; rc=$?; set -e
}

# Symlinks planted at the profile's names and a profile left by an earlier
# process with the same pid: none is followed or touched; the runtime moves on
# to the next free name.
case_files_planted() {
    start_waiting "$helpers/rel_faults" workload
    echo "precious" > "$w/target"
    ln -s "$w/target" "$prof/rip-$pid"            # an existing file elsewhere
    ln -s "$w/dangling" "$prof/rip-$pid.1"        # a file it would create
    echo "old profile of an earlier process $pid" > "$prof/rip-$pid.2"
    go
    expect "exit status" "$rc" 0
    expect "target untouched" "$(cat "$w/target")" "precious"
    yes_ "the dangling link's target was not created" test ! -e "$w/dangling"
    yes_ "rip-$pid is still a symlink" test -L "$prof/rip-$pid"
    yes_ "rip-$pid.1 is still a symlink" test -L "$prof/rip-$pid.1"
    expect "the old profile" "$(cat "$prof/rip-$pid.2")" "old profile of an earlier process $pid"
    yes_ "the profile went to rip-$pid.3" test -f "$prof/rip-$pid.3"
    "$bin/rheaper-convert" --quiet "$prof/rip-$pid.3" "$prof/rip-$pid.3.db"
    expect "rows in rip-$pid.3" "$(sql "$prof/rip-$pid.3.db" "SELECT count(*) FROM allocations WHERE size BETWEEN 2000 AND 2199")" 200
    expect "profiles in the directory" "$(ls "$prof" | grep -vc '\.db$')" 4
}

# No RHEAPER_* value (nor TMPDIR or HOME) makes the runtime write anywhere but
# the profile directory (RHEAPER_LOG, a log file by request, is tests/integration/servers').
case_files_env_outside() {
    sb=$w/sandbox
    mkdir -p "$sb/cwd" "$sb/prof" "$sb/elsewhere"
    touch "$w/marker"
    sleep 1 # file times have a 1 s resolution on some file systems
    (cd "$sb/cwd" && env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$sb/prof" \
        RHEAPER_MAX_STACK_DEPTH="../elsewhere/depth" RHEAPER_MAX_TRACKERS="$sb/elsewhere/trackers" \
        RHEAPER_BUFFER_SIZE="%s%n%s" RHEAPER_OUTPUT="$sb/elsewhere/out" RHEAPER_LOGFILE="$sb/elsewhere/log" \
        RHEAPER_PROFILE="$sb/elsewhere/p" RHEAPER_FILE="../elsewhere/f" TMPDIR="$sb/elsewhere" \
        HOME="$sb/elsewhere" "$helpers/rel_faults" workload > "$w/out" 2> "$w/err") && rc=0 || rc=$?
    expect "exit status" "$rc" 0
    expect "warning lines for the three bad numbers" "$(grep -c '^rheaper: ignoring' "$w/err" || true)" 3
    expect "files written outside the profile directory" \
        "$(find "$sb" -newer "$w/marker" -type f ! -path "$sb/prof/*" | wc -l | tr -d ' ')" 0
    expect "profiles in the profile directory" "$(ls "$sb/prof" | wc -l | tr -d ' ')" 1
    # a relative RHEAPER_PROFILE_DIR is taken from the working directory
    mkdir -p "$sb/cwd/rel"
    (cd "$sb/cwd" && env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR=rel "$helpers/rel_faults" workload \
        > "$w/out" 2> "$w/err") && rc=0 || rc=$?
    expect "exit status (relative directory)" "$rc" 0
    expect "profiles in cwd/rel" "$(ls "$sb/cwd/rel" | wc -l | tr -d ' ')" 1
    expect "files written outside the two profile directories" \
        "$(find "$sb" -newer "$w/marker" -type f ! -path "$sb/prof/*" ! -path "$sb/cwd/rel/*" | wc -l | tr -d ' ')" 0
}

# privileged MODE CHOWN: a setuid or setgid copy ignores RHEAPER_* (root only:
# the copy is given to nobody/nogroup, so running it changes an id).
privileged() {
    [ "$(id -u)" -eq 0 ] || skip "making a setuid/setgid program for another user needs root"
    d=$(mktemp -d "${TMPDIR:-/tmp}/rh-rel-suid-XXXXXX")
    chmod 0755 "$d"
    mkdir "$d/prof" && chmod 1777 "$d/prof"
    cp "$helpers/rel_files" "$d/prog"
    chown "$2" "$d/prog"
    # control: without the bit, the same copy run as nobody writes a profile
    chmod 0755 "$d/prog"
    set +e
    setpriv --reuid=nobody --regid=nogroup --clear-groups env RHEAPER_ENABLE=1 \
        RHEAPER_PROFILE_DIR="$d/prof" "$d/prog" ids > "$w/out" 2> "$w/err"
    rc=$?
    set -e
    expect "control run exit status" "$rc" 0
    expect "control run profiles" "$(ls "$d/prof" | wc -l | tr -d ' ')" 1
    rm -f "$d/prof"/*
    chmod "$1" "$d/prog"
    set +e
    env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d/prof" "$d/prog" ids > "$w/out" 2> "$w/err"
    rc=$?
    set -e
    ids=$(cat "$w/out")
    set -- $ids
    if [ "$1" = "$2" ] && [ "$3" = "$4" ]; then
        rm -rf "$d"
        skip "the set-id bit had no effect here (nosuid mount?): ids $ids"
    fi
    expect "exit status" "$rc" 0
    expect "profiles written by the set-id program" "$(ls "$d/prof" | wc -l | tr -d ' ')" 0
    expect "runtime lines" "$(rh_lines)" 0
    rm -rf "$d"
}
case_files_setuid() { privileged 4755 nobody; }
case_files_setgid() { privileged 2755 :nogroup; }

# Quotes and SQL in the program's path, its arguments and its thread names
# arrive in the database as data.
case_files_sql_quotes() {
    evil="x'); DROP TABLE meta; --\"q"
    mkdir -p "$w/bin"
    cp "$helpers/rel_files" "$w/bin/$evil"
    tname="a'b\";DROP c--"
    prog "$w/bin/$evil" named "$tname"
    expect "exit status" "$rc" 0
    convert_all
    db=$prof/$(rips).db
    expect "program" "$(sql "$db" "SELECT value FROM meta WHERE key = 'program'")" "$w/bin/$evil"
    expect "args" "$(sql "$db" "SELECT replace(value, char(0), ' ') FROM meta WHERE key = 'args'")" \
        "$w/bin/$evil named $tname"
    expect "thread name" "$(sql "$db" "SELECT count(*) FROM threads WHERE name = 'a''b\";DROP c--'")" 1
    expect "the named thread's rows" "$(sql "$db" "SELECT count(*) FROM allocations a JOIN threads t ON t.id = a.alloc_thread WHERE t.name = 'a''b\";DROP c--' AND a.size = 1112")" 7
    # the tables every profile has are all still there (later features add more)
    expect "tables" "$(sql "$db" "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('alloc_rows', 'backtraces', 'stacks', 'stack_stats', 'thread_stats', 'timeline', 'timeline_stacks', 'leak_curve', 'skipped_functions', 'threads', 'modules', 'meta')")" 12
}
