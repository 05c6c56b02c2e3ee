# live_stream.sh: the live view and streaming of a cross target, read by the
# host's tools as docs/live.md and docs/streaming.md tell users to. Sourced by
# check_cross.sh (for aarch64) after its runs, with its variables (src,
# hostbin, work, build, qemu, sysroot, target) and helpers (q, eq, ok, bad).
#
# live: tests/e2e/live/lv_grow.c, built with the target's rheaper-cc, runs
#   under qemu and allocates what it is told on stdin; `rheaper live --once
#   --json PID` on the running program must show its call sites' figures
#   exactly (grow_site on top), and once it has ended, the snapshot of its rip
#   file and the running one must both equal the converted database's totals.
# stream: cross_prog.c again (the dynamic run's program), sent to `rheaper
#   collect` with RHEAPER_STREAM; the collected file converts to what the
#   file-based dynamic run converted to: every count, byte total, leak and
#   event, and the live view of the collected file agrees with it too.

# lseq WHAT GOT WANT: one check of a value the shell computed.
lseq() {
    if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}
# field NAME JSON-LINE: the integer value of "NAME": in the line.
lsfield() { printf '%s\n' "$2" | sed -n "s/.*\"$1\": \([0-9-]*\).*/\1/p"; }
# lssite FUNCTION FILE: the JSON line of that call site in a snapshot.
lssite() { grep "\"function\": \"$1\"" "$2" | head -1; }
# lswait FILE RE: waits (up to 60 s, qemu is slow) until FILE has a line RE.
lswait() {
    _w=0
    while ! grep -q -- "$2" "$1" 2>/dev/null; do
        _w=$((_w + 1))
        [ $_w -gt 600 ] && return 1
        sleep 0.1
    done
}
# lstotals SNAPSHOT-LINE: the totals a snapshot's first line gives, as
# live_bytes:live_blocks:alloc_blocks:alloc_bytes:freed_blocks:freed_bytes:peak_bytes
lstotals() {
    _t=""
    for _c in live_bytes live_blocks alloc_blocks alloc_bytes freed_blocks freed_bytes peak_bytes; do
        _t="$_t${_t:+:}$(lsfield $_c "$1")"
    done
    echo "$_t"
}
# The same totals from a converted database.
lsdbtotals="SELECT coalesce(sum(CASE WHEN dealloc_after IS NULL THEN size END), 0) || ':' ||
    sum(dealloc_after IS NULL) || ':' || count(*) || ':' || sum(size) || ':' ||
    sum(dealloc_after IS NOT NULL) || ':' || coalesce(sum(CASE WHEN dealloc_after IS NOT NULL THEN size END), 0) ||
    ':' || (SELECT max(live_bytes) FROM heap_timeline) FROM allocations"

# ---- the live view of a running program -----------------------------------
run=live
l=$work/live
mkdir -p "$l"
lvpid=
if ! "$build/bin/rheaper-cc" -O1 -g -std=gnu11 -pthread -o "$l/lv_grow" "$src/tests/e2e/live/lv_grow.c" \
    > "$l/cc.log" 2>&1; then
    bad "lv_grow does not build"
    cat "$l/cc.log"
else
    mkfifo "$l/in"
    (cd "$l" && exec env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$l" timeout 300 "$qemu" -L "$sysroot" \
        ./lv_grow < in > out 2> err) &
    lvjob=$!
    exec 5> "$l/in"
    ncmd=0
    # lvcmd COMMAND: sends one command and waits until lv_grow has done it
    lvcmd() {
        printf '%s\n' "$1" >&5
        ncmd=$((ncmd + 1))
        lswait "$l/out" "^ok $ncmd\$" || { bad "lv_grow did not answer '$1'"; return 1; }
    }
    # "ready PID": qemu-user runs the program in its own process, so the
    # program's pid is the one `rheaper live` is given, as on the target
    lswait "$l/out" '^ready' && lvpid=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$l/out")
    if [ -n "$lvpid" ] && lvcmd "grow 10 1000" && lvcmd "free 4" && lvcmd "thread 5 333"; then
        if "$hostbin/rheaper" live --once --json "$lvpid" > "$l/a.json" 2> "$l/a.err"; then
            ok
            s=$(lssite grow_site "$l/a.json")
            # live bytes:blocks, allocated blocks:bytes, freed blocks:bytes
            got="$(lsfield live_bytes "$s"):$(lsfield live_blocks "$s"):$(lsfield alloc_blocks "$s"):$(lsfield alloc_bytes "$s"):$(lsfield freed_blocks "$s"):$(lsfield freed_bytes "$s")"
            lseq "grow_site in the live view" "$got" "6000:6:10:10000:4:4000"
            top=$(grep -m 1 '"function": ' "$l/a.json" | sed -n 's/.*"function": "\([^"]*\)".*/\1/p')
            lseq "the live view's top site" "$top" grow_site
            s=$(lssite worker_site "$l/a.json")
            got="$(lsfield alloc_blocks "$s"):$(lsfield alloc_bytes "$s"):$(lsfield freed_blocks "$s"):$(lsfield live_bytes "$s")"
            lseq "worker_site in the live view" "$got" "5:1665:5:0"
            t=$(grep '"name": "lvworker"' "$l/a.json")
            got="$(lsfield alloc_blocks "$t"):$(lsfield freed_by_others_blocks "$t"):$(lsfield freed_by_others_bytes "$t")"
            lseq "the worker thread in the live view" "$got" "5:5:1665"
            grep -q '"state": "running", "ended": false' "$l/a.json" && ok || bad "the live view does not say running"
            echo "[$target/live] running: $(head -1 "$l/a.json" | sed 's/.*"live_bytes"/"live_bytes"/; s/, "unknown_frees".*//')"
        else
            bad "rheaper live --once --json PID"
            cat "$l/a.err"
        fi
    fi
    printf 'quit\n' >&5
    exec 5>&-
    wait "$lvjob" || bad "lv_grow exited with $?"
    rip=$(ls "$l"/rip-* 2>/dev/null || true)
    if [ -n "$rip" ] && "$hostbin/rheaper" live --once --json "$rip" > "$l/c.json" 2> "$l/c.err" &&
        "$hostbin/rheaper-convert" --quiet "$rip" "$l/profile.db" 2> "$l/convert.err"; then
        grep -q '"ended": true' "$l/c.json" && ok || bad "the live view of the finished rip does not say ended"
        want=$(q "$l/profile.db" "$lsdbtotals")
        got=$(lstotals "$(head -1 "$l/c.json")")
        lseq "live view of the finished rip = database (live bytes:blocks, allocated blocks:bytes, freed blocks:bytes, peak)" \
            "$got" "$want"
        # the running program's snapshot: nothing is allocated or freed after
        # it but the program's exit, which frees nothing the wrappers see
        got=$(lstotals "$(head -1 "$l/a.json" 2>/dev/null)")
        lseq "live view of the running program = database" "${got%:*}" "${want%:*}"
        eq "$l/profile.db" "grow_site in the database (allocated:bytes:live:live bytes)" \
            "SELECT count(*) || ':' || sum(a.size) || ':' || sum(a.dealloc_after IS NULL) || ':' ||
             sum(CASE WHEN a.dealloc_after IS NULL THEN a.size ELSE 0 END) FROM allocations a
             JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 AND b.sym = 'grow_site'" "10:10000:6:6000"
        eq "$l/profile.db" "live: events lost" "SELECT value FROM meta WHERE key = 'events_lost'" "0"
        eq "$l/profile.db" "live: unknown frees" "SELECT value FROM meta WHERE key = 'unknown_frees'" "0"
        echo "[$target/live] database: $want (live bytes:blocks, allocated blocks:bytes, freed blocks:bytes, peak)"
    else
        bad "the finished rip: $rip (rheaper live or rheaper-convert)"
        cat "$l/c.err" "$l/convert.err" 2>/dev/null
    fi
fi

# ---- streaming to a collector -------------------------------------------------
run=stream
st=$work/stream
mkdir -p "$st/col"
"$hostbin/rheaper" collect --listen 127.0.0.1:0 --dir "$st/col" > "$st/col.out" 2> "$st/col.err" &
colpid=$!
port=
lswait "$st/col.out" 'listening on' &&
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$st/col.out")
file_db=$work/dynamic/profile.db
if [ -z "$port" ]; then
    bad "rheaper collect did not start"
    cat "$st/col.err"
elif [ ! -f "$file_db" ]; then
    bad "no database of the file-based dynamic run to compare with"
elif ! (cd "$st" && env RHEAPER_ENABLE=1 RHEAPER_LOG=stderr RHEAPER_STREAM="127.0.0.1:$port" \
    timeout 120 "$qemu" -L "$sysroot" "$work/dynamic/prog" > out 2> err); then
    bad "the streamed program exited with $?"
    cat "$st/err"
else
    # the runtime's one line, the collector's "complete", no local file
    grep -q "^rheaper: streamed [0-9]* events to collector 127.0.0.1:$port\$" "$st/err" && ok ||
        bad "no 'streamed' line: $(cat "$st/err")"
    lswait "$st/col.out" 'complete)' && ok || bad "the collector did not report a complete stream"
    lseq "local files of a streamed run" "$(find "$st" -maxdepth 1 -name 'rip-*' | wc -l)" 0
    set -- "$st"/col/rip-*
    if [ $# = 1 ] && [ -f "$1" ] && "$hostbin/rheaper-convert" --quiet "$1" "$st/profile.db" 2> "$st/convert.err"; then
        sdb=$st/profile.db
        # everything the file-based run's database says, the streamed one says
        for what in \
            "SELECT count(*) || ':' || sum(size) || ':' || sum(dealloc_after IS NULL) || ':' ||
             coalesce(sum(CASE WHEN dealloc_after IS NULL THEN size END), 0) FROM allocations" \
            "SELECT b.sym || ':' || a.kind || ':' || count(*) || ':' || sum(a.size) || ':' ||
             sum(a.dealloc_after IS NULL) FROM allocations a JOIN backtraces b ON b.id = a.bt
             AND b.frame_no = 0 GROUP BY b.sym, a.kind ORDER BY b.sym, a.kind" \
            "SELECT count(DISTINCT alloc_thread) FROM allocations" \
            "SELECT key || '=' || value FROM meta WHERE key IN ('events_recorded', 'events',
             'allocs', 'frees', 'reallocs', 'events_lost', 'unknown_frees', 'clean', 'architecture',
             'peak_bytes', 'peak_blocks') ORDER BY key"; do
            eq "$sdb" "streamed = file-based: $(echo "$what" | head -1 | cut -c1-60)..." "$what" "$(q "$file_db" "$what")"
        done
        eq "$sdb" "streamed_from" "SELECT value FROM meta WHERE key = 'streamed_from'" "127.0.0.1"
        eq "$sdb" "stream_queue_full" "SELECT value FROM meta WHERE key = 'stream_queue_full'" "0"
        if "$hostbin/rheaper" live --once --json "$1" > "$st/c.json" 2> "$st/c.err"; then
            got=$(lstotals "$(head -1 "$st/c.json")")
            want=$(q "$sdb" "$lsdbtotals")
            lseq "live view of the collected file = its database" "$got" "$want"
        else
            bad "rheaper live --once --json on the collected file"
            cat "$st/c.err"
        fi
        echo "[$target/stream] $(q "$sdb" "SELECT count(*) || ' allocations, ' || sum(size) || ' bytes, ' ||
            sum(dealloc_after IS NULL) || ' never freed' FROM allocations"), as the file-based run"
    else
        bad "collected files: $*"
        cat "$st/convert.err" 2>/dev/null
    fi
fi
kill -TERM "$colpid" 2>/dev/null
wait "$colpid" || bad "rheaper collect exited with $? after SIGTERM"
