#!/bin/sh
# redis.sh: the allocator-family benchmark on Debian's Redis 7.
#
#   sh bench/redis.sh [--build DIR] [--out DIR] [--runs N] [--requests N]
#
# Fetches Debian's redis source (apt-get source through a private source list,
# tests/e2e/programs/fetch_source.sh) and builds it four ways: with the bundled jemalloc
# (Redis's default, je_ prefixed) and with MALLOC=libc, each with the plain
# compiler and with rheaper-cc (`make CC=...`). It then drives each server with
# redis-benchmark over 127.0.0.1, interleaving per round:
#   jemalloc: plain, rheaper-cc tracking off, rheaper-cc tracked, heaptrack
#   libc:     plain, rheaper-cc tracking off, rheaper-cc tracked, heaptrack
# and writes OUT/redis.md with, per variant, the median ops/s and the median
# CPU seconds the server used (its own `INFO cpu`: used_cpu_user + sys, which
# other processes on a loaded machine disturb less than throughput), each with
# its ratio to the plain build of the same allocator; the load
# average before and after; `INFO memory`'s mem_allocator of each build; and,
# from the first round, the rows of each tracked profile, the row counts of
# the jemalloc and libc builds side by side, rows per kind, and `rheaper top`.
# Not part of the test suite: it needs the network (apt-get source) and takes
# several minutes. Exit 77 when the source cannot be fetched.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build="$root/build" out="" runs=5 requests=100000
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    *) echo "usage: redis.sh [--build DIR] [--out DIR] [--runs N] [--requests N]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
[ -n "$out" ] || out="$build/bench/redis"
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin="$build/bin"
[ -x "$bin/rheaper-cc" ] || { echo "redis.sh: build rheaper first ($bin/rheaper-cc missing)" >&2; exit 1; }

sh "$root/tests/e2e/programs/fetch_source.sh" redis "$out/source" || exit $?

# ---- builds ---------------------------------------------------------------
# build NAME CC MALLOC: a copy of the source built in $out/NAME (kept).
build_one() {
    name=$1 cc=$2 malloc=$3
    [ -x "$out/$name/src/redis-server" ] && [ -x "$out/$name/src/redis-benchmark" ] && return 0
    rm -rf "$out/$name"
    cp -r "$out/source/src" "$out/$name"
    echo "building $name (CC=$cc MALLOC=$malloc) ..." >&2
    if ! (cd "$out/$name" && make -j2 CC="$cc" MALLOC="$malloc" BUILD_TLS=no \
            USE_SYSTEMD=no > build.log 2>&1); then
        echo "redis.sh: building $name failed; see $out/$name/build.log" >&2
        exit 1
    fi
}
build_one je-plain cc jemalloc
build_one je-rheaper "$bin/rheaper-cc" jemalloc
build_one libc-plain cc libc
build_one libc-rheaper "$bin/rheaper-cc" libc

cli="$out/je-plain/src/redis-cli"
bench="$out/je-plain/src/redis-benchmark"
port=17379
tests="set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,lrange_100"

# wait_ready: until the server answers PING (10 s at most).
wait_ready() {
    i=0
    until "$cli" -h 127.0.0.1 -p $port ping > /dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 200 ] || { echo "redis.sh: the server did not start" >&2; return 1; }
        sleep 0.05
    done
}

# run VARIANT ROUND: one server run under the variant; prints its ops/s (total
# requests over the summed time of the tests) and the server's CPU seconds,
# and leaves its profile in $out/run/VARIANT.ROUND when tracked.
run() {
    v=$1 r=$2
    case $v in
    je-*) b=je ;;
    *) b=libc ;;
    esac
    dir="$out/run/$v.$r"
    rm -rf "$dir" && mkdir -p "$dir"
    args="--port $port --bind 127.0.0.1 --save '' --appendonly no --dir $dir --logfile $dir/server.log"
    case $v in
    *-plain) (cd "$dir" && eval exec "$out/$b-plain/src/redis-server" $args) & ;;
    *-off) (cd "$dir" && eval exec "$out/$b-rheaper/src/redis-server" $args) & ;;
    *-tracked) (cd "$dir" && export RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$dir" &&
                  eval exec "$out/$b-rheaper/src/redis-server" $args) & ;;
    *-heaptrack) (cd "$dir" && eval exec heaptrack -o "$dir/heaptrack" \
                  "$out/$b-plain/src/redis-server" $args > "$dir/heaptrack.out" 2>&1) & ;;
    esac
    spid=$!
    wait_ready
    if [ "$r" = 1 ]; then
        "$cli" -h 127.0.0.1 -p $port info memory | tr -d '\r' | grep '^mem_allocator:' \
            > "$dir/allocator.txt" || true
    fi
    "$bench" -h 127.0.0.1 -p $port -n "$requests" -c 50 -t "$tests" --csv > "$dir/bench.csv" 2>/dev/null
    cpu=$("$cli" -h 127.0.0.1 -p $port info cpu | tr -d '\r' |
        awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" { s += $2 } END { printf "%.3f", s }')
    "$cli" -h 127.0.0.1 -p $port shutdown nosave > /dev/null 2>&1 || true
    wait $spid 2>/dev/null || true
    # total requests / summed seconds over the tests, then the CPU seconds
    awk -F'","' -v n="$requests" -v cpu="$cpu" 'NR > 1 { gsub(/"/, "", $2); if ($2 > 0) t += n / $2; k++ }
        END { if (t > 0) printf "%.0f %s\n", k * n / t, cpu; else print 0, cpu }' "$dir/bench.csv"
}

variants="je-plain je-off je-tracked je-heaptrack libc-plain libc-off libc-tracked libc-heaptrack"
command -v heaptrack > /dev/null 2>&1 || variants=$(echo "$variants" | sed 's/[a-z]*-heaptrack//g')
load_before=$(rh_loadavg)
rm -rf "$out/run" && mkdir -p "$out/run"
: > "$out/ops.txt"
r=1
while [ $r -le "$runs" ]; do
    for v in $variants; do
        res=$(run "$v" "$r")
        echo "$v $r $res" >> "$out/ops.txt"
        echo "round $r: $v ${res% *} ops/s, server CPU ${res#* } s" >&2
        # profiles: keep round 1's, drop the others' (they are large)
        [ "$r" = 1 ] || rm -f "$out/run/$v.$r"/rip-* "$out/run/$v.$r"/heaptrack*
    done
    r=$((r + 1))
done
load_after=$(rh_loadavg)

# ---- figures ----------------------------------------------------------------
med_of() { rh_col "$out/ops.txt" "$1" 3 | rh_median %.0f; }
cpu_of() {
    awk -v v="$1" '$1 == v { print $4 }' "$out/ops.txt" | sort -n |
        awk '{ c[NR] = $1 } END { if (NR % 2) print c[(NR + 1) / 2]; else printf "%.3f\n", (c[NR / 2] + c[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
rows_of() {
    rip=$(ls "$out/run/$1.1"/rip-* 2>/dev/null | grep -v '\.db$' | head -n 1)
    [ -n "$rip" ] || { echo "-"; return; }
    [ -f "$rip.db" ] || "$bin/rheaper-convert" --quiet "$rip" "$rip.db" > /dev/null 2>&1
    sqlite3 "$rip.db" "SELECT count(*) FROM allocations"
}
{
    echo "# Redis 7 ($(ls "$out/source" | grep -c . > /dev/null; head -n 1 "$out/source/src/00-RELEASENOTES" 2>/dev/null || echo source)), redis-benchmark over 127.0.0.1"
    echo
    echo "$runs interleaved rounds, $requests requests per test, tests $tests, 50 clients;"
    echo "load average before: $load_before; after: $load_after; $(nproc) cores."
    echo
    echo "| variant | ops/s median | ops/s / plain | server CPU s median | CPU / plain |"
    echo "|---|--:|--:|--:|--:|"
    for v in $variants; do
        m=$(med_of "$v") c=$(cpu_of "$v")
        echo "| $v | $m | $(ratio "$m" "$(med_of "${v%%-*}-plain")") | $c | $(ratio "$c" "$(cpu_of "${v%%-*}-plain")") |"
    done
    echo
    echo "INFO memory: jemalloc build (rheaper-cc): $(cat "$out/run/je-tracked.1/allocator.txt" 2>/dev/null);"
    echo "libc build (rheaper-cc): $(cat "$out/run/libc-tracked.1/allocator.txt" 2>/dev/null)."
    echo
    je=$(rows_of je-tracked)
    lc=$(rows_of libc-tracked)
    echo "Rows (round 1): jemalloc build $je, libc build $lc" \
        "($(awk -v a="$je" -v b="$lc" 'BEGIN { if (b > 0) printf "%+.2f%%", 100 * (a - b) / b; else print "-" }'))."
    # the mmap/munmap/mremap calls each tracked build recorded
    mm() {
        db=$(ls "$out/run/$1.1"/rip-*.db 2>/dev/null | head -n 1)
        [ -n "$db" ] && sqlite3 "$db" "SELECT count(*) || ' (' || coalesce(sum(op = 'mmap'), 0) ||
            ' mmap, ' || coalesce(sum(length), 0) || ' bytes)' FROM mmaps" 2>/dev/null || echo "-"
    }
    echo
    echo "mmaps rows (round 1): jemalloc build $(mm je-tracked), libc build $(mm libc-tracked)."
    for v in je-heaptrack libc-heaptrack; do
        ht=$(ls "$out/run/$v.1"/heaptrack.* 2>/dev/null | grep -v '\.out$' | head -n 1)
        [ -n "$ht" ] || continue
        echo
        echo "$v (round 1), heaptrack_print: $(heaptrack_print -f "$ht" 2>/dev/null |
            grep -m1 'calls to allocation functions')"
    done
    for v in je-tracked libc-tracked; do
        db=$(ls "$out/run/$v.1"/rip-*.db 2>/dev/null | head -n 1)
        [ -n "$db" ] || continue
        echo
        echo "Rows per kind, $v:"
        echo
        echo '```'
        sqlite3 -column -header "$db" "SELECT kind, count(*) AS rows, sum(size) AS bytes FROM allocations GROUP BY kind ORDER BY rows DESC"
        echo '```'
        echo
        echo "rheaper top -n 12, $v:"
        echo
        echo '```'
        "$bin/rheaper" top -n 12 "$db" 2>&1 | cut -c1-160
        echo '```'
    done
} > "$out/redis.md"
cat "$out/redis.md"
