#!/bin/sh
# sample_bench.sh: what sampling buys, and what it costs in accuracy
# (docs/benchmarks.md, "Sampling").
#
#   sh bench/sample_bench.sh [--build DIR] [--out DIR] [--runs N]
#                                  [--lua-n N] [--scale N] [--bytes N]
#                                  [--accuracy-n 'N...'] [--no-lua]
#                                  [--callgrind [N]]
#
# Part 1, Lua 5.4 (Debian source, tests/e2e/programs/fetch_source.sh) running
# alloc.lua (default 300000), built three ways: "user" with
# `cc -O2 -g -fno-omit-frame-pointer` (what users compare with), "plain" with
# the flags rheaper-cc adds (frame pointers, no sibling calls: the baseline
# of bench.sh) and with rheaper-cc. Variants, run interleaved for RUNS rounds
# (default 7): user, plain, off (rheaper-cc, tracking off), full
# (RHEAPER_ENABLE=1), populate (full, chunks prefaulted: RHEAPER_POPULATE=1),
# bigchunk (full, 2 MiB chunks: RHEAPER_BUFFER_SIZE=262144), bytes
# (RHEAPER_SAMPLE_BYTES=N, default 524288) and rate (RHEAPER_SAMPLE_RATE=0.01). Prints the median CPU (user + sys), system
# and wall time of each, the ratios to plain and to user, the profile's size,
# and the load average before and after.
#
# Part 2, the scale workload (wl_scale.c, 4 threads, default 10 M
# allocations, RHEAPER_SCOPE=program as scale.sh records it): one full
# recording and one sampled recording per N (RHEAPER_SAMPLE_BYTES=N, seed 1:
# --bytes N, the bar's, then each N of --accuracy-n, default "65536 8192", so
# the error can be seen to fall with N), all converted; for the top 10 call
# sites of the full profile by bytes, `rheaper top --csv` of the full and the
# sampled profile side by side, with each estimate's error, the expected
# number of samples and the standard error at that N (from the full
# profile's blocks). The bar: every one within 10 % at --bytes N; a miss
# prints "FAIL:" (results are checked, timings never). A site whose expected
# samples are few (its bytes are a fraction of N) cannot meet it, whatever
# the sampler: the table shows why.
#
# --callgrind [N]: instead of timing, counts the instructions (Ir) of one run
# of each variant with valgrind --tool=callgrind on alloc.lua N (default
# 300000, the timed run: 5.55 M allocator calls, about a minute per variant
# under valgrind): exact and immune to the machine's load, so the cost of the
# shims' paths (off, unsampled, recorded) shows without noise. Each variant
# also runs alloc.lua 1, whose Ir over plain's is the fixed cost (the
# runtime's start-up and exit, plus Lua's own few thousand start-up calls);
# the rest, divided by the allocator calls the program makes (counted from
# the off run's calls into the __wrap_ shims), is the cost per call. Prints
# each variant's Ir, its ratio to plain and to user, the fixed cost, the
# cost per call and the ratio without the fixed cost; keeps the callgrind
# outputs (cg-VARIANT-N.out) for callgrind_annotate; skips part 2.
#
# On a quiet machine: sh bench/sample_bench.sh --runs 9
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build out= runs=7 accn='65536 8192' luan=300000 scale=10000000 bytes=524288 lua=1 cg=0 cgn=300000
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --lua-n) luan=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --accuracy-n) accn=$2; shift 2 ;;
    --no-lua) lua=0; shift ;;
    --callgrind) cg=1; scale=0; shift
        case ${1-} in [0-9]*) cgn=$1; shift ;; esac ;;
    *) echo "usage: sample_bench.sh [--build DIR] [--out DIR] [--runs N] [--lua-n N] [--scale N] [--bytes N] [--accuracy-n 'N...'] [--no-lua] [--callgrind [N]]" >&2
       exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
bin=$build/bin
[ -n "$out" ] || out=$build/bench-sample
mkdir -p "$out" && out=$(cd "$out" && pwd)
cc=${CC:-cc}
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"
status=0

# ---- part 1: Lua ------------------------------------------------------------
if [ "$lua" = 1 ] && sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/src" >/dev/null 2>&1; then
    for v in user plain rh; do
        case $v in
        user) c="$cc -std=gnu99 -O2 -g -fno-omit-frame-pointer" ;;
        plain) c="$cc -std=gnu99 $flags" ;;
        rh) c="$bin/rheaper-cc -std=gnu99" ;;
        esac
        if [ ! -x "$out/lua-$v/src/lua" ] || [ "$build/lib/librheaper_rt.a" -nt "$out/lua-$v/src/lua" ]; then
            rm -rf "$out/lua-$v" && cp -r "$out/src/src" "$out/lua-$v"
            make -s -j2 -C "$out/lua-$v" linux CC="$c" >"$out/lua-$v.log" 2>&1 ||
                { echo "FAIL: building Lua ($v); see $out/lua-$v.log"; exit 1; }
        fi
    done
    mkdir -p "$out/prof"
    # one VARIANT: prints "cpu sys wall rip_bytes" of one run
    one() {
        lua=$out/lua-rh/src/lua
        case $1 in
        user) set -- "$out/lua-user/src/lua" ;;
        plain) set -- "$out/lua-plain/src/lua" ;;
        off) set -- "$lua" ;;
        full) set -- env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$out/prof" "$lua" ;;
        populate) set -- env RHEAPER_ENABLE=1 RHEAPER_POPULATE=1 RHEAPER_PROFILE_DIR="$out/prof" "$lua" ;;
        bigchunk) set -- env RHEAPER_ENABLE=1 RHEAPER_BUFFER_SIZE=262144 RHEAPER_PROFILE_DIR="$out/prof" "$lua" ;;
        bytes) set -- env RHEAPER_ENABLE=1 RHEAPER_SAMPLE_BYTES="$bytes" RHEAPER_PROFILE_DIR="$out/prof" "$lua" ;;
        rate) set -- env RHEAPER_ENABLE=1 RHEAPER_SAMPLE_RATE=0.01 RHEAPER_PROFILE_DIR="$out/prof" "$lua" ;;
        esac
        rm -f "$out/prof"/rip-*
        s=$(date +%s%N)
        /usr/bin/env time -f '%U %S' -o "$out/time.txt" "$@" "$here/alloc.lua" "$luan" >/dev/null 2>&1
        e=$(date +%s%N)
        sz=$(cat "$out/prof"/rip-* 2>/dev/null | wc -c)
        awk -v w=$(((e - s) / 1000)) -v z="$sz" '{printf "%.3f %.3f %.3f %d\n", $1 + $2, $2, w / 1e6, z}' "$out/time.txt"
    }
    variants="user plain off full populate bigchunk bytes rate"
    if [ "$cg" = 1 ]; then
        command -v valgrind >/dev/null || { echo "FAIL: --callgrind needs valgrind"; exit 1; }
        # cgir VARIANT N: the total Ir of one run of alloc.lua N under callgrind
        # (the output stays in $out/cg-VARIANT-N.out)
        cgir() {
            prog=$out/lua-rh/src/lua vars=
            case $1 in
            user) prog=$out/lua-user/src/lua ;;
            plain) prog=$out/lua-plain/src/lua ;;
            full) vars="RHEAPER_ENABLE=1" ;;
            bytes) vars="RHEAPER_ENABLE=1 RHEAPER_SAMPLE_BYTES=$bytes RHEAPER_SAMPLE_SEED=1" ;;
            rate) vars="RHEAPER_ENABLE=1 RHEAPER_SAMPLE_RATE=0.01 RHEAPER_SAMPLE_SEED=1" ;;
            esac
            f=$out/cg-$1-$2.out
            rm -f "$out/prof"/rip-* "$f"
            # env before valgrind: valgrind must run the program itself, not env
            env $vars RHEAPER_PROFILE_DIR="$out/prof" valgrind --tool=callgrind \
                --callgrind-out-file="$f" "$prog" "$here/alloc.lua" "$2" \
                >/dev/null 2>"$out/cg.err" || { echo "FAIL: callgrind ($1); see $out/cg.err" >&2; return 1; }
            awk '/^summary:/ {print $2}' "$f"
        }
        # cgcalls FILE: the calls into __wrap_ shims a callgrind output counts
        # (names are compressed: "(id) name" the first time, "(id)" after)
        cgcalls() {
            awk '/^c?fn=\(/ { id = $1; sub(/^c?fn=/, "", id); if (NF > 1) name[id] = $2 }
                 /^cfn=\(/ { cur = $1; sub(/^cfn=/, "", cur) }
                 /^calls=/ { if (name[cur] ~ /^__wrap_/) { c = $1; sub(/^calls=/, "", c); n += c } }
                 END { print n + 0 }' "$1"
        }
        echo "callgrind: alloc.lua $cgn, instructions (Ir) of one run each; fixed cost from alloc.lua 1"
        for v in user plain off bytes rate full; do
            echo "$v $(cgir $v "$cgn") $(cgir $v 1)" >>"$out/cg.txt.new"
        done
        mv "$out/cg.txt.new" "$out/cg.txt"
        calls=$(($(cgcalls "$out/cg-off-$cgn.out") - $(cgcalls "$out/cg-off-1.out")))
        echo "allocator calls the program makes (alloc.lua $cgn minus alloc.lua 1): $calls"
        echo
        echo "| variant | Ir | Ir / plain | Ir / user | fixed Ir over plain | Ir per call over plain | Ir / plain without fixed |"
        echo "|---|--:|--:|--:|--:|--:|--:|"
        awk -v calls="$calls" '{ ir[$1] = $2; ir1[$1] = $3; v[NR] = $1 }
            END { pl = ir["plain"] - ir1["plain"]
                  for (i = 1; i <= NR; i++) { k = v[i]; d = ir[k] - ir1[k]
                      printf "| %s | %.0f | %.4f | %.4f | %.0f | %.1f | %.4f |\n", k, ir[k],
                          ir[k] / ir["plain"], ir[k] / ir["user"], ir1[k] - ir1["plain"],
                          (d - pl) / calls, d / pl } }' "$out/cg.txt"
        echo
        echo "bytes: RHEAPER_SAMPLE_BYTES=$bytes; rate: RHEAPER_SAMPLE_RATE=0.01 (both seed 1)"
        echo "per function: callgrind_annotate --inclusive=yes $out/cg-VARIANT-$cgn.out"
        exit 0
    fi
    echo "load average before: $(rh_loadavg)"
    : >"$out/runs.txt"
    i=0
    while [ $i -lt "$runs" ]; do
        for v in $variants; do echo "$v $(one $v)" >>"$out/runs.txt"; done
        i=$((i + 1))
    done
    echo "load average after: $(rh_loadavg)"
    med() { rh_col "$out/runs.txt" "$1" "$2" | rh_median; }
    r() { echo "$1 $2" | awk '{printf "%.3f", $1 / $2}'; }
    pc=$(med plain 2) uc=$(med user 2) pw=$(med plain 4)
    echo
    echo "Lua 5.4 alloc.lua $luan, $runs interleaved rounds (medians)"
    echo
    echo "| variant | CPU (s) | CPU / plain | CPU / user | sys (s) | wall (s) | wall / plain | rip (MB) |"
    echo "|---|--:|--:|--:|--:|--:|--:|--:|"
    for v in $variants; do
        c=$(med $v 2) sy=$(med $v 3) w=$(med $v 4) z=$(med $v 5)
        echo "| $v | $c | $(r $c $pc) | $(r $c $uc) | $sy | $w | $(r $w $pw) | $(echo $z | awk '{printf "%.2f", $1 / 1e6}') |"
    done
    echo
    echo "user: cc -O2 -g -fno-omit-frame-pointer; plain: the flags rheaper-cc adds; populate: full with"
    echo "RHEAPER_POPULATE=1 (chunks prefaulted with MADV_POPULATE_WRITE); bigchunk: full with 2 MiB chunks"
    echo "(RHEAPER_BUFFER_SIZE=262144); bytes: RHEAPER_SAMPLE_BYTES=$bytes; rate: RHEAPER_SAMPLE_RATE=0.01"
else
    [ "$lua" = 1 ] && echo "sample_bench: note: Lua skipped (its source could not be fetched)"
fi

# ---- part 2: the scale workload's top 10 sites --------------------------------
if [ "$scale" -gt 0 ]; then
    "$bin/rheaper-cc" -O2 -pthread -o "$out/wl_scale.rh" "$here/wl_scale.c"
    # record NAME [VAR=VALUE...]: one recording of wl_scale into scale-NAME,
    # converted, with `rheaper top --csv` of it in top.csv
    record() {
        m=$1; shift
        rm -rf "$out/scale-$m" && mkdir -p "$out/scale-$m"
        (cd "$out/scale-$m" && env RH_EXPECT_FILE=/dev/null RHEAPER_ENABLE=1 RHEAPER_SCOPE=program \
            RHEAPER_PROFILE_DIR="$out/scale-$m" "$@" "$out/wl_scale.rh" "$scale" 4 2>record.err) ||
            { echo "FAIL: wl_scale ($m)"; exit 1; }
        "$bin/rheaper-convert" --quiet "$out/scale-$m"/rip-* "$out/scale-$m/p.db" ||
            { echo "FAIL: converting the $m scale profile"; exit 1; }
        RHEAPER_QUIET_NOTICES=1 "$bin/rheaper" top "$out/scale-$m/p.db" --csv -n 100000 \
            >"$out/scale-$m/top.csv" 2>/dev/null ||
            RHEAPER_QUIET_NOTICES=1 "$bin/rheaper" top "$out/scale-$m/p.db" --csv \
                >"$out/scale-$m/top.csv" || { echo "FAIL: rheaper top ($m)"; exit 1; }
        ls -l "$out/scale-$m"/rip-* | awk -v m=$m '{printf "%s profile: %.1f MB\n", m, $5 / 1e6}'
    }
    record full
    for n in $bytes $accn; do record "n$n" RHEAPER_SAMPLE_BYTES="$n" RHEAPER_SAMPLE_SEED=1; done
    # Each site's sampling statistics at each N, from the full profile's blocks
    # (one pass): a block of s bytes is sampled with p = 1 - exp(-s/N), or
    # p = 1 when s >= N (always recorded: heapprofd's rule, FORMAT.md mode 3),
    # and weighed 1/p, so the site's expected number of samples is sum(p) and its
    # estimate's variance sum(s^2 (1 - p) / p); printed as the relative
    # standard error sqrt(var) / bytes. sd.csv lines: N,sym,line,samples,sd
    sep= sel=
    for n in $bytes $accn; do
        sel="$sel$sep sum(CASE WHEN a.size >= $n THEN 1.0 ELSE 1.0 - exp(-a.size / $n.0) END),
             sqrt(sum(CASE WHEN a.size >= $n THEN 0.0
                      ELSE a.size * a.size * (1.0 / (1.0 - exp(-a.size / $n.0)) - 1.0) END)) / sum(a.size)"
        sep=,
    done
    sqlite3 -separator , "$out/scale-full/p.db" "
        SELECT b.sym, b.line, $sel FROM alloc_rows a JOIN stacks s ON s.id = a.bt
        JOIN backtraces b ON b.id = a.bt AND b.frame_no = s.callsite
        GROUP BY b.sym, b.line" |
        awk -F, -v ns="$bytes $accn" '{ k = split(ns, n, " ")
            for (i = 1; i <= k; i++) printf "%s,%s,%s,%s,%s\n", n[i], $1, $2, $(1 + 2 * i), $(2 + 2 * i) }' \
        >"$out/scale-full/sd.csv"
    for n in $bytes $accn; do
        echo
        echo "wl_scale $scale allocations, 4 threads: top 10 call sites by bytes, full vs RHEAPER_SAMPLE_BYTES=$n (seed 1)"
        echo "(samples: the expected number of sampled blocks; sd: the estimate's relative standard error;"
        echo " both from the full profile's blocks at this N)"
        echo
        echo "| function | location | full bytes | estimated | error | samples | sd | error / sd |"
        echo "|---|---|--:|--:|--:|--:|--:|--:|"
        # top.csv: function,location,count,bytes,... with a header line
        awk -F, -v n="$n" -v bar=$([ "$n" = "$bytes" ] && echo 1 || echo 0) '
             FILENAME ~ /sd.csv$/ { if ($1 == n) { ns[$2 "," $3] = $4; sd[$2 "," $3] = $5 }; next }
             FILENAME ~ /scale-n/ { if (FNR > 1) est[$1 "," $2] = $4; next }
             FNR > 1 && k < 10 { k++; key = $1 "," $2; e = (key in est) ? est[key] : 0
               line = $2; sub(/.*:/, "", line); s = $1 "," line
               d = (e - $4) / $4 * 100; a = d < 0 ? -d : d; if (a > worst) worst = a
               if (a <= 10) ok++
               z = sd[s] > 0 ? d / (100 * sd[s]) : 0
               printf "| %s | %s | %d | %d | %+.2f %% | %.1f | %.1f %% | %+.1f |\n",
                   $1, $2, $4, e, d, ns[s], 100 * sd[s], z }
             END { printf "\n%d of %d within 10 %%, largest error %.2f %%", ok, k, worst
                   if (bar) printf " (bar, at this N: all within 10 %%)"
                   printf "\n"; exit bar && worst > 10 }' \
            "$out/scale-full/sd.csv" "$out/scale-n$n/top.csv" "$out/scale-full/top.csv" ||
            { echo "FAIL: an estimate is off by more than 10 % at N = $n"; status=1; }
    done
fi
exit $status
