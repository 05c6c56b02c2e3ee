#!/bin/sh
# query.sh: what a question costs on a big profile, command by command and
# endpoint by endpoint, unfiltered and filtered (docs/benchmarks.md, "Query
# benchmark").
#
#   sh bench/query.sh --db PROFILE.db [--runs R] [--out DIR] [--only RE]
#                     [--build DIR] [--label TEXT] [--timeout S] [--budget S]
#                     [--cmds "NAME ..."] [--eps "NAME ..."] [--one-server]
#                     [--sites FILE]
#   sh bench/query.sh --tiny          # 20 000 allocations of wl_scale, 1 run
#
# PROFILE.db is a conversion of the scale workload (bench/wl_scale.c: 4
# threads, 4096 stacks, 4 step frames per stack; bench/scale.sh --keep leaves
# one). For each filter set below (unfiltered, the 13 filters of the readers'
# agreement test adapted to the workload, and three combinations of two;
# --only RE keeps the sets whose name matches) it asks
#
#   the commands   summary, top, leaks, peak, churn, flamegraph, timeline,
#                  report, query (count and bytes of sel), diff (the profile
#                  against itself, both sides filtered), view --once --json
#                  (which takes no filter: unfiltered only)
#   the endpoints  every one the web UI's pages call, with the page's
#                  parameters: summary, sites (the call-site table), site (the
#                  scope's top site's detail), timeline_sites, timeline,
#                  memory, timeline_allocations (allocations and temporary
#                  allocations over time), sizes, tree, export/flamegraph,
#                  leaks, threads, allocations (the allocations tab); and
#                  bytehound's allocation_groups
#
# (--cmds and --eps choose a subset by the names of the tables' columns;
# --sites FILE takes each set's top site from OUT/sites of an earlier run on
# another conversion of the workload instead of asking the server first.)
# Each question is asked R times in a row (default 5) and the table gives the
# median CPU seconds, user + system: a command's from /usr/bin/time, a
# request's from /proc/PID/stat of the server around it (the kernel's 10 ms
# tick). Every request goes to a server started for it (`rheaper serve
# --threads 1 --no-cache` on a loopback port, killed after the answer), so
# each one pays what a new filter costs: no answer cache, no scope kept from
# an earlier request (--one-server: one server answers every request, and a
# request with the filters of the one before reuses its scope). A second table gives the wall seconds (curl's
# time_total for a request). Per filter set: the commands' largest peak RSS
# (/usr/bin/time) and the servers' (VmHWM after the answer), and the load
# average when the row began.
#
# A run is cut at --timeout seconds (default 120: `timeout` for a command,
# the server's --budget-ms for a request) and shown as "> S" (wall) and as
# "≥ C (cut)" (CPU), C the CPU seconds it had used by then; a question cut in
# its first run is not asked again. --budget S (default 0: none) stops
# repeating a question once its runs took S wall seconds in all, and the
# cell then shows the number of runs its median is of, "2.345 (2)". Filters
# the CLI has no option for (bytehound's backtrace depth) are asked of the
# server only ("-" in the command columns), and a scope with no call site has
# no site detail ("-").
#
# Every command must exit 0 and every request answer 200 ("FAIL:" lines
# otherwise); timings are never checked. --tiny (the ctest bench-query-tiny)
# records 20 000 allocations, runs once with one server, and also fails unless every cell of
# every row holds a figure (a "-" only where the rule above puts one). Writes
# OUT/query-results.md (default BUILD/query) and prints it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_loadavg
build=$here/../build out= db= runs=5 only= label= tiny=0 tmo=120 budget=0 one=0 sitesf=
all_cmds="summary top leaks peak churn flamegraph timeline report query diff view"
all_eps="summary sites site timeline_sites timeline memory talloc ttemp sizes tree flamegraph leaks threads allocations groups"
cmds=$all_cmds eps=$all_eps
usage() {
    echo "usage: query.sh --db PROFILE.db [--runs R] [--out DIR] [--only RE] [--build DIR]" >&2
    echo "                [--label TEXT] [--timeout S] [--budget S] [--cmds \"NAME ...\"]" >&2
    echo "                [--eps \"NAME ...\"] [--one-server] [--sites FILE] | --tiny" >&2
    echo "  commands: $all_cmds" >&2
    echo "  endpoints: $all_eps" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || case $1 in --tiny | --one-server) ;; *) usage ;; esac
    case $1 in
    --db) db=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --cmds) cmds=$2; shift 2 ;;
    --eps) eps=$2; shift 2 ;;
    --one-server) one=1; shift ;;
    --sites) sitesf=$2; shift 2 ;;
    --tiny) tiny=1; runs=1; one=1; shift ;;
    *) usage ;;
    esac
done
for v in "$runs" "$tmo" "$budget"; do
    case $v in '' | *[!0-9]*) usage ;; esac
done
[ "$runs" -ge 1 ] && [ "$tmo" -ge 1 ] || usage
for c in $cmds; do
    case " $all_cmds " in *" $c "*) ;; *) echo "query.sh: no command $c" >&2; usage ;; esac
done
for e in $eps; do
    case " $all_eps " in *" $e "*) ;; *) echo "query.sh: no endpoint $e" >&2; usage ;; esac
done
build=$(cd "$build" && pwd)
bin=$build/bin
[ -n "$out" ] || out=$build/query
mkdir -p "$out"
out=$(cd "$out" && pwd)
for t in /usr/bin/time curl timeout; do
    command -v "$t" >/dev/null 2>&1 ||
        { echo "FAIL: $t not found (Debian packages time, curl, coreutils)" >&2; exit 1; }
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
db=$(cd "$(dirname "$db")" && pwd)/$(basename "$db")
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

# The endpoints: NAME|path|the page's parameters ("@site": the scope's top site).
cat > "$out/endpoints" <<'EOF'
summary|summary|
sites|sites|sort_by=bytes&order=dsc&count=200
site|site|@site
timeline_sites|timeline_sites|count=8
timeline|timeline|
memory|memory|count=3
talloc|timeline_allocations|count=6
ttemp|timeline_allocations|count=6&temporary=1
sizes|sizes|
tree|tree|kind=bottom-up&sort_by=bytes&count=5000
flamegraph|export/flamegraph|mode=allocated
leaks|leaks|count=100
threads|threads|
allocations|allocations|sort_by=timestamp&order=asc&count=40&skip=0
groups|allocation_groups|count=100
EOF

now_ns() { date +%s%N; }
tck=$(getconf CLK_TCK)
spid=
trap '[ -z "$spid" ] || kill "$spid" 2>/dev/null || true' EXIT INT TERM

# start_server: a fresh rheaper serve on an ephemeral loopback port (spid,
# base); its per-request budget is the cap
start_server() {
    : > "$out/serve.out"
    "$bin/rheaper" serve "$db" --listen 127.0.0.1:0 --threads 1 --no-cache \
        --budget-ms "$((tmo * 1000))" > "$out/serve.out" 2> "$out/serve.err" &
    spid=$!
    base=
    for _ in $(seq 1 500); do
        port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$out/serve.out")
        [ -n "$port" ] && { base=http://127.0.0.1:$port; break; }
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.02
    done
    [ -n "$base" ] || { echo "FAIL: rheaper serve did not start: $(cat "$out/serve.err")"; exit 1; }
}
stop_server() {
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    spid=
}
# the server's user + system CPU in ticks; its peak RSS in KiB
scpu() { awk '{ print $14 + $15 }' "/proc/$spid/stat"; }
shwm() { awk '/^VmHWM/ { print $2 }' "/proc/$spid/status"; }

# each filter set's top site by bytes, for the site endpoint (empty when the
# scope has none); --sites FILE: the ones a run on another conversion of the
# workload found (its OUT/sites)
if [ -n "$sitesf" ]; then
    [ -f "$sitesf" ] || { echo "FAIL: --sites $sitesf: no such file" >&2; exit 1; }
    cp "$sitesf" "$out/sites.given"
    sitesf=$out/sites.given
fi
start_server
top_site() {
    curl -sf -g --max-time "$((tmo + 10))" "$base/data/0/sites?${1:+$1&}count=1&sort_by=bytes" |
        sed -n 's/.*"function":"\([^"]*\)",\("short":"[^"]*",\)\{0,1\}"location":"\([^"]*\)".*/function=\1\&location=\3/p' |
        head -n 1
}
: > "$out/sites"
while IFS='|' read -r name opts params; do
    if [ -n "$only" ] && ! echo "$name" | grep -Eq "$only"; then continue; fi
    case " $eps " in *" site "*)
        if [ -n "$sitesf" ]; then
            grep "^$name|" "$sitesf" | head -n 1 >> "$out/sites" || echo "$name|" >> "$out/sites"
        else
            echo "$name|$(top_site "$params")" >> "$out/sites"
        fi ;;
    esac
done < "$out/filters"
stop_server
case " $eps " in *" site "*)
    [ -n "$(sed -n 's/^none|//p' "$out/sites")" ] || [ -n "$only" ] || fail "no top site from /sites" ;;
esac

# run_cmd C OPTS: one run of command C with the filter options OPTS; appends
# "cpu wall kib capped" to $out/runs
run_cmd() {
    case $1 in
    flamegraph) set -- "$2" flamegraph "$db" -o "$out/f.svg" ;;
    timeline) set -- "$2" timeline "$db" -o "$out/t.svg" ;;
    report) set -- "$2" report "$db" -o "$out/r.html" ;;
    query) set -- "$2" query "$db" "SELECT count(*), sum(size) FROM sel" ;;
    diff) set -- "$2" diff "$db" "$db" ;;
    view) set -- "$2" view "$db" --once --json ;;
    *) set -- "$2" "$1" "$db" ;;
    esac
    _o=$1
    shift
    _t0=$(now_ns) _rc=0
    # shellcheck disable=SC2086 # the options are words
    /usr/bin/time -f '%U %S %M' -o "$out/time" timeout "$tmo" "$bin/rheaper" "$@" $_o \
        > "$out/cmd.out" 2> "$out/cmd.err" || _rc=$?
    _t1=$(now_ns)
    _cap=0
    if [ "$_rc" = 124 ] || [ "$_rc" = 137 ]; then
        _cap=1
    elif [ "$_rc" != 0 ]; then
        fail "rheaper $* $_o: exit $_rc: $(head -c 300 "$out/cmd.err")"
        _cap=2
    fi
    tail -n 1 "$out/time" | awk -v w="$(( (_t1 - _t0) / 1000000 ))" -v c="$_cap" \
        '{ print $1 + $2, w / 1000, $3, c }' >> "$out/runs"
}

# run_ep PATH QUERY: one request on a fresh server (--one-server: on the one
# server); appends "cpu wall kib capped"
run_ep() {
    [ -n "$spid" ] || start_server
    _c0=$(scpu)
    _w=$(curl -s -o "$out/ep.out" -w '%{http_code} %{time_total}' -g --max-time "$((tmo + 10))" \
        "$base/data/0/$1?$2" || true)
    _c1=$(scpu)
    _m=$(shwm)
    [ "$one" = 1 ] || stop_server
    _code=${_w%% *}
    _cap=0
    if [ "$_code" = 503 ] && grep -q 'budget' "$out/ep.out"; then
        _cap=1
    elif [ -z "$_code" ] || [ "$_code" = 000 ]; then
        _cap=1 # curl's own cap
    elif [ "$_code" != 200 ]; then
        fail "/$1?$2 answered $_code: $(head -c 300 "$out/ep.out")"
        _cap=2
    fi
    echo "$_c0 $_c1 ${_w#* } ${_m:-0} $_cap" |
        awk -v t="$tck" '{ print ($2 - $1) / t, $3, $4, $5 }' >> "$out/runs"
}

# ask KIND WHAT ARG: the runs of one question; sets cpu, wall (cells) and kib
ask() {
    : > "$out/runs"
    _k=0 _spent=0
    while [ "$_k" -lt "$runs" ]; do
        if [ "$1" = cmd ]; then run_cmd "$2" "$3"; else run_ep "$2" "$3"; fi
        _k=$((_k + 1))
        tail -n 1 "$out/runs" | grep -q ' [12]$' && break
        _spent=$(awk '{ s += $2 } END { printf "%d", s }' "$out/runs")
        [ "$budget" -gt 0 ] && [ "$_spent" -ge "$budget" ] && break
    done
    kib=$(awk '$3 > m { m = $3 } END { print m + 0 }' "$out/runs")
    if grep -q ' 2$' "$out/runs"; then
        cpu=failed wall=failed
        return
    fi
    if grep -q ' 1$' "$out/runs"; then
        # the CPU seconds it had used when it was cut: a lower bound
        cpu="≥ $(awk '$4 == 1 { printf "%.3f", $1; exit }' "$out/runs") (cut)" wall="> $tmo"
        return
    fi
    _n=""
    [ "$_k" -lt "$runs" ] && _n=" ($_k)"
    cpu="$(awk '{ print $1 }' "$out/runs" | rh_median %.3f)$_n"
    wall="$(awk '{ print $2 }' "$out/runs" | rh_median %.3f)$_n"
}

res=$out/query-results.md
wres=$out/query-wall.md
header() {
    printf '| filter |'
    for c in $cmds; do printf ' %s |' "$c"; done
    for e in $eps; do printf ' /%s |' "$e"; done
    echo ' CLI max RSS (MiB) | serve max RSS (MiB) | load |'
    printf '|---|'
    for _ in $cmds $eps; do printf -- '---|'; done
    echo '---|---|---|'
}
{
    echo "### Query benchmark${label:+: $label}, CPU seconds"
    echo
    echo "Profile: $(basename "$db") ($(stat -c %s "$db") bytes); build $(basename "$(dirname "$build")")/$(basename "$build");" \
         "$(nproc) cores; medians of $runs$([ "$one" = 1 ] && echo ", one server"); cap $tmo s$([ "$budget" -gt 0 ] && echo "; budget $budget s per question");" \
         "load average before: $(rh_loadavg)."
    echo
    header
} > "$res"
{
    echo "### Query benchmark${label:+: $label}, wall seconds"
    echo
    header
} > "$wres"
while IFS='|' read -r name opts params; do
    if [ -n "$only" ] && ! echo "$name" | grep -Eq "$only"; then continue; fi
    la=$(cut -d' ' -f1 /proc/loadavg)
    row="| $name |" wrow="| $name |"
    crss=0 srss=0
    for c in $cmds; do
        if [ "$opts" = - ] || { [ "$c" = view ] && [ -n "$opts" ]; }; then
            row="$row - |" wrow="$wrow - |"
            continue
        fi
        ask cmd "$c" "$opts"
        row="$row $cpu |" wrow="$wrow $wall |"
        [ "$kib" -gt "$crss" ] && crss=$kib
    done
    while IFS='|' read -r e path extra; do
        case " $eps " in *" $e "*) ;; *) continue ;; esac
        q=$params
        if [ "$extra" = @site ]; then
            site=$(sed -n "s/^$name|//p" "$out/sites" | head -n 1)
            if [ -z "$site" ]; then row="$row - |" wrow="$wrow - |"; continue; fi
            extra=$site
        fi
        q="${q:+$q&}$extra"
        ask ep "$path" "$q"
        row="$row $cpu |" wrow="$wrow $wall |"
        [ "$kib" -gt "$srss" ] && srss=$kib
    done < "$out/endpoints"
    tail="$((crss / 1024)) | $((srss / 1024)) | $la |"
    echo "$row $tail" >> "$res"
    echo "$wrow $tail" >> "$wres"
done < "$out/filters"
{
    echo
    echo "Load average after: $(rh_loadavg)."
} >> "$res"
cat "$res"
echo
cat "$wres"

if [ "$tiny" = 1 ]; then
    # every row has a cell per column, each a figure; "-" only in the command
    # columns of a server-only filter set or the site column of a scope
    # without a site
    ncols=$(( $(echo $cmds $eps | wc -w) + 4 ))
    ncmd=$(echo $cmds | wc -w)
    viewcol=$(echo $cmds | tr ' ' '\n' | grep -n '^view$' | cut -d: -f1)
    sitecol=$(echo $eps | tr ' ' '\n' | grep -n '^site$' | cut -d: -f1)
    sed -n '/^| filter |/,$p' "$res" | grep '^| ' | sed -n '2,$p' > "$out/rows"
    [ "$(wc -l < "$out/rows")" = "$(wc -l < "$out/filters")" ] ||
        fail "$(wc -l < "$out/rows") rows in the table, $(wc -l < "$out/filters") filter sets"
    while IFS= read -r r; do
        name=$(echo "$r" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }')
        opts=$(grep "^$name|" "$out/filters" | cut -d'|' -f2)
        site=$(sed -n "s/^$name|//p" "$out/sites")
        echo "$r" | awk -F'|' -v n="$ncols" -v ncmd="$ncmd" -v sc="${sitecol:-0}" \
            -v nocli="$([ "$opts" = - ] && echo 1 || echo 0)" -v nosite="$([ -z "$site" ] && echo 1 || echo 0)" \
            -v name="$name" -v first="$([ -z "$opts" ] && echo 1 || echo 0)" -v vc="${viewcol:-0}" '{
            if (NF - 2 != n) { printf "FAIL: row %s has %d cells, want %d\n", name, NF - 2, n; exit }
            for (i = 3; i < NF; i++) {
                c = $i; gsub(/^ +| +$/, "", c); k = i - 2
                if (c ~ /^[0-9]+(\.[0-9]+)?$/) continue
                if (c == "-" && ((nocli && k <= ncmd) || (!first && k == vc) || (nosite && k == ncmd + sc))) continue
                printf "FAIL: row %s, column %d holds \"%s\", not a figure\n", name, k, c
            } }'
    done < "$out/rows" > "$out/cells"
    if [ -s "$out/cells" ]; then
        cat "$out/cells"
        fails=$((fails + $(wc -l < "$out/cells")))
    else
        echo "ok: every row of the table holds $ncols figures"
    fi
fi
[ "$fails" = 0 ] || { echo "FAIL: $fails check(s) failed (see above)"; exit 1; }
