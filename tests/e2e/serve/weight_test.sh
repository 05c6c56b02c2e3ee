#!/bin/sh
# weight_test.sh: `rheaper serve` on a sampled profile ("weights on
# sampled profiles"). serve_prog.c is recorded with RHEAPER_SAMPLE_BYTES and a
# fixed RHEAPER_SAMPLE_SEED, so most blocks are not seen and every figure is
# an estimate. For each filter (none, one the C pass takes, one only
# bytehound has, both) every group, thread, timeline end, flamegraph total,
# leak site and diff site must equal the weighted SQL over the same rows
# (each row round(size * weight) bytes, round(weight * 4096) / 4096 blocks,
# a sum of blocks rounded once), and the totals the `rheaper` command's.
#
#   sh weight_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rm -rf "$W"
mkdir -p "$W/rec"
"$BIN/rheaper-cc" -O1 -pthread -o "$W/prog" "$SRC/serve_prog.c" || { echo "rheaper-cc failed"; exit 1; }
(cd "$W/rec" && RHEAPER_ENABLE=1 RHEAPER_SAMPLE_BYTES=256 RHEAPER_SAMPLE_SEED=7 ../prog) ||
    { echo "serve_prog failed"; exit 1; }
set -- "$W"/rec/rip-*
"$BIN/rheaper" convert "$1" "$W/s.db" --quiet --force || { echo "convert failed"; exit 1; }
rh_record "$W/a.db" # a full run, for /diff
DB=$W/s.db
eq "sample_mode" "$(sq "SELECT value FROM meta WHERE key = 'sample_mode'")" bytes
ROWS=$(sq "SELECT count(*) FROM allocations")
EST=$(sq "SELECT sum(count) FROM stack_stats")
[ "$EST" -gt "$ROWS" ] || fail "the sample kept every block ($ROWS rows, $EST estimated)"

# the weighted sums of the rows where the condition holds
N() { echo "CAST(round(sum(CASE WHEN $1 THEN CAST(round(weight * 4096) AS INTEGER) ELSE 0 END) / 4096.0) AS INTEGER)"; }
Bs() { echo "sum(CASE WHEN $1 THEN CAST(round(size * weight) AS INTEGER) ELSE 0 END)"; }
LK="dealloc_after IS NULL"

rh_serve "$DB" "$W/a.db"
# URL filter | the same rows in SQL | the same filter for the rheaper command
for c in "|1|" "size_min=100|size >= 100|--min-size 100" "backtrace_depth_min=1|1|" \
    "lifetime=only_leaked|$LK|--lifetime leaked" "size_min=100&backtrace_depth_min=1|size >= 100|--min-size 100"; do
    F=${c%%|*}
    rest=${c#*|}
    WH=${rest%%|*}
    CLI=${rest#*|}
    get "/data/0/allocation_groups?$F&sort_by=all.size&order=dsc" >/dev/null
    eq "groups [$F] only_matched" \
        "$(jq -r '[.allocations[]|"\(.backtrace_id):\(.only_matched.size):\(.only_matched.allocated_count):\(.only_matched.leaked_count)"]|sort|join(" ")' "$W/body")" \
        "$(sq "SELECT group_concat(x, ' ') FROM (SELECT bt || ':' || $(Bs 1) || ':' || $(N 1) || ':' || $(N "$LK") AS x FROM allocations WHERE $WH GROUP BY bt ORDER BY x)")"
    eq "groups [$F] all" \
        "$(jq -r '[.allocations[]|"\(.backtrace_id):\(.all.size):\(.all.allocated_count):\(.all.leaked_count)"]|sort|join(" ")' "$W/body")" \
        "$(sq "SELECT group_concat(x, ' ') FROM (SELECT bt || ':' || $(Bs 1) || ':' || $(N 1) || ':' || $(N "$LK") AS x FROM allocations WHERE bt IN (SELECT bt FROM allocations WHERE $WH) GROUP BY bt ORDER BY x)")"
    # the converter's aggregates hold the same estimates
    eq "groups [$F] all = stack_stats" \
        "$(jq -r '[.allocations[]|"\(.backtrace_id):\(.all.size):\(.all.allocated_count):\(.all.leaked_count)"]|sort|join(" ")' "$W/body")" \
        "$(sq "SELECT group_concat(x, ' ') FROM (SELECT bt || ':' || bytes || ':' || count || ':' || leaked_blocks AS x FROM stack_stats WHERE bt IN (SELECT bt FROM allocations WHERE $WH) ORDER BY x)")"
    # rheaper top on the same filter: the same bytes in all (sites sum stacks)
    # shellcheck disable=SC2086
    eq "groups [$F] total bytes = rheaper top" \
        "$(jq '[.allocations[].only_matched.size]|add' "$W/body")" \
        "$("$BIN/rheaper" top "$DB" $CLI -n 100000 --csv 2>/dev/null | awk -F, 'NR > 1 { s += $4 } END { print s }')"
    get "/data/0/threads?$F" >/dev/null
    eq "threads [$F]" "$(jq -r '[.threads[]|select(.allocated_count > 0)|"\(.id):\(.allocated_count):\(.allocated_size):\(.leaked_count):\(.leaked_size)"]|join(" ")' "$W/body")" \
        "$(sq "SELECT group_concat(x, ' ') FROM (SELECT alloc_thread || ':' || $(N 1) || ':' || $(Bs 1) || ':' || $(N "$LK") || ':' || $(Bs "$LK") AS x FROM allocations WHERE $WH GROUP BY alloc_thread ORDER BY alloc_thread)")"
    get "/data/0/timeline?$F" >/dev/null
    eq "timeline [$F]: live bytes at the end" "$(jq '.end_size[-1]' "$W/body")" \
        "$(sq "SELECT $(Bs "$LK") FROM allocations WHERE $WH")"
    if [ "$(jq .stored "$W/body")" = false ]; then
        eq "timeline [$F]: live blocks at the end" "$(jq '.end_count[-1]' "$W/body")" \
            "$(sq "SELECT $(N "$LK") FROM allocations WHERE $WH")"
    fi
    get "/data/0/export/flamegraph.pl?$F" >/dev/null
    eq "flamegraph.pl [$F]: total" "$(awk '{ s += $NF } END { print s }' "$W/body")" \
        "$(sq "SELECT $(Bs 1) FROM allocations WHERE $WH")"
    get "/data/0/leaks?$F" >/dev/null
    eq "leaks [$F]: leaked bytes" "$(jq '[.leaks[].leaked_size]|add // 0' "$W/body")" \
        "$(sq "SELECT coalesce($(Bs "$LK"), 0) FROM allocations WHERE $WH")"
    # shellcheck disable=SC2086
    eq "leaks [$F] = rheaper leaks" "$(jq -r '[.leaks[]|"\(.function):\(.leaked_count):\(.leaked_size)"]|sort|join(" ")' "$W/body")" \
        "$("$BIN/rheaper" leaks "$DB" $CLI -n 100000 --csv 2>/dev/null | awk -F, 'NR > 1 { print $8 ":" $4 ":" $5 }' | sort | tr '\n' ' ' | sed 's/ $//')"
    get "/data/0/diff/1?$F" >/dev/null
    # shellcheck disable=SC2086
    # (rheaper diff lists the sites that changed)
    eq "diff [$F] = rheaper diff" "$(jq -r '[.sites[]|select(.status != "same")|"\(.function):\(.a.count):\(.a.size):\(.a.leaked_count):\(.a.leaked_size):\(.b.count):\(.b.size)"]|sort|join(" ")' "$W/body")" \
        "$("$BIN/rheaper" diff "$DB" "$W/a.db" $CLI --csv 2>/dev/null | awk -F, 'NR > 1 { print $2 ":" $4 ":" $6 ":" $8 ":" $10 ":" $5 ":" $7 }' | sort | tr '\n' ' ' | sed 's/ $//')"
done
# the diff's sampled side are estimates: the sites' sums are stack_stats'
get "/data/0/diff/1" >/dev/null
eq "diff: sampled side's bytes = stack_stats" "$(jq '[.sites[].a.size]|add' "$W/body")" \
    "$(sq "SELECT sum(bytes) FROM stack_stats")"
rh_stop
rh_done
