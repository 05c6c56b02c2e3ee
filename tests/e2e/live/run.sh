#!/bin/sh
# tests/e2e/live/run.sh BIN HELPER WORK CASE: one case of the live view's tests
# (the live view, and saved profiles in the terminal UI). The
# terminal UI is driven as a person drives it: in tmux, reading the screen
# with capture-pane and typing keys with send-keys. HELPER is lv_grow (built
# with rheaper-cc), which allocates exactly what it is told on stdin (and
# burns CPU in burn_site when told to, for the CPU view).
# Prints "FAIL: ..." and exits 1 on a failure.
set -u
BIN=$1 HELPER=$2 WORK=$3 CASE=$4
RH=$BIN/rheaper
. "$(dirname "$0")/../../lib/require.sh"
require_tool tmux tmux
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
TMUX_SOCK="$WORK/tmux.sock"
PIDS=""

cleanup() {
    tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
    for p in $PIDS; do kill "$p" 2>/dev/null; done
}
fail() {
    echo "FAIL: $CASE: $*"
    [ -f screen ] && { echo "--- last screen"; cat screen; }
    for f in *.err; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
    cleanup
    exit 1
}
trap cleanup EXIT

tm() { tmux -S "$TMUX_SOCK" "$@"; }
# Shows what is on the screen now (also kept in ./screen for failures).
S=t # the tmux session shown
screen() { tm capture-pane -p -t "$S" >screen 2>/dev/null; cat screen; }
# Waits (up to 30 s) until the screen has a line matching $1.
wait_screen() {
    _w=0
    until screen | grep -q -- "$1"; do
        _w=$((_w + 1))
        [ $_w -gt 300 ] && fail "timed out waiting for '$1' on the screen"
        sleep 0.1
    done
}
# Waits (up to 30 s) until file $1 has a line matching $2.
wait_line() {
    _w=0
    while ! grep -q -- "$2" "$1" 2>/dev/null; do
        _w=$((_w + 1))
        [ $_w -gt 3000 ] && fail "timed out waiting for '$2' in $1"
        sleep 0.01
    done
}
# Starts "$PROG" (default: $HELPER, lv_grow) as program $1 (a copy by that
# name) with the environment assignments that follow, stdin from the fifo
# $1.in on fd 3.
NCMD=0
start() {
    name=$1
    shift
    cp "${PROG:-$HELPER}" "./$name"
    mkfifo "$name.in"
    env "$@" "./$name" <"$name.in" >"$name.out" 2>"$name.err" &
    LAST=$!
    PIDS="$PIDS $LAST"
    exec 3>"$name.in"
    NCMD=0
    OUT=$name.out
    wait_line "$OUT" '^ready'
}
# Sends one command to the program on fd 3 and waits until it is done.
cmd() {
    printf '%s\n' "$1" >&3
    NCMD=$((NCMD + 1))
    wait_line "$OUT" "^ok $NCMD\$"
}
stop() { printf 'quit\n' >&3; exec 3>&-; wait "$LAST"; }
# field NAME JSON-LINE: the integer value of "NAME": in the line.
field() { printf '%s\n' "$2" | sed -n "s/.*\"$1\": \([0-9-]*\).*/\1/p"; }
# The JSON line of call site function $1 in snapshot file $2.
site() { grep "\"function\": \"$1\"" "$2" | head -1; }
# The JSON line of the heap call site whose function matches the extended
# regex $1 and whose figure $2 is $3, in snapshot file $4.
site_with() {
    grep '"site": ' "$4" | grep -E "\"function\": \"$1" | grep "\"$2\": $3[,}]" | head -1
}
# The JSON string "NAME": "..." in the line (no escapes in it).
sfield() { printf '%s\n' "$2" | sed -n "s/.*\"$1\": \"\([^\"]*\)\".*/\1/p"; }
# Bytes shown in the LIVE column of the row of call site $1 on the screen.
live_on_screen() {
    screen | grep " $1 " | head -1 | awk '{m = 1; if ($2 == "KiB") m = 1024;
        else if ($2 == "MiB") m = 1048576; else if ($2 == "GiB") m = 1073741824;
        printf "%d\n", $1 * m}'
}

# spark W VALUES...: the sparkline rh_spark (rh_live_ui.c) draws of VALUES
# (oldest first) in W cells with ASCII glyphs (LC_ALL=C): each cell the
# highest value of its share, at level ceil(8 * value / the highest of all).
spark() {
    _w=$1
    shift
    echo "$@" | awk -v w="$_w" '{
        n = NF; mx = 0
        for (i = 1; i <= n; i++) if ($i > mx) mx = $i
        cells = n < w ? n : w; s = ""
        for (c = 0; c < w - cells; c++) s = s " "
        for (c = 0; c < cells; c++) {
            a = int(c * n / cells); b = int((c + 1) * n / cells); x = 0
            for (i = a; i < b; i++) if ($(i + 1) > x) x = $(i + 1)
            lv = mx > 0 ? int((x * 8 + mx - 1) / mx) : 0
            if (lv > 8) lv = 8
            s = s substr(" ._-=+*#@", lv + 1, 1)
        }
        print s }'
}
# trend_cols: the heap view's TREND column on the screen now: its first
# column in TC and its width in TW (from the header line).
trend_cols() {
    _h=$(screen | sed -n 4p)
    TC=$(printf '%s\n' "$_h" | awk '{ print index($0, "TREND") }')
    _c=$(printf '%s\n' "$_h" | awk '{ print index($0, "CALL SITE") }')
    [ "$TC" -gt 0 ] && [ "$_c" -gt "$TC" ] || fail "no TREND column: $_h"
    TW=$((_c - TC - 2))
}
# trend_on_screen LABEL: the TREND cells of LABEL's row (after trend_cols).
trend_on_screen() {
    screen | grep -F " $1" | head -1 | cut -c"$TC-$((TC + TW - 1))"
}

case $CASE in
live-tmux)
    # A program that grows grow_site by 8000 bytes every 20 ms, watched live.
    start lvtmux RHEAPER_ENABLE=1
    cmd "auto on"
    tm new-session -d -s t -x 120 -y 30 "'$RH' live $LAST 2>live.err; echo EXIT=\$?; sleep 600"
    wait_screen 'grow_site lv_grow.c'
    screen | grep -q "rheaper live  pid $LAST  \[running\]  .*lvtmux" || fail "title line"
    a=$(live_on_screen grow_site)
    [ "${a:-0}" -gt 0 ] || fail "grow_site shows no live bytes"
    # its live bytes grow while we watch
    _w=0
    until b=$(live_on_screen grow_site) && [ "${b:-0}" -gt $((a + 80000)) ]; do
        _w=$((_w + 1))
        [ $_w -gt 300 ] && fail "grow_site's live bytes did not grow past $a + 80000 (now $b)"
        sleep 0.1
    done
    screen | sed -n 4p | grep -q 'LIVE .*BLOCKS .*TREND .*CALL SITE' || fail "heap header"
    # the top row (sorted by live bytes) is grow_site
    screen | sed -n 5p | grep -q 'grow_site lv_grow.c' || fail "grow_site is not the top row"
    # keys: views, sort, filter, pause
    tm send-keys -t "$S" 3
    wait_screen 'total live heap over time'
    screen | grep -q '^0  *|#' || fail "chart has no bars"
    tm send-keys -t "$S" +
    wait_screen 'zoom 2x'
    tm send-keys -t "$S" 4
    wait_screen 'ID .*TID .*NAME .*ALLOCATED'
    screen | grep -q " $LAST lvtmux" || fail "threads view lacks the main thread"
    tm send-keys -t "$S" s
    wait_screen 'sort: allocated bytes'
    tm send-keys -t "$S" 1
    wait_screen 'no CPU samples in this profile'
    tm send-keys -t "$S" Tab
    wait_screen 'LIVE .*BLOCKS .*TREND'
    tm send-keys -t "$S" / 'IO_file' Enter
    wait_screen 'filter: /IO_file/'
    screen | grep -q 'grow_site lv_grow.c:' && fail "the filter kept grow_site"
    tm send-keys -t "$S" / Enter
    wait_screen 'grow_site lv_grow.c'
    tm send-keys -t "$S" p
    wait_screen 'PAUSED'
    tm send-keys -t "$S" p
    # a resize redraws at the new size
    tm resize-window -t "$S" -x 70 -y 18
    wait_screen 'TREND'
    _w=0
    until [ "$(screen | wc -l)" = 18 ] && screen | sed -n 18p | grep -q '^ j/k move'; do
        _w=$((_w + 1))
        [ $_w -gt 100 ] && fail "footer not on line 18 of 18 after the resize"
        sleep 0.1
    done
    screen | head -1 | grep -q '^ rheaper live' || fail "title not redrawn after the resize"
    # the program ends: the view says so and keeps the final state
    stop
    wait_screen 'The program has ended'
    screen | head -1 | grep -q '\[program ended\]' || fail "title does not say the program ended"
    "$RH" live --once --json "rip-$LAST" >final.json 2>final.err || fail "--once on the rip"
    want=$(field live_bytes "$(site grow_site final.json)")
    [ "$want" -gt 0 ] || fail "no final figure"
    tm resize-window -t "$S" -x 120 -y 30
    _w=0
    until [ "$(live_on_screen grow_site)" -ge $((want - want / 100)) ] &&
        [ "$(live_on_screen grow_site)" -le $((want + want / 100)) ]; do
        _w=$((_w + 1))
        [ $_w -gt 100 ] && fail "final screen shows $(live_on_screen grow_site), not ~$want"
        sleep 0.1
    done
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    [ -s live.err ] && fail "rheaper live printed: $(cat live.err)"
    ;;
once-json)
    # Exact figures from a snapshot of a running program.
    start lvonce RHEAPER_ENABLE=1
    cmd "grow 10 1000"
    cmd "free 4"
    cmd "thread 5 333"
    "$RH" live --once --json "$LAST" >a.json 2>a.err || fail "live --once --json failed"
    s=$(site grow_site a.json)
    [ "$(field live_bytes "$s")" = 6000 ] || fail "grow_site live_bytes: $s"
    [ "$(field live_blocks "$s")" = 6 ] || fail "grow_site live_blocks: $s"
    [ "$(field alloc_blocks "$s")" = 10 ] || fail "grow_site alloc_blocks: $s"
    [ "$(field alloc_bytes "$s")" = 10000 ] || fail "grow_site alloc_bytes: $s"
    [ "$(field freed_blocks "$s")" = 4 ] || fail "grow_site freed_blocks: $s"
    [ "$(field freed_bytes "$s")" = 4000 ] || fail "grow_site freed_bytes: $s"
    s=$(site worker_site a.json)
    [ "$(field alloc_blocks "$s")" = 5 ] && [ "$(field alloc_bytes "$s")" = 1665 ] &&
        [ "$(field freed_blocks "$s")" = 5 ] && [ "$(field live_bytes "$s")" = 0 ] ||
        fail "worker_site: $s"
    t=$(grep '"name": "lvworker"' a.json)
    [ "$(field alloc_blocks "$t")" = 5 ] && [ "$(field freed_blocks "$t")" = 0 ] &&
        [ "$(field freed_by_others_blocks "$t")" = 5 ] &&
        [ "$(field freed_by_others_bytes "$t")" = 1665 ] && [ "$(field live_blocks "$t")" = 0 ] ||
        fail "worker thread: $t"
    grep -q '"state": "running", "ended": false' a.json || fail "not running"
    # -P NAME finds the same process; the figures move on with the program
    cmd "grow 3 5000"
    "$RH" live --once --json -P lvonce >b.json 2>b.err || fail "live -P failed: $(cat b.err)"
    grep -q "\"pid\": $LAST," b.json || fail "-P found another process"
    s=$(site grow_site b.json)
    [ "$(field live_bytes "$s")" = 21000 ] && [ "$(field alloc_blocks "$s")" = 13 ] ||
        fail "after grow 3 5000: $s"
    # two processes of one name: listed, nothing else done
    cp "$HELPER" ./lvtwin
    mkfifo twin.in
    ./lvtwin <twin.in >/dev/null 2>&1 &
    PIDS="$PIDS $!"
    ./lvtwin <twin.in >/dev/null 2>&1 &
    PIDS="$PIDS $!"
    exec 4>twin.in
    _w=0
    until [ "$(pgrep -x lvtwin | wc -l)" -ge 2 ]; do
        _w=$((_w + 1)); [ $_w -gt 300 ] && fail "twins did not start"; sleep 0.1
    done
    "$RH" live --once --json -P lvtwin >twin.out 2>twin.err && fail "-P with two matches succeeded"
    grep -q 'processes are named lvtwin' twin.err || fail "no list of matches: $(cat twin.err)"
    [ "$(grep -c 'lvtwin' twin.err)" -ge 3 ] || fail "matches not listed: $(cat twin.err)"
    [ -s twin.out ] && fail "-P with two matches printed a snapshot"
    exec 4>&-
    "$RH" live --once -P no-such-process-xyz 2>none.err && fail "-P without a match succeeded"
    grep -q 'no running process is named' none.err || fail "no-match message: $(cat none.err)"
    # after the end: the snapshot of the rip agrees with the converted profile
    stop
    "$RH" live --once --json "rip-$LAST" >c.json 2>c.err || fail "--once on the finished rip"
    grep -q '"ended": true' c.json || fail "not ended: $(head -2 c.json)"
    "$BIN/rheaper-convert" "rip-$LAST" p.db 2>conv.err || fail "convert"
    for col in live_bytes alloc_blocks alloc_bytes freed_blocks freed_bytes; do
        j=$(field $col "$(head -1 c.json)")
        case $col in
        live_bytes) d=$(sqlite3 p.db "select sum(size) from allocations where dealloc_after is null") ;;
        alloc_blocks) d=$(sqlite3 p.db "select count(*) from allocations") ;;
        alloc_bytes) d=$(sqlite3 p.db "select sum(size) from allocations") ;;
        freed_blocks) d=$(sqlite3 p.db "select count(*) from allocations where dealloc_after is not null") ;;
        freed_bytes) d=$(sqlite3 p.db "select coalesce(sum(size), 0) from allocations where dealloc_after is not null") ;;
        esac
        [ "$j" = "$d" ] || fail "$col: live view $j, database $d"
    done
    [ "$(field peak_bytes "$(head -1 c.json)")" = "$(sqlite3 p.db "select max(live_bytes) from heap_timeline")" ] ||
        fail "peak differs from the database's"
    ;;
torn-record)
    # A reader that reads `used` while the record after it is being written:
    # the record is waited for, not called damage, and read once whole.
    start lvtorn RHEAPER_ENABLE=1
    cmd "grow 10 1000"
    cmd "free 4"
    stop
    "$RH" live --once --json "rip-$LAST" >whole.json 2>whole.err || fail "whole rip"
    cp "rip-$LAST" torn
    set -- $("$(dirname "$HELPER")/lv_riptool" tear torn) || fail "lv_riptool"
    [ $# = 2 ] || fail "lv_riptool found no events chunk"
    off=$1 used=$2
    # every cut in the last 48 bytes: no damage, fewer events the earlier the cut
    ew=$(field events "$(head -1 whole.json)")
    prev=$ew less=0 k=1
    while [ $k -le 48 ] && [ $k -lt "$used" ]; do
        "$(dirname "$HELPER")/lv_riptool" used torn "$off" $((used - k)) || fail "lv_riptool used"
        "$RH" live --once --json torn >torn.json 2>torn.err || fail "torn rip (cut $k)"
        [ -s torn.err ] && fail "cut $k bytes short: a record being written was reported: $(cat torn.err)"
        et=$(field events "$(head -1 torn.json)")
        [ "$et" -le "$prev" ] || fail "cut $k: $et events, more than at the cut before ($prev)"
        [ "$et" -lt "$ew" ] && less=1
        prev=$et
        k=$((k + 1))
    done
    [ $less = 1 ] || fail "no cut left an event unread ($ew events)"
    grep -q '"ended": true' torn.json || fail "torn: not ended"
    grep -q 'without closing' torn.json || fail "torn: state should say the profile was not closed"
    "$(dirname "$HELPER")/lv_riptool" used torn "$off" "$used" || fail "lv_riptool used"
    "$RH" live --once --json torn >fixed.json 2>fixed.err || fail "completed rip"
    [ "$(field events "$(head -1 fixed.json)")" = "$ew" ] || fail "the completed record was not read"
    s1=$(site grow_site whole.json) s2=$(site grow_site fixed.json)
    [ "$(field live_bytes "$s2")" = 6000 ] && [ "$(field live_bytes "$s1")" = 6000 ] ||
        fail "grow_site: $s1 / $s2"
    ;;
view-trend)
    # `rheaper view` draws each site's live bytes over the whole run: grow_site
    # grows by 8000 bytes every 20 ms for 2 s (a ramp), then holds. The
    # sparkline on the screen is the one the JSON's trend gives, rising; at 90
    # columns the names stay whole (the columns adapt); m and c switch to the
    # CPU view and the chart and back. CPU samples are recorded beside (their
    # stacks are call sites without heap figures, which must not cost the
    # others their trends). Without an argument view opens the most recent
    # profile.
    require_tool jq jq
    start lvramp RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=199
    cmd "spin on"
    cmd "grow 1 3000"
    cmd "auto on"
    sleep 2
    cmd "auto off"
    cmd "spin off"
    sleep 0.3
    cmd "thread 3 500"
    stop
    "$BIN/rheaper-convert" "rip-$LAST" p.db 2>conv.err || fail "convert"
    "$RH" view p.db --once --json >v.json 2>view.err || fail "view --once --json"
    tr=$(jq -r '.sites[] | select(.function == "grow_site") | .trend | map(tostring) | join(" ")' v.json)
    live=$(jq -r '.sites[] | select(.function == "grow_site") | .live_bytes' v.json)
    set -- $tr
    [ $# = 180 ] || fail "grow_site's trend has $# points, not 180"
    echo "$tr" | awk -v live="$live" '{ for (i = 2; i <= NF; i++) if ($i < $(i - 1)) exit 1
        if ($NF != live || $1 * 4 > live) exit 1 }' ||
        fail "grow_site's trend is not a ramp from under a quarter to its $live live bytes: $tr"
    tm new-session -d -s t -x 120 -y 30 "LC_ALL=C '$RH' view p.db 2>view.err; echo EXIT=\$?; sleep 600"
    wait_screen 'TREND .*CALL SITE'
    trend_cols
    got=$(trend_on_screen "grow_site lv_grow.c")
    want=$(spark "$TW" $tr)
    [ "$got" = "$want" ] || fail "grow_site's trend at 120 columns: '$got', want '$want'"
    # rising: the first cell below the last, the last the highest glyph
    case $got in *@) ;; *) fail "the trend does not end at the top: '$got'" ;; esac
    first=$(printf '%s' "$got" | cut -c1)
    [ "$first" != "@" ] || fail "the trend does not rise: '$got'"
    # every site's trend, from the JSON
    jq -r '.sites[] | "\(.site)\t\(.trend | map(tostring) | join(" "))"' v.json >trends
    [ "$(wc -l <trends)" -ge 3 ] || fail "fewer than 3 sites: $(cat trends)"
    tm resize-window -t "$S" -x 90 -y 30
    _w=0
    until [ "$(screen | sed -n 4p | wc -c)" -le 91 ] && screen | sed -n 4p | grep -q TREND; do
        _w=$((_w + 1)); [ $_w -gt 100 ] && fail "no redraw at 90 columns"; sleep 0.1
    done
    trend_cols
    while IFS="$(printf '\t')" read -r label vals; do
        screen | grep -qF " $label" || fail "site '$label' is not shown whole at 90 columns"
        got=$(trend_on_screen "$label")
        [ "$TW" -ge 12 ] || fail "trend column $TW wide at 90 columns"
        [ "$got" = "$(spark "$TW" $vals)" ] || fail "trend of $label at 90 columns: '$got'"
    done <trends
    screen | sed -n 4p | grep -q 'LIVE .*BLOCKS .*TREND .*CALL SITE' || fail "heap header at 90 columns"
    # m: the view mode (heap <-> CPU); c: the chart, and back
    tm send-keys -t "$S" m
    wait_screen 'SAMPLES .*SHARE .*FUNCTION'
    screen | sed -n 5p | grep -q 'burn_site lv_grow.c' || fail "m: burn_site is not the top CPU row"
    tm send-keys -t "$S" m
    wait_screen 'TREND .*CALL SITE'
    tm send-keys -t "$S" c
    wait_screen 'total live heap over time'
    tm send-keys -t "$S" c
    wait_screen 'TREND .*CALL SITE'
    tm send-keys -t "$S" 4 c
    wait_screen 'total live heap over time'
    tm send-keys -t "$S" c
    wait_screen 'ID .*TID .*NAME'
    screen | grep -q ' m heap/CPU  c chart ' || fail "help line without m and c"
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    # no argument: the most recent profile here, not a rip being recorded
    mkdir -p recent && cp "rip-$LAST" recent/ && sleep 1.1 && cp p.db recent/q.db
    cd recent || fail "cd"
    start lvbusy RHEAPER_ENABLE=1
    cmd "grow 2 100"
    [ -e "rip-$LAST" ] || fail "no rip being recorded"
    "$RH" view --once --json >../n1.json 2>../n1.err || fail "view without argument: $(cat ../n1.err)"
    grep -q 'view: ./q.db (the most recent profile)' ../n1.err || fail "n1: $(cat ../n1.err)"
    touch "rip-$(jq -r .pid ../v.json)"
    "$RH" view --once --json >../n2.json 2>../n2.err || fail "view without argument (rip)"
    grep -q "view: ./rip-$(jq -r .pid ../v.json) (the most recent" ../n2.err || fail "n2: $(cat ../n2.err)"
    stop
    cd .. || fail "cd"
    S1='[.sites[] | "\(.site) \(.alloc_blocks) \(.live_bytes)"] | join(",")'
    [ "$(jq -r "$S1" n1.json)" = "$(jq -r "$S1" v.json)" ] || fail "view of q.db differs from p.db's"
    [ "$(jq -r "$S1" n2.json)" = "$(jq -r "$S1" v.json)" ] || fail "view of the rip differs from p.db's"
    mkdir -p none && cd none || fail "cd"
    RHEAPER_PROFILE_DIR= "$RH" view 2>none.err && fail "view without a profile succeeded"
    grep -q 'no profile in \.' none.err || fail "none: $(cat none.err)"
    cd .. || fail "cd"
    ;;
once-table)
    # `live --once` as text: the heap's sites under their header, by live
    # bytes, then the CPU functions apart; --json in the same order.
    require_tool jq jq
    start lvtable RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=199
    cmd "grow 10 1000"
    cmd "free 4"
    cmd "thread 5 333"
    cmd "grow 3 70000"
    cmd "spin on"
    sleep 1
    cmd "spin off"
    "$RH" live --once "$LAST" >t.txt 2>t.err || fail "live --once: $(cat t.err)"
    "$RH" live --once --json "$LAST" >t.json 2>>t.err || fail "live --once --json"
    cat t.txt >screen
    h=$(grep -n '^heap: [0-9]* call sites by live bytes' t.txt | cut -d: -f1)
    c=$(grep -n '^cpu: [0-9]* samples, [0-9]* functions by samples' t.txt | cut -d: -f1)
    [ -n "$h" ] && [ -n "$c" ] && [ "$c" -gt "$h" ] || fail "no heap and cpu sections"
    sed -n "$((h + 1))p" t.txt | grep -q '^ *LIVE  *BLOCKS  *ALLOCATED  *COUNT  *FREED  *COUNT  CALL SITE$' ||
        fail "heap header: $(sed -n "$((h + 1))p" t.txt)"
    sed -n "$((c + 1))p" t.txt | grep -q '^ *SAMPLES  *SHARE  FUNCTION$' || fail "cpu header"
    sed -n "$((h + 2)),$((c - 2))p" t.txt >heap.rows
    sed -n "$((c + 2)),\$p" t.txt >cpu.rows
    nh=$(sed -n "${h}p" t.txt | awk '{ print $2 }')
    [ "$(wc -l <heap.rows)" = "$nh" ] || fail "heap: $nh sites said, $(wc -l <heap.rows) listed"
    awk 'NR > 1 && $1 > prev { exit 1 } { prev = $1 }' heap.rows || fail "heap rows not by live bytes"
    awk 'NR > 1 && $1 > prev { exit 1 } { prev = $1 }' cpu.rows || fail "cpu rows not by samples"
    # the figures lv_grow made: 3 x 70000 live first, grow_site 6000 + 210000
    head -1 heap.rows | grep -q '^ *216000  *9  *220000  *13  *4000  *4  grow_site lv_grow.c:' ||
        fail "first heap row: $(head -1 heap.rows)"
    grep -q '^ *0  *0  *1665  *5  *1665  *5  worker_site lv_grow.c:' heap.rows ||
        fail "worker_site row: $(grep worker_site heap.rows)"
    grep -q 'burn_site' heap.rows && fail "a CPU function among the heap's sites"
    grep -q 'burn_site lv_grow.c' cpu.rows || fail "burn_site not among the CPU functions"
    grep -q 'grow_site' cpu.rows && fail "a heap site among the CPU functions"
    tot=$(sed -n "${c}p" t.txt | awk '{ print $2 }')
    [ "$(awk '{ s += $1 } END { print s }' cpu.rows)" = "$tot" ] || fail "cpu rows do not add up to $tot"
    # --json: the same sites in the same order, the CPU functions apart
    [ "$(jq -r '.sites[].site' t.json)" = "$(awk '{ $1 = $2 = $3 = $4 = $5 = $6 = ""; sub(/^ */, ""); print }' heap.rows)" ] ||
        fail "--json sites differ from the table's"
    [ "$(jq -r '.cpu[].function' t.json)" = "$(awk '{ $1 = $2 = ""; sub(/^ */, ""); print }' cpu.rows)" ] ||
        fail "--json cpu differs from the table's"
    [ "$(jq '[.cpu[].samples] | add' t.json)" = "$tot" ] || fail "--json cpu samples"
    jq -e '[.sites[] | select(.function == "burn_site")] | length == 0' t.json >/dev/null ||
        fail "--json: burn_site among the sites"
    stop
    ;;
view-tmux)
    # A saved profile: the top site shows, + zooms, q quits.
    start lvview RHEAPER_ENABLE=1
    cmd "grow 40 2500"
    cmd "free 10"
    cmd "grow 20 700"
    stop
    "$BIN/rheaper-convert" "rip-$LAST" p.db 2>conv.err || fail "convert"
    tm new-session -d -s t -x 120 -y 30 "'$RH' view p.db 2>view.err; echo EXIT=\$?; sleep 600"
    wait_screen 'LIVE .*CALL SITE'
    screen | head -1 | grep -q 'rheaper view  pid' || fail "title"
    screen | sed -n 5p | grep -q 'grow_site lv_grow.c' || fail "top site is not grow_site"
    # 30 x 2500 + 20 x 700 bytes are live at the end, in 50 blocks
    screen | sed -n 5p | grep -q '86.91 KiB  *50 ' || fail "grow_site figures"
    tm send-keys -t "$S" 3
    wait_screen 'total live heap over time   zoom 1x'
    l1=$(screen | grep -E '^ +[0-9.]+ m?s' | tail -1)
    tm send-keys -t "$S" +
    wait_screen 'zoom 2x'
    l2=$(screen | grep -E '^ +[0-9.]+ m?s' | tail -1)
    [ "$l1" != "$l2" ] || fail "+ did not narrow the time axis ($l1)"
    tm send-keys -t "$S" h
    sleep 0.3
    l3=$(screen | grep -E '^ +[0-9.]+ m?s' | tail -1)
    [ "$l2" != "$l3" ] || fail "h did not pan ($l2)"
    # / is --function: the sites of stacks with some frame matching, here
    # printf, a caller of the stdio buffer's allocation (not its frame 0);
    # libc's frames are system code, so the site is printf's caller, main
    tm send-keys -t "$S" 2 / '^__printf$' Enter
    wait_screen 'filter: /\^__printf\$/'
    screen | sed -n 5p | grep -q 'main lv_grow.c' || fail "filter ^__printf$: top site"
    screen | grep -q 'grow_site lv_grow.c' && fail "filter ^__printf$ kept grow_site"
    n=$(screen | sed -n '5,$p' | grep -cE '^ +[0-9.]+ (B|KiB|MiB|GiB) +[0-9]+ ')
    want=$("$RH" top p.db --function '^__printf$' -n 100 --csv 2>/dev/null | tail -n +2 | wc -l)
    [ "$n" = "$want" ] || fail "filter: $n sites on screen, rheaper top --function: $want"
    tm send-keys -t "$S" / Enter
    wait_screen 'grow_site lv_grow.c'
    # / goes through the URL's parser (rh_qfilter_param): its bounds apply
    tm send-keys -t "$S" / '(a)\1' Enter
    wait_screen 'bad filter: function_regex: back-references are not allowed'
    tm send-keys -t "$S" 1
    wait_screen 'no CPU samples in this profile'
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    [ -s view.err ] && grep -v 'call sites skip' view.err | grep -q . && fail "view printed errors"
    # CPU samples of a real recording in the view: case cpu-tmux
    # a finished rip opens too, converted aside: nothing appears next to it
    others() { ls | grep -v -e '^before$' -e '^after$' -e '^viewrip.err$'; }
    others >before
    S=t3
    tm new-session -d -s "$S" -x 120 -y 30 "'$RH' view rip-$LAST 2>viewrip.err; echo EXIT=\$?; sleep 600"
    wait_screen 'LIVE .*CALL SITE'
    screen | sed -n 5p | grep -q 'grow_site lv_grow.c.*' || fail "rip: top site"
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    others >after
    cmp -s before after || fail "view of a rip left files: $(diff before after)"
    ;;
cpu-tmux)
    # Real CPU samples: lv_grow's thread "lvspin" burns CPU in
    # burn_site (and a third as much in burn_side), sampled at 199 Hz. The
    # live view's CPU view (key 1) shows burn_site with samples that grow,
    # q quits; then `rheaper view` on the converted profile shows it first in
    # view 1 and burn_side second, with the samples `rheaper top cpu` reads
    # from the database (summed over lines) and their shares of all samples.
    start lvcpu RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=199
    cmd "spin on"
    tm new-session -d -s "$S" -x 120 -y 30 "'$RH' live $LAST 2>live.err; echo EXIT=\$?; sleep 600"
    wait_screen 'LIVE .*CALL SITE'
    tm send-keys -t "$S" 1
    wait_screen 'SAMPLES .*SHARE .*FUNCTION'
    wait_screen '^ *[0-9][0-9]*  *[0-9.]*%  burn_site lv_grow.c'
    cpu_on_screen() { screen | awk '$3 == "burn_site" { print $1; exit }'; }
    a=$(cpu_on_screen)
    [ "${a:-0}" -gt 0 ] || fail "burn_site shows no samples"
    _w=0
    until b=$(cpu_on_screen) && [ "${b:-0}" -gt $((a + 40)) ]; do
        _w=$((_w + 1))
        [ $_w -gt 300 ] && fail "burn_site's samples did not grow past $a + 40 (now $b)"
        sleep 0.1
    done
    screen | sed -n 5p | grep -q 'burn_site lv_grow.c' || fail "burn_site is not the top CPU row"
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    [ -s live.err ] && fail "live printed errors"
    cmd "spin off"
    stop
    "$BIN/rheaper-convert" "rip-$LAST" p.db 2>conv.err || fail "convert"
    "$RH" top cpu p.db -n 50 --csv >top.csv 2>>conv.err || fail "rheaper top cpu"
    row=$(awk -F, 'NR == 2' top.csv)
    [ "${row%%,*}" = burn_site ] || fail "top cpu's first row is not burn_site: $row"
    # top cpu lists function and line; the view one row per function
    n=$(awk -F, '$1 == "burn_site" { s += $3 } END { print s + 0 }' top.csv)
    db=$(sqlite3 p.db "SELECT sum(samples) FROM cpu_stack_stats")
    pct=$(awk -v n="$n" -v t="$db" 'BEGIN { printf "%.1f", 100 * n / t }')
    [ "$n" -gt 40 ] && [ "$n" -le "$db" ] || fail "burn_site has $n samples of $db"
    # --threshold PCT: the rows with at least PCT % of the samples, no other
    for pc in 1 10 30; do
        want=$(awk -F, -v t="$db" -v p="$pc" 'NR > 1 && 100 * $3 >= p * t { print $1 "," $2 }' top.csv)
        got=$("$RH" top cpu p.db -n 50 --threshold "$pc" --csv 2>/dev/null | awk -F, 'NR > 1 { print $1 "," $2 }')
        [ -n "$got" ] && [ "$got" = "$want" ] || fail "--threshold $pc: '$got', want '$want'"
    done
    [ "$("$RH" top cpu p.db --threshold 100 --csv 2>/dev/null | wc -l)" -le 1 ] || fail "--threshold 100"
    "$RH" top cpu p.db --threshold 101 2>/dev/null && fail "--threshold 101 accepted"
    S=t2
    tm new-session -d -s "$S" -x 120 -y 30 "'$RH' view p.db 2>view.err; echo EXIT=\$?; sleep 600"
    wait_screen 'LIVE .*CALL SITE'
    tm send-keys -t "$S" 1
    wait_screen 'SAMPLES .*SHARE .*FUNCTION'
    screen | sed -n 5p | grep -q "^ *$n  *$pct%  burn_site lv_grow.c" ||
        fail "view's CPU top row is not '$n $pct% burn_site'"
    # the second row: burn_side, with a third of burn_site's work
    n2=$(awk -F, '$1 == "burn_side" { s += $3 } END { print s + 0 }' top.csv)
    pct2=$(awk -v n="$n2" -v t="$db" 'BEGIN { printf "%.1f", 100 * n / t }')
    [ "$n2" -gt 0 ] && [ "$n2" -lt "$n" ] || fail "burn_side has $n2 samples, burn_site $n"
    screen | sed -n 6p | grep -q "^ *$n2  *$pct2%  burn_side lv_grow.c" ||
        fail "view's CPU second row is not '$n2 $pct2% burn_side'"
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    [ -s view.err ] && grep -v 'call sites skip' view.err | grep -q . && fail "view printed errors"
    ;;
names-tmux)
    # A C++ program (lv_names.cc): members of class templates taking
    # std::string, three threads churning strings (CPU samples in
    # libstdc++'s inlined string code, many of them taken inside rheaper's
    # allocation hooks). The live CPU view charges no sample to a frame of
    # rheaper's own (the converted profile's attribution: live and view give
    # the same functions and samples); at 120 columns the names, shortened,
    # are whole and the full one is in the detail; the finished profile opens
    # sorted by the bytes held at the peak, where the batch that was freed
    # before the end comes first.
    require_tool jq jq
    PROG=$(dirname "$HELPER")/lv_names
    start lvnames RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=199
    cmd "keep 50"
    cmd "batch 5000"
    cmd "churn on"
    tm new-session -d -s "$S" -x 120 -y 30 "LC_ALL=C '$RH' live $LAST 2>live.err; echo EXIT=\$?; sleep 600"
    wait_screen 'LIVE .*CALL SITE'
    # the names as the program's source has them, short: templates and
    # parameters elided (ASCII here: LC_ALL=C), each whole with its line
    wait_screen 'lvnames::StringChurner<\.\.\.>::churn(\.\.\.) lv_names\.cc:[0-9]'
    "$RH" live --once --json "$LAST" >run.json 2>run.err || fail "live --once --json"
    keep=$(site_with 'lvnames::NameTable<.*::keep_name\(' live_bytes 15050 run.json)
    [ -n "$keep" ] || fail "no keep_name site with 50 kept strings of 301 bytes: $(grep keep_name run.json)"
    [ "$(field live_blocks "$keep")" = 50 ] && [ "$(field alloc_blocks "$keep")" = 50 ] ||
        fail "keep_name: $keep"
    # 5000 strings of 200 characters: a 32-byte object and a 201-byte buffer each
    batch=$(site_with 'lvnames::BatchBuilder<.*::build_batch\(' alloc_blocks 10000 run.json)
    [ "$(field alloc_bytes "$batch")" = 1165000 ] && [ "$(field live_bytes "$batch")" = 0 ] &&
        [ "$(field peak_bytes "$batch")" = 1165000 ] || fail "build_batch: $batch"
    kloc=$(sfield site "$keep" | awk '{ print $NF }')
    bloc=$(sfield site "$batch" | awk '{ print $NF }')
    for want in "lvnames::NameTable<...>::keep_name(...) $kloc" \
        "lvnames::BatchBuilder<...>::build_batch(...) $bloc"; do
        screen | grep -qF "  $want" || fail "'$want' is not shown whole at 120 columns"
    done
    # every row fits: no name reaches the right edge (cut)
    screen | sed -n '5,26p' | awk 'length($0) >= 120 { exit 1 }' || fail "a row is cut at 120 columns"
    screen | grep -F "$want" | grep -q '^ *0 B  *0  *1\.11 MiB ' ||
        fail "build_batch's row is not 0 B live, 0 blocks, 1.11 MiB at the peak"
    # the CPU view: the string code, never rheaper's frames
    tm send-keys -t "$S" 1
    wait_screen 'SAMPLES .*SHARE .*FUNCTION'
    _w=0
    until [ "$(screen | sed -n '5,26p' | awk '{ s += $1 } END { print s + 0 }')" -ge 150 ]; do
        _w=$((_w + 1))
        [ $_w -gt 300 ] && fail "fewer than 150 CPU samples on the screen"
        sleep 0.1
    done
    screen | sed -n '5,26p' >cpu.rows
    grep -E '%  (rh_|__wrap_|rheaper_)|(rh_|shims_|interpose_)[a-z_]*\.[ch]$' cpu.rows &&
        fail "a frame of rheaper's own in the live CPU view"
    grep -q '%  std::__cxx11::basic_string<\.\.\.>::_M_[a-z_]*(\.\.\.)' cpu.rows ||
        fail "no std::string member (short) among the CPU functions"
    "$RH" live --once --json "$LAST" >cpu.json 2>>run.err || fail "live --once --json (CPU)"
    n=$(jq '[.cpu[].samples] | add' cpu.json)
    own=$(jq '[.cpu[] | select(.function | test("^(rh_|__wrap_|rheaper_)| (rh_|shims_|interpose_)[a-z_]*[.][ch]$")) | .samples] | add // 0' cpu.json)
    str=$(jq '[.cpu[] | select(.function | test("basic_string<.*>::_M_")) | .samples] | add // 0' cpu.json)
    [ "$own" = 0 ] || fail "$own of $n samples on rheaper's frames"
    # (the rest is mostly libc's memmove, which they call)
    [ "$str" -gt 0 ] && [ "$((str * 10))" -ge "$n" ] ||
        fail "std::string's members have $str of $n samples, under a tenth"
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    [ -s live.err ] && fail "live printed: $(cat live.err)"
    cmd "churn off"
    stop
    # after the end: the live view's CPU functions and samples are the
    # converted profile's, row for row
    "$RH" live --once --json "rip-$LAST" >end.json 2>end.err || fail "--once on the finished rip"
    "$BIN/rheaper-convert" "rip-$LAST" p.db 2>conv.err || fail "convert"
    "$RH" view p.db --once --json >v.json 2>view.err || fail "view --once --json"
    C='[.cpu[] | "\(.function)=\(.samples)"] | sort | join(",")'
    [ "$(jq -r "$C" end.json)" = "$(jq -r "$C" v.json)" ] ||
        fail "live and view charge CPU samples differently"
    [ "$(jq '[.cpu[].samples] | add' end.json)" -ge "$n" ] || fail "fewer samples at the end"
    # and each site's bytes at the peak (the aggregates' while following,
    # stack_stats.peak_bytes in the profile)
    P='[.sites[] | "\(.function)=\(.peak_bytes)=\(.live_bytes)"] | sort | join(",")'
    [ "$(jq -r "$P" end.json)" = "$(jq -r "$P" v.json)" ] ||
        fail "live and view give the sites different bytes at the peak"
    # the finished profile in the UI (UTF-8: the ellipsis is one column)
    S=t2
    tm -u new-session -d -s "$S" -x 120 -y 30 "LC_ALL=C.UTF-8 '$RH' view p.db 2>view.err; echo EXIT=\$?; sleep 600"
    wait_screen 'LIVE .*CALL SITE'
    screen | sed -n 3p | grep -q 'sort: peak bytes' || fail "the finished profile is not sorted by peak bytes"
    top=$(jq -r '[.sites[] | {site, peak_bytes, live_bytes}] | sort_by(-.peak_bytes, -.live_bytes, .site) | .[0].site' v.json)
    [ "$top" = "$(sfield site "$batch")" ] || fail "the site with most bytes at the peak is $top"
    screen | sed -n 5p | grep -q "^ *0 B  *0  *1\.11 MiB .*  lvnames::BatchBuilder<…>::build_batch(…) $bloc *\$" ||
        fail "first row is not build_batch, 0 B live and 1.11 MiB at the peak"
    # the selected row's full name, above the footer
    screen | sed -n '26,29p' | tr -d '\n' | grep -qF "lvnames::BatchBuilder<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >," ||
        fail "the detail lacks the full name"
    screen | sed -n 29p | grep -q '^ 10000 blocks allocated, 10000 freed, 0 live, 1\.11 MiB at the peak' ||
        fail "the detail's figures"
    # the leak: keep_name's 50 strings, still live at the end
    screen | grep -q "^ *14\.70 KiB  *50 .*  lvnames::NameTable<…>::keep_name(…) $kloc *\$" ||
        fail "keep_name's 50 leaked strings"
    # n: names in full (then cut at the edge); again: short
    tm send-keys -t "$S" n
    wait_screen 'lvnames::BatchBuilder<std::__cxx11::basic_string<char'
    # full names are wider than 120 columns: every column but LIVE and the
    # sorted one (PEAK) gave way before the names were cut
    screen | sed -n 4p | grep -q '^ *LIVE  *PEAK  CALL SITE *$' ||
        fail "full names: the header is '$(screen | sed -n 4p)'"
    tm send-keys -t "$S" n
    wait_screen "lvnames::BatchBuilder<…>::build_batch(…) $bloc"
    tm send-keys -t "$S" s
    wait_screen 'sort: allocated bytes'
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    [ -s view.err ] && grep -v 'call sites skip' view.err | grep -q . && fail "view printed errors"
    ;;
list)
    # One profile in each state, in one directory.
    D=$WORK/profiles
    mkdir -p "$D"
    start lvdone RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$D"
    cmd "grow 10 100"
    stop
    DONE=$LAST
    start lvcut RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$D" RHEAPER_MAX_PROFILE_SIZE=64k
    cmd "grow 30000 16"
    cmd "free 30000"
    stop
    CUT=$LAST
    start lvkill RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$D"
    cmd "grow 10 100"
    kill -9 "$LAST"
    wait "$LAST" 2>/dev/null
    exec 3>&-
    KILLED=$LAST
    start lvrec RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$D"
    cmd "grow 10 100"
    REC=$LAST
    echo "not a profile" >"$D/notes.txt"
    "$RH" list "$D" >list.out 2>list.err || fail "list failed: $(cat list.err)"
    cat list.out >screen
    row() { grep "^ *$1  " list.out; }
    row "$DONE" | grep -q ' lvdone .* complete  ' || fail "complete: $(row "$DONE")"
    row "$CUT" | grep -q ' lvcut .* cut at the size limit ' || fail "cut: $(row "$CUT")"
    row "$KILLED" | grep -q ' lvkill .* damaged ' || fail "killed: $(row "$KILLED")"
    row "$REC" | grep -q ' lvrec .* recording ' || fail "recording: $(row "$REC")"
    [ "$(grep -c 'rip-' list.out)" = 4 ] || fail "expected 4 profiles"
    grep -q notes.txt list.out && fail "listed a file that is not a profile"
    # events of the complete one are its trailer's, as the converter reads them
    "$BIN/rheaper-convert" "$D/rip-$DONE" done.db 2>/dev/null || fail "convert"
    ev=$(sqlite3 done.db "select value from meta where key = 'events_recorded'")
    row "$DONE" | grep -q "  $ev  " || fail "complete: events $ev not in $(row "$DONE")"
    # a profile damaged in the middle (a chunk header overwritten)
    cp "$D/rip-$DONE" "$D/rip-broken"
    printf 'XXXX' | dd of="$D/rip-broken" bs=1 seek=4096 conv=notrunc 2>/dev/null
    "$RH" list --json "$D" >list.json 2>/dev/null || fail "list --json"
    grep -q '"file": "[^"]*rip-broken", *$\|rip-broken' list.json || fail "broken not listed"
    grep 'rip-broken' list.json | grep -q '"state": "damaged"' || fail "broken: $(grep rip-broken list.json)"
    # default: the current directory and RHEAPER_PROFILE_DIR
    mkdir -p empty && cd empty || fail "cd"
    RHEAPER_PROFILE_DIR="$D" "$RH" list >../list2.out 2>&1 || fail "list by RHEAPER_PROFILE_DIR"
    cd .. || fail "cd"
    [ "$(grep -c 'rip-' list2.out)" = 5 ] || fail "RHEAPER_PROFILE_DIR: $(cat list2.out)"
    stop
    ;;
truncated)
    # A profile truncated under the live view (another program cut it): the
    # view says so in one line, stops reading the file and keeps the figures
    # it had; it does not die of SIGBUS on the pages past the new end.
    start lvtrunc RHEAPER_ENABLE=1
    cmd "grow 10 1000"
    cmd "free 4"
    cp "rip-$LAST" copy.rip
    tm new-session -d -s t -x 120 -y 30 "'$RH' live copy.rip 2>live.err; echo EXIT=\$?; sleep 600"
    wait_screen 'grow_site lv_grow.c'
    [ "$(live_on_screen grow_site)" = 6000 ] || fail "grow_site shows $(live_on_screen grow_site), not 6000"
    truncate -s 4096 copy.rip || fail "truncate"
    wait_line live.err 'the profile shrank to 4096 bytes'
    # polls go on (the program runs): the view stays up with its figures
    sleep 1
    screen | grep -q '^EXIT=' && fail "rheaper live ended after the truncation: $(screen | grep EXIT=)"
    [ "$(live_on_screen grow_site)" = 6000 ] || fail "after the truncation: $(live_on_screen grow_site), not 6000"
    [ "$(grep -c 'shrank' live.err)" = 1 ] || fail "the truncation was reported more than once"
    tm send-keys -t "$S" q
    wait_screen '^EXIT=0'
    stop
    ;;
record-by-name)
    # rheaper record -P NAME on an armed program.
    start lvarmed RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$WORK"
    cmd "grow 1 10"
    wait_line "rheaper-$LAST.ctl" '^state armed$'
    cmd "auto on" # the toggle takes effect at its next allocation
    "$RH" record -P lvarmed -d 2s -o rec.db >rec.out 2>rec.err &
    R=$!
    wait_line rec.err 'recording process'
    cmd "grow 25 4321"
    wait "$R" || fail "record -P failed: $(cat rec.err)"
    n=$(sqlite3 rec.db "select count(*) from allocations where size = 4321")
    [ "$n" = 25 ] || fail "expected the 25 blocks of 4321 bytes, got $n"
    [ "$(sqlite3 rec.db "select value from meta where key = 'pid'")" = "$LAST" ] || fail "pid"
    stop
    "$RH" record -P lvarmed -d 1s -o x.db 2>gone.err && fail "record -P of an ended program"
    grep -q 'no running process is named lvarmed' gone.err || fail "message: $(cat gone.err)"
    [ -e x.db ] && fail "wrote a profile anyway"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "ok: $CASE"
