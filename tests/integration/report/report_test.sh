#!/bin/sh
# report_test.sh: the tests of rheaper flamegraph, timeline, export heaptrack and report.
#
#   report_test.sh STEP BIN_DIR SRC_DIR WORK_DIR
#
# STEP is one ctest entry:
#   setup       build known.c and workload.c with rheaper-cc, profile, convert
#   flamegraph  folded weights per stack as known.c states them (all, leaked, peak),
#               filters through `sel`, SVGs well-formed (xmllint) with their frames
#   timeline    SVG well-formed; the drawn maximum equals the program's peak and
#               rheaper summary's
#   heaptrack   heaptrack_print reads the export and reports the allocation calls,
#               peak and leaked bytes of rheaper summary (and of the program)
#   html        the report opened in headless Chromium: no console message, no
#               network request, chart and flamegraph drawn with a size; screenshot
# Each program prints the facts it knows ("FOLDED ...", "FIGURE ..."); every
# comparison is against those or against `rheaper summary --json` (read with the
# sqlite3 shell's JSON functions). Prints "FAIL: ..." lines and
# "N passed, N failed"; exits 1 on failure, 77 when a needed tool is missing.
# shellcheck disable=SC2012  # ls of a directory this script made
set -eu
step=$1 bin=$2 src=$3 work=$4
rheaper="$bin/rheaper"
tab=$(printf '\t')
. "$(dirname "$0")/../../lib/require.sh"
CASE= RH_DUMP=
. "$(dirname "$0")/../../lib/check.sh" # ok, bad, checks_done
require_tool xmllint libxml2-utils

check() { # check MESSAGE COMMAND...: the command's status decides
    msg=$1; shift
    if "$@"; then ok "$msg"; else bad "$msg"; fi
}
same() { [ -n "$1" ] && [ "$1" = "$2" ]; }   # equal, and not empty (a missing figure)
same3() { same "$1" "$2" && same "$2" "$3"; }
has() { grep -qF -e "$1" "$2"; }              # has TEXT FILE
hasnt() { ! grep -qF -e "$1" "$2"; }
has_both() { has "$1" "$3" && has "$2" "$3"; }
refused() { has "$1" "$err" && [ ! -e "$2" ]; }             # refused TEXT PATH: named in stderr, not written
no_url() { ! grep -qE '(src|href)="(https?:)?//' "$1"; }      # no_url FILE: references no URL
bigger() { [ -f "$1" ] && [ "$(wc -c < "$1")" -gt "$2" ]; }   # bigger FILE BYTES

# run STATUS CMD...: stdout in $out, stderr in $err; another status fails
# ("-" takes any). The status is left in $rc.
run() {
    _want=$1; shift
    rc=0; "$@" > "$out" 2> "$err" || rc=$?
    if [ "$_want" != - ] && [ "$rc" -ne "$_want" ]; then
        bad "$* exited $rc (expected $_want): $(tail -c 500 "$err")"
    fi
}

sqlq() { printf "'%s'" "$(printf %s "$1" | sed "s/'/''/g")"; }   # an SQL string literal

db() { echo "$work/$1.db"; }

# summary PROG: `rheaper summary --json` into $scratch/PROG.json ({} if it fails)
summary() {
    run 0 "$rheaper" summary "$(db "$1")" --json
    if [ "$rc" -eq 0 ]; then cp "$out" "$scratch/$1.json"; else echo '{}' > "$scratch/$1.json"; fi
}
# sj PROG KEY: a number of that summary; empty when missing
sj() {
    sqlite3 :memory: "select json_extract(readfile($(sqlq "$scratch/$1.json")), '\$.$2')" 2>/dev/null || true
}
# fig PROG NAME: the program's "FIGURE NAME value"
fig() { awk -v k="$2" '$1 == "FIGURE" && $2 == k { v = $3 } END { print v }' "$work/$1.out" 2>/dev/null || :; }

# folded TEXTFILE MAPFILE: 'a;b;c 12' lines -> "stack<TAB>weight" per stack,
# summed; every line must have that form
folded() {
    awk -v map="$2" '
        { i = length($0); while (i > 0 && substr($0, i, 1) != " ") i--
          stack = substr($0, 1, i - 1); w = substr($0, i + 1)
          if (i == 0 || stack == "" || w !~ /^[0-9]+$/) { print; next }
          if (!(stack in m)) order[n++] = stack
          m[stack] += w }
        END { printf "" > map; for (j = 0; j < n; j++) print order[j] "\t" m[order[j]] > map }
    ' "$1" > "$scratch/malformed"
    while IFS= read -r line; do bad "malformed folded line: '$line'"; done < "$scratch/malformed"
}
# weight_of MAPFILE SUFFIX: sum of the weights of stacks that end with SUFFIX
# (frames above main, such as __libc_start_call_main, vary with the libc and
# the link mode)
weight_of() {
    S=$2 awk -F "$tab" '{ s = ENVIRON["S"]; l = length(s) + 1 }
        $1 == s || (length($1) > l && substr($1, length($1) - l + 1) == ";" s) { t += $2 }
        END { print t + 0 }' "$1"
}
total_of() { awk -F "$tab" '{ t += $2 } END { print t + 0 }' "$1"; }

xml_ok() {
    rc=0; xmllint --noout "$1" > "$out" 2> "$err" || rc=$?
    check "$(basename "$1") is well-formed XML $(head -c 300 "$err")" [ "$rc" -eq 0 ]
}

step_setup() {
    rm -rf "$work" && mkdir -p "$scratch"
    for prog in known workload; do
        exe="$work/$prog"
        run 0 "$bin/rheaper-cc" -O1 -g -pthread -fno-optimize-sibling-calls -o "$exe" "$src/$prog.c"
        pdir="$work/$prog.rip"
        mkdir "$pdir"
        # the program's own blocks only (its figures leave libc's out)
        run 0 env RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$pdir" "$exe"
        cp "$out" "$work/$prog.out"
        check "$prog wrote one profile ($(ls "$pdir" | tr "\n" " "))" [ "$(ls "$pdir" | wc -l)" -eq 1 ]
        first=$(ls "$pdir" | head -n 1)
        [ -z "$first" ] || run 0 "$bin/rheaper-convert" --quiet "$pdir/$first" "$(db "$prog")"
    done
}

step_flamegraph() {
    k=$(db known)
    awk '$1 == "FOLDED" { print $2, $3, $4 }' "$work/known.out" > "$scratch/facts"
    check "known.c states 6 folded stacks" [ "$(wc -l < "$scratch/facts")" -eq 6 ]
    for mode in all leaked peak; do
        run 0 "$rheaper" flamegraph "$k" "--$mode" --folded
        folded "$out" "$scratch/map"
        want=0
        while read -r md stack w; do
            [ "$md" = "$mode" ] || continue
            want=$((want + w))
            got=$(weight_of "$scratch/map" "$stack")
            check "--$mode --folded: $stack weighs $got (expected $w)" [ "$got" -eq "$w" ]
        done < "$scratch/facts"
        # nothing else carries weight in that mode: the program made no other blocks
        total=$(total_of "$scratch/map")
        check "--$mode --folded: total $total equals the program's $want" [ "$total" -eq "$want" ]
    done
    # default is --all, and -o writes the same text to a file
    run 0 "$rheaper" flamegraph "$k" --folded -o "$work/known.folded"
    folded "$work/known.folded" "$scratch/map"
    check "default weight is all bytes (main;hold 4000)" \
        [ "$(weight_of "$scratch/map" "main;hold")" -eq 4000 ]
    # shared filters act through `sel`
    run 0 "$rheaper" flamegraph "$k" --folded --function '^leaf_a$'
    folded "$out" "$scratch/map"
    check "--function ^leaf_a\$ keeps only main;mid;leaf_a 1000: $(tr '\t\n' '=,' < "$scratch/map")" \
        same "$(cut -f 2 "$scratch/map" | tr '\n' ' ')$(weight_of "$scratch/map" "main;mid;leaf_a")" "1000 1000"
    # the workload: all weights add up to the summary's allocated bytes
    summary workload
    run 0 "$rheaper" flamegraph "$(db workload)" --folded
    folded "$out" "$scratch/map"
    total=$(total_of "$scratch/map") alloc=$(sj workload alloc_bytes)
    check "workload: folded total $total equals summary alloc_bytes $alloc" same "$total" "$alloc"
    # SVGs: well-formed, with the frames and their details
    for spec in "all leaf_a mid leaf_b hold main" "leaked leaf_b main" "peak leaf_b hold"; do
        # shellcheck disable=SC2086
        set -- $spec
        mode=$1; shift
        svg="$work/known-$mode.svg"
        run 0 "$rheaper" flamegraph "$k" "--$mode" -o "$svg"
        xml_ok "$svg"
        for fr in "$@"; do
            check "known-$mode.svg: frame $fr drawn" has "data-n=\"$fr\"" "$svg"
        done
        check "known-$mode.svg: has its zoom script" \
            has_both '<script' "addEventListener('click'" "$svg"
    done
    check "hover title of leaf_a names its 1000 bytes" has "<title>leaf_a (1000 bytes" "$work/known-all.svg"
    check "hover title of hold names its 4000 bytes" has "<title>hold (4000 bytes" "$work/known-all.svg"
    check "leaked flamegraph has no hold frame (all freed)" hasnt 'data-n="hold"' "$work/known-leaked.svg"
    run 0 "$rheaper" flamegraph "$(db workload)" -o "$work/workload.svg"
    xml_ok "$work/workload.svg"
    # usage errors: one line, status 2; a missing database is not created
    run 2 "$rheaper" flamegraph "$k" --bogus
    check "unknown option: one line naming it" same "$(grep -cF -e --bogus "$err" || :) $(wc -l < "$err")" "1 1"
    run 1 "$rheaper" flamegraph "$work/missing.db" --folded
    check "a missing database is not created" [ ! -e "$work/missing.db" ]
}

# timeline_max SVG: the highest stacked total of the timeline's data (data-v of
# each series, summed column by column over the shortest series); empty if none
timeline_max() {
    awk '{ text = text $0 "\n" }
        END { while (match(text, /data-v="[^"]*"/)) {
                  n = split(substr(text, RSTART + 8, RLENGTH - 9), v)
                  if (rows == 0 || n < cols) cols = n
                  for (i = 1; i <= n; i++) col[i] += v[i]
                  rows++; text = substr(text, RSTART + RLENGTH) }
              if (rows == 0 || cols == 0) exit
              for (i = 1; i <= cols; i++) if (i == 1 || col[i] > top) top = col[i]
              printf "%.0f\n", top }' "$1"
}

step_timeline() {
    for spec in "known hold leaf_b leaf_a" "workload build_tree startup_table cache_entry"; do
        # shellcheck disable=SC2086
        set -- $spec
        prog=$1; shift
        svg="$work/$prog-timeline.svg"
        run 0 "$rheaper" timeline "$(db "$prog")" -o "$svg"
        xml_ok "$svg"
        top=$(timeline_max "$svg")
        summary "$prog"
        peak=$(sj "$prog" peak_bytes) figpeak=$(fig "$prog" peak)
        check "$prog: timeline maximum $top equals summary peak $peak" same "$top" "$peak"
        check "$prog: timeline maximum $top equals the program's peak $figpeak" same "$top" "$figpeak"
        for site in "$@"; do
            check "$prog: series $site ($prog.c: drawn" has "<title>$site ($prog.c:" "$svg"
        done
    done
    # a site whose name is longer than any fixed buffer (a deep template):
    # still its own series, drawn by its short name, the whole name in the
    # hover title after it
    cp "$(db known)" "$work/known-long.db"
    long="leaf_b<$(printf 'std::vector<std::pair<int, long>, std::allocator<int> >, %.0s' $(seq 40))int>"
    sqlite3 "$work/known-long.db" "UPDATE backtraces SET sym = '$long' WHERE sym = 'leaf_b'"
    svg="$work/known-timeline-long.svg"
    run 0 "$rheaper" timeline "$work/known-long.db" -o "$svg"
    xml_ok "$svg"
    echo "timeline: a site name of ${#long} bytes"
    check "long template name: drawn by its short name" has "<title>leaf_b&lt;…&gt; (known.c:" "$svg"
    check "long template name: the whole name in the title" has "$(printf '%s' "$long" | sed 's/</\&lt;/g; s/>/\&gt;/g') (known.c:" "$svg"
    top=$(timeline_max "$svg")
    check "long template name: timeline maximum $top is still the peak" same "$top" "$(fig known peak)"
    # a filter narrows the chart: only leaf_b's leaked blocks remain
    svg="$work/known-timeline-leaked.svg"
    run 0 "$rheaper" timeline "$(db known)" --lifetime leaked -o "$svg"
    top=$(timeline_max "$svg")
    check "--lifetime leaked: timeline maximum $top is leaf_b's 1500" same "$top" 1500
}

# ht_bytes FILE LABEL: heaptrack_print's '<label>: 203.46K' as "bytes tolerance":
# it rounds to two decimals of decimal (1000) units. Empty when absent.
ht_bytes() {
    L="$2: " awk '{ l = ENVIRON["L"]; s = $0
            while ((i = index(s, l)) > 0) {
                s = substr(s, i + length(l)); if (match(s, /^[0-9.]+[BKMGT]/)) break }
            if (!i) next
            u = substr(s, RLENGTH, 1); n = substr(s, 1, RLENGTH - 1) + 0
            unit = u == "B" ? 1 : u == "K" ? 1e3 : u == "M" ? 1e6 : u == "G" ? 1e9 : 1e12
            printf "%.17g %.17g\n", n * unit, unit == 1 ? 0.5 : 0.005 * unit; exit }' "$1"
}
within() { # within VALUE TOLERANCE A B: |VALUE - A| <= TOLERANCE and |VALUE - B| <= TOLERANCE
    [ -n "$1" ] && [ -n "$3" ] && [ -n "$4" ] &&
        awk -v v="$1" -v t="$2" -v a="$3" -v b="$4" \
            'function abs(x) { return x < 0 ? -x : x }
             BEGIN { exit !(abs(v - a) <= t && abs(v - b) <= t) }'
}

leak_shown() { tr '\n' ' ' < "$out" | grep -qE '1\.50K leaked over 5 calls from[[:space:]]+leaf_b'; }

step_heaptrack() {
    require_tool heaptrack_print heaptrack
    for prog in known workload; do
        ht="$work/$prog.heaptrack"
        run 0 "$rheaper" export heaptrack "$(db "$prog")" -o "$ht"
        run 0 heaptrack_print "$ht"
        cp "$out" "$scratch/text"; cat "$out" "$err" > "$scratch/both"
        summary "$prog"
        calls=$(sed -n 's/.*calls to allocation functions: \([0-9][0-9]*\).*/\1/p' "$scratch/text" | head -n 1)
        blocks=$(sj "$prog" alloc_blocks) figcalls=$(fig "$prog" calls)
        check "$prog: heaptrack_print calls $calls, summary $blocks, program $figcalls" \
            same3 "$calls" "$blocks" "$figcalls"
        for spec in "peak_bytes peak heap memory consumption" "leaked_bytes total memory leaked"; do
            key=${spec%% *} label=${spec#* }
            vt=$(ht_bytes "$scratch/text" "$label")
            v=${vt% *} tol=${vt#* }
            want=$(sj "$prog" "$key") figv=$(fig "$prog" "${key%_bytes}")
            check "$prog: heaptrack_print $label $v (+-$tol), summary $want, program $figv" \
                within "$v" "$tol" "$want" "$figv"
        done
        check "$prog: heaptrack_print parsed every line" hasnt "failed to parse" "$scratch/both"
    done
    # the leak's stack reaches heaptrack with its frames
    run 0 heaptrack_print -l 1 "$work/known.heaptrack"
    check "heaptrack_print -l shows leaf_b's 5 leaked blocks of 1500 bytes" leak_shown
    # heaptrack takes .gz/.zst names as compressed: refused with one line
    run 2 "$rheaper" export heaptrack "$(db known)" -o "$work/x.gz"
    check ".gz name refused" refused .gz "$work/x.gz"
    run 2 "$rheaper" export perf "$(db known)" -o "$work/x"
}

# browse URL ARGS...: opens URL headless in a fresh profile; the DOM (stdout)
# in $dom, the console lines in $console, the page's network requests in $requests
browse() {
    url=$1; shift
    prof=$(mktemp -d "$tmp/tmpXXXXXX")
    netlog="$prof/net.json"
    dom="$prof/dom" console="$prof/console" requests="$prof/requests"
    crc=0
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --user-data-dir="$prof/ud" --enable-logging=stderr --v=0 \
        --log-net-log="$netlog" "$@" "$url" > "$dom" 2> "$prof/stderr" || crc=$?
    [ "$crc" -ne 124 ] || bad "Chromium did not finish in 120 s: $url"
    grep -F ':CONSOLE' "$prof/stderr" > "$console" || :
    : > "$requests"
    n=$(sqlite3 :memory: "select json_valid(j) and json_type(j, '\$.constants.logEventTypes') = 'object'
        and json_type(j, '\$.events') = 'array' from (select readfile($(sqlq "$netlog")) as j)" 2>&1) || :
    if [ "$n" != 1 ]; then bad "cannot read Chromium's network log: $netlog $n"; return 0; fi
    # requests the page made: those with a real initiator (the browser's own
    # background fetches say "not an origin"), other than file: and data:. The
    # first url and the first URL_REQUEST_START_JOB initiator of each source.
    sqlite3 :memory: "
        with log(j) as (select readfile($(sqlq "$netlog"))),
        ev as (select e.key as idx, json_extract(e.value, '\$.source.id') as src, e.value as v
               from log, json_each(log.j, '\$.events') as e),
        startjob(id) as (select t.value from log, json_each(log.j, '\$.constants.logEventTypes') as t
                         where t.key = 'URL_REQUEST_START_JOB'),
        urls as (select src, json_extract(v, '\$.params.url') as u, min(idx) from ev
                 where json_type(v, '\$.params.url') is not null group by src),
        inits as (select src, json_extract(v, '\$.params.initiator') as who, min(idx) from ev
                  where json_extract(v, '\$.type') in (select id from startjob)
                    and json_type(v, '\$.params.initiator') is not null group by src)
        select coalesce(u, '') || ' (initiator ' || coalesce(who, 'None') || ')'
        from inits left join urls using (src)
        where (who is null or who != 'not an origin')
          and substr(coalesce(u, ''), 1, 5) not in ('file:', 'data:')" > "$requests" 2> "$prof/sqlerr" ||
        bad "cannot read Chromium's network log: $(cat "$prof/sqlerr")"
}

# body_attr KEY: the attribute KEY of the first <body> tag of $dom
body_attr() {
    K=$1 awk '{ text = text $0 "\n" }
        END { if (!match(text, /<body[^>]*>/)) exit
              b = substr(text, RSTART + 5, RLENGTH - 6)
              while (match(b, /[a-z-]+="[^"]*"/)) {
                  a = substr(b, RSTART, RLENGTH); b = substr(b, RSTART + RLENGTH)
                  i = index(a, "=")
                  if (substr(a, 1, i - 1) == ENVIRON["K"]) v = substr(a, i + 2, length(a) - i - 2) }
              printf "%s", v }' "$dom"
}
positive() { case $1 in ''|*[!0-9]*) false ;; *) [ "$1" -gt "$2" ] ;; esac; }   # positive N MIN: N > MIN
drawn() { w=${1%%x*} h=${1#*x}; case $1 in *x*) ;; *) h= ;; esac; positive "$w" 0 && positive "$h" 0; }

step_html() {
    browser=
    for name in chromium chromium-browser google-chrome; do
        browser=$(command -v "$name") && break || browser=
    done
    [ -n "$browser" ] || require_tool chromium chromium
    tmp="$work/chromium"
    rm -rf "$tmp" && mkdir -p "$tmp"
    # the checks can fail: a page with a console message and a fetch is caught
    bad="$tmp/control.html"
    printf '%s%s\n' '<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">' \
        '<script>console.error("control")</script></body></html>' > "$bad"
    browse "file://$bad" --dump-dom
    check "control page: its console message is seen" has control "$console"
    check "control page: its request is seen" has "127.0.0.1:9" "$requests"

    html="$work/report.html"
    run 0 "$rheaper" report "$(db workload)" -o "$html"
    check "report has a hash-based CSP with default-src 'none'" grep -qE \
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src( 'sha256-[A-Za-z0-9+/=]+')+; style-src 'sha256-" "$html"
    check "report references no URL" no_url "$html"
    summary workload
    peak=$(sj workload peak_bytes)
    check "report states the peak in bytes" has "${peak:--1} B" "$html"
    browse "file://$html" --window-size=1280,1900 --dump-dom
    check "report: no console message $(head -n 3 "$console" | tr '\n' ' ')" [ ! -s "$console" ]
    check "report: no network request $(head -n 3 "$requests" | tr '\n' ' ')" [ ! -s "$requests" ]
    for key in data-timeline data-flamegraph; do
        v=$(body_attr "$key")
        check "report: $key drawn at $v" drawn "${v:-0x0}"
    done
    v=$(body_attr data-flame-nodes)
    check "report: $v flamegraph frames drawn" positive "${v:-0}" 5
    v=$(body_attr data-timeline-areas)
    check "report: $v timeline areas drawn" positive "${v:-0}" 2
    shot="$work/report.png"
    rm -f "$shot"
    browse "file://$html" --window-size=1280,1900 --screenshot="$shot"
    check "screenshot written: $shot" bigger "$shot" 10000
}

case $step in
    setup) scratch="$work/setup.d" ;;
    flamegraph|timeline|heaptrack|html)
        scratch="$work/$step.d"; rm -rf "$scratch"; mkdir -p "$scratch" ;;
    *) echo "FAIL: unknown step $step"; exit 1 ;;
esac
out="$scratch/stdout" err="$scratch/stderr"
"step_$step"
checks_done
