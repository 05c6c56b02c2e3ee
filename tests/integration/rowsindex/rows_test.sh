#!/bin/sh
# rows_test.sh: stack_rows against the rows, and the filtered pass read by id
# against the same pass read by a scan (docs/design.md).
#
# usage: rows_test.sh BIN TESTS WORK ROWS_CHECK
# The scale workload (bench/wl_scale.c: 4 threads, thousands of stacks,
# a rare leak remember_session) runs 30 000 allocations. Its rip is converted
# twice, in full and with --min-lifetime; rows_check decodes every chunk of
# both. Then each filtered command runs with RHEAPER_PASS_INDEX=1 (rows by
# id) and =0 (a scan): the outputs must be byte for byte the same, and the
# filtered count must be the row-level SQL's.
set -eu
BIN=$1 TESTS=$2 W=$3 CHECK=$4
rm -rf "$W"
mkdir -p "$W/rec"
"$BIN/rheaper-cc" -O1 -pthread -o "$W/wl_scale" "$TESTS/../bench/wl_scale.c"
(cd "$W/rec" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$W/rec" \
    "$W/wl_scale" 30000 4 >/dev/null 2>"$W/record.err") || { echo "FAIL: recording"; cat "$W/record.err"; exit 1; }
rip=$(ls "$W"/rec/rip-*)
"$BIN/rheaper-convert" --quiet "$rip" "$W/full.db"
"$BIN/rheaper-convert" --quiet --min-lifetime 20us "$rip" "$W/culled.db"
"$CHECK" "$W/full.db" || echo "FAIL: rows_check full.db"
"$CHECK" "$W/culled.db" --culled || echo "FAIL: rows_check culled.db"
culled=$(sqlite3 "$W/culled.db" "SELECT value FROM meta WHERE key = 'culled_rows'")
[ "${culled:-0}" -gt 0 ] || echo "FAIL: the culled conversion culled nothing ($culled)"

export RHEAPER_QUIET_NOTICES=1
n=0
for db in full culled; do
    while IFS='|' read -r cmd opts; do
        # shellcheck disable=SC2086 # the options' words
        RHEAPER_PASS_INDEX=1 "$BIN/rheaper" $cmd "$W/$db.db" $opts >"$W/out.1" 2>&1 ||
            echo "FAIL: $db: rheaper $cmd $opts (index)"
        # shellcheck disable=SC2086
        RHEAPER_PASS_INDEX=0 "$BIN/rheaper" $cmd "$W/$db.db" $opts >"$W/out.0" 2>&1 ||
            echo "FAIL: $db: rheaper $cmd $opts (scan)"
        cmp -s "$W/out.0" "$W/out.1" || { echo "FAIL: $db: rheaper $cmd $opts: index and scan differ"; diff "$W/out.0" "$W/out.1" | head -10; }
        n=$((n + 1))
    done <<EOT
top|-n 20 --function remember_session
summary|--function remember_session
leaks|-n 5 --function remember_session
peak|--function remember_session --from 10% --to 90%
top|-n 20 --function step_3 --from 40% --to 45%
top|-n 20 --function load_decoy_table
summary|--function step_[02] --not-function step_1 --from 20% --to 30%
top|--stacks -n 5 --function remember_session --lifetime leaked
summary|--function remember_session --min-size 100 --max-size 300
EOT
done
# the filtered count, read by id, is SQL's
want=$(sqlite3 "$W/full.db" "SELECT count(*) FROM allocations WHERE bt IN (SELECT id FROM backtraces WHERE sym = 'remember_session')")
got=$(RHEAPER_PASS_INDEX=1 "$BIN/rheaper" top "$W/full.db" --function remember_session --csv 2>/dev/null |
    awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "count") c = i} NR > 1 {s += $c} END {print s + 0}')
[ "$want" -gt 0 ] && [ "$got" = "$want" ] || echo "FAIL: top --function remember_session counts $got, SQL $want"

# Few stacks, many rows each: each stack's ids span hundreds of chunks,
# interleaved with the other stacks' in the converter's temp file, and are
# written into stack_rows by walking each stack's chain of chunks
# (rh_postings.c). rows_check decodes them all against the rows; the
# program knows its counts: 5 call stacks (site_a and site_c each from two
# lines of main) of 60 000, 60 000, 40 000, 20 000 and 20 000 allocations.
cat > "$W/chains.c" <<'EOC'
#include <stdlib.h>
__attribute__((noinline)) static void *site_a(size_t n) { return malloc(n); }
__attribute__((noinline)) static void *site_b(size_t n) { return malloc(n); }
__attribute__((noinline)) static void *site_c(size_t n) { return malloc(n); }
int main(void)
{
    for (int i = 0; i < 60000; i++) {
        free(site_a(16 + i % 7));
        free(site_b(32));
        if (i % 3) free(site_c(48)); else site_a(8), free(site_c(48));
    }
    return 0;
}
EOC
mkdir -p "$W/chains"
"$BIN/rheaper-cc" -O1 -o "$W/chains/prog" "$W/chains.c"
(cd "$W/chains" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$W/chains" \
    ./prog 2>"$W/chains.err") || { echo "FAIL: recording chains"; cat "$W/chains.err"; }
"$BIN/rheaper-convert" --quiet "$W"/chains/rip-* "$W/chains.db"
"$CHECK" "$W/chains.db" || echo "FAIL: rows_check chains.db"
stacks=$(sqlite3 "$W/chains.db" "SELECT count(DISTINCT bt) FROM stack_rows")
ids=$(sqlite3 "$W/chains.db" "SELECT group_concat(c, ' ') FROM (SELECT sum(n) c FROM stack_rows GROUP BY bt ORDER BY c)")
[ "$ids" = "20000 20000 40000 60000 60000" ] ||
    echo "FAIL: chains.db: ids per stack in stack_rows '$ids', expected '20000 20000 40000 60000 60000'"
most=$(sqlite3 "$W/chains.db" "SELECT max(c) FROM (SELECT count(*) c FROM stack_rows GROUP BY bt)")
[ "$most" -ge 100 ] || echo "FAIL: chains.db: at most $most chunks a stack, expected 100 or more"
echo "rows_test: $n commands compared, remember_session $got rows, chains: $stacks stacks of $ids ids, up to $most chunks a stack"
