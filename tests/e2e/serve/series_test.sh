#!/bin/sh
# series_test.sh: the converter's per-stack series over time (stack_series,
# convert/rh_db_series.c) and the charts and call-site details the server
# answers from them. series_prog.c's plan is known: temp_a 3000 temporary
# blocks, then keep_b 2000 blocks (200 and 300 bytes), then leak_c 7 blocks of 4096 bytes never
# freed, then keep_b's blocks freed. The allocations charts must count those
# per site (cumulative, by column), temp_a's columns all before keep_b's, the
# heap by site and leak_c's own line must end at its 28672 bytes, and every
# answer (unfiltered, a stack filter, size filters) must be byte for byte the
# one a database without stack_series answers from its rows. An allocs blob
# changed by hand changes the answer where the scope is made of whole stacks
# (the charts are read from it) and not where a filter splits a stack.
#
# usage: series_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
command -v jq >/dev/null 2>&1 || { echo "jq not found"; exit 77; }
rm -rf "$W"
mkdir -p "$W/rec"
"$BIN/rheaper-cc" -O1 -o "$W/prog" "$SRC/series_prog.c" || { echo "rheaper-cc failed"; exit 1; }
(cd "$W/rec" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program ../prog) || { echo "series_prog failed"; exit 1; }
"$BIN/rheaper" convert "$W"/rec/rip-* "$W/a.db" --quiet --force || { echo "convert failed"; exit 1; }
DB=$W/a.db
eq "one stack_series row per stack" "$(sq "SELECT count(*) FROM stack_series")" "$(sq "SELECT count(*) FROM stack_stats")"
eq "the allocations' span is the run's" "$(sq "SELECT value FROM meta WHERE key = 'series_alloc_span_ns'")" \
    "$(sq "SELECT value FROM meta WHERE key = 'duration_ns'")"
eq "heap blobs written" "$(sq "SELECT value FROM meta WHERE key = 'series_heap'")" 1
# the rows' answer: the same database without stack_series
cp "$W/a.db" "$W/rows.db"
sqlite3 "$W/rows.db" "DROP TABLE stack_series" || fail "cannot drop stack_series"
# a copy whose temp_a allocs blob says one block in column 0
cp "$W/a.db" "$W/hand.db"
sqlite3 "$W/hand.db" "UPDATE stack_series SET allocs = X'000100' WHERE bt IN
    (SELECT DISTINCT a.bt FROM allocations a WHERE a.size = 24)" || fail "cannot change a blob"
rh_serve "$W/a.db" "$W/rows.db" "$W/hand.db"
get "/data/0/sites?count=10" >/dev/null
loc() { jq -r --arg f "$1" '.sites[] | select(.function == $f) | .location' "$W/body"; }
LA=$(loc temp_a) LB=$(loc keep_b) LC=$(loc leak_c)
# the per-site series of the allocations chart: the count up to each column
get "/data/0/timeline_allocations?count=8" >/dev/null
cp "$W/body" "$W/al.json"
last() { jq --arg f "$1" '[.series[] | select(.function == $f) | .values[-1]][0]' "$2"; }
eq "allocations: temp_a" "$(last temp_a "$W/al.json")" 3000
eq "allocations: keep_b" "$(last keep_b "$W/al.json")" 2000
eq "allocations: leak_c" "$(last leak_c "$W/al.json")" 7
eq "allocations: the total" "$(jq '.total[-1]' "$W/al.json")" "$(sq "SELECT count(*) FROM allocations")"
# temp_a's last new block comes no later than keep_b's first
firstcol() { jq --arg f "$1" '[.series[] | select(.function == $f) | .values | to_entries[] | select(.value > 0) | .key][0]' "$2"; }
fullcol() { jq --arg f "$1" --argjson n "$2" '[.series[] | select(.function == $f) | .values | to_entries[] | select(.value == $n) | .key][0]' "$3"; }
A_DONE=$(fullcol temp_a 3000 "$W/al.json") B_FIRST=$(firstcol keep_b "$W/al.json")
eq "temp_a's columns before keep_b's ($A_DONE <= $B_FIRST)" "$([ "$A_DONE" -le "$B_FIRST" ] && echo yes)" yes
get "/data/0/timeline_allocations?count=8&temporary=1" >/dev/null
cp "$W/body" "$W/te.json"
eq "temporary: temp_a" "$(last temp_a "$W/te.json")" 3000
eq "temporary: only temp_a" "$(jq '[.series[] | select(.values[-1] > 0)] | length' "$W/te.json")" 1
# the heap by site and one site's line end at what each still holds
get "/data/0/timeline_sites?count=8" >/dev/null
eq "heap by site: leak_c at the end" "$(last leak_c "$W/body")" 28672
eq "heap by site: keep_b at the end" "$(last keep_b "$W/body")" 0
eq "heap by site: keep_b's highest" "$(jq '[.series[] | select(.function == "keep_b") | .values | max][0]' "$W/body")" 500000
get "/data/0/site?function=leak_c&location=$LC" >/dev/null
eq "leak_c's line at the end" "$(jq '.timeline.series[0].values[-1]' "$W/body")" 28672
# every answer as the rows give it
for q in "timeline_allocations?count=8" "timeline_allocations?count=8&temporary=1" \
    "timeline_sites?count=8" "site?function=temp_a&location=$LA" "site?function=keep_b&location=$LB" \
    "site?function=leak_c&location=$LC" "timeline_allocations?count=8&function_regex=keep_b" \
    "timeline_allocations?count=8&temporary=1&function_regex=temp_a" \
    "timeline_allocations?count=8&size_min=100" "timeline_allocations?count=8&size_min=250" "site?function=keep_b&location=$LB&function_regex=keep_b"; do
    get "/data/0/$q" >/dev/null
    cp "$W/body" "$W/agg.json"
    st=$(get "/data/1/$q")
    eq "$q: status" "$st" 200
    eq "$q: the rows' answer" "$(cmp -s "$W/agg.json" "$W/body" && echo same)" same
done
# the chart is read from the blob: the changed one shows through
get "/data/2/timeline_allocations?count=8" >/dev/null
eq "a changed allocs blob: temp_a" "$(last temp_a "$W/body")" 1
get "/data/2/timeline_allocations?count=8&function_regex=temp_a" >/dev/null
eq "a changed allocs blob, a stack filter: temp_a" "$(last temp_a "$W/body")" 1
get "/data/2/timeline_allocations?count=8&size_max=100" >/dev/null
eq "a changed allocs blob, a size filter that keeps whole stacks: temp_a" "$(last temp_a "$W/body")" 1
get "/data/2/timeline_allocations?count=8&size_max=250" >/dev/null
eq "a changed allocs blob, a size filter that splits keep_b's stack (rows): temp_a" "$(last temp_a "$W/body")" 3000
rh_stop
rh_done
