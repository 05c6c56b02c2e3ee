#!/bin/sh
# postgres.sh: what tracking costs PostgreSQL: server CPU per pgbench
# transaction, rheaper against plain (docs/allocators.md "PostgreSQL").
#
#   sh bench/postgres.sh [--build DIR] [--out DIR] [--runs N] [--tx N] [--clients N]
#                        [--variants "plain off tracked sampled"] [--callgrind N]
#
# Builds Debian's PostgreSQL 15 twice (tests/integration/postgres/build_pg.sh,
# kept in the build tree): with cc, and with rheaper-cc and the shipped
# postgresql.alloc. One cluster (initdb, pgbench -i -s 1) as nobody; each
# round starts the server with pg_ctl on a unix socket, runs `pgbench -n -c C
# -t N` (tpcb-like) and stops it, for the variants interleaved:
#   plain     the cc build
#   off       the rheaper-cc build without RHEAPER_ENABLE (tracking off)
#   tracked   the rheaper-cc build with RHEAPER_ENABLE=1 given to pg_ctl (the
#             postmaster, its auxiliary processes and every backend recorded
#             from its start, region chunks included)
#   sampled   the same with RHEAPER_SAMPLE_BYTES=524288 (docs/commands.md)
# Server CPU of a round: utime+stime of the postmaster and its children
# (/proc/PID/stat: the live ones', plus the reaped ones' cutime+cstime of
# the postmaster) after pgbench minus before, divided by the transactions.
# Writes OUT/postgres.md: per variant the minimum and median CPU per
# transaction and tps, the ratios to plain (to off without plain), the profile bytes of one
# tracked round, the load average. Not part of the test suite (root, several
# minutes). Exit 77 when the source cannot be fetched.
#
# --callgrind N: instruction counts instead (exact whatever the load). One
# backend, `postgres --single` on a copy of the cluster, runs N and then 3N
# pgbench-like transactions (the tpcb-like statements, fixed pseudo-random
# keys) under valgrind's callgrind: plain, and the rheaper build with tracking
# off and on; the difference between the two runs of a variant, over 2N, is
# its instructions per transaction (start-up and exit cancel out). Prints
# those, their ratios,
# the region events a transaction (the calls of rh_region_alloc,
# rh_region_free and rh_region_realloc) and the instructions tracking adds per
# region event. Writes OUT/postgres-callgrind.md.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$root/build" out="" runs=5 tx=1000 clients=2 variants="plain off tracked sampled" cgtx=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --tx) tx=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --callgrind) cgtx=$2; shift 2 ;;
    *) echo "usage: postgres.sh [--build DIR] [--out DIR] [--runs N] [--tx N] [--clients N]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "postgres.sh: run as root (the server runs as nobody)" >&2; exit 1; }
build=$(cd "$build" && pwd)
out=${out:-$build/bench-postgres}
mkdir -p "$out"
bin="$build/bin" src="$root/tests/integration/postgres"
cache="$build/tests/integration/postgres/cases/postgres-build"
rc=0
tracked=$(sh "$src/build_pg.sh" "$bin" "$src" "$cache" | tail -n 1) || rc=$?
[ $rc = 0 ] || exit $rc
[ "$cgtx" -gt 0 ] && variants="plain off tracked"
case " $variants " in *" plain "*)
    plain=$(sh "$src/build_pg.sh" "$bin" "$src" "$cache" plain | tail -n 1) || rc=$?
    [ $rc = 0 ] || exit $rc ;;
*) plain=$tracked ;; # for initdb only
esac

d=$(mktemp -d /tmp/rh-pgbench.XXXXXX)
chmod 0755 "$d"
cp -a "$tracked" "$d/tracked"
cp -a "$plain" "$d/plain"
ln -s tracked "$d/off"
ln -s tracked "$d/sampled"
mkdir "$d/data" "$d/sock" "$d/prof" "$d/log"
chown nobody:nogroup "$d/data" "$d/sock" "$d/prof" "$d/log"
chmod 0700 "$d/data" "$d/sock"
as_pg() { setpriv --reuid=nobody --regid=nogroup --clear-groups env -i PATH=/usr/bin:/bin HOME="$d" LC_ALL=C "$@"; }
cleanup() {
    for v in plain tracked; do
        [ -f "$d/data/postmaster.pid" ] && as_pg "$d/$v/bin/pg_ctl" -D "$d/data" -m immediate -w stop > /dev/null 2>&1
    done
    rm -rf "$d"
}
trap 'st=$?; set +e; cleanup; exit $st' EXIT
# one cluster for both builds (same version, same catalog)
as_pg "$d/plain/bin/initdb" -D "$d/data" -U pgtest -A trust --no-sync -E UTF8 --locale=C > "$out/initdb.log" 2>&1
cat >> "$d/data/postgresql.conf" <<EOC
listen_addresses = ''
unix_socket_directories = '$d/sock'
max_connections = 10
shared_buffers = 32MB
fsync = off
EOC
start() { # VARIANT ENV...
    v=$1; shift
    as_pg env "$@" "$d/$v/bin/pg_ctl" -D "$d/data" -l "$d/log/server-$v.log" -w start > /dev/null
    pm=$(head -n 1 "$d/data/postmaster.pid")
}
stop() { as_pg "$d/$1/bin/pg_ctl" -D "$d/data" -m fast -w stop > /dev/null; }
# server_cpu: clock ticks used so far by the postmaster and its children
server_cpu() {
    t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat")
    for c in $(ps -o pid= --ppid "$pm"); do
        t=$((t + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}
hz=$(getconf CLK_TCK)
start plain
as_pg "$d/plain/bin/pgbench" -h "$d/sock" -U pgtest -i -s 1 -q postgres > "$out/init.log" 2>&1
stop plain
load0=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "$cgtx" -gt 0 ]; then
    command -v valgrind > /dev/null || { echo "postgres.sh: --callgrind needs valgrind" >&2; exit 1; }
    mkdir "$d/cg" && chown nobody:nogroup "$d/cg"
    for n in "$cgtx" $((3 * cgtx)); do
        awk -v TX="$n" 'BEGIN { srand(7); for (i = 0; i < TX; i++) {
            a = int(rand() * 100000) + 1; t = int(rand() * 10) + 1; x = int(rand() * 10001) - 5000
            print "BEGIN;"
            print "UPDATE pgbench_accounts SET abalance = abalance + " x " WHERE aid = " a ";"
            print "SELECT abalance FROM pgbench_accounts WHERE aid = " a ";"
            print "UPDATE pgbench_tellers SET tbalance = tbalance + " x " WHERE tid = " t ";"
            print "UPDATE pgbench_branches SET bbalance = bbalance + " x " WHERE bid = 1;"
            print "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (" t ", 1, " a ", " x ", CURRENT_TIMESTAMP);"
            print "END;" } }' > "$d/cg/tx$n.sql"
    done
    # the Ir and the region events of a callgrind output: the calls of the
    # region entry points (fn= and cfn= share one name table: "(id) name"
    # the first time, "(id)" after)
    cg_ir() { sed -n 's/^summary: *//p' "$1"; }
    cg_events() {
        awk '/^c?fn=/ { c = ($0 ~ /^cfn=/); s = substr($0, c ? 5 : 4)
                        if (match(s, /^\([0-9]+\) /)) { id = substr(s, 1, RLENGTH - 1); nm[id] = substr(s, RLENGTH + 1); s = nm[id] }
                        else if (s in nm) s = nm[s]
                        if (c) cur = s; next }
             /^calls=/ { if (cur == "rh_region_alloc" || cur == "rh_region_free" || cur == "rh_region_realloc") { split(substr($0, 7), a, " "); n += a[1] } }
             END { print n + 0 }' "$1"
    }
    for v in plain off tracked; do
        for n in "$cgtx" $((3 * cgtx)); do
            rm -rf "$d/cg/data" "$d/prof"/rip-*
            cp -a "$d/data" "$d/cg/data"
            e=""
            [ $v = tracked ] && e="RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR=$d/prof"
            # shellcheck disable=SC2086
            as_pg env $e valgrind --tool=callgrind --callgrind-out-file="$d/cg/$v-$n.out" \
                "$d/$v/bin/postgres" --single -D "$d/cg/data" postgres < "$d/cg/tx$n.sql" \
                > "$out/callgrind-$v-$n.log" 2>&1
        done
    done
    n1=$cgtx n3=$((3 * cgtx))
    plain_tx=$(awk -v a="$(cg_ir "$d/cg/plain-$n3.out")" -v b="$(cg_ir "$d/cg/plain-$n1.out")" -v n="$n1" 'BEGIN { printf "%.0f", (a - b) / (2 * n) }')
    off_tx=$(awk -v a="$(cg_ir "$d/cg/off-$n3.out")" -v b="$(cg_ir "$d/cg/off-$n1.out")" -v n="$n1" 'BEGIN { printf "%.0f", (a - b) / (2 * n) }')
    on_tx=$(awk -v a="$(cg_ir "$d/cg/tracked-$n3.out")" -v b="$(cg_ir "$d/cg/tracked-$n1.out")" -v n="$n1" 'BEGIN { printf "%.0f", (a - b) / (2 * n) }')
    ev_tx=$(awk -v a="$(cg_events "$d/cg/tracked-$n3.out")" -v b="$(cg_events "$d/cg/tracked-$n1.out")" -v n="$n1" 'BEGIN { printf "%.1f", (a - b) / (2 * n) }')
    {
        echo "# PostgreSQL 15: instructions per pgbench-like transaction (callgrind)"
        echo
        echo "postgres --single, $n1 and $n3 tpcb-like transactions, the difference over $((2 * n1)); load average $load0 (callgrind counts are exact whatever the load)."
        echo
        echo "| variant | instructions per transaction |"
        echo "|---|---|"
        echo "| plain | $plain_tx |"
        echo "| off | $off_tx |"
        echo "| tracked | $on_tx |"
        echo
        awk -v a="$on_tx" -v b="$off_tx" -v p="$plain_tx" -v e="$ev_tx" 'BEGIN {
            printf "off / plain: %.3fx; tracked / plain: %.3fx; tracked / off: %.3fx\n", b / p, a / p, a / b
            printf "region events per transaction: %s; instructions tracking adds per region event (all of it over the region events): %.0f\n", e, (a - b) / e }'
    } > "$out/postgres-callgrind.md"
    cat "$out/postgres-callgrind.md"
    exit 0
fi
: > "$out/rounds.txt"
for r in $(seq "$runs"); do
    for v in $variants; do
        rm -f "$d/prof"/rip-*
        case $v in
        tracked) start $v RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d/prof" ;;
        sampled) start $v RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d/prof" RHEAPER_SAMPLE_BYTES=524288 ;;
        *) start $v ;;
        esac
        c0=$(server_cpu)
        as_pg "$d/$v/bin/pgbench" -h "$d/sock" -U pgtest -n -c "$clients" -t "$tx" postgres > "$out/pgbench-$v.log" 2>&1
        sleep 0.2 # the backends' exit (a tracked one writes its trailer)
        c1=$(server_cpu)
        stop $v
        tps=$(grep -o 'tps = [0-9.]*' "$out/pgbench-$v.log" | head -n 1 | cut -d' ' -f3)
        n=$((clients * tx))
        us=$(awk -v c=$((c1 - c0)) -v h="$hz" -v n="$n" 'BEGIN { printf "%.1f", c / h * 1e6 / n }')
        bytes=$(cat "$d/prof"/rip-* 2>/dev/null | wc -c)
        echo "$r $v $us $tps $bytes" | tee -a "$out/rounds.txt"
    done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# min and median per variant
stat() { # VARIANT COLUMN FN(min|med)
    awk -v v="$1" '$2 == v { print $'"$2"' }' "$out/rounds.txt" | sort -n |
        awk -v f="$3" '{ a[NR] = $1 } END { if (f == "min") print a[1]; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
}
case " $variants " in *" plain "*) base=plain ;; *) base=off ;; esac
pmin=$(stat $base 3 min) pmed=$(stat $base 3 med)
{
    echo "# PostgreSQL 15: server CPU per pgbench transaction"
    echo
    echo "pgbench -n -c $clients -t $tx (tpcb-like, scale 1), $runs interleaved rounds; load average $load0 before, $load1 after."
    echo
    echo "| variant | CPU µs/tx min | CPU µs/tx median | tps median |"
    echo "|---|---|---|---|"
    for v in $variants; do
        echo "| $v | $(stat $v 3 min) | $(stat $v 3 med) | $(stat $v 4 med) |"
    done
    echo
    for v in $variants; do
        [ $v = $base ] && continue
        awk -v v=$v -v w=$base -v a="$(stat $v 3 min)" -v b="$pmin" -v c="$(stat $v 3 med)" -v e="$pmed" \
            'BEGIN { printf "%s / %s: %.2fx (min), %.2fx (median)\n", v, w, a / b, c / e }'
    done
    echo
    echo "profile bytes of a tracked round: $(awk '$2 == "tracked" { print $5 }' "$out/rounds.txt" | tail -n 1)"
} > "$out/postgres.md"
cat "$out/postgres.md"
