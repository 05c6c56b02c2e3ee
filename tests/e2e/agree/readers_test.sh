#!/bin/sh
# readers_test.sh: every reader of a profile gives the same answer.
#
#   readers_test.sh MODE BIN_DIR SRC_DIR WORK_DIR
#
# MODE full records readers_prog.c (three threads, readers_lib.c for the file
# filters, and twin/readers_lib.c: lib_twin at the same line of a file of the
# same name in another directory, one call site for every reader) in full;
# MODE sampled records it with RHEAPER_SAMPLE_BYTES and a
# fixed seed, so every figure is an estimate. For each filter below, written
# once for the command line and once as the server's URL parameters, the
# totals and the ten largest call sites (function, location, blocks, bytes)
# must be the same from
#   rheaper top --json             the command line
#   rheaper query over sel         SQL, each stack's blocks rounded once
#   /data/0/allocation_groups      the server (per stack, summed per site)
#   export --pprof                 read back by go tool pprof -raw
#   /data/0/export/pprof           the server's pprof, read back the same way
# and the sites each other reader presents are top's: the report's table
# (rheaper report), the SVG timeline's series (rheaper timeline), the
# server's call-site table (/data/0/sites) and the view (view --once --json)
# and bytehound's own filters (group_*, backtrace_depth_*), which only the
# server has, against plain SQL through `rheaper query`. At the end of the
# run, `live --once --json` on the rip equals `view --once --json` on the
# database and `summary`. In full mode the unfiltered answer is also checked
# against the program's plan. Prints "FAIL: ..." lines and "N checks, N
# failed"; exits 1 on failure, 77 when a needed tool is missing (a failure
# under CI=true).
set -u
mode=$1 BIN=$2 src=$3 W=$4/readers-$mode
SRC=$src/../serve
. "$SRC/lib.sh"
RH=$BIN/rheaper

for t in jq go sqlite3; do
    if ! command -v "$t" >/dev/null 2>&1; then
        [ "${CI:-}" = true ] && { echo "FAIL: $t is not installed"; exit 1; }
        echo "SKIP: $t is not installed"
        exit 77
    fi
done

rm -rf "$W"
mkdir -p "$W/rec"
"$BIN/rheaper-cc" -O1 -pthread -o "$W/prog" "$src/readers_prog.c" "$src/readers_lib.c" \
    "$src/twin/readers_lib.c" ||
    { echo "FAIL: rheaper-cc failed"; exit 1; }
if [ "$mode" = sampled ]; then
    (cd "$W/rec" && RHEAPER_ENABLE=1 RHEAPER_SAMPLE_BYTES=2048 RHEAPER_SAMPLE_SEED=11 ../prog) ||
        { echo "FAIL: the program failed"; exit 1; }
else
    (cd "$W/rec" && RHEAPER_ENABLE=1 ../prog) || { echo "FAIL: the program failed"; exit 1; }
fi
RIP=$(ls "$W"/rec/rip-*)
DB=$W/p.db
"$RH" convert "$RIP" "$DB" --quiet --force || { echo "FAIL: convert failed"; exit 1; }
export RHEAPER_QUIET_NOTICES=1

# SQL: a stack's call site as `top` names it (function, file:line).
BASE() { echo "replace($1, rtrim($1, replace($1, '/', '')), '')"; }
SITE_F="coalesce(b.sym, '??')"
SITE_L="CASE WHEN b.file IS NOT NULL THEN $(BASE b.file) || ':' || coalesce(b.line, '?')"
SITE_L="$SITE_L WHEN b.module IS NOT NULL THEN $(BASE b.module) || '+0x' || printf('%x', b.address)"
SITE_L="$SITE_L ELSE printf('0x%x', coalesce(b.address, 0)) END"
# every stack's site (the scope without filters covers every stack)
"$RH" query "$DB" "SELECT c.bt, $SITE_F, $SITE_L FROM temp.cs c
    LEFT JOIN backtraces b ON b.id = c.bt AND b.frame_no = c.frame" --csv 2>/dev/null |
    awk -F, 'NR > 1 { print $1 "\t" $2 "|" $3 }' > "$W/sites.tsv"
[ -s "$W/sites.tsv" ] || fail "no call sites from rheaper query over temp.cs"

# site lines "function|location|blocks|bytes" on stdin -> the totals line and
# the ten largest (by bytes, then blocks, then name) in $W/$1.
norm() {
    sort -t'|' -k4,4nr -k3,3nr -k1,2 > "$W/$1.all"
    awk -F'|' '{ n += $3; b += $4 } END { printf "total %d %d\n", n, b }' "$W/$1.all" > "$W/$1"
    head -n 10 "$W/$1.all" >> "$W/$1"
}

reader_top() { # CLI...
    # shellcheck disable=SC2086
    "$RH" top "$DB" $1 -n 100000 --json 2>>"$W/err" |
        jq -r '.[] | select(.count > 0) | "\(.function)|\(.location)|\(.count)|\(.bytes)"' | norm top
}
reader_query() { # CLI...
    # shellcheck disable=SC2086
    "$RH" query "$DB" "SELECT f, l, sum(n), sum(bb) FROM (SELECT $SITE_F AS f, $SITE_L AS l,
        CAST(round(sum(CAST(round(s.weight * 4096) AS INTEGER)) / 4096.0) AS INTEGER) AS n,
        sum(CAST(round(s.size * s.weight) AS INTEGER)) AS bb FROM sel s
        JOIN temp.cs c ON c.bt = s.bt LEFT JOIN backtraces b ON b.id = c.bt AND b.frame_no = c.frame
        GROUP BY s.bt) GROUP BY f, l HAVING sum(n) > 0" $1 --csv 2>>"$W/err" |
        awk -F, 'NR > 1 { print $1 "|" $2 "|" $3 "|" $4 }' | norm query
}
reader_server() { # URL
    get "/data/0/allocation_groups?$1&count=100000" >/dev/null
    jq -r '.allocations[] | "\(.backtrace_id)\t\(.only_matched.allocated_count)\t\(.only_matched.size)"' \
        "$W/body" | awk -F'\t' 'NR == FNR { site[$1] = $2; next }
            { n[site[$1]] += $2; b[site[$1]] += $3 }
            END { for (s in n) if (n[s] > 0) print s "|" n[s] "|" b[s] }' "$W/sites.tsv" - | norm server
}
reader_pprof() { # CLI...
    rm -f "$W/p.pb.gz"
    # shellcheck disable=SC2086
    "$RH" export --pprof "$W/p.pb.gz" "$DB" --heap $1 2>>"$W/err" || { fail "export --pprof $1"; return; }
    pprof_sites "$W/p.pb.gz" pprof
}
reader_server_pprof() { # URL
    code=$(get "/data/0/export/pprof?$1&kind=heap")
    [ "$code" = 200 ] || fail "[$1] /export/pprof answered $code: $(head -c 300 "$W/body")"
    pprof_sites "$W/body" spprof
}
pprof_sites() { # FILE NAME: its heap samples per call site, read by go tool pprof
    # the samples' first location is the call site: "function file:line"
    go tool pprof -raw "$1" 2>>"$W/err" | awk '
        /^Samples:/ { st = 1; next }
        /^Locations/ { st = 2; next }
        /^Mappings/ { st = 3; next }
        st == 1 && /:/ { split($0, h, ":"); split(h[1], v, " "); split(h[2], l, " ")
                         ns++; sn[ns] = v[1]; sb[ns] = v[2]; sl[ns] = l[1]; next }
        st == 2 && /^ *[0-9]+: / { id = $1; sub(":", "", id); f = $4; loc = $5
                         sub(".*/", "", loc); name[id] = f "|" loc; next }
        END { for (i = 1; i <= ns; i++) { n[name[sl[i]]] += sn[i]; b[name[sl[i]]] += sb[i] }
              for (s in n) if (n[s] > 0) print s "|" n[s] "|" b[s] }' | norm "$2"
}
# The call sites of the other readers, each as it presents them, against
# top's: the report's table (the first 20 by bytes, in top's order), the
# SVG timeline's series (the sites most held at the peak, in the order of
# top --by peak), the server's call-site table (/sites) and the view.
top_first() { # N CLI...: top's first N sites by BY ("function|location|count|bytes")
    # shellcheck disable=SC2086
    "$RH" top "$DB" $3 -n "$1" --by "$2" --json 2>>"$W/err" |
        jq -r '.[] | "\(.function)|\(.location)|\(.count)|\(.bytes)"'
}
reader_report() { # CLI...: the report's top call sites, in its order
    rm -f "$W/r.html"
    # shellcheck disable=SC2086
    "$RH" report "$DB" -o "$W/r.html" $1 2>>"$W/err" || { fail "report $1"; return; }
    perl -0ne 'if (/<section id="top">(.*?)<\/section>/s) { my $t = $1;
        while ($t =~ m{<summary><code>(.*?)</code> <span class="muted">(.*?)</span></summary>.*?</details></td><td class="n">\d+</td><td class="n">(\d+)</td><td class="n">(\d+)</td>}sg) {
            my @v = ($1, $2, $3, $4);
            for (@v[0, 1]) { s/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&#39;/\x27/g; s/&amp;/&/g }
            print join("|", @v), "\n" } }' "$W/r.html"
}
reader_svg() { # CLI...: the timeline's series, in their order ("function (location)")
    rm -f "$W/t.svg"
    # shellcheck disable=SC2086
    "$RH" timeline "$DB" -o "$W/t.svg" $1 2>>"$W/err" || { fail "timeline $1"; return; }
    perl -0ne 'while (/<polygon class="tl-s".*?<title>(.*?)<\/title>/sg) { my $l = $1;
        next if $l eq "other"; $l =~ s/&lt;/</g; $l =~ s/&gt;/>/g; $l =~ s/&quot;/"/g;
        $l =~ s/&#39;/\x27/g; $l =~ s/&amp;/&/g; print "$l\n" }' "$W/t.svg"
}
reader_sites() { # URL: the server's call-site table
    get "/data/0/sites?$1&count=100000" >/dev/null
    jq -r '.sites[] | select(.count > 0) | "\(.function)|\(.location)|\(.count)|\(.bytes)"' "$W/body" |
        norm sites
}
# the report, the SVG and the server's sites against top, for one filter
agree_sites() { # CLI URL
    eq "[$1] report's top call sites = top -n 20" "$(reader_report "$1")" "$(top_first 20 bytes "$1")"
    svg=$(reader_svg "$1")
    npeak=$(top_first 8 peak "$1" | wc -l)
    [ -n "$svg" ] || fail "[$1] the SVG timeline has no call site"
    eq "[$1] SVG timeline's sites = top --by peak -n 8" "$(echo "$svg" | head -n "$npeak")" \
        "$(top_first 8 peak "$1" | awk -F'|' '{ print $1 " (" $2 ")" }')"
    # the series past those hold nothing at the peak: top's other sites
    echo "$svg" | tail -n +"$((npeak + 1))" | while IFS= read -r l; do
        CHECKS=$((CHECKS + 1))
        top_first 100000 bytes "$1" | awk -F'|' '{ print $1 " (" $2 ")" }' | grep -qxF "$l" ||
            fail "[$1] SVG timeline's site $l is not one of top's"
    done
    reader_sites "$2"
    eq "[$2] /sites = top --json" "$(cat "$W/sites")" "$(cat "$W/top")"
}

rh_serve "$DB"
# a window in seconds from a fifth to three fifths of the run, whatever the
# machine's load made of the program's pauses
dur_ns=$(DB=$DB sq "SELECT value FROM meta WHERE key = 'duration_ns'")
win_from=$(awk -v d="$dur_ns" 'BEGIN { printf "%.3f", d * 0.2 / 1e9 }')
win_to=$(awk -v d="$dur_ns" 'BEGIN { printf "%.3f", d * 0.6 / 1e9 }')
# CLI options | URL parameters
for c in "|" \
    "--from $win_from --to $win_to|from=$win_from&to=$win_to" \
    "--to 50%|to=50%" \
    "--from 60%|from=60%" \
    "--function leak_|function_regex=leak_" \
    "--not-function leak_|negative_function_regex=leak_" \
    "--file readers_lib|source_regex=readers_lib" \
    "--not-file readers_lib|negative_source_regex=readers_lib" \
    "--min-size 100 --max-size 2000|size_min=100&size_max=2000" \
    "--lifetime leaked|lifetime=only_leaked" \
    "--lifetime temporary|lifetime=only_heaptrack_temporary" \
    "--thread rd-beta|thread=rd-beta" \
    "--thread rd-alpha --min-size 100|thread=rd-alpha&size_min=100"; do
    CLI=${c%%|*} URL=${c#*|}
    reader_top "$CLI"
    reader_query "$CLI"
    reader_server "$URL"
    reader_pprof "$CLI"
    [ "$(wc -l < "$W/top")" -gt 1 ] || fail "[$CLI] selects nothing"
    eq "[$CLI] rheaper query over sel = top --json" "$(cat "$W/query")" "$(cat "$W/top")"
    eq "[$URL] allocation_groups = top --json" "$(cat "$W/server")" "$(cat "$W/top")"
    eq "[$CLI] export --pprof = top --json" "$(cat "$W/pprof")" "$(cat "$W/top")"
    reader_server_pprof "$URL"
    eq "[$URL] /export/pprof = top --json" "$(cat "$W/spprof")" "$(cat "$W/top")"
    agree_sites "$CLI" "$URL"
    [ "$CLI" = "" ] && cp "$W/top" "$W/top.none"
done

# bytehound's own filters: the server against the same predicate in SQL
# (a group's allocations are its estimated blocks on a sampled profile: the
# converter's stack_stats.count)
for c in "group_allocations_min=100|s.bt IN (SELECT bt FROM stack_stats WHERE count >= 100)" \
    "group_allocations_max=60|s.bt IN (SELECT bt FROM stack_stats WHERE count <= 60)" \
    "backtrace_depth_min=14|s.bt IN (SELECT id FROM backtraces GROUP BY id HAVING count(*) >= 14)" \
    "backtrace_depth_max=6|s.bt IN (SELECT id FROM backtraces GROUP BY id HAVING count(*) <= 6)"; do
    URL=${c%%|*} WH=${c#*|}
    reader_server "$URL"
    "$RH" query "$DB" "SELECT f, l, sum(n), sum(bb) FROM (SELECT $SITE_F AS f, $SITE_L AS l,
        CAST(round(sum(CAST(round(s.weight * 4096) AS INTEGER)) / 4096.0) AS INTEGER) AS n,
        sum(CAST(round(s.size * s.weight) AS INTEGER)) AS bb FROM allocations s
        JOIN temp.cs c ON c.bt = s.bt LEFT JOIN backtraces b ON b.id = c.bt AND b.frame_no = c.frame
        WHERE $WH GROUP BY s.bt) GROUP BY f, l HAVING sum(n) > 0" --csv 2>>"$W/err" |
        awk -F, 'NR > 1 { print $1 "|" $2 "|" $3 "|" $4 }' | norm sql
    [ "$(wc -l < "$W/sql")" -gt 1 ] || fail "[$URL] selects nothing"
    eq "[$URL] allocation_groups = SQL" "$(cat "$W/server")" "$(cat "$W/sql")"
done
rh_stop

# live at the end of the run, view and summary
"$RH" live --once --json "$RIP" > "$W/live.json" 2>>"$W/err" || fail "live --once --json"
"$RH" view "$DB" --once --json > "$W/view.json" 2>>"$W/err" || fail "view --once --json"
"$RH" summary "$DB" --json > "$W/summary.json" 2>>"$W/err" || fail "summary --json"
TOT='"\(.alloc_blocks) \(.alloc_bytes) \(.freed_blocks) \(.freed_bytes) \(.live_blocks) \(.live_bytes) \(.peak_bytes)"'
SITES='[.sites[] | "\(.site):\(.alloc_blocks):\(.alloc_bytes):\(.freed_blocks):\(.live_blocks):\(.live_bytes)"] | sort | join(" ")'
eq "live --once --json totals = view --once --json" "$(jq -r "$TOT" "$W/live.json")" "$(jq -r "$TOT" "$W/view.json")"
eq "live --once --json sites = view --once --json" "$(jq -r "$SITES" "$W/live.json")" "$(jq -r "$SITES" "$W/view.json")"
# the view's sites (label "function location") are top's
VSITES='.sites[] | select(.alloc_blocks > 0) | "\(.site)|\(.alloc_blocks)|\(.alloc_bytes)"'
eq "view --once --json sites = top" "$(jq -r "$VSITES" "$W/view.json" | sort)" \
    "$(top_first 100000 bytes "" | awk -F'|' '{ print $1 " " $2 "|" $3 "|" $4 }' | sort)"
eq "live --once --json totals = summary" "$(jq -r "$TOT" "$W/live.json")" \
    "$(jq -r '"\(.alloc_blocks) \(.alloc_bytes) \(.freed_blocks) \(.freed_bytes) \(.leaked_blocks) \(.leaked_bytes) \(.peak_bytes)"' "$W/summary.json")"

if [ "$mode" = full ]; then
    # the plan, read from the unfiltered answer every reader agreed on
    for want in "lib_buffer|readers_lib.c:16|300|1228800" "temp_churn|readers_prog.c:33|2000|64000" \
        "lib_cache|readers_lib.c:9|40|40960" "leak_alpha|readers_prog.c:40|50|10000" \
        "leak_beta|readers_prog.c:47|30|2880" "mid_blocks|readers_prog.c:54|500|256000" \
        "deep_alloc|readers_prog.c:66|20|14000" "lib_twin|readers_lib.c:25|40|12000"; do
        CHECKS=$((CHECKS + 1))
        grep -qxF "$want" "$W/top.none" || fail "the plan's site $want is not in the answer: $(cat "$W/top.none")"
    done
    eq "live: blocks never freed" "$(jq .live_blocks "$W/live.json")" \
        "$(sqlite3 "$DB" "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL")"
else
    eq "sampled profile" "$(sqlite3 "$DB" "SELECT value FROM meta WHERE key = 'sample_mode'")" bytes
    ROWS=$(sqlite3 "$DB" "SELECT count(*) FROM allocations")
    EST=$(jq .alloc_blocks "$W/live.json")
    [ "$EST" -gt "$ROWS" ] || fail "live counts the recorded blocks ($EST), not the estimate (more than $ROWS)"
fi
rh_done
