#!/bin/sh
# convert_ab.sh: the converter's throughput, one build against another
# (the target: "at least 3 M events/s end to end").
#
#   sh bench/convert_ab.sh [--runs R] [--out DIR] RIP BASE_CONVERT NEW_CONVERT
#
# Converts RIP with BASE_CONVERT and NEW_CONVERT (two rheaper-convert
# binaries, for example a copy of main's and this tree's build/bin/), R rounds
# (default 5), alternating base, new, base, new... so that both see the same
# load. Each conversion runs with RHEAPER_CONVERT_STATS=1, which prints the
# CPU time of the merge thread (decoding, merging, aggregates; the main
# thread until the merge ends), of the writer thread (rows into SQLite) and
# of finishing (stacks, aggregate tables, indexes, commit). A build without
# that line (older than it) shows "-" there.
#
# It prints, per build, the medians (min-max) of the wall time, events/s
# (meta `events` / wall), peak RSS and each thread's CPU, and "CPU bound",
# max(merge, writer) + finishing: the two threads overlap, so on an idle
# machine the wall time is close to it, while on a loaded one the wall time
# also counts waiting for a core. Ratios are new / base from the same run.
# The load average is printed before and after.
#
# Results are checked, timings never: the two builds' databases must give the
# same row count and the same sums over every column of the allocations view
# and of stack_stats and timeline_stacks; a difference prints "FAIL:" and
# exits 1. The databases are written to DIR (default a temp dir) and
# removed at the end.
set -eu
. "$(cd "$(dirname "$0")" && pwd)/lib.sh" # rh_loadavg; its medians below follow rh_median's rule
runs=5 out=
usage() {
    echo "usage: convert_ab.sh [--runs R] [--out DIR] RIP BASE_CONVERT NEW_CONVERT" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -eq 3 ] || usage
rip=$1 base=$2 new=$3
[ -f "$rip" ] || { echo "convert_ab.sh: $rip: no such file" >&2; exit 1; }
for b in "$base" "$new"; do
    [ -x "$b" ] || { echo "convert_ab.sh: $b: not an executable" >&2; exit 1; }
done
command -v sqlite3 >/dev/null || { echo "convert_ab.sh: needs the sqlite3 shell" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "convert_ab.sh: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
if [ -z "$out" ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/convert_ab.XXXXXX")
    trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
log=$out/runs.txt
: >"$log"

load() { rh_loadavg; }
load_before=$(load)

# one NAME BIN ROUND: converts, appends "NAME wall rss merge writer finish" to the log.
one() {
    db=$out/$1.db
    rm -f "$db"
    RHEAPER_CONVERT_STATS=1 /usr/bin/time -f 'time %e %M' -o "$out/time.txt" \
        "$2" "$rip" "$db" --force 2>"$out/err.txt" >/dev/null || {
        echo "convert_ab.sh: $2 failed:" >&2
        cat "$out/err.txt" >&2
        exit 1
    }
    # "rheaper-convert: stats: merge thread X s CPU, writer thread Y s CPU, finishing Z s CPU"
    stats=$(sed -n 's/.*stats: merge thread \([0-9.]*\) s CPU, writer thread \([0-9.]*\) s CPU, finishing \([0-9.]*\) s CPU.*/\1 \2 \3/p' "$out/err.txt")
    [ -n "$stats" ] || stats="- - -"
    echo "$1 $(sed -n 's/^time //p' "$out/time.txt") $stats" >>"$log"
}

i=1
while [ "$i" -le "$runs" ]; do
    one base "$base"
    one new "$new"
    printf '.' >&2
    i=$((i + 1))
done
echo >&2
load_after=$(load)

events=$(sqlite3 "$out/new.db" "SELECT value FROM meta WHERE key = 'events'")
allocs=$(sqlite3 "$out/new.db" "SELECT value FROM meta WHERE key = 'allocs'")

# The same answers from both builds (sums over every column).
check_sql="SELECT count(*), sum(id), sum(alloc_after), sum(dealloc_after), sum(bt), sum(size),
  sum(addr % 1000003), sum(alloc_thread), sum(dealloc_thread), sum(temporary), count(DISTINCT kind)
  FROM allocations;
 SELECT count(*), sum(bt), sum(count), sum(bytes), sum(freed_blocks), sum(leaked_bytes),
  sum(peak_bytes), sum(temporary), sum(first_alloc), sum(last_alloc) FROM stack_stats;
 SELECT count(*), sum(col), sum(bt), sum(at_max), sum(at_end) FROM timeline_stacks;
 SELECT count(*), sum(max_bytes), sum(max_time), sum(end_bytes) FROM timeline;
 SELECT count(*), sum(blocks), sum(bytes) FROM leak_curve;"
a=$(sqlite3 "$out/base.db" "$check_sql")
b=$(sqlite3 "$out/new.db" "$check_sql")
status=0
if [ "$a" != "$b" ]; then
    echo "FAIL: the two builds' databases differ:" >&2
    echo "base: $a" >&2
    echo "new:  $b" >&2
    status=1
fi
size_base=$(wc -c <"$out/base.db")
size_new=$(wc -c <"$out/new.db")

echo "convert_ab.sh: $(basename "$rip"): $events events, $allocs allocations, $runs interleaved rounds"
echo "load average before: $load_before, after: $load_after ($(nproc) cores)"
awk -v events="$events" -v allocs="$allocs" -v sb="$size_base" -v sn="$size_new" '
# the median as rh_median of bench/lib.sh takes it: an even count gives the
# mean of the two middle values
function med(name, col,    n, i, j, t, v) {
    n = 0
    for (i = 1; i <= nr; i++) if (who[i] == name && val[i, col] != "-") v[++n] = val[i, col] + 0
    if (!n) return "-"
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    lo[name, col] = v[1]; hi[name, col] = v[n]
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function bound(name,    n, i, j, t, v, m) {
    n = 0
    for (i = 1; i <= nr; i++) if (who[i] == name && val[i, 3] != "-") {
        m = val[i, 3] > val[i, 4] ? val[i, 3] : val[i, 4]
        v[++n] = m + val[i, 5]
    }
    if (!n) return "-"
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function cell(name, col, m) {
    m = med(name, col)
    if (m == "-") return "-"
    return sprintf("%.2f (%.2f-%.2f)", m, lo[name, col], hi[name, col])
}
function ratio(x, y) { return (x == "-" || y == "-" || y == 0) ? "-" : sprintf("%.2f", x / y) }
{ nr++; who[nr] = $1; for (k = 1; k <= 5; k++) val[nr, k] = $(k + 1) }
END {
    wb = med("base", 1); wn = med("new", 1)
    printf "| figure (median, min-max) | base | new | new / base |\n|---|---|---|---|\n"
    printf "| wall, s | %s | %s | %s |\n", cell("base", 1), cell("new", 1), ratio(wn, wb)
    printf "| events/s (wall), M | %.2f | %.2f | %s |\n", events / wb / 1e6, events / wn / 1e6, ratio(wb, wn)
    printf "| merge thread CPU, s | %s | %s | %s |\n", cell("base", 3), cell("new", 3), ratio(med("new", 3), med("base", 3))
    printf "| writer thread CPU, s | %s | %s | %s |\n", cell("base", 4), cell("new", 4), ratio(med("new", 4), med("base", 4))
    printf "| finishing CPU, s | %s | %s | %s |\n", cell("base", 5), cell("new", 5), ratio(med("new", 5), med("base", 5))
    bb = bound("base"); bn = bound("new")
    printf "| CPU bound: max(merge, writer) + finishing, s | %s | %s | %s |\n", bb == "-" ? "-" : sprintf("%.2f", bb), bn == "-" ? "-" : sprintf("%.2f", bn), ratio(bn, bb)
    if (bb != "-" && bn != "-")
        printf "| events/s at the CPU bound, M | %.2f | %.2f | %s |\n", events / bb / 1e6, events / bn / 1e6, ratio(bb, bn)
    printf "| peak RSS, MB | %.0f | %.0f | %s |\n", med("base", 2) / 1024, med("new", 2) / 1024, ratio(med("new", 2), med("base", 2))
    printf "| database, bytes per allocation | %.1f | %.1f | %s |\n", sb / allocs, sn / allocs, ratio(sn, sb)
}' "$log"
exit $status
