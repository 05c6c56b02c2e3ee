#!/bin/sh
# agg_test.sh: the converter's aggregates agree exactly with the rows.
#
#   agg_test.sh BIN_DIR TESTS_SRC WORK_DIR
#
# Profiles: golden.rip (committed), and programs of the test tree built here
# with rheaper-cc and recorded here, so the test reads no other test's output:
# tests/integration/report/known.c and workload.c with the program's own blocks
# (RHEAPER_SCOPE=program) and as the whole process, and the quick start's
# threaded tests/example/example.c as the whole process. For each database:
#   1. every listing and drawing command, unfiltered and with filters, prints
#      the same bytes when answered from the aggregates (the default) as from
#      the rows (RHEAPER_ROWS=1);
#   2. summary's figures equal plain SQL over allocations: counts, bytes,
#      leaked, temporary, and the peak from the heap_timeline view;
#   3. filtered summaries equal the same SQL with the filter's WHERE clause
#      (stack, size, lifetime, thread and time filters, alone and together).
# Then each of those rip files, and golden.rip, is converted with and without
# --min-lifetime: summary prints the same figures.
set -eu
# WORK_DIR is removed first: refuse any other number of arguments
[ $# -eq 3 ] || { echo "usage: agg_test.sh BIN_DIR TESTS_SRC WORK_DIR" >&2; exit 2; }
bin=$1 src=$2 work=$3
. "$src/lib/require.sh"
require_tool sqlite3 sqlite3
rm -rf "$work" && mkdir -p "$work"
CASE= RH_DUMP=
. "$src/lib/check.sh" # ok, bad, checks_done
export RHEAPER_QUIET_NOTICES=1

"$bin/rheaper-convert" --quiet --search "$src/golden" "$src/golden/golden.rip" "$work/golden.db"

# record NAME SOURCE SCOPE [CC FLAGS...]: builds SOURCE with rheaper-cc, runs
# it with RHEAPER_ENABLE=1 and RHEAPER_SCOPE=SCOPE, converts its one profile
# to $work/NAME.db and leaves the rip in $work/NAME.rip
record() {
    name=$1 source=$2 scope=$3
    shift 3
    "$bin/rheaper-cc" -O1 -g -pthread -fno-optimize-sibling-calls "$@" -o "$work/$name" "$source" ||
        { bad "$name: rheaper-cc failed"; return; }
    mkdir "$work/$name.d"
    RHEAPER_ENABLE=1 RHEAPER_SCOPE=$scope RHEAPER_PROFILE_DIR="$work/$name.d" "$work/$name" \
        > "$work/$name.out" 2> "$work/$name.err" || { bad "$name: the program failed: $(cat "$work/$name.err")"; return; }
    set -- "$work/$name.d"/rip-*
    [ $# -eq 1 ] && [ -f "$1" ] || { bad "$name: $# profiles written, want 1"; return; }
    mv "$1" "$work/$name.rip"
    "$bin/rheaper-convert" --quiet "$work/$name.rip" "$work/$name.db" ||
        { bad "$name: rheaper-convert failed"; return; }
    [ "$(sqlite3 "$work/$name.db" "SELECT value FROM meta WHERE key = 'aggregates'")" = 1 ] ||
        { bad "$name: no aggregates in the database"; return; }
    [ "$(sqlite3 "$work/$name.db" "SELECT count(*) FROM allocations")" -gt 0 ] ||
        { bad "$name: no allocation recorded"; return; }
    dbs="$dbs $work/$name.db" rips="$rips $work/$name.rip"
}
dbs="$work/golden.db" rips=""
record known "$src/integration/report/known.c" program
record workload "$src/integration/report/workload.c" program
record workload-process "$src/integration/report/workload.c" process
record example "$src/example/example.c" process -O2
[ "$(echo $dbs | wc -w)" -eq 5 ] || bad "recorded $(echo $dbs | wc -w) profiles, want 5"
for db in $dbs; do echo "profile: $db"; done

# both DB ARGS...: the command both ways, byte for byte
both() {
    db=$1
    shift
    RHEAPER_ROWS=0 "$bin/rheaper" "$@" "$db" > "$work/a.out" 2> "$work/a.err" && a=0 || a=$?
    RHEAPER_ROWS=1 "$bin/rheaper" "$@" "$db" > "$work/b.out" 2> "$work/b.err" && b=0 || b=$?
    if [ "$a" -ne 0 ] || [ "$b" -ne 0 ]; then
        bad "$db: rheaper $* exits $a (aggregates) and $b (rows): $(cat "$work/a.err" "$work/b.err")"
    elif cmp -s "$work/a.out" "$work/b.out"; then
        ok
    else
        bad "$db: rheaper $* differs between aggregates and rows:"
        diff "$work/a.out" "$work/b.out" | head -6
    fi
}

# figure NAME: a value from summary --csv of the last run
figure() { sed -n "s/^$1,//p" "$work/s.csv"; }

# sqlcheck DB WHERE [ARGS...]: summary ARGS figures against SQL over the rows
# that pass WHERE
sqlcheck() {
    db=$1 where=$2
    shift 2
    # a sampled profile's figures are estimates, not these plain sums (
    # tests/integration/sample checks them against the weighted SQL)
    [ -z "$(sqlite3 "$db" "SELECT value FROM meta WHERE key = 'sample_mode'")" ] || return 0
    "$bin/rheaper" summary --csv "$@" "$db" > "$work/s.csv" 2> "$work/s.err" ||
        { bad "$db: summary $*: $(cat "$work/s.err")"; return; }
    want=$(sqlite3 -separator ' ' "$db" "SELECT count(*), coalesce(sum(size), 0),
        count(dealloc_after), coalesce(sum(CASE WHEN dealloc_after IS NOT NULL THEN size END), 0),
        coalesce(sum(dealloc_after IS NULL), 0),
        coalesce(sum(CASE WHEN dealloc_after IS NULL THEN size END), 0),
        coalesce(sum(temporary), 0) FROM allocations WHERE $where")
    got="$(figure alloc_blocks) $(figure alloc_bytes) $(figure freed_blocks) $(figure freed_bytes) $(figure leaked_blocks) $(figure leaked_bytes) $(figure temporary_blocks)"
    [ "$got" = "$want" ] && ok || bad "$db: summary $*: figures $got, SQL says $want"
    # the peak by SQL: heap_timeline's running sum over the same rows
    want=$(sqlite3 -separator ' ' "$db" "SELECT coalesce(max(live), 0) FROM (SELECT sum(d) OVER
        (ORDER BY t, k ROWS UNBOUNDED PRECEDING) AS live FROM (SELECT alloc_after AS t, 1 AS k,
        size AS d FROM allocations WHERE $where UNION ALL SELECT dealloc_after, 0, -size
        FROM allocations WHERE ($where) AND dealloc_after IS NOT NULL))")
    got=$(figure peak_bytes)
    [ "$got" = "$want" ] && ok || bad "$db: summary $*: peak $got, SQL says $want"
}

for db in $dbs; do
    for args in "summary" "summary --json" "top" "top --by count" "top --by peak" \
        "top --by leaked" "top --by temporary" "top --stacks" "top --no-skip" \
        "top --skip-function ^main$" "peak" "peak --stacks" "leaks" "leaks --stacks" \
        "leaks --buckets 7" "flamegraph --folded" "flamegraph --folded --leaked" \
        "flamegraph --folded --peak" "flamegraph --folded --no-skip" "timeline" \
        "summary --from 20% --to 80%" "top --min-size 64" "peak --lifetime leaked" \
        "leaks --thread 1" "top --function main" "summary --not-function ^main$"; do
        # shellcheck disable=SC2086 # the words are the arguments
        both "$db" $args
    done
    sqlcheck "$db" "1"
    sqlcheck "$db" "size >= 64" --min-size 64
    sqlcheck "$db" "dealloc_after IS NULL" --lifetime leaked
    sqlcheck "$db" "alloc_thread = 1" --thread 1
    sqlcheck "$db" "bt IN (SELECT id FROM backtraces WHERE sym REGEXP 'main')" --function main
    # time filters become an id range (binary search over ids)
    sqlcheck "$db" "alloc_after >= 1000 AND alloc_after <= 2000000" --from 0.000001 --to 0.002
    sqlcheck "$db" "alloc_thread = 1 AND size >= 16 AND dealloc_after IS NOT NULL" \
        --thread 1 --min-size 16 --lifetime 0ns..
done

# culled and unculled conversions: the same summary
n=0
for f in "$src/golden/golden.rip" $rips; do
    n=$((n + 1))
    rip="$work/r$n.rip"
    cp "$f" "$rip" 2>/dev/null || continue
    "$bin/rheaper-convert" --quiet --search "$src/golden" "$rip" "$work/full-$n.db" 2>/dev/null ||
        { bad "$rip: does not convert"; continue; }
    # golden.rip needs --search for its symbols; the others are culled by
    # `rheaper convert`, which takes --min-lifetime too
    if [ "$n" = 1 ]; then
        "$bin/rheaper-convert" --quiet --search "$src/golden" --min-lifetime 1ms "$rip" "$work/cull-$n.db"
    else
        "$bin/rheaper" convert --quiet --min-lifetime 1ms "$rip" "$work/cull-$n.db"
    fi
    "$bin/rheaper" summary "$work/full-$n.db" > "$work/full.txt"
    "$bin/rheaper" summary "$work/cull-$n.db" > "$work/cull.txt"
    if cmp -s "$work/full.txt" "$work/cull.txt"; then ok; else
        bad "$f: culled and unculled summaries differ"
        diff "$work/full.txt" "$work/cull.txt" | head -6
    fi
    [ "$(sqlite3 "$work/cull-$n.db" "SELECT value FROM meta WHERE key = 'min_lifetime_ns'")" = 1000000 ] &&
        ok || bad "$rip: meta min_lifetime_ns not recorded"
    [ "$(sqlite3 "$work/cull-$n.db" "SELECT count(*) FROM allocations WHERE dealloc_after - alloc_after < 1000000")" = 0 ] &&
        ok || bad "$rip: culled rows written"
    unset RHEAPER_QUIET_NOTICES
    "$bin/rheaper" summary "$work/cull-$n.db" 2>&1 >/dev/null | grep -q "culled profile" &&
        ok || bad "$rip: no culled notice"
    export RHEAPER_QUIET_NOTICES=1
done
# `rheaper convert --min-lifetime` culls as rheaper-convert does: the same
# summary figures (--csv: no function names, which need --search here)
"$bin/rheaper" convert --quiet --min-lifetime 1ms "$src/golden/golden.rip" "$work/cli-cull.db" 2>/dev/null
"$bin/rheaper" summary --csv "$work/golden.db" > "$work/full.csv"
"$bin/rheaper" summary --csv "$work/cli-cull.db" > "$work/cull.csv"
cmp -s "$work/full.csv" "$work/cull.csv" && ok || bad "rheaper convert --min-lifetime: summaries differ"
[ "$(sqlite3 "$work/cli-cull.db" "SELECT value FROM meta WHERE key = 'min_lifetime_ns'")" = 1000000 ] &&
    ok || bad "rheaper convert --min-lifetime: meta min_lifetime_ns not recorded"
echo "profiles: $(echo $dbs | wc -w), culling checked on $n rips"
checks_done
