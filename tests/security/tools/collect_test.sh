# collect_test.sh: `rheaper collect` against hostile senders. Root collects
# into a directory; nobody (setpriv) opens idle connections beyond
# --max-clients, sends chunk headers that declare capacity and carry nothing,
# floods past --max-bytes, crowds a collector held at a small open-file limit
# (prlimit --nofile), plants a symlink and a FIFO at the names the collector
# will create, and stalls a ClickHouse push. Each case is bounded in time,
# CPU, disk (du and apparent size of the outputs) and lines of log, and a real
# program's stream (serve_prog.c, RHEAPER_STREAM) still arrives complete.
#
# usage: sh collect_test.sh BIN SRC WORK HOSTILE
BIN=$1 SRC=$2 W=$3 HOSTILE=$4 CASE=collect
. "$SRC/lib.sh"
sec_setup
sec_record "$W/tpl0.rip"
# a real header for the hostile streams, readable by the attacker
cp "$W/tpl0.rip" "$T/tpl.rip"
chmod 0644 "$T/tpl.rip"
TPL=$T/tpl.rip

# start_collect NAME ARGS...: starts a collector writing into $W/NAME/ (its
# output in $W/NAME.out and .err), sets CPID and CPORT
start_collect() {
    name=$1
    shift
    mkdir -p "$W/$name"
    "$@" --listen 127.0.0.1:0 --dir "$W/$name" >"$W/$name.out" 2>"$W/$name.err" &
    CPID=$!
    CPORT=""
    i=0
    while [ $i -lt 100 ] && [ -z "$CPORT" ]; do
        CPORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$W/$name.out" 2>/dev/null)
        [ -n "$CPORT" ] || sleep 0.1
        i=$((i + 1))
    done
    [ -n "$CPORT" ] || fail "collect $name did not start: $(cat "$W/$name.err")"
}

# stop_collect NAME: SIGTERM, at most 15 s to end; checks exit status 0
stop_collect() {
    kill -TERM "$CPID"
    timeout 15 sh -c "while kill -0 $CPID 2>/dev/null; do sleep 0.1; done" ||
        bad "collect $1 did not stop within 15 s"
    wait "$CPID"
    expect "collect $1: exit status after SIGTERM" "$?" 0
}

# real NAME: one real program streams to $CPORT; its profile must be complete
real() {
    (cd "$W" && RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$CPORT timeout 60 ./prog \
        >"$W/$1.prog.out" 2>"$W/$1.prog.err")
    expect "$1: the real program's exit status" "$?" 0
    sleep 0.5
    expect "$1: its profile arrived complete" "$(grep -c ', complete)$' "$W/$1.out")" 1
}

# ---- idle connections past --max-clients ----
start_collect idle "$BIN/rheaper" collect --max-clients 50
hostile idle "$CPORT" 60 25 >"$W/idle.h" &
H=$!
sleep 1
t0=$(date +%s)
real idle
echo "idle: the real stream took $(($(date +%s) - t0)) s beside 60 idle connections"
wait $H
echo "idle: $(cat "$W/idle.h")"
set -- $(cat "$W/idle.h")
expect "idle: connections closed by the collector" "$4" "$2"
le "idle: seconds until the last was closed (10 s handshake)" "$(printf %.0f "$6")" 12
stop_collect idle
le "idle: lines on stderr" "$(wc -l <"$W/idle.err")" 14

# ---- at a small open-file limit, crowded ----
start_collect emfile prlimit --nofile=24:24 "$BIN/rheaper" collect --max-clients 100
c0=$(cpu_ticks "$CPID")
hostile idle "$CPORT" 200 14 >"$W/emfile.h" &
H=$!
sleep 2
real emfile
wait $H
c1=$(cpu_ticks "$CPID")
echo "emfile: $(cat "$W/emfile.h"); collector CPU $((c1 - c0)) ticks over the crowd"
le "emfile: collector CPU ticks while 200 idle connections wait (hz $(getconf CLK_TCK))" $((c1 - c0)) 200
expect "emfile: max-clients lowered to the fd limit" "$(grep -c 'lowered to' "$W/emfile.err")" 1
stop_collect emfile
le "emfile: lines on stderr" "$(wc -l <"$W/emfile.err")" 14
le "emfile: accept lines" "$(grep -c 'accept' "$W/emfile.err")" 2

# ---- at an open-file limit that leaves no descriptor for a second socket:
# accept fails with EMFILE; the collector pauses or hands the descriptor of a
# connection still in its handshake to the new one, says so once, and does
# not spin (a stream could not be stored here at all: its file needs one more)
# (descriptors the test inherited are closed first: the limit is then exact,
# 0-2, the listening socket and one connection)
start_collect emfile2 "$HOSTILE" closefds prlimit --nofile=5:5 "$BIN/rheaper" collect
c0=$(cpu_ticks "$CPID")
hostile idle "$CPORT" 100 6 >"$W/emfile2.h" &
H=$!
sleep 5
c1=$(cpu_ticks "$CPID")
wait $H
sleep 3
echo "emfile2: $(cat "$W/emfile2.h"); collector CPU $((c1 - c0)) ticks in 5 s at EMFILE"
le "emfile2: collector CPU ticks in 5 s at EMFILE" $((c1 - c0)) 50
expect "emfile2: EMFILE said once" "$(grep -c 'accept: Too many open files' "$W/emfile2.err")" 1
set -- $(cat "$W/emfile2.h")
# one handshake a second gives its descriptor to a waiting connection
le "emfile2: 4 (at least) of the connections served in 6 s" 4 "$4"
stop_collect emfile2
grep 'accepts failed' "$W/emfile2.err"
le "emfile2: lines on stderr" "$(wc -l <"$W/emfile2.err")" 16

# ---- chunk headers that declare capacity and carry nothing ----
start_collect sparse "$BIN/rheaper" collect
hostile chunks "$CPORT" 2000 67108864 "$TPL" >"$W/sparse.h"
sleep 1
f=$(ls "$W/sparse"/rip-* | head -1)
size=$(stat -c %s "$f")
du=$(du -k "$f" | cut -f1)
echo "sparse: $(cat "$W/sparse.h") of headers declaring 2000 x 64 MiB: file $size bytes, du $du KiB"
le "sparse: apparent size (2000 empty chunks at 4 KiB each)" "$size" $((2001 * 4096 + 4096))
le "sparse: disk use KiB" "$du" 9000
expect "sparse: the file converts" "$("$BIN/rheaper-convert" "$f" "$W/sparse.db" --quiet >/dev/null 2>&1; echo $?)" 0
stop_collect sparse

# ---- a sender past --max-bytes ----
start_collect flood "$BIN/rheaper" collect --max-bytes 8M
hostile flood "$CPORT" 64 "$TPL" >"$W/flood.h"
sleep 1
f=$(ls "$W/flood"/rip-* | head -1)
size=$(stat -c %s "$f")
echo "flood: $(cat "$W/flood.h"); file $size bytes"
le "flood: file size under --max-bytes 8M" "$size" 8388608
expect "flood: said why" "$(grep -c 'reached --max-bytes 8388608' "$W/flood.err")" 1
stop_collect flood

# ---- a symlink and a FIFO where the collector will write ----
pid=$(od -An -tu4 -j 16 -N 4 "$TPL" | tr -d ' ') # the template's pid
mkdir -p "$W/plant"
chown nobody:nogroup "$W/plant"
chmod 1777 "$W/plant"
echo secret >"$W/victim"
AS ln -s "$W/victim" "$W/plant/rip-$pid"
AS mkfifo "$W/plant/rip-$pid.1"
start_collect plant "$BIN/rheaper" collect
timeout 30 "$HOSTILE" chunks "$CPORT" 3 4096 "$TPL" >/dev/null
sleep 1
expect "plant: the symlink's target untouched" "$(cat "$W/victim")" secret
expect "plant: written beside them" "$(ls "$W/plant" | grep -c "^rip-$pid.2$")" 1
stop_collect plant

# ---- a push that never ends: the collector's stop is bounded ----
timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$HOSTILE" stall 50 >"$W/stall.port" &
STALL=$!
sleep 1
SP=$(head -1 "$W/stall.port")
start_collect push "$BIN/rheaper" collect --clickhouse "http://127.0.0.1:$SP"
real push
sleep 2
t0=$(date +%s)
stop_collect push
t=$(($(date +%s) - t0))
echo "push: the collector stopped $t s after SIGTERM with a push hanging"
le "push: seconds to stop with a hanging push" "$t" 14
kill "$STALL" 2>/dev/null
wait "$STALL" 2>/dev/null
checks_done
