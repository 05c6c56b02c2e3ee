#!/bin/sh
# query.sh: what a question costs on a big profile, command by command and
# endpoint by endpoint, unfiltered and filtered (docs/benchmarks.md, "Query
# benchmark").
#
#   sh bench/query.sh --db PROFILE.db [--runs R] [--out DIR] [--only RE]
#                     [--build DIR] [--label TEXT]
#   sh bench/query.sh --tiny          # 20 000 allocations of wl_scale, 1 run
#
# (The site endpoint asks for each filter set's own top site.)
# PROFILE.db is a conversion of the scale workload (bench/wl_scale.c: 4
# threads, 4096 stacks, 4 step frames per stack; bench/scale.sh --keep leaves
# one). For each filter set below (unfiltered, the 13 filters of the readers'
# agreement test adapted to the workload, and three combinations) it asks
#
#   the commands   summary, top, leaks, peak, flamegraph, timeline, report
#   the endpoints  the web UI's: summary, sites, site (the top site's detail),
#                  timeline, timeline_sites, tree, leaks, threads,
#                  export/flamegraph, and bytehound's allocation_groups
#
# R times each (default 5; the runs of one question follow each other) and
# prints the median CPU seconds (user + system: the command's from
# /usr/bin/time, the server's from /proc/PID/stat around each request, at the
# kernel's 10 ms tick) and the command's peak RSS; the server's peak RSS
# (VmHWM) over the whole run is printed at the end. The server runs with
# --no-cache, so every request computes its answer. Filters the CLI has no
# option for (bytehound's backtrace depth) are asked of the server only ("-"
# in the command columns). Every command must exit 0 and every request
# answer 200 ("FAIL:" lines otherwise); timings are never checked. Writes
# OUT/query-results.md (default BUILD/query) and prints it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build out= db= runs=5 only= label= tiny=0
usage() {
    echo "usage: query.sh --db PROFILE.db [--runs R] [--out DIR] [--only RE] [--build DIR]" >&2
    echo "                [--label TEXT] | --tiny" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --db) db=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --tiny) tiny=1; runs=1; shift ;;
    *) usage ;;
    esac
done
build=$(cd "$build" && pwd)
bin=$build/bin
[ -n "$out" ] || out=$build/query
mkdir -p "$out"
out=$(cd "$out" && pwd)
for t in /usr/bin/time curl; do
    command -v "$t" >/dev/null 2>&1 || { echo "FAIL: $t not found (Debian packages time, curl)" >&2; exit 1; }
done
if [ "$tiny" = 1 ]; then
    "$bin/rheaper-cc" -O2 -pthread -o "$out/wl_scale.rh" "$here/wl_scale.c"
    rm -f "$out"/rip-*
    (cd "$out" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$out" \
        "$out/wl_scale.rh" 20000 4 2>/dev/null)
    db=$out/tiny.db
    "$bin/rheaper-convert" --quiet --force "$(ls "$out"/rip-* | head -n 1)" "$db"
fi
[ -n "$db" ] && [ -f "$db" ] || usage
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export RHEAPER_QUIET_NOTICES=1

# The filter sets: NAME|CLI options|URL parameters (CLI "-": server only).
cat > "$out/filters" <<'EOF'
none||
function|--function ^step_3$|function_regex=^step_3$
not-function|--not-function step_3|negative_function_regex=step_3
file|--file wl_scale|source_regex=wl_scale
not-file|--not-file wl_scale|negative_source_regex=wl_scale
from-to|--from 40% --to 60%|from=40%&to=60%
to|--to 50%|to=50%
from|--from 60%|from=60%
size|--min-size 100 --max-size 2000|size_min=100&size_max=2000
leaked|--lifetime leaked|lifetime=only_leaked
temporary|--lifetime temporary|lifetime=only_heaptrack_temporary
thread|--thread 2|thread=2
thread-size|--thread 2 --min-size 100|thread=2&size_min=100
depth|-|backtrace_depth_min=9
function+from-to|--function ^step_3$ --from 40% --to 60%|function_regex=^step_3$&from=40%&to=60%
function+size|--function ^step_3$ --min-size 100 --max-size 2000|function_regex=^step_3$&size_min=100&size_max=2000
from-to+size|--from 40% --to 60% --min-size 100|from=40%&to=60%&size_min=100
EOF

# median of the numbers on stdin (bench/lib.sh), three decimals
median() { rh_median %.3f; }

# start_server: rheaper serve on an ephemeral port (spid, base)
start_server() {
    "$bin/rheaper" serve "$db" --listen 127.0.0.1:0 --budget-ms 600000 --no-cache \
        > "$out/serve.out" 2> "$out/serve.err" &
    spid=$!
    base=
    for _ in $(seq 1 100); do
        port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$out/serve.out")
        [ -n "$port" ] && { base=http://127.0.0.1:$port; break; }
        sleep 0.1
    done
    [ -n "$base" ] || { echo "FAIL: rheaper serve did not start: $(cat "$out/serve.err")"; exit 1; }
}
start_server
trap 'kill "$spid" 2>/dev/null || true' EXIT INT TERM
tck=$(getconf CLK_TCK)
# the server's user + system CPU in ticks
scpu() { awk '{ print $14 + $15 }' "/proc/$spid/stat"; }

# each filter set's top site by bytes, for the site endpoint ("-" when the
# scope has none); then a fresh server, so that no scope is kept from this
top_site() {
    curl -sf -g "$base/data/0/sites?${1:+$1&}count=1&sort_by=bytes" |
        sed -n 's/.*"function":"\([^"]*\)",\("short":"[^"]*",\)\{0,1\}"location":"\([^"]*\)".*/function=\1\&location=\3/p' |
        head -n 1
}
: > "$out/sites"
while IFS='|' read -r name opts params; do
    echo "$name|$(top_site "$params")" >> "$out/sites"
done < "$out/filters"
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
start_server
[ -n "$(sed -n 's/^none|//p' "$out/sites")" ] || fail "no top site from /sites"

cmds="summary top leaks peak flamegraph timeline report"
eps="summary sites site timeline timeline_sites tree leaks threads export/flamegraph allocation_groups"
res=$out/query-results.md
{
    echo "### Query benchmark${label:+: $label}"
    echo
    echo "Profile: $(basename "$db") ($(stat -c %s "$db") bytes); $(nproc) cores; medians of $runs;" \
         "CPU seconds (user+system); load average before: $(rh_loadavg)."
    echo
    printf '| filter |'
    for c in $cmds; do printf ' %s |' "$c"; done
    for e in $eps; do printf ' /%s |' "$e"; done
    echo ' max RSS (MiB) |'
    printf '|---|'
    for _ in $cmds $eps; do printf -- '---|'; done
    echo '---|'
} > "$res"
while IFS='|' read -r name opts params; do
    if [ -n "$only" ] && ! echo "$name" | grep -Eq "$only"; then continue; fi
    row="| $name |"
    rss=0
    for c in $cmds; do
        if [ "$opts" = - ]; then row="$row - |"; continue; fi
        case $c in
        flamegraph) args="flamegraph $db -o $out/f.svg" ;;
        timeline) args="timeline $db -o $out/t.svg" ;;
        report) args="report $db -o $out/r.html" ;;
        *) args="$c $db" ;;
        esac
        : > "$out/cpu"
        k=0
        while [ "$k" -lt "$runs" ]; do
            # shellcheck disable=SC2086 # the options are words
            if ! /usr/bin/time -f '%U %S %M' -o "$out/time" "$bin/rheaper" $args $opts \
                > "$out/cmd.out" 2> "$out/cmd.err"; then
                fail "rheaper $c $opts: $(head -c 300 "$out/cmd.err")"
            fi
            tail -n 1 "$out/time" | awk '{ print $1 + $2 }' >> "$out/cpu"
            m=$(tail -n 1 "$out/time" | awk '{ print int($3 / 1024) }')
            [ "$m" -gt "$rss" ] && rss=$m
            k=$((k + 1))
        done
        row="$row $(median < "$out/cpu") |"
    done
    for e in $eps; do
        q=$params
        if [ "$e" = site ]; then
            site=$(sed -n "s/^$name|//p" "$out/sites" | head -n 1)
            if [ -z "$site" ]; then row="$row - |"; continue; fi
            q="${q:+$q&}$site"
        fi
        [ "$e" = allocation_groups ] && q="${q:+$q&}count=100"
        : > "$out/cpu"
        k=0
        while [ "$k" -lt "$runs" ]; do
            c0=$(scpu)
            code=$(curl -s -o "$out/ep.out" -w '%{http_code}' -g "$base/data/0/$e?$q" || echo 000)
            c1=$(scpu)
            [ "$code" = 200 ] || fail "/$e?$q answered $code: $(head -c 300 "$out/ep.out")"
            echo "$c0 $c1" | awk -v t="$tck" '{ print ($2 - $1) / t }' >> "$out/cpu"
            k=$((k + 1))
        done
        row="$row $(median < "$out/cpu") |"
    done
    echo "$row $rss |" >> "$res"
done < "$out/filters"
{
    echo
    echo "Server peak RSS (VmHWM): $(awk '/VmHWM/ { printf "%d MiB", $2 / 1024 }' "/proc/$spid/status");" \
         "load average after: $(rh_loadavg)."
} >> "$res"
cat "$res"
[ "$fails" = 0 ] || exit 1
