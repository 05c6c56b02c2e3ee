#!/bin/sh
# push.sh: the push benchmark (docs/fleet.md "Benchmark").
#
#   sh bench/push.sh [--build DIR] [--out DIR] [--size N] [--runs R] [--tiny]
#
# Records bench/wl_scale.c (built with rheaper-cc, 4 threads) for N
# allocations (default 10 M), converts it, starts one clickhouse-server on
# free loopback ports (tests/e2e/push/clickhouse.sh; data under OUT/ch), then runs
# R rounds (default 5), each in this order:
#
#   the baseline: sqlite3 reads the columns push sends (the allocations view,
#     every column but kind) and sums them: the floor of a push, which streams
#     from that same view
#   rheaper push into a fresh database: wall time, the allocations insert's
#     rows/s (push's own line), the client's CPU (/usr/bin/time) and the
#     server's (its /proc/PID/stat before and after)
#
# and prints the medians (min-max), the ratio of push to the baseline, the
# CPU per allocation of each end and the rate they would allow with a core
# each (an estimate, printed as such), the
# bytes per allocation on disk in ClickHouse (system.parts: the allocations
# table, all tables, and allocations again after OPTIMIZE ... FINAL merged its
# parts) next to SQLite's (the database file, and alloc_rows by dbstat), and
# the load average before and after. Writes OUT/push-results.md (default
# BUILD/push-bench). Results are checked, timings never: every push must
# report N+... allocations and ClickHouse must count as many rows as SQLite,
# else "FAIL:". --tiny (the ctest bench-push-tiny): 20 000 allocations, one
# round. Without clickhouse-server the benchmark is skipped (exit 77), or
# fails under CI=true.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build out= size=10000000 runs=5 tiny=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --tiny) tiny=1 size=20000 runs=1; shift ;;
    *) echo "usage: push.sh [--build DIR] [--out DIR] [--size N] [--runs R] [--tiny]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
out=${out:-$build/push-bench}
bin=$build/bin
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$root/tests/e2e/push/clickhouse.sh"
trap ch_stop_all EXIT
trap 'ch_stop_all; exit 1' INT TERM
ch_need
for t in rheaper-cc rheaper-convert rheaper; do
    [ -x "$bin/$t" ] || fail "$bin/$t is not built"
done
[ -x /usr/bin/time ] || fail "/usr/bin/time is needed (Debian package time)"
rm -rf "$out" && mkdir -p "$out"
cd "$out"
export LC_ALL=C
load() { rh_loadavg; }
load0=$(load)

# ---- the profile -------------------------------------------------------------------------
"$bin/rheaper-cc" -O2 -pthread -o wl_scale.rh "$here/wl_scale.c"
mkdir -p rec
(cd rec && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$out/rec" \
    ../wl_scale.rh "$size" 4 >/dev/null 2>record.err) || fail "recording wl_scale $size: $(cat rec/record.err)"
"$bin/rheaper-convert" rec/rip-* scale.db >/dev/null 2>convert.err || fail "convert: $(cat convert.err)"
rm -f rec/rip-*
rows=$(sqlite3 scale.db "select count(*) from allocations")
[ "$rows" -ge "$size" ] || fail "the profile has $rows allocations, fewer than $size"

ch_ports 2
ch_config "$out/ch" "$PORT1" "$PORT2" "$PORT2"
ch_start "$out/ch" "$PORT1"
spid=$(echo $SPIDS | awk '{print $NF}')
url=http://127.0.0.1:$PORT1/
chq() { curl -sS --data-binary "$1" "$url" || fail "query: $1"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # clock ticks
hz=$(getconf CLK_TCK)

# ---- rounds ------------------------------------------------------------------------------------
base_sql="select sum(id) + sum(alloc_after) + sum(coalesce(dealloc_after, 0)) + sum(bt) + sum(size)
    + sum(addr & 255) + sum(alloc_thread) + sum(coalesce(dealloc_thread, 0)) + sum(temporary)
    + sum(weight) from allocations"
: >base.txt
: >push.txt
r=1
while [ $r -le "$runs" ]; do
    t0=$(date +%s.%N)
    sqlite3 scale.db "$base_sql" >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc >>base.txt
    db=bench$r
    chq "DROP DATABASE IF EXISTS $db"
    c0=$(cpu "$spid")
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o client.time "$bin/rheaper" push scale.db --clickhouse "$url" \
        --database "$db" >push.out 2>push.err || fail "push: $(cat push.err)"
    t1=$(date +%s.%N)
    c1=$(cpu "$spid")
    n=$(sed -n 's/.*: \([0-9]*\) allocations,.*/\1/p' push.out)
    rate=$(sed -n 's/.*allocations at \([0-9]*\) rows\/s.*/\1/p' push.out)
    [ "$n" = "$rows" ] || fail "push sent $n allocations, the profile has $rows: $(cat push.out)"
    got=$(chq "SELECT count() FROM $db.allocations")
    [ "$got" = "$rows" ] || fail "ClickHouse counts $got rows, SQLite $rows"
    echo "$(echo "$t1 - $t0" | bc) $rate $(awk '{print $1 + $2}' client.time) $(echo "($c1 - $c0) / $hz" | bc -l)" >>push.txt
    if [ $r -eq 1 ]; then
        parts_alloc=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '$db' AND table = 'allocations' AND active")
        parts_all=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '$db' AND active")
        nparts=$(chq "SELECT count() FROM system.parts WHERE database = '$db' AND table = 'allocations' AND active")
        chq "OPTIMIZE TABLE $db.allocations FINAL"
        parts_opt=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '$db' AND table = 'allocations' AND active")
    fi
    [ $r -gt 1 ] && chq "DROP DATABASE IF EXISTS bench$((r - 1))"
    r=$((r + 1))
done
load1=$(load)

# ---- the figures -------------------------------------------------------------------------
# med FILE COLUMN: "median (min-max)" of a column
med() {
    printf '%.6g (%.6g-%.6g)' "$(medv "$1" "$2")" "$(awk -v c="$2" '{ print $c }' "$1" | rh_min)" \
        "$(awk -v c="$2" '{ print $c }' "$1" | rh_max)"
}
medv() { awk -v c="$2" '{ print $c }' "$1" | rh_median; }
dbsize=$(stat -c %s scale.db)
allocrows=$(sqlite3 scale.db "select coalesce(sum(pgsize), 0) from dbstat where name = 'alloc_rows'" 2>/dev/null || echo 0)
per() { echo "scale=1; $1 / $rows" | bc; }
pw=$(medv push.txt 1)
bw=$(medv base.txt 1)
{
    echo "### Push benchmark: $rows allocations (wl_scale, 4 threads), $runs rounds"
    echo
    echo "| figure | median (min-max) |"
    echo "|---|---|"
    echo "| rheaper push, wall (s) | $(med push.txt 1) |"
    echo "| allocations insert rate (rows/s, push's line) | $(med push.txt 2) |"
    echo "| whole push (allocations/s) | $(echo "$rows / $pw" | bc) |"
    echo "| client CPU, user+sys (s) | $(med push.txt 3) |"
    echo "| server CPU (s) | $(med push.txt 4) |"
    cc=$(medv push.txt 3)
    sc=$(medv push.txt 4)
    echo "| CPU per allocation, client / server (µs) | $(echo "scale=3; $cc * 1000000 / $rows" | bc) / $(echo "scale=3; $sc * 1000000 / $rows" | bc) |"
    echo "| estimate with a core each: allocations / max(client, server CPU) per s | $(awk -v r="$rows" -v c="$cc" -v s="$sc" 'BEGIN { m = c > s ? c : s; printf "%d", (m > 0 ? r / m : 0) }') |"
    echo "| baseline: sqlite3 reads the same columns (s) | $(med base.txt 1) |"
    echo "| push / baseline | $(echo "scale=2; $pw / $bw" | bc) |"
    echo
    echo "| on disk | bytes | per allocation |"
    echo "|---|---|---|"
    echo "| ClickHouse allocations ($nparts parts, system.parts) | $parts_alloc | $(per "$parts_alloc") |"
    echo "| ClickHouse allocations after OPTIMIZE FINAL | $parts_opt | $(per "$parts_opt") |"
    echo "| ClickHouse, every table of the profile | $parts_all | $(per "$parts_all") |"
    echo "| SQLite alloc_rows (dbstat) | $allocrows | $(per "$allocrows") |"
    echo "| SQLite, the whole profile.db | $dbsize | $(per "$dbsize") |"
    echo
    echo "Load average (1, 5, 15 min) before: $load0; after: $load1."
} >push-results.md
cat push-results.md
echo "push benchmark: results in $out/push-results.md"
exit 0
