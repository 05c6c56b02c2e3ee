#!/bin/sh
# inproc.sh: the cost of recording measured inside one process (bench/inproc.c;
# docs/benchmarks.md, "Cost of recording, measured in one process"), then the
# whole-process rounds beside heaptrack.
#
#   sh bench/inproc.sh [--build DIR] [--out DIR] [--rounds N] [--whole-rounds N]
#                      [--lua-size N] [--synth-size N] [--no-lua] [--no-heaptrack] [--tiny]
#
# 1. Builds Lua 5.4 from its Debian source (tests/e2e/programs/fetch_source.sh)
#    with rheaper-cc, once, and links its liblua.a into bench/inproc.c three
#    times (the object of each copy made with ld -r and objcopy: every Lua
#    symbol hidden but the entry point of inproc_lua.c, renamed per copy):
#    plain (its realloc and free renamed to glibc's __libc_ names, every other
#    wrapped function to its __real_ name, so nothing of rheaper is on its
#    path), floor (the allocator calls renamed to bench/floor.c's recorder,
#    compiled with its wrappers renamed) and rheaper (as rheaper-cc links it).
#    The synthetic loop (inproc_synth.c) gets the same three copies.
# 2. Runs the driver on Lua (alloc.lua LUA_SIZE, default 5000: about 93 k
#    events) and on the synthetic loop (SYNTH_SIZE pairs, default 50000), ROUNDS
#    rounds (default 150) of every mode, and prints its tables and the events
#    of one full recording (rh_bench --events), with the overhead per event.
#    Then the chunks' page faults (POPULATE_RUNS, default 3; 0: none): the
#    driver on Lua with modes off and full-warm, alternately without and with
#    RHEAPER_POPULATE=1 (each chunk's pages supplied in one madvise when it is
#    mapped, on the recording thread), 60 rounds per process; each process's
#    full-warm / off ratios, and their medians.
# 3. Whole-process rounds (WHOLE_ROUNDS, default 7; 0: none): alloc.lua
#    300000 plain, rheaper-cc tracking off, full recording, and heaptrack on
#    the plain build, interleaved, wall and CPU (user + system, children
#    included) medians. Meaningful only on a quiet machine; heaptrack's ratio
#    to rheaper's full recording comes from these rounds.
#
# --tiny (the ctest bench-inproc-tiny): 3 rounds at small sizes, no
# whole-process rounds; checks that every mode of both workloads printed its
# ratios ("FAIL:" otherwise). No timing is asserted. Lua is skipped with a note
# when its source cannot be fetched.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build out= rounds=150 whole=7 popruns=3 luan=5000 synthn=50000 lua=1 ht=1 tiny=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --whole-rounds) whole=$2; shift 2 ;;
    --populate-runs) popruns=$2; shift 2 ;;
    --lua-size) luan=$2; shift 2 ;;
    --synth-size) synthn=$2; shift 2 ;;
    --no-lua) lua=0; shift ;;
    --no-heaptrack) ht=0; shift ;;
    --tiny) tiny=1; shift ;;
    *) echo "usage: inproc.sh [--build DIR] [--out DIR] [--rounds N] [--whole-rounds N] [--populate-runs N] [--lua-size N] [--synth-size N] [--no-lua] [--no-heaptrack] [--tiny]" >&2; exit 2 ;;
    esac
done
[ "$tiny" = 1 ] && rounds=3 whole=0 popruns=0 luan=300 synthn=2000
build=$(cd "$build" && pwd)
[ -n "$out" ] || out=$build/inproc
mkdir -p "$out" && out=$(cd "$out" && pwd)
bin=$build/bin
for t in rheaper-cc; do
    [ -x "$bin/$t" ] || { echo "FAIL: $bin/$t not built" >&2; exit 1; }
done
# The medians of the script's own tables: the benchmarks' shared helper
# (bench/lib.sh) when it is there, else the same convention here (an odd count
# gives the middle value, an even one the mean of the two middle values). The
# driver's min, p10 and median are computed in inproc.c, in one function.
if [ -f "$here/lib.sh" ]; then
    . "$here/lib.sh"
else
    rh_median() {
        tr -s ' \t' '\n\n' | grep -v '^$' | sort -g | awk -v fmt="${1:-%.10g}" '{ v[NR] = $1 } END {
            if (!NR) { print "-"; exit }
            printf fmt "\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
    }
fi
cc=${RHEAPER_CC:-cc}
# the flags rheaper-cc adds when compiling, for the plain builds
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"
case $(uname -m) in x86_64|i?86|aarch64) ;; *) flags=$(echo "$flags" | sed 's/ -mno-omit-leaf-frame-pointer//') ;; esac

# Every function rheaper-cc wraps (the wrap table's fn lines).
wrapped=$(awk -F'|' '/^fn / {split($1, w, " "); print w[2]}' "$root/wrap/wrap_table.txt")

# copy OBJ ENTRY COPY OUT: the copy COPY (plain, floor, rh) of OBJ with every
# global but ENTRY hidden, ENTRY renamed ENTRY's stem + _COPY, and its
# allocator calls sent where the copy's calls go.
copy() {
    # .text page-aligned: the copies' code then has the same address bits below
    # 4 KiB (the interpreter's loop alignment, branch predictor indexing)
    objcopy --keep-global-symbol="$2" --set-section-alignment .text=4096 "$1" "$4.tmp"
    stem=${2%_run}
    set -- "$1" "$2" "$3" "$4" --redefine-sym "$2=${stem}_$3"
    if [ "$3" != rh ]; then
        undef=$(nm -u "$4.tmp" | awk '{print $NF}')
        for s in $wrapped; do
            echo "$undef" | grep -qx "$s" || continue
            case $3:$s in
            plain:malloc | plain:calloc | plain:realloc | plain:free) t=__libc_$s ;;
            floor:malloc | floor:calloc | floor:realloc | floor:free) t=inproc_floor_$s ;;
            *) t=__real_$s ;;
            esac
            set -- "$@" --redefine-sym "$s=$t"
        done
    fi
    o=$4
    shift 4
    objcopy "$@" "$o.tmp" "$o"
    rm -f "$o.tmp"
}

# ---- builds
"$cc" -O2 -I"$root/runtime" -o "$out/rh_bench" "$here/rh_bench.c"
"$cc" $flags -c -o "$out/floor_inproc.o" "$here/floor.c" \
    -D__wrap_malloc=inproc_floor_malloc -D__wrap_calloc=inproc_floor_calloc \
    -D__wrap_realloc=inproc_floor_realloc -D__wrap_free=inproc_floor_free \
    -D__real_malloc=__libc_malloc -D__real_calloc=__libc_calloc \
    -D__real_realloc=__libc_realloc -D__real_free=__libc_free
"$bin/rheaper-cc" -O2 -c -o "$out/synth.o" "$here/inproc_synth.c"
objs=
for c in plain floor rh; do
    copy "$out/synth.o" inproc_synth_run "$c" "$out/synth_$c.o"
    objs="$objs $out/synth_$c.o"
done
if [ "$lua" = 1 ]; then
    rc=0
    sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/lua" || rc=$?
    [ "$rc" -eq 0 ] && [ -d "$out/lua/src" ] || { echo "inproc: note: Lua skipped (its source could not be fetched)"; lua=0; }
fi
if [ "$lua" = 1 ]; then
    # rh: liblua.a for the driver and the lua of the whole-process rounds;
    # plain: the plain lua of those rounds (and heaptrack's), only for them
    vs=rh
    [ "$whole" -gt 0 ] && vs="rh plain"
    for v in $vs; do
        case $v in rh) c="$bin/rheaper-cc -std=gnu99" ;; plain) c="$cc -std=gnu99 $flags" ;; esac
        if [ ! -x "$out/lua-$v/src/lua" ] || [ "$bin/rheaper-cc" -nt "$out/lua-$v/src/lua" ] ||
            [ "$build/lib/librheaper_rt.a" -nt "$out/lua-$v/src/lua" ]; then
            rm -rf "$out/lua-$v" && cp -r "$out/lua/src" "$out/lua-$v"
            make -s -j2 -C "$out/lua-$v" linux CC="$c" > "$out/lua-$v.log" 2>&1 ||
                { echo "FAIL: building Lua ($v); see $out/lua-$v.log"; exit 1; }
        fi
    done
    "$bin/rheaper-cc" -std=gnu99 -O2 -I"$out/lua-rh/src" -c -o "$out/lua_run.o" "$here/inproc_lua.c"
    ld -r -o "$out/lua_all.o" "$out/lua_run.o" --whole-archive "$out/lua-rh/src/liblua.a" --no-whole-archive
    for c in plain floor rh; do
        copy "$out/lua_all.o" inproc_lua_run "$c" "$out/lua_$c.o"
        objs="$objs $out/lua_$c.o"
    done
else
    # the driver still links: the Lua entry points fail if called
    printf '%s\n' '#include <stddef.h>' \
        'int inproc_lua_plain(const char *s, size_t l, const char *n, long k, long long *u) { return -1; }' \
        'int inproc_lua_floor(const char *s, size_t l, const char *n, long k, long long *u) { return -1; }' \
        'int inproc_lua_rh(const char *s, size_t l, const char *n, long k, long long *u) { return -1; }' \
        > "$out/nolua.c"
    "$cc" -O2 -c -o "$out/nolua.o" "$out/nolua.c"
    objs="$objs $out/nolua.o"
fi
"$bin/rheaper-cc" -O2 -I"$root/runtime" -o "$out/inproc" "$here/inproc.c" $objs "$out/floor_inproc.o" -lm -ldl
# nothing of rheaper or the floor on the plain copies' allocator path
for o in "$out/synth_plain.o" "$out/lua_plain.o"; do
    [ "$o" != "$out/lua_plain.o" ] || [ "$lua" = 1 ] || continue
    if nm -u "$o" | awk '{print $NF}' | grep -qxE 'malloc|calloc|realloc|free|__wrap_.*|inproc_floor_.*'; then
        echo "FAIL: $o still calls a wrapped allocator"; exit 1
    fi
done

# ---- in-process rounds
mkdir -p "$out/prof"
rm -f "$out/prof"/rip-*
echo "$(nproc) cores, $(uname -m); nice $(nice)"
echo
run_wl() { # WORKLOAD ARGS...: one run of the driver, its output kept
    wl=$1
    shift
    "$out/inproc" --workload "$wl" --rounds "$rounds" --dir "$out/prof" --keep "$@" > "$out/$wl.txt" 2> "$out/$wl.err" ||
        { echo "FAIL: inproc --workload $wl"; cat "$out/$wl.txt" "$out/$wl.err"; exit 1; }
    echo "## $wl, in one process"
    echo
    grep -v '^profile ' "$out/$wl.txt"
    rip=$(sed -n 's/^profile //p' "$out/$wl.txt")
    [ -n "$rip" ] || { echo "FAIL: $wl: no full recording kept"; exit 1; }
    ev=$("$out/rh_bench" --events "$rip")
    rm -f "$rip"
    [ "$ev" -gt 0 ] || { echo "FAIL: $wl: the kept full recording has no events"; exit 1; }
    awk -v ev="$ev" -v wl="$wl" '
        /^\| rheaper, tracking off / {split($0, f, "|"); off = f[5] + 0}
        /^\| rheaper, full recording \(a new/ {split($0, f, "|"); on = f[5] + 0}
        /^\| rheaper, full recording \(its second/ {split($0, f, "|"); warm = f[5] + 0}
        END {printf "\nevents per run (full recording): %d; full - off: %.1f ns per event, full-warm - off: %.1f (medians)\n\n", ev, ev ? (on - off) * 1e6 / ev : 0, ev ? (warm - off) * 1e6 / ev : 0}' "$out/$wl.txt"
    for m in plain off full full-warm sampled sampled-rate floor-pass floor-clock floor-walk; do
        grep -q "^ratio $wl $m min [0-9.]* p10 [0-9.]* median [0-9.]*$" "$out/$wl.txt" ||
            { echo "FAIL: $wl: no ratios for mode $m"; exit 1; }
    done
}
run_wl synth --size "$synthn"
[ "$lua" = 1 ] && run_wl lua --script "$here/alloc.lua" --size "$luan"

# ---- the chunks' page faults, populated or not (one process per run)
if [ "$popruns" -gt 0 ] && [ "$lua" = 1 ]; then
    echo "## lua, chunks faulted in as written (0) or populated when mapped (1)"
    echo
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    : > "$out/populate.txt"
    i=0
    while [ "$i" -lt "$popruns" ]; do
        for p in 0 1; do
            env RHEAPER_POPULATE=$p "$out/inproc" --workload lua --script "$here/alloc.lua" --size "$luan" \
                --rounds 60 --dir "$out/prof" --modes off,full-warm > "$out/populate-$p.txt" 2>&1 ||
                { echo "FAIL: inproc with RHEAPER_POPULATE=$p"; cat "$out/populate-$p.txt"; exit 1; }
            awk -v p="$p" '/^\| rheaper, full recording \(its second/ {split($0, f, "|"); fl = f[11] + 0}
                /^ratio lua full-warm / {print p, $5, $7, $9, fl}' "$out/populate-$p.txt" >> "$out/populate.txt"
        done
        i=$((i + 1))
    done
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| RHEAPER_POPULATE | full-warm / off, min (each run) | p10 (each run) | median (each run) | page faults per run | median of the runs' min, p10, median |"
    echo "|---|---|---|---|---|---|"
    for p in 0 1; do
        col() { awk -v p="$p" -v k="$1" '$1 == p {print $k}' "$out/populate.txt" | tr '\n' ' ' | sed 's/ $//'; }
        echo "| $p | $(col 2) | $(col 3) | $(col 4) | $(col 5) | $(col 2 | rh_median %.3f), $(col 3 | rh_median %.3f), $(col 4 | rh_median %.3f) |"
    done
    echo
fi
[ "$whole" -gt 0 ] && [ "$lua" = 1 ] || exit 0

# ---- whole-process rounds (quiet machines)
htbin=$(command -v heaptrack || true)
[ "$ht" = 1 ] || htbin=
[ -n "$htbin" ] || echo "inproc: note: heaptrack skipped"
mkdir -p "$out/whole"
# one VARIANT: prints "wall cpu" (seconds) of one run of alloc.lua 300000
one() {
    d=$out/whole/$1
    rm -rf "$d" && mkdir -p "$d"
    case $1 in
    plain) set -- "$out/lua-plain/src/lua" ;;
    off) set -- "$out/lua-rh/src/lua" ;;
    full) set -- env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d" "$out/lua-rh/src/lua" ;;
    heaptrack) set -- "$htbin" -o "$d/ht" "$out/lua-plain/src/lua" ;;
    esac
    s=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$d/time" "$@" "$here/alloc.lua" 300000 > /dev/null 2> "$d/err" ||
        { echo "FAIL: whole-process run $1 (see $d/err)" >&2; exit 1; }
    e=$(date +%s%N)
    awk -v w=$(((e - s) / 1000)) '{printf "%.4f %.4f\n", w / 1e6, $1 + $2}' "$d/time"
}
variants="plain off full"
[ -n "$htbin" ] && variants="$variants heaptrack"
echo "## Lua alloc.lua 300000, whole process, $whole interleaved rounds"
echo
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$out/whole/runs.txt"
i=0
while [ "$i" -lt "$whole" ]; do
    for v in $variants; do echo "$v $(one "$v")" >> "$out/whole/runs.txt"; done
    i=$((i + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
med() { awk -v v="$1" -v k="$2" '$1 == v {print $k}' "$out/whole/runs.txt" | rh_median; }
pw=$(med plain 2) pc=$(med plain 3) fw=$(med full 2) fc=$(med full 3)
echo "| variant | wall median (s) | wall / plain | CPU median (s) | CPU / plain | wall / full recording | CPU / full recording |"
echo "|---|--:|--:|--:|--:|--:|--:|"
for v in $variants; do
    w=$(med "$v" 2) c=$(med "$v" 3)
    echo "$v $w $c $pw $pc $fw $fc" | awk '{printf "| %s | %.3f | %.2f | %.3f | %.2f | %.2f | %.2f |\n", $1, $2, $2 / $4, $3, $3 / $5, $2 / $6, $3 / $7}'
done
