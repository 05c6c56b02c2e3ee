#!/bin/sh
# filters_test.sh: every reader survives every filter, and answers what plain
# SQL on the same database answers.
#
#   filters_test.sh BIN_DIR SRC_DIR WORK_DIR SEED...
#
# For each seed, filters_prog.c (built with rheaper-cc, run through the real
# runtime) plays a random plan of threads created in every order, blocks
# freed by threads that appear later, address reuse across threads and
# realloc chains. Its own tally of the run (blocks, bytes, leaks, heaptrack's
# temporaries) must equal `rheaper summary`. Then for every filter below
# (the thirteen of tests/e2e/agree/readers_test.sh, on this program's
# functions, files and threads, and the ones that once aborted every reader:
# --min-size 1, --from 0, --lifetime .., --function main), each written for
# the command line, as the server's URL parameters and as an SQL predicate
# on `allocations`:
#   rheaper summary --json   totals, peak and its time, temporaries
#   rheaper top --json       per call site: blocks, bytes, leaked, at peak,
#                            temporary
#   rheaper leaks --json     per call site: leaked blocks and bytes
#   rheaper peak --json      per call site: blocks and bytes at the peak
#   rheaper serve            /summary, /sites, /allocation_groups (per
#                            stack), /allocations (total_count), /threads,
#                            /tree's total, /timeline's peak and end,
#                            /leaks, flamegraph.pl's bytes
#                            and /timeline_sites, whose stacked series must
#                            add up to its total at every column, the total
#                            equal the scope's timeline (temp.stl) and its
#                            highest column hold the peak at the peak's time;
#                            unfiltered, every site's line (/site) summed
#                            must be that total too
# are compared with plain SQL through the sqlite3 shell (a call site is frame
# 0: the program has no allocator wrappers; the peak is the running sum of
# the selected blocks' allocations and frees in time order). The flamegraph
# of freed blocks (mode=freed) must weigh the scope's freed bytes. Last,
# `rheaper view` is driven in tmux: its `/` filter on three function regexes
# must show the call sites plain SQL finds for them, and the view must not
# die. Run under ASan (build-asan, .ci/run) a heap error in any reader is a
# failure. Prints "FAIL: ..." lines and "N checks, N failed"; exits 1 on a
# failure, 77 when a tool is missing (a failure under CI=true).
#
# More seeds: RHEAPER_FILTERS_SEEDS="7 8 9" (or "random 5": five seeds from
# /dev/urandom, printed) for the ctest entry filters-more.
set -u
BIN=$1 src=$2 W=$3
shift 3
SRC=$src/../../e2e/serve
. "$SRC/lib.sh"
. "$src/../../lib/require.sh"
RH=$BIN/rheaper
require_tool jq jq
require_tool sqlite3 sqlite3
require_tool curl curl
require_tool tmux tmux
export RHEAPER_QUIET_NOTICES=1

if [ "${1:-}" = more ]; then
    set -- ${RHEAPER_FILTERS_SEEDS:-}
    if [ "${1:-}" = random ]; then
        n=${2:-3}
        set --
        for i in $(seq "$n"); do
            set -- "$@" "$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
        done
    fi
    [ $# -gt 0 ] || { echo "SKIP: RHEAPER_FILTERS_SEEDS is not set"; exit 77; }
    echo "seeds: $*"
fi

rm -rf "$W"
mkdir -p "$W"
"$BIN/rheaper-cc" -O1 -pthread -o "$W/prog" "$src/filters_prog.c" "$src/filters_lib.c" ||
    { echo "FAIL: rheaper-cc failed"; exit 1; }

TMUX_SOCK="$W/tmux.sock"
cleanup() { tmux -S "$TMUX_SOCK" kill-server 2>/dev/null; }
trap cleanup EXIT

# The call site of a row a (frame 0 of its stack), as `top` names it.
SITE="(SELECT coalesce(b.sym, '??') || '|' || replace(b.file, rtrim(b.file, replace(b.file, '/', '')), '')
    || ':' || b.line FROM backtraces b WHERE b.id = a.bt AND b.frame_no = 0)"

# sql WHERE QUERY: QUERY over TEMP VIEW s (the rows of allocations passing
# WHERE, with their site) and pk (the scope's peak: bytes, time).
sql() {
    sqlite3 "$DB" "CREATE TEMP VIEW s AS SELECT a.*, $SITE AS site FROM allocations a WHERE $1;
        CREATE TEMP TABLE pk AS WITH ev(t, d) AS (SELECT alloc_after, size FROM s UNION ALL
            SELECT dealloc_after, -size FROM s WHERE dealloc_after IS NOT NULL),
          run AS (SELECT t, sum(d) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) AS live FROM ev)
        SELECT coalesce((SELECT live FROM run ORDER BY live DESC, t LIMIT 1), 0) AS bytes,
               coalesce((SELECT t FROM run ORDER BY live DESC, t LIMIT 1), 0) AS t;
        $2"
}
# live at the peak: a row of s allocated by the peak and not freed by then
ATPEAK="CASE WHEN s.alloc_after <= pk.t AND (s.dealloc_after IS NULL OR s.dealloc_after > pk.t)"

check_filter() { # CLI URL WHERE
    CLI=$1 URL=$2 WH=$3
    # shellcheck disable=SC2086
    set -- $CLI
    # -- the scope's totals
    want=$(sql "$WH" "SELECT count(*), coalesce(sum(size), 0), count(dealloc_after),
        coalesce(sum(CASE WHEN dealloc_after IS NOT NULL THEN size END), 0),
        count(*) - count(dealloc_after), coalesce(sum(CASE WHEN dealloc_after IS NULL THEN size END), 0),
        coalesce(sum(temporary), 0), pk.bytes FROM s, pk")
    want=$(echo "$want" | tr '|' ' ')
    TOT='"\(.alloc_blocks) \(.alloc_bytes) \(.freed_blocks) \(.freed_bytes) \(.leaked_blocks) \(.leaked_bytes) \(.temporary_blocks) \(.peak_bytes)"'
    if "$RH" summary "$DB" "$@" --json >"$W/sum.json" 2>>"$W/err"; then
        eq "[$CLI] summary" "$(jq -r "$TOT" "$W/sum.json")" "$want"
    else
        fail "[$CLI] rheaper summary failed: $(tail -3 "$W/err")"
    fi
    nsel=${want%% *}
    # -- per call site
    sql "$WH" "SELECT site || '|' || count(*) || '|' || sum(size) || '|' || (count(*) - count(dealloc_after))
        || '|' || coalesce(sum(CASE WHEN dealloc_after IS NULL THEN size END), 0) || '|'
        || coalesce(sum($ATPEAK THEN size END), 0) || '|' || sum(temporary)
        FROM s, pk GROUP BY site" | sort >"$W/want.top"
    if "$RH" top "$DB" "$@" -n 100000 --json >"$W/top.json" 2>>"$W/err"; then
        jq -r '.[] | select(.count > 0) | "\(.function)|\(.location)|\(.count)|\(.bytes)|\(.leaked_blocks)|\(.leaked_bytes)|\(.peak_bytes)|\(.temporary)"' \
            "$W/top.json" | sort >"$W/got.top"
        eq "[$CLI] top" "$(cat "$W/got.top")" "$(cat "$W/want.top")"
    else
        fail "[$CLI] rheaper top failed: $(tail -3 "$W/err")"
    fi
    sql "$WH" "SELECT site || '|' || count(*) || '|' || sum(size) FROM s WHERE dealloc_after IS NULL
        GROUP BY site" | sort >"$W/want.leaks"
    if "$RH" leaks "$DB" "$@" -n 100000 --json >"$W/leaks.json" 2>>"$W/err"; then
        jq -r '.[] | select(.leaked_blocks > 0) | "\(.function)|\(.location)|\(.leaked_blocks)|\(.leaked_bytes)"' \
            "$W/leaks.json" | sort >"$W/got.leaks"
        eq "[$CLI] leaks" "$(cat "$W/got.leaks")" "$(cat "$W/want.leaks")"
    else
        fail "[$CLI] rheaper leaks failed: $(tail -3 "$W/err")"
    fi
    sql "$WH" "SELECT site || '|' || count(*) || '|' || sum(size) FROM s, pk WHERE $ATPEAK THEN 1 END
        GROUP BY site" | sort >"$W/want.peak"
    if "$RH" peak "$DB" "$@" -n 100000 --json >"$W/peak.json" 2>>"$W/err"; then
        jq -r '.[] | select(.blocks > 0) | "\(.function)|\(.location)|\(.blocks)|\(.bytes)"' \
            "$W/peak.json" | sort >"$W/got.peak"
        eq "[$CLI] peak" "$(cat "$W/got.peak")" "$(cat "$W/want.peak")"
    else
        fail "[$CLI] rheaper peak failed: $(tail -3 "$W/err")"
    fi

    # -- the server, on the same filter in bytehound's parameters
    P=${URL:+$URL&}
    if [ "$(get "/data/0/summary?$URL")" = 200 ]; then
        eq "[$URL] /summary" "$(jq -r "$TOT" "$W/body")" "$want"
    else
        fail "[$URL] /summary: $(head -c 300 "$W/body")"
    fi
    if [ "$(get "/data/0/sites?${P}count=100000")" = 200 ]; then
        cp "$W/body" "$W/got.sites.json"
        jq -r '.sites[] | select(.count > 0) | "\(.function)|\(.location)|\(.count)|\(.bytes)|\(.leaked_blocks)|\(.leaked_bytes)|\(.peak_bytes)|\(.temporary)"' \
            "$W/body" | sort >"$W/got.sites"
        eq "[$URL] /sites" "$(cat "$W/got.sites")" "$(cat "$W/want.top")"
    else
        fail "[$URL] /sites: $(head -c 300 "$W/body")"
    fi
    sql "$WH" "SELECT bt || '|' || count(*) || '|' || sum(size) || '|' || (count(*) - count(dealloc_after))
        FROM s GROUP BY bt" | sort >"$W/want.groups"
    if [ "$(get "/data/0/allocation_groups?${P}count=100000")" = 200 ]; then
        jq -r '.allocations[] | select(.only_matched.allocated_count > 0) |
            "\(.backtrace_id)|\(.only_matched.allocated_count)|\(.only_matched.size)|\(.only_matched.leaked_count)"' \
            "$W/body" | sort >"$W/got.groups"
        eq "[$URL] /allocation_groups" "$(cat "$W/got.groups")" "$(cat "$W/want.groups")"
    else
        fail "[$URL] /allocation_groups: $(head -c 300 "$W/body")"
    fi
    if [ "$(get "/data/0/allocations?${P}count=1")" = 200 ]; then
        eq "[$URL] /allocations total_count" "$(jq .total_count "$W/body")" "$nsel"
    else
        fail "[$URL] /allocations: $(head -c 300 "$W/body")"
    fi
    want_th=$(sql "$WH" "SELECT t.name || '|' || count(*) || '|' || sum(size) || '|'
        || (count(*) - count(dealloc_after)) || '|' || coalesce(sum(CASE WHEN dealloc_after IS NULL THEN size END), 0) FROM s
        JOIN threads t ON t.id = s.alloc_thread GROUP BY t.id ORDER BY t.id")
    if [ "$(get "/data/0/threads?$URL")" = 200 ]; then
        eq "[$URL] /threads" "$(jq -r '.threads[] | select(.allocated_count > 0) | "\(.name)|\(.allocated_count)|\(.allocated_size)|\(.leaked_count)|\(.leaked_size)"' "$W/body")" \
            "$want_th"
    else
        fail "[$URL] /threads: $(head -c 300 "$W/body")"
    fi
    # /tree: the total of every root; /timeline: the peak and the end
    tot=$(sql "$WH" "SELECT coalesce(sum(size), 0) || ' ' || count(*) || ' '
        || coalesce(sum(CASE WHEN dealloc_after IS NULL THEN size END), 0) || ' ' || pk.bytes || ' '
        || coalesce(sum(temporary), 0) || ' ' || (count(*) - count(dealloc_after)) FROM s, pk")
    if [ "$(get "/data/0/tree?${P}count=1")" = 200 ]; then
        eq "[$URL] /tree total (bytes, blocks, leaked, peak, temporary)" "$(jq -r '.total | join(" ")' "$W/body")" \
            "${tot% *}"
    else
        fail "[$URL] /tree: $(head -c 300 "$W/body")"
    fi
    if [ "$(get "/data/0/timeline?$URL")" = 200 ]; then
        set -- $tot
        # end_count is null without filters (rest-api.md: the converter's
        # timeline keeps bytes)
        eb=$6 ec='.end_count | last // 0'
        [ -n "$URL" ] || eb=null ec='.end_count | last'
        eq "[$URL] /timeline: highest, end bytes, end blocks" \
            "$(jq -r "\"\\(.max_size | max // 0) \\(.end_size | last // 0) \\($ec)\"" "$W/body")" "$4 $3 $eb"
    else
        fail "[$URL] /timeline: $(head -c 300 "$W/body")"
    fi
    if [ "$(get "/data/0/leaks?${P}count=100000")" = 200 ]; then
        jq -r '.leaks[] | "\(.function)|\(.location)\t\(.leaked_count)\t\(.leaked_size)"' "$W/body" |
            awk -F'\t' '{ n[$1] += $2; b[$1] += $3 } END { for (k in n) if (n[k] > 0) print k "|" n[k] "|" b[k] }' |
            sort >"$W/got.sleaks"
        eq "[$URL] /leaks" "$(cat "$W/got.sleaks")" "$(cat "$W/want.leaks")"
    else
        fail "[$URL] /leaks: $(head -c 300 "$W/body")"
    fi
    if [ "$(get "/data/0/export/flamegraph.pl?$URL")" = 200 ]; then
        eq "[$URL] flamegraph.pl: bytes" "$(awk '{ n += $NF } END { print n + 0 }' "$W/body")" "${tot%% *}"
    else
        fail "[$URL] flamegraph.pl: $(head -c 300 "$W/body")"
    fi
    check_stacked "$URL" "$CLI" "$nsel"
}

# The heap over time by call site (the overview's stacked chart): at every
# column the series add up to the total, the total is the scope's timeline
# (temp.stl, which `rheaper timeline` draws), and the highest column holds
# the peak at the peak's time.
check_stacked() { # URL CLI NSEL
    P=${1:+$1&}
    if [ "$(get "/data/0/timeline_sites?${P}count=32")" != 200 ]; then
        fail "[$1] /timeline_sites: $(head -c 300 "$W/body")"
        return
    fi
    [ "$3" -gt 0 ] || return 0
    if [ "$(jq .timeline "$W/body")" != true ]; then
        # a scope without its own timeline (the chart is drawn from the rows)
        echo "[$1] no timeline by site"
        [ -n "$1" ] || fail "the unfiltered profile has no timeline by site"
        return 0
    fi
    jq -r '.total | .[]' "$W/body" >"$W/ts.total"
    jq -r '[.series[].values] | transpose | .[] | add' "$W/body" >"$W/ts.sum"
    eq "[$1] /timeline_sites: columns" "$(wc -l <"$W/ts.total")" 600
    eq "[$1] /timeline_sites: the stacked series add up to the total at every column" \
        "$(paste -d' ' "$W/ts.sum" "$W/ts.total" | awk '$1 != $2 { n++ } END { print n + 0 }')" 0
    # shellcheck disable=SC2086
    "$RH" query "$DB" "SELECT max_bytes FROM temp.stl ORDER BY col" $2 --csv 2>>"$W/err" |
        tail -n +2 >"$W/stl"
    eq "[$1] /timeline_sites total = the scope's timeline" "$(cat "$W/ts.total")" "$(cat "$W/stl")"
    if [ -z "$1" ]; then
        # one site's line (/site): every site's line, summed, is the total
        cp "$W/body" "$W/ts.json"
        jq -r '.sites[] | "function=\(.function)&location=\(.location)"' "$W/got.sites.json" >"$W/site.q"
        rm -f "$W/lines"
        while read -r q; do
            if [ "$(get "/data/0/site?$q")" = 200 ]; then
                jq -c '.timeline.series[0].values' "$W/body" >>"$W/lines"
            else
                fail "/site?$q: $(head -c 300 "$W/body")"
            fi
        done <"$W/site.q"
        eq "/site: the sites' lines add up to the total at every column" \
            "$(jq -s -r 'transpose | .[] | add' "$W/lines")" "$(cat "$W/ts.total")"
        cp "$W/ts.json" "$W/body"
    fi
    pk=$(sql "$WH" "SELECT bytes || ' ' || t FROM pk")
    top=$(jq -r '[.total, .xs] | transpose | (map(.[0]) | max) as $m | map(select(.[0] == $m)) | .[0] |
        "\(.[0]) \(.[1])"' "$W/body")
    CHECKS=$((CHECKS + 1))
    prev=$(jq -r --argjson x "${top#* }" '[.xs[] | select(. < $x)] | max // 0' "$W/body")
    [ "${top% *}" = "${pk% *}" ] && [ "${pk#* }" -le "${top#* }" ] && [ "${pk#* }" -gt "$prev" ] ||
        fail "[$1] the chart's highest column (bytes, end ns: $top, previous end $prev) is not the peak ($pk)"
}

# CLI options | URL parameters | SQL predicate on allocations
filters() {
    cat <<EOF
||1
--from $win_from --to $win_to|from=$win_from&to=$win_to|alloc_after BETWEEN $from_ns AND $to_ns
--to 50%|to=50%|alloc_after <= $half_ns
--from 60%|from=60%|alloc_after >= $sixty_ns
--function ^leak_|function_regex=^leak_|bt IN (SELECT id FROM backtraces WHERE sym GLOB 'leak_*')
--not-function ^site_realloc\$|negative_function_regex=^site_realloc\$|bt NOT IN (SELECT id FROM backtraces WHERE sym = 'site_realloc')
--file filters_lib|source_regex=filters_lib|bt IN (SELECT id FROM backtraces WHERE file GLOB '*filters_lib*')
--not-file filters_lib|negative_source_regex=filters_lib|bt NOT IN (SELECT id FROM backtraces WHERE file GLOB '*filters_lib*')
--min-size 100 --max-size 2000|size_min=100&size_max=2000|size BETWEEN 100 AND 2000
--lifetime leaked|lifetime=only_leaked|dealloc_after IS NULL
--lifetime temporary|lifetime=only_heaptrack_temporary|temporary = 1
--thread fw-1|thread=fw-1|alloc_thread = (SELECT id FROM threads WHERE name = 'fw-1')
--thread fw-2 --min-size 100|thread=fw-2&size_min=100|alloc_thread = (SELECT id FROM threads WHERE name = 'fw-2') AND size >= 100
--min-size 1|size_min=1|size >= 1
--from 0|from=0|1
--lifetime ..|lifetime=only_temporary|dealloc_after IS NOT NULL
--lifetime 50us..2ms|lifetime_min=50us&lifetime_max=2ms|dealloc_after - alloc_after BETWEEN 50000 AND 2000000
--function ^main\$|function_regex=^main\$|bt IN (SELECT id FROM backtraces WHERE sym = 'main')
EOF
}

# tmux: `rheaper view DB`, `/` RE Enter; the call sites on the screen must
# be those of SQL's stacks with a frame named by GLOB.
check_view() { # RE GLOB
    tm() { tmux -S "$TMUX_SOCK" "$@"; }
    scr() { tm capture-pane -p -t v >"$W/screen" 2>/dev/null; cat "$W/screen"; }
    wait_scr() {
        _w=0
        until scr | grep -q -- "$1"; do
            _w=$((_w + 1))
            [ $_w -gt 300 ] && { fail "view: timed out waiting for '$1': $(cat "$W/screen")"; return 1; }
            sleep 0.1
        done
    }
    want=$(sqlite3 "$DB" "SELECT DISTINCT $SITE FROM allocations a WHERE bt IN
        (SELECT id FROM backtraces WHERE sym GLOB '$2')" | sed 's/|/ /' | sort)
    tm send-keys -t v / "$1" Enter
    wait_scr "filter: /$(echo "$1" | sed 's/[]^$.*[]/\\&/g')/" || return
    sleep 0.3
    got=$(scr | sed -n '5,$p' | grep -E '^ +[0-9.]+ (B|KiB|MiB|GiB) +[0-9]+ ' |
        sed -E 's/.* ([A-Za-z_][A-Za-z_0-9]* [A-Za-z_0-9.]+:[0-9]+) *$/\1/' | sort)
    eq "view / $1: call sites on the screen" "$got" "$want"
}

for seed in "$@"; do
    D=$W/seed-$seed
    mkdir -p "$D"
    DB=$D/p.db
    plan=$(cd "$D" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program ../prog "$seed") ||
        { fail "seed $seed: the program failed"; continue; }
    echo "seed $seed: $plan"
    "$RH" convert "$D"/rip-* "$DB" --quiet --force 2>"$W/err" ||
        { fail "seed $seed: convert failed: $(cat "$W/err")"; continue; }
    # the program's own tally against the unfiltered answer
    "$RH" summary "$DB" --json >"$W/sum.json" 2>>"$W/err" || fail "seed $seed: summary"
    eq "seed $seed: the plan = summary" \
        "$(jq -r '"plan alloc_blocks \(.alloc_blocks) alloc_bytes \(.alloc_bytes) freed_blocks \(.freed_blocks) freed_bytes \(.freed_bytes) leaked_blocks \(.leaked_blocks) leaked_bytes \(.leaked_bytes) temporary \(.temporary_blocks) threads \(.threads | length)"' "$W/sum.json")" \
        "$plan"
    # heaptrack's rule in SQL: a free just after an allocation of the same
    # size and stack, all threads' events in time order
    eq "seed $seed: temporary blocks = heaptrack's rule in SQL" "$(jq .temporary_blocks "$W/sum.json")" \
        "$(sqlite3 "$DB" "WITH ev(t, k, size, bt) AS (SELECT alloc_after, 1, size, bt FROM allocations
            UNION ALL SELECT dealloc_after, 2, size, bt FROM allocations WHERE dealloc_after IS NOT NULL),
          o AS (SELECT k, size, bt, lag(k) OVER w AS pk, lag(size) OVER w AS ps, lag(bt) OVER w AS pb
            FROM ev WINDOW w AS (ORDER BY t))
          SELECT count(*) FROM o WHERE k = 2 AND pk = 1 AND ps = size AND pb = bt")"
    # the class this test guards: frees by a thread that appeared after the
    # block's allocating thread (threads.id follows first appearance)
    late=$(sqlite3 "$DB" "SELECT count(*) FROM allocations WHERE dealloc_thread > alloc_thread")
    CHECKS=$((CHECKS + 1))
    [ "$late" -gt 0 ] || fail "seed $seed: no block is freed by a later thread"
    reuse=$(sqlite3 "$DB" "SELECT count(*) FROM allocations a JOIN allocations b ON b.addr = a.addr
        AND b.alloc_after > a.dealloc_after AND b.alloc_thread != a.alloc_thread")
    echo "seed $seed: $late blocks freed by a later thread, $reuse address reuses across threads"
    dur=$(sqlite3 "$DB" "SELECT value FROM meta WHERE key = 'duration_ns'")
    # a window of 9-digit seconds from a fifth to three fifths of the run
    from_ns=$((dur / 5)) to_ns=$((dur * 3 / 5))
    win_from=$(printf '%d.%09d' $((from_ns / 1000000000)) $((from_ns % 1000000000)))
    win_to=$(printf '%d.%09d' $((to_ns / 1000000000)) $((to_ns % 1000000000)))
    half_ns=$(sqlite3 "$DB" "SELECT CAST(round($dur * 0.5) AS INTEGER)")
    sixty_ns=$(sqlite3 "$DB" "SELECT CAST(round($dur * 0.6) AS INTEGER)")
    rh_serve "$DB"
    filters >"$W/filters"
    while IFS='|' read -r CLI URL WH; do
        check_filter "$CLI" "$URL" "$WH"
    done <"$W/filters"
    # the flamegraph of freed blocks weighs the scope's freed bytes
    for URL in "" "thread=fw-1" "size_min=100&size_max=2000"; do
        WH=$(grep -F "|$URL|" "$W/filters" | head -1 | cut -d'|' -f3)
        want=$(sql "${WH:-1}" "SELECT coalesce(sum(size), 0) FROM s WHERE dealloc_after IS NOT NULL")
        if [ "$(get "/data/0/export/flamegraph.pl?${URL:+$URL&}mode=freed")" = 200 ]; then
            eq "[$URL] flamegraph.pl mode=freed: bytes" "$(awk '{ n += $NF } END { print n + 0 }' "$W/body")" "$want"
        else
            fail "[$URL] flamegraph.pl mode=freed: $(head -c 300 "$W/body")"
        fi
    done
    # the mode's name and title say what it shows; the former name says the new one
    get "/data/0/export/flamegraph?mode=freed" >/dev/null
    CHECKS=$((CHECKS + 1))
    grep -q '>Flamegraph: bytes of freed blocks (' "$W/body" || fail "the freed-blocks flamegraph's title"
    eq "mode=temporary: refused" "$(get "/data/0/export/flamegraph?mode=temporary")" 400
    CHECKS=$((CHECKS + 1))
    grep -q 'mode=freed' "$W/body" || fail "mode=temporary does not name mode=freed: $(cat "$W/body")"
    rh_stop
    # view's `/` filter, driven as a person drives it
    tmux -S "$TMUX_SOCK" new-session -d -s v -x 160 -y 50 \
        "'$RH' view '$DB' 2>'$W/view.err'; echo EXIT=\$?; sleep 600"
    if wait_scr_once=$(i=0; until tmux -S "$TMUX_SOCK" capture-pane -p -t v | grep -q 'CALL SITE'; do
        i=$((i + 1)); [ $i -gt 300 ] && exit 1; sleep 0.1; done); then
        check_view '^main$' 'main'
        check_view '^leak_keep$' 'leak_keep'
        check_view 'realloc' '*realloc*'
        tmux -S "$TMUX_SOCK" send-keys -t v q
        sleep 0.5
        eq "view: exit after q" "$(tmux -S "$TMUX_SOCK" capture-pane -p -t v | grep -o 'EXIT=[0-9]*')" "EXIT=0"
    else
        fail "seed $seed: view did not start: $(cat "$W/view.err")"
    fi
    tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
done
rh_done
