#!/bin/sh
# api_test.sh: every endpoint of `rheaper serve`, with every filter and sort
# key, against SQL over the same database.
#
# usage: api_test.sh BIN SRC WORK
# serve_prog.c (its plan is in its header) is recorded; the server answers
# about that database, and each answer is compared with a query of the
# sqlite3 shell written from bytehound's definitions: total counts, the ids
# and their order, sizes, and the frames of the stacks.
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rh_setup
rh_serve "$DB"

D=$(sq "SELECT value FROM meta WHERE key = 'duration_ns'")
T50=$(sq "SELECT CAST(round($D * 0.5) AS INTEGER)")
T30=$(sq "SELECT CAST(round($D * 0.3) AS INTEGER)")
AMID=$(sq "SELECT addr FROM allocations ORDER BY addr LIMIT 1 OFFSET 60")
AHI=$(sq "SELECT addr FROM allocations ORDER BY addr LIMIT 1 OFFSET 150")
WORKER=$(sq "SELECT alloc_thread FROM allocations WHERE size = 256 LIMIT 1")
BTHIT=$(sq "SELECT bt FROM allocations WHERE size = 64 LIMIT 1")

# /list
eq "/list status" "$(get /list)" 200
eq "/list ids" "$(jq -r '[.[].id]|join(",")' "$W/body")" "0"
eq "/list final_allocated" "$(jq '.[0].final_allocated' "$W/body")" \
    "$(sq "SELECT sum(size) FROM allocations WHERE dealloc_after IS NULL")"
eq "/list final_allocated_count" "$(jq '.[0].final_allocated_count' "$W/body")" \
    "$(sq "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL")"
eq "/list unique_backtrace_count" "$(jq '.[0].unique_backtrace_count' "$W/body")" \
    "$(sq "SELECT count(*) FROM stacks")"
eq "/list runtime" "$(jq '.[0].runtime.secs * 1000000000 + .[0].runtime.fract_nsecs' "$W/body")" "$D"
# CPU figures beside the heap: samples, rate and the periods the runtime dropped
eq "/list cpu_samples_dropped" "$(jq '.[0].cpu_samples_dropped' "$W/body")" \
    "$(sq "SELECT coalesce((SELECT value FROM meta WHERE key = 'cpu_samples_dropped'), 0)")"
eq "/list cpu_samples" "$(jq '.[0].cpu_samples' "$W/body")" \
    "$(sq "SELECT coalesce(sum(samples), 0) FROM cpu_stack_stats")"

# Each filter: URL parameters | the WHERE clause over `allocations a` that
# bytehound's definition gives.
cat >"$W/filters" <<EOF
|1
from=50%25|a.alloc_after >= $T50
to=50%25|a.alloc_after <= $T50
from=30%25&to=50%25|a.alloc_after BETWEEN $T30 AND $T50
to=0|a.alloc_after <= 999999999
from=1|a.alloc_after >= 1000000000
lifetime=all|1
lifetime=only_leaked|a.dealloc_after IS NULL
lifetime=only_temporary|a.dealloc_after IS NOT NULL
lifetime=only_not_deallocated_in_current_range&to=50%25|a.alloc_after <= $T50 AND (a.dealloc_after IS NULL OR a.dealloc_after > $T50)
lifetime=only_deallocated_in_current_range&to=50%25|a.alloc_after <= $T50 AND a.dealloc_after <= $T50
lifetime=only_not_deallocated_in_current_range|a.dealloc_after IS NULL
lifetime=only_whole_group_leaked|a.dealloc_after IS NULL AND a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING count(dealloc_after) = 0)
lifetime=only_heaptrack_temporary|a.temporary = 1
address_min=$AMID|a.addr >= $AMID
address_max=$AMID|a.addr <= $AMID
address_min=$AMID&address_max=$AHI|a.addr BETWEEN $AMID AND $AHI
size_min=100|a.size >= 100
size_max=64|a.size <= 64
size_min=48&size_max=128|a.size BETWEEN 48 AND 128
lifetime_min=1us|a.dealloc_after IS NULL OR a.dealloc_after - a.alloc_after >= 1000
lifetime_max=1ms|a.dealloc_after IS NOT NULL AND a.dealloc_after - a.alloc_after <= 1000000
lifetime_min=2ms&lifetime_max=1h|a.dealloc_after IS NOT NULL AND a.dealloc_after - a.alloc_after BETWEEN 2000000 AND 3600000000000
backtrace_depth_min=6|(SELECT count(*) FROM backtraces b WHERE b.id = a.bt) >= 6
backtrace_depth_max=5|(SELECT count(*) FROM backtraces b WHERE b.id = a.bt) <= 5
backtrace_depth_min=6&backtrace_depth_max=6|(SELECT count(*) FROM backtraces b WHERE b.id = a.bt) = 6
function_regex=^group_h|a.bt IN (SELECT id FROM backtraces WHERE sym GLOB 'group_h*')
function_regex=few_leaks%7Cbig_block|a.bt IN (SELECT id FROM backtraces WHERE sym IN ('few_leaks', 'big_block'))
negative_function_regex=group|a.bt NOT IN (SELECT id FROM backtraces WHERE sym GLOB '*group*')
source_regex=serve_prog%5C.c|a.bt IN (SELECT id FROM backtraces WHERE file GLOB '*serve_prog.c')
negative_source_regex=pthread|a.bt NOT IN (SELECT id FROM backtraces WHERE file GLOB '*pthread*')
function_regex=main&negative_function_regex=^group_|a.bt IN (SELECT id FROM backtraces WHERE sym = 'main') AND a.bt NOT IN (SELECT id FROM backtraces WHERE sym GLOB 'group_*')
group_allocations_min=10|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING count(*) >= 10)
group_allocations_max=20|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING count(*) <= 20)
group_allocations_min=25%25|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING count(*) >= (SELECT count(*) FROM allocations) / 4)
group_leaked_allocations_min=50%25|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING sum(dealloc_after IS NULL) >= CAST(count(*) * 50 / 100.0 AS INTEGER))
group_leaked_allocations_max=5|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING sum(dealloc_after IS NULL) <= 5)
group_leaked_allocations_min=10|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING sum(dealloc_after IS NULL) >= 10)
group_leaked_allocations_max=50%25|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING sum(dealloc_after IS NULL) <= CAST(count(*) * 50 / 100.0 AS INTEGER))
group_interval_min=1us|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING max(alloc_after) - min(alloc_after) >= 1000)
group_interval_max=0|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING max(alloc_after) = min(alloc_after))
group_interval_min=10%25|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING max(alloc_after) - min(alloc_after) >= $D * 10 / 100)
group_allocations_min=10&group_leaked_allocations_min=50%25|a.bt IN (SELECT bt FROM allocations GROUP BY bt HAVING count(*) >= 10 AND sum(dealloc_after IS NULL) >= CAST(count(*) * 50 / 100.0 AS INTEGER))
thread=$WORKER|a.alloc_thread = $WORKER
size_min=32&lifetime=only_leaked&function_regex=group|a.size >= 32 AND a.dealloc_after IS NULL AND a.bt IN (SELECT id FROM backtraces WHERE sym GLOB '*group*')
kind=malloc|a.kind = 'malloc'
backtraces=$BTHIT|a.bt = $BTHIT
EOF

nf=0
while IFS='|' read -r params where; do
    nf=$((nf + 1))
    want=$(sq "SELECT count(*) FROM allocations a WHERE $where")
    eq "allocations?$params status" "$(get "/data/0/allocations?$params&count=1000")" 200
    eq "allocations?$params total_count" "$(jq .total_count "$W/body")" "$want"
    eq "allocations?$params ids" "$(jq -r '[.allocations[].id]|join(",")' "$W/body")" \
        "$(sq "SELECT group_concat(id) FROM (SELECT id FROM allocations a WHERE $where ORDER BY alloc_after, id)")"
    eq "allocation_groups?$params status" "$(get "/data/0/allocation_groups?$params&sort_by=only_matched.size&order=dsc")" 200
    eq "allocation_groups?$params groups" "$(jq -r '[.allocations[]|"\(.backtrace_id):\(.only_matched.allocated_count):\(.only_matched.size):\(.only_matched.leaked_count)"]|join(",")' "$W/body")" \
        "$(sq "SELECT group_concat(g, ',') FROM (SELECT bt || ':' || count(*) || ':' || sum(size) || ':' || sum(dealloc_after IS NULL) AS g FROM allocations a WHERE $where GROUP BY bt ORDER BY sum(size) DESC, bt DESC)")"
    eq "allocation_groups?$params total_count" "$(jq .total_count "$W/body")" \
        "$(sq "SELECT count(DISTINCT bt) FROM allocations a WHERE $where")"
    # the folded stacks sum to the filtered bytes; the tree's root too
    get "/data/0/export/flamegraph.pl?$params" >/dev/null
    eq "flamegraph.pl?$params bytes" "$(awk '{s += $NF} END {print s + 0}' "$W/body")" \
        "$(sq "SELECT coalesce(sum(size), 0) FROM allocations a WHERE $where")"
    get "/data/0/allocation_ascii_tree?$params" >/dev/null
    eq "allocation_ascii_tree?$params root" "$(awk '$4 == "all" {print $1 ":" $2 ":" $3}' "$W/body")" \
        "$(sq "SELECT coalesce(sum(size), 0) || ':' || count(*) || ':' || coalesce(sum(dealloc_after IS NULL), 0) FROM allocations a WHERE $where")"
    get "/data/0/export/heaptrack?$params" >/dev/null
    eq "export/heaptrack?$params allocations" "$(grep -c '^+ ' "$W/body")" \
        "$(sq "SELECT count(*) FROM allocations a WHERE $where")"
    get "/data/0/timeline?$params" >/dev/null
    eq "timeline?$params end" "$(jq '.end_size[-1]' "$W/body")" \
        "$(sq "SELECT coalesce(sum(size), 0) FROM allocations a WHERE $where AND a.dealloc_after IS NULL")"
    get "/data/0/threads?$params" >/dev/null
    eq "threads?$params" "$(jq -r '[.threads[]|select(.allocated_count > 0)|"\(.id):\(.allocated_count):\(.allocated_size):\(.leaked_count)"]|join(",")' "$W/body")" \
        "$(sq "SELECT group_concat(t, ',') FROM (SELECT alloc_thread || ':' || count(*) || ':' || sum(size) || ':' || sum(dealloc_after IS NULL) AS t FROM allocations a WHERE $where GROUP BY alloc_thread ORDER BY alloc_thread)")"
    get "/data/0/leaks?$params" >/dev/null
    eq "leaks?$params bytes" "$(jq '[.leaks[].leaked_size]|add // 0' "$W/body")" \
        "$(sq "SELECT coalesce(sum(size), 0) FROM allocations a WHERE $where AND a.dealloc_after IS NULL")"
done <"$W/filters"
eq "filters tried" "$nf" 47

# one parser: the CLI's flags and the URL's parameters select the same rows
cli() { "$BIN/rheaper" query "$DB" "SELECT count(*) || ':' || coalesce(sum(size), 0) FROM sel" --csv "$@" 2>/dev/null | tail -1; }
url() { get "/data/0/allocation_groups?$1" >/dev/null; jq -r '"\([.allocations[].only_matched.allocated_count]|add // 0):\([.allocations[].only_matched.size]|add // 0)"' "$W/body"; }
eq "CLI and URL: size" "$(url "size_min=100&size_max=300000")" "$(cli --min-size 100 --max-size 300000)"
eq "CLI and URL: leaked, function" "$(url "lifetime=only_leaked&function_regex=group")" "$(cli --lifetime leaked --function group)"
eq "CLI and URL: time, not file" "$(url "from=30%25&to=50%25&negative_source_regex=pthread")" "$(cli --from 30% --to 50% --not-file pthread)"
eq "CLI and URL: thread" "$(url "thread=$WORKER")" "$(cli --thread "$WORKER")"

# the timeline: the converter's table without filters, one pass over the rows
# with them; both reach the peak the converter stored
PEAK=$(sq "SELECT value FROM meta WHERE key = 'peak_bytes'")
get "/data/0/timeline" >/dev/null
eq "timeline stored: peak" "$(jq -r '"\(.stored) \(.max_size|max)"' "$W/body")" "true $PEAK"
get "/data/0/timeline?size_min=0" >/dev/null
eq "timeline computed: peak" "$(jq -r '"\(.stored) \(.max_size|max) \(.end_count[-1])"' "$W/body")" \
    "false $PEAK $(sq "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL")"

# sort keys of allocations, both orders, with count and skip
for key in timestamp address size; do
    col=$key
    [ $key = timestamp ] && col=alloc_after
    [ $key = address ] && col=addr
    for order in asc dsc; do
        dir=ASC
        [ $order = dsc ] && dir=DESC
        get "/data/0/allocations?sort_by=$key&order=$order&count=7&skip=3&size_min=20" >/dev/null
        eq "allocations sort_by=$key order=$order" "$(jq -r '[.allocations[].id]|join(",")' "$W/body")" \
            "$(sq "SELECT group_concat(id) FROM (SELECT id FROM allocations WHERE size >= 20 ORDER BY $col $dir, id $dir LIMIT 7 OFFSET 3)")"
    done
done

# sort keys of groups: only_matched.* over the filtered rows, all.* over all
# of a group's rows (the filter size_min=40 makes them differ)
for key in min_timestamp max_timestamp interval allocated_count leaked_count size; do
    case $key in
    min_timestamp) expr="min(alloc_after)" ;;
    max_timestamp) expr="max(alloc_after)" ;;
    interval) expr="max(alloc_after) - min(alloc_after)" ;;
    allocated_count) expr="count(*)" ;;
    leaked_count) expr="sum(dealloc_after IS NULL)" ;;
    size) expr="sum(size)" ;;
    esac
    for order in asc dsc; do
        dir=ASC
        [ $order = dsc ] && dir=DESC
        get "/data/0/allocation_groups?sort_by=only_matched.$key&order=$order&size_min=40&count=4&skip=1" >/dev/null
        eq "groups sort_by=only_matched.$key order=$order" "$(jq -r '[.allocations[].backtrace_id]|join(",")' "$W/body")" \
            "$(sq "SELECT group_concat(bt) FROM (SELECT bt FROM allocations WHERE size >= 40 GROUP BY bt ORDER BY $expr $dir, bt $dir LIMIT 4 OFFSET 1)")"
        get "/data/0/allocation_groups?sort_by=all.$key&order=$order&size_min=40" >/dev/null
        eq "groups sort_by=all.$key order=$order" "$(jq -r '[.allocations[].backtrace_id]|join(",")' "$W/body")" \
            "$(sq "SELECT group_concat(bt) FROM (SELECT bt, $expr AS k FROM allocations WHERE bt IN (SELECT bt FROM allocations WHERE size >= 40) GROUP BY bt ORDER BY k $dir, bt $dir)")"
    done
done
# every figure of one group, all and only_matched
BT=$(sq "SELECT bt FROM allocations WHERE size = 64 LIMIT 1")
get "/data/0/allocation_groups?size_min=64&size_max=64&lifetime=only_leaked" >/dev/null
eq "group only_matched figures" "$(jq -r '.allocations[0].only_matched|"\(.size) \(.min_size) \(.max_size) \(.leaked_count) \(.allocated_count) \(.min_timestamp.secs * 1000000000 + .min_timestamp.fract_nsecs) \(.max_timestamp.secs * 1000000000 + .max_timestamp.fract_nsecs) \(.interval.secs * 1000000000 + .interval.fract_nsecs)"' "$W/body")" \
    "$(sq "SELECT sum(size) || ' ' || min(size) || ' ' || max(size) || ' ' || count(*) || ' ' || count(*) || ' ' || min(alloc_after) || ' ' || max(alloc_after) || ' ' || (max(alloc_after) - min(alloc_after)) FROM allocations WHERE bt = $BT AND dealloc_after IS NULL")"
eq "group all figures" "$(jq -r '.allocations[0].all|"\(.size) \(.min_size) \(.max_size) \(.leaked_count) \(.allocated_count)"' "$W/body")" \
    "$(sq "SELECT sum(size) || ' ' || min(size) || ' ' || max(size) || ' ' || sum(dealloc_after IS NULL) || ' ' || count(*) FROM allocations WHERE bt = $BT")"
eq "group all.allocated_count is the plan's 20" "$(jq '.allocations[0].all.allocated_count' "$W/body")" 20
eq "group only_matched.leaked_count is the plan's 12" "$(jq '.allocations[0].only_matched.leaked_count' "$W/body")" 12

# frames: the biggest allocation's backtrace in bytehound's order, outermost
# first (frame_no descending), ending in a frame for the allocation function
get "/data/0/allocations?sort_by=size&order=dsc&count=1" >/dev/null
BT=$(jq '.allocations[0].backtrace_id' "$W/body")
KIND=$(sq "SELECT kind FROM stacks WHERE id = $BT")
eq "frames: functions" "$(jq -r '[.allocations[0].backtrace[].function]|join(";")' "$W/body")" \
    "$(sq "SELECT group_concat(coalesce(sym, 'null'), ';') FROM (SELECT sym FROM backtraces WHERE id = $BT ORDER BY frame_no DESC)");$KIND"
eq "frames: only the last is the allocator's" "$(jq -r '[.allocations[0].backtrace[]|select(.allocator)|.function]|join(";")' "$W/body")" "$KIND"
eq "frames: sources and lines" "$(jq -r '[.allocations[0].backtrace[]|"\(.source):\(.line)"]|join(";")' "$W/body")" \
    "$(sq "SELECT group_concat(coalesce(file, 'null') || ':' || coalesce(line, 'null'), ';') FROM (SELECT file, line FROM backtraces WHERE id = $BT ORDER BY frame_no DESC)");null:null"
eq "frames: addresses" "$(jq -r '[.allocations[0].backtrace[].address]|join(";")' "$W/body")" \
    "$(sq "SELECT group_concat(coalesce(address, 0), ';') FROM (SELECT address FROM backtraces WHERE id = $BT ORDER BY frame_no DESC)");0"
eq "frames: call site is big_block" "$(jq -r '.allocations[0]|.backtrace[.callsite].function' "$W/body")" big_block
eq "allocation fields" "$(jq -r '.allocations[0]|"\(.size) \(.address) \(.address_s) \(.deallocation) \(.thread)"' "$W/body")" \
    "$(sq "SELECT a.size || ' ' || a.addr || ' ' || printf('%016X', a.addr) || ' null ' || t.tid FROM allocations a JOIN threads t ON t.id = a.alloc_thread ORDER BY size DESC, a.id DESC LIMIT 1")"
get "/data/0/allocations?thread=$WORKER&count=1" >/dev/null
eq "deallocation of a freed block" "$(jq -r '.allocations[0].deallocation|"\(.timestamp.secs * 1000000000 + .timestamp.fract_nsecs) \(.thread)"' "$W/body")" \
    "$(sq "SELECT a.dealloc_after || ' ' || t.tid FROM allocations a JOIN threads t ON t.id = a.dealloc_thread WHERE a.alloc_thread = $WORKER ORDER BY a.alloc_after, a.id LIMIT 1")"

# call sites: the wrapper `group` is skipped unless no_skip; skip_function adds one
get "/data/0/allocation_groups?function_regex=group_hit" >/dev/null
eq "call site past the wrapper" "$(jq -r '.allocations[0]|.backtrace[.callsite].function' "$W/body")" group_hit
get "/data/0/allocation_groups?function_regex=group_hit&no_skip=1" >/dev/null
eq "no_skip: frame 0" "$(jq -r '.allocations[0]|.backtrace[.callsite].function' "$W/body")" group
get "/data/0/allocation_groups?function_regex=big_block&skip_function=big_block" >/dev/null
eq "skip_function" "$(jq -r '.allocations[0]|.backtrace[.callsite].function' "$W/body")" main
get "/data/0/leaks?no_skip=1" >/dev/null
eq "leaks with no_skip name the wrapper" "$(jq -r '[.leaks[].function]|map(select(. == "group"))|length' "$W/body")" 1

# the flamegraph is an SVG with the call sites in it
eq "flamegraph status" "$(get "/data/0/export/flamegraph?lifetime=only_leaked")" 200
eq "flamegraph is XML" "$(xmllint --noout "$W/body" 2>&1 && echo ok)" ok
eq "flamegraph names big_block" "$(grep -c 'big_block' "$W/body" | awk '{print ($1 > 0)}')" 1
eq "flamegraph leaked: no temp_churn" "$(grep -c 'temp_churn' "$W/body")" 0

# mmaps and mallopts: empty without the tables, bytehound's shapes with them
# (each backtrace ends in a frame for the call: mmap, munmap, mallopt)
eq "mmaps without table" "$(get /data/0/mmaps)" 200
eq "mmaps empty" "$(jq -c .operations "$W/body")" "[]"
eq "mallopts without table" "$(get /data/0/mallopts)" 200
eq "mallopts empty" "$(jq -c . "$W/body")" "[]"
rh_stop
cp "$DB" "$W/m.db"
sqlite3 "$W/m.db" "DROP TABLE IF EXISTS mmaps; DROP TABLE IF EXISTS mallopts;
  CREATE TABLE mmaps(id INTEGER PRIMARY KEY, time INTEGER, thread INTEGER, op TEXT,
  address INTEGER, length INTEGER, new_address INTEGER, new_length INTEGER, prot INTEGER,
  flags INTEGER, fd INTEGER, offset INTEGER, result INTEGER, stack_id INTEGER);
  CREATE TABLE mallopts(id INTEGER PRIMARY KEY, time INTEGER, thread INTEGER, param INTEGER,
  value INTEGER, result INTEGER, stack_id INTEGER);
  INSERT INTO mmaps VALUES(1, 5000, 1, 'mmap', 0, 8192, 139800000000000, NULL, 3, 34, -1, 0, 0, 1);
  INSERT INTO mmaps VALUES(2, 6000, 1, 'munmap', 139800000000000, 8192, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1);
  INSERT INTO mallopts VALUES(1, 4000, 1, -3, 65536, 1, 1);"
rh_serve "$W/m.db"
get /data/0/mmaps >/dev/null
eq "mmaps: mmap" "$(jq -r '.operations[0].mmap|"\(.pointer) \(.length) \(.is_readable) \(.is_writable) \(.is_executable) \(.is_private) \(.is_anonymous) \(.file_descriptor) \(.timestamp.fract_nsecs) \(.backtrace|length)"' "$W/body")" \
    "139800000000000 8192 true true false true true -1 5000 $(sq "SELECT count(*) + 1 FROM backtraces WHERE id = 1")"
eq "mmaps: munmap" "$(jq -r '.operations[1].munmap|"\(.pointer) \(.length)"' "$W/body")" "139800000000000 8192"
get /data/0/mallopts >/dev/null
eq "mallopts" "$(jq -r '.[0]|"\(.raw_param) \(.param) \(.value) \(.result) \(.timestamp.fract_nsecs)"' "$W/body")" \
    "-3 M_MMAP_THRESHOLD 65536 1 4000"
rh_stop
rh_done
