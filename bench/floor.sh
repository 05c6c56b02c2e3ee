#!/bin/sh
# floor.sh: what a recorder reduced to its bare parts costs, beside rheaper
# (bench/floor.c; docs/benchmarks.md "The floor").
#
#   sh bench/floor.sh [--runs N] [--build DIR] [--out DIR]
#
# Builds the synthetic loop (wl_synth.c, 1 thread) and Lua 5.4 from its
# Debian source three ways: plain; plain linked with floor.c's wrappers
# (-Wl,--wrap=...); and with rheaper-cc. Then runs, interleaved, N rounds
# (default 7) of: plain, the floor in modes 0 (pass-through), 1 (clock read
# and a 24-byte event, no stack) and 2 (also a frame-pointer walk of every
# allocation), and rheaper's full recording; prints wall medians and ratios to
# plain. Not run by the test command.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=7 build=$root/build out=
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: floor.sh [--runs N] [--build DIR] [--out DIR]" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || out=$build/floor
bin=$build/bin
[ -x "$bin/rheaper-cc" ] || { echo "FAIL: no $bin/rheaper-cc (build first)" >&2; exit 1; }
mkdir -p "$out"
cc=${RHEAPER_CC:-cc}
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"
wrap="-Wl,--wrap=malloc -Wl,--wrap=free -Wl,--wrap=realloc -Wl,--wrap=calloc"

"$cc" -O2 -fno-omit-frame-pointer -c -o "$out/floor.o" "$here/floor.c"
"$cc" $flags -pthread -o "$out/synth.plain" "$here/wl_synth.c"
"$cc" $flags -pthread -o "$out/synth.floor" "$here/wl_synth.c" $wrap "$out/floor.o"
"$bin/rheaper-cc" -O2 -pthread -o "$out/synth.rh" "$here/wl_synth.c"
lua=0
rc=0
sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/lua" || rc=$?
if [ "$rc" -eq 0 ] && [ -d "$out/lua/src" ]; then
    for v in plain floor rh; do
        rm -rf "$out/lua-$v" && cp -r "$out/lua/src" "$out/lua-$v"
        case $v in
        plain) set -- CC="$cc -std=gnu99 $flags" ;;
        floor) set -- CC="$cc -std=gnu99 $flags" MYLDFLAGS="$wrap" MYLIBS="$out/floor.o" ;;
        rh) set -- CC="$bin/rheaper-cc -std=gnu99" ;;
        esac
        make -s -j2 -C "$out/lua-$v" linux "$@" > "$out/lua-$v.log" 2>&1 ||
            { echo "FAIL: building Lua ($v); see $out/lua-$v.log"; exit 1; }
    done
    lua=1
else
    echo "floor: note: Lua skipped (its source could not be fetched)"
fi

# one VARIANT BIN ARGS: wall seconds of one run
one() {
    t0=$(date +%s%N)
    case $1 in
    plain) "$2" $3 > /dev/null ;;
    f0 | f1 | f2) FLOOR_MODE=${1#f} "$2" $3 > /dev/null ;;
    rh) RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$out/rips" "$2" $3 > /dev/null && rm -f "$out"/rips/rip-* ;;
    esac
    t1=$(date +%s%N)
    echo "$t0 $t1" | awk '{printf "%.4f\n", ($2 - $1) / 1e9}'
}
mkdir -p "$out/rips"
wls="synth|$out/synth|1 3000000"
[ "$lua" = 1 ] && wls="$wls
lua|$out/lua|$here/alloc.lua 300000"
echo "## The floor: $runs interleaved rounds, wall medians (s) and ratios to plain"
echo
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores, $(uname -m)"
echo
echo "| workload | plain | floor: pass-through | floor: clock + event | floor: + stack walk | rheaper full |"
echo "|---|--:|--:|--:|--:|--:|"
echo "$wls" | while IFS='|' read -r id base args; do
    : > "$out/$id.times"
    i=0
    while [ $i -lt "$runs" ]; do
        for v in plain f0 f1 f2 rh; do
            case $v in plain) b=$base.plain ;; f?) b=$base.floor ;; rh) b=$base.rh ;; esac
            [ "$id" = lua ] && case $v in plain) b=$base-plain/src/lua ;; f?) b=$base-floor/src/lua ;; rh) b=$base-rh/src/lua ;; esac
            echo "$v $(one $v "$b" "$args")" >> "$out/$id.times"
        done
        i=$((i + 1))
    done
    awk -v id="$id" '
        { t[$1, ++n[$1]] = $2 }
        function med(v,   k, m, a, i, j, x) {
            m = n[v]; for (k = 1; k <= m; k++) a[k] = t[v, k]
            for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
        }
        END {
            p = med("plain")
            printf "| %s | %.3f | %.2f | %.2f | %.2f | %.2f |\n", id, p, med("f0") / p, med("f1") / p, med("f2") / p, med("rh") / p
        }' "$out/$id.times"
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
