#!/bin/sh
# serve.sh: latency of `rheaper serve` under 8 concurrent clients, beside the
# `rheaper` command answering the same question (docs/benchmarks.md).
#
#   sh bench/serve.sh                       # 10 M allocations of wl_scale.c
#   sh bench/serve.sh --size 1000000 --rounds 5 --requests 4 --clients 8
#   sh bench/serve.sh --db PROFILE.db       # reuse a converted profile
#   sh bench/serve.sh --tiny                # 20 000 allocations, 1 round
#   sh bench/serve.sh --cache ...           # with the answer cache on
#
# The server runs with --no-cache unless --cache is given: every request
# asks the same URL, so with the cache on all but the first would be hits.
#
# The workload is the scale benchmark's (wl_scale.c: 4 threads, 4096 stacks,
# an xmalloc wrapper, the planted leak remember_session). Each question is
# asked in rounds: per round the command once (wall time), then CLIENTS curl
# loops at once, REQUESTS requests each (curl's time_total per request). The
# table gives p50 and p99 of all requests of all rounds, the command's median,
# and their ratio; every answer must be HTTP 200 ("FAIL:" lines otherwise).
# The load average is printed beside: the machine is shared.
#
# Then the mixed round (mix-*): CLIENTS clients at once, each asking its own
# filtered question (a different function_regex, time window or both, listed
# in $out/mix), so no two requests are alike and the figure measures the
# filtered pass, not a cache or one hot page set. Per round each question's
# command runs once first (alone, timed), then all clients start together.
# The row mix-all gives p50/p99 over every mixed request.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build out= size=10000000 rounds=5 requests=4 clients=8 db= tiny=0 cache=--no-cache
usage() {
    echo "usage: serve.sh [--build DIR] [--out DIR] [--size N] [--rounds R] [--requests N]" >&2
    echo "                [--clients C] [--db PROFILE.db] [--tiny] [--cache]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --cache) cache=; shift ;;
    *) usage ;;
    esac
done
[ "$tiny" = 1 ] && size=20000 rounds=1 requests=2
build=$(cd "$build" && pwd)
[ -n "$out" ] || out=$build/serve-bench
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$build/bin
for t in curl sqlite3; do
    command -v "$t" >/dev/null 2>&1 || { echo "FAIL: $t not found" >&2; exit 1; }
done
now_ms() { date +%s%3N; }

if [ -z "$db" ]; then
    db=$out/scale-$size.db
    if [ ! -f "$db" ]; then
        "$bin/rheaper-cc" -O2 -pthread -o "$out/wl_scale.rh" "$here/wl_scale.c"
        rm -rf "$out/rec"
        mkdir -p "$out/rec"
        echo "recording wl_scale $size 4 ..."
        (cd "$out/rec" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$out/rec" \
            "$out/wl_scale.rh" "$size" 4 >/dev/null 2>"$out/record.err") ||
            { echo "FAIL: recording failed: $(cat "$out/record.err")"; exit 1; }
        echo "converting ..."
        "$bin/rheaper-convert" --quiet "$out"/rec/rip-* "$db" || { echo "FAIL: convert failed"; exit 1; }
        rm -rf "$out/rec"
    fi
fi
rows=$(sqlite3 "$db" "SELECT value FROM meta WHERE key = 'rows'")

"$bin/rheaper" serve "$db" --listen 127.0.0.1:0 --budget-ms 60000 $cache >"$out/serve.out" 2>"$out/serve.err" &
spid=$!
trap 'kill $spid 2>/dev/null' EXIT
i=0
base=
while [ $i -lt 100 ] && [ -z "$base" ]; do
    sleep 0.2
    port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$out/serve.out")
    [ -n "$port" ] && base=http://127.0.0.1:$port
    i=$((i + 1))
done
[ -n "$base" ] || { echo "FAIL: the server did not start: $(cat "$out/serve.err")"; exit 1; }

# NAME|URL|the rheaper command for the same question
cat >"$out/questions" <<EOF
list|/list|summary $db
groups|/data/0/allocation_groups?sort_by=only_matched.size&order=dsc&count=10|top $db -n 10
timeline|/data/0/timeline|timeline $db -o $out/cli-timeline.svg
flamegraph|/data/0/export/flamegraph|flamegraph $db -o $out/cli-flame.svg
leaks|/data/0/leaks?count=10|leaks $db -n 10
function|/data/0/allocation_groups?function_regex=remember_session&sort_by=only_matched.size&order=dsc&count=10|top $db -n 10 --function remember_session
from_to|/data/0/allocation_groups?from=45%25&to=50%25&sort_by=only_matched.size&order=dsc&count=10|top $db -n 10 --from 45% --to 50%
EOF
rm -f "$out"/lat-* "$out"/cli-*.ms
r=1
while [ $r -le "$rounds" ]; do
    while IFS='|' read -r name url cmd; do
        t0=$(now_ms)
        # shellcheck disable=SC2086 # the command's words
        RHEAPER_QUIET_NOTICES=1 "$bin/rheaper" $cmd >/dev/null 2>&1 || echo "FAIL: rheaper $cmd"
        echo $(($(now_ms) - t0)) >>"$out/cli-$name.ms"
        pids=
        c=1
        while [ $c -le "$clients" ]; do
            (
                k=0
                while [ $k -lt "$requests" ]; do
                    # a timeout prints "000 120.0" and is reported below, not fatal
                    curl -s -g --max-time 120 -o /dev/null -w '%{http_code} %{time_total}\n' "$base$url" || :
                    k=$((k + 1))
                done
            ) >>"$out/lat-$name.$c" &
            pids="$pids $!"
            c=$((c + 1))
        done
        # shellcheck disable=SC2086
        wait $pids || :
    done <"$out/questions"
    r=$((r + 1))
done

# The mixed round: one different filtered question per client (cycled when
# there are more clients than questions).
cat >"$out/mix" <<EOF
mix-remember|function_regex=remember_session|--function remember_session
mix-decoy|function_regex=load_decoy_table|--function load_decoy_table
mix-10-15|from=10%25&to=15%25|--from 10% --to 15%
mix-30-35|from=30%25&to=35%25|--from 30% --to 35%
mix-70-75|from=70%25&to=75%25|--from 70% --to 75%
mix-s2-50-52|function_regex=step_2&from=50%25&to=52%25|--function step_2 --from 50% --to 52%
mix-rem-40-90|function_regex=remember_session&from=40%25&to=90%25|--function remember_session --from 40% --to 90%
mix-s5-80-90|function_regex=step_5&from=80%25&to=90%25|--function step_5 --from 80% --to 90%
EOF
nmix=$(wc -l <"$out/mix")
r=1
while [ $r -le "$rounds" ]; do
    while IFS='|' read -r name q opts; do
        t0=$(now_ms)
        # shellcheck disable=SC2086 # the options' words
        RHEAPER_QUIET_NOTICES=1 "$bin/rheaper" top "$db" -n 10 $opts >/dev/null 2>&1 || echo "FAIL: rheaper top $opts"
        echo $(($(now_ms) - t0)) >>"$out/cli-$name.ms"
    done <"$out/mix"
    pids=
    c=1
    while [ $c -le "$clients" ]; do
        line=$(sed -n "$(((c - 1) % nmix + 1))p" "$out/mix")
        name=${line%%|*}
        q=${line#*|}
        q=${q%%|*}
        (
            k=0
            while [ $k -lt "$requests" ]; do
                curl -s -g --max-time 120 -o /dev/null -w '%{http_code} %{time_total}\n' \
                    "$base/data/0/allocation_groups?$q&sort_by=only_matched.size&order=dsc&count=10" || :
                k=$((k + 1))
            done
        ) >>"$out/lat-$name.$c" &
        pids="$pids $!"
        c=$((c + 1))
    done
    # shellcheck disable=SC2086
    wait $pids || :
    r=$((r + 1))
done
while IFS='|' read -r name q opts; do
    echo "$name|$q|top -n 10 $opts" >>"$out/questions"
done <"$out/mix"
echo "mix-all|(every mixed request)|" >>"$out/questions"

echo
echo "rheaper serve: $clients clients x $requests requests x $rounds rounds per question; $rows rows in $(basename "$db")"
echo "mix-*: $clients clients at once, each its own question; mix-all: all of them"
echo "load average: $(rh_loadavg)"
printf '%-14s %9s %9s %9s %6s %13s %11s\n' question p50_ms p99_ms max_ms n cli_median_ms p50/cli
while IFS='|' read -r name url cmd; do
    if [ "$name" = mix-all ]; then
        cat "$out"/lat-mix-*.[0-9]* >"$out/lat-$name"
    else
        cat "$out"/lat-"$name".* >"$out/lat-$name" 2>/dev/null || : >"$out/lat-$name"
    fi
    [ -s "$out/lat-$name" ] || continue
    bad=$(awk '$1 != 200' "$out/lat-$name" | wc -l)
    [ "$bad" -eq 0 ] || echo "FAIL: $name: $bad answers were not HTTP 200"
    awk '{print $2 * 1000}' "$out/lat-$name" | sort -n >"$out/lat-$name.sorted"
    n=$(wc -l <"$out/lat-$name.sorted")
    p50=$(awk -v n="$n" 'NR == int((n - 1) * 0.50) + 1 {printf "%.1f", $1}' "$out/lat-$name.sorted")
    p99=$(awk -v n="$n" 'NR == int((n - 1) * 0.99) + 1 {printf "%.1f", $1}' "$out/lat-$name.sorted")
    max=$(tail -n 1 "$out/lat-$name.sorted")
    cli=-
    [ -f "$out/cli-$name.ms" ] &&
        cli=$(rh_median %.0f <"$out/cli-$name.ms")
    printf '%-14s %9s %9s %9s %6s %13s %11s\n' "$name" "$p50" "$p99" "$max" "$n" "$cli" \
        "$(awk -v a="$p50" -v b="$cli" 'BEGIN {if (b + 0 > 0) printf "%.2f", a / b; else print "-"}')"
done <"$out/questions"
