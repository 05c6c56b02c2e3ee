#!/bin/sh
# postgres.sh: Debian's PostgreSQL 15, built with rheaper-cc and the shipped
# share/rheaper/allocators/postgresql.alloc (no patch to its allocator), run
# as its users run it: initdb and `pg_ctl start` as an unprivileged user
# (nobody), a unix socket in a private directory, pgbench.
#
#   postgres.sh BIN_DIR SRC_DIR WORK_DIR
#
# build_pg.sh builds it once per build tree. postgres-leak.patch plants, in
# postgres.c's exec_simple_query, a MemoryContextAlloc(TopMemoryContext, 40)
# every 50th query of a backend (planted_leak) and a 56-byte palloc in the
# per-query MessageContext at every query (planted_scratch), which the
# context's reset at the next query frees. The server logs every statement
# with its pid, so the test knows each backend's queries.
#
# Whole-life run (RHEAPER_ENABLE=1 given to pg_ctl): pgbench -i, then
# pgbench -c 2 -t RH_PG_TX (tpcb-like: 7 queries a transaction), then
# psql with a CREATE INDEX, then `pg_ctl stop`. Checks, in each of pgbench's
# two backends:
#   - the profile converts clean, 0 unknown frees;
#   - `rheaper leaks` ranks planted_leak first, with exactly queries / 50
#     blocks (queries counted in the server log);
#   - planted_scratch has one chunk per query, of the region MessageContext,
#     and none is leaked (the reset ended them all);
#   - the top five call sites are PostgreSQL code outside the allocator's
#     files (aset.c, mcxt.c, generation.c, slab.c), in files of its source
#     tree, and none of them is one of the allocator's functions;
#   - `top --by region` lists MessageContext and CacheMemoryContext;
# in psql's backend that runs CREATE INDEX: the chunks of tuplesort's
# Generation context end with its parent's delete, 0 unknown frees;
# `rheaper live` on a running backend shows its title (postgres: pgtest
# postgres [local] SELECT); and over the profile directory: `rheaper list`
# shows no damaged row, the postmaster and pg_ctl's child (which exec'd it)
# under one pid, and the backends' titles. Must run as root (to become nobody); under CI a missing
# tool or source fails the test.
set -eu
bin=$1 src=$2 work=$3
TX=${RH_PG_TX:-300}
CASE= RH_DUMP=
. "$src/../../lib/check.sh" # fail, ok, eq
skip() {
    [ -n "${CI:-}" ] && fail "$* (CI must run it)"
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root (the server runs as nobody)"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
mkdir -p "$work"
cd "$work"
rm -f ./*.db ./*.csv ./*.out

rc=0
inst=$(sh "$src/build_pg.sh" "$bin" "$src" "$work/../postgres-build" | tail -n 1) || rc=$?
[ $rc = 77 ] && skip "cannot fetch the PostgreSQL source"
[ $rc = 0 ] && [ -x "$inst/bin/postgres" ] || fail "building PostgreSQL"

# a private directory: the installation (relocatable), the cluster, the
# socket and the profiles, the last three nobody's
d=$(mktemp -d /tmp/rh-pg.XXXXXX)
cleanup() {
    if [ -f "$d/data/postmaster.pid" ]; then
        as_pg "$d/inst/bin/pg_ctl" -D "$d/data" -m immediate -w stop > /dev/null 2>&1 || true
    fi
    rm -rf "$d"
}
trap 'st=$?; set +e; cleanup; exit $st' EXIT
chmod 0755 "$d"
cp -a "$inst" "$d/inst"
mkdir "$d/data" "$d/sock" "$d/prof" "$d/log"
chown nobody:nogroup "$d/data" "$d/sock" "$d/prof" "$d/log"
chmod 0700 "$d/data" "$d/sock"
chmod 0755 "$d/prof"
as_pg() { setpriv --reuid=nobody --regid=nogroup --clear-groups env -i PATH="$d/inst/bin:/usr/bin:/bin" \
              HOME="$d" LC_ALL=C "$@"; }
pgb() { as_pg "$d/inst/bin/pgbench" -h "$d/sock" -U pgtest "$@"; }

as_pg "$d/inst/bin/initdb" -D "$d/data" -U pgtest -A trust --no-sync -E UTF8 --locale=C \
    > initdb.out 2>&1 || { cat initdb.out; fail "initdb"; }
cat >> "$d/data/postgresql.conf" <<EOC
listen_addresses = ''
unix_socket_directories = '$d/sock'
max_connections = 10
shared_buffers = 16MB
fsync = off
log_statement = 'all'
log_line_prefix = '%p '
EOC
t0=$(date +%s)
as_pg env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d/prof" "$d/inst/bin/pg_ctl" -D "$d/data" \
    -l "$d/log/server.log" -w start > start.out 2>&1 || { cat start.out "$d/log/server.log"; fail "pg_ctl start"; }
pm=$(head -n 1 "$d/data/postmaster.pid")
pgb -i -s 1 -q postgres > init.out 2>&1 || { cat init.out; fail "pgbench -i"; }
pgb -n -c 2 -t "$TX" postgres > bench.out 2>&1 || { cat bench.out; fail "pgbench"; }
# `rheaper live` on a running backend shows its title, as ps does
as_pg "$d/inst/bin/psql" -h "$d/sock" -U pgtest -q -c 'SELECT pg_sleep(4)' postgres > sleep.out 2>&1 &
spid=$!
bk=
for _ in $(seq 60); do
    bk=$(ps -o pid=,args= --ppid "$pm" | awk '/postgres: pgtest postgres \[local\] SELECT/ { print $1; exit }')
    [ -n "$bk" ] && break
    sleep 0.1
done
[ -n "$bk" ] || fail "no backend running the SELECT"
RHEAPER_PROFILE_DIR="$d/prof" "$bin/rheaper" live --once "$bk" > live.out 2> live.err || true
head -n 1 live.out | grep -q "postgres: pgtest postgres \[local\] SELECT" ||
    { cat live.out live.err; fail "live does not show backend $bk's title"; }
ok "rheaper live on backend $bk: $(head -n 1 live.out | sed 's/  */ /g')"
wait "$spid" || { cat sleep.out; fail "psql pg_sleep"; }
as_pg "$d/inst/bin/psql" -h "$d/sock" -U pgtest -q -v ON_ERROR_STOP=1 \
    -c 'CREATE TABLE t AS SELECT (i * 7919) % 5000 AS i FROM generate_series(1, 5000) i' \
    -c 'CREATE INDEX t_i ON t (i)' postgres > psql.out 2>&1 || { cat psql.out; fail "psql"; }
as_pg "$d/inst/bin/pg_ctl" -D "$d/data" -m fast -w stop > stop.out 2>&1 || { cat stop.out; fail "pg_ctl stop"; }
echo "ok: initdb, pg_ctl start, pgbench -c 2 -t $TX ($(grep -o 'tps = [0-9.]*' bench.out | head -n 1)), stop in $(($(date +%s) - t0)) s"
cp "$d/log/server.log" server.log
grep -i rheaper server.log && fail "rheaper lines in the server log"
ok "the server log holds no rheaper line"

"$bin/rheaper" list "$d/prof" > list.out || fail "rheaper list"
cat list.out
grep -q damaged list.out && fail "rheaper list shows a damaged profile"
ok "no damaged row"
# pg_ctl's child runs /bin/sh -c 'exec postgres ...': its profile ends in the
# exec, and the postmaster's (the same pid) follows it
awk -v p="$pm" 'NR > 1 && $1 == p' list.out > pm.rows
[ "$(wc -l < pm.rows)" = 2 ] || fail "list shows $(wc -l < pm.rows) rows of the postmaster's pid $pm, expected 2"
first=$(sed -n 1p pm.rows) second=$(sed -n 2p pm.rows)
case "$first" in *" pg_ctl "*"exec'd"*) ;; *) fail "the first row of pid $pm is not pg_ctl's, exec'd: $first" ;; esac
case "$second" in *" postgres "*complete*"rip-$pm.1 "*) ;; *) fail "the second row of pid $pm is not the postmaster's, complete: $second" ;; esac
[ "$(grep -c "^ *$pm " list.out)" = 2 ] && grep -A1 "^ *$pm .*exec'd" list.out | tail -n 1 | grep -q "rip-$pm.1 " ||
    fail "the postmaster's row does not follow pg_ctl's exec'd row"
ok "pg_ctl's child (pid $pm) is listed exec'd, right before the postmaster of that pid"

# pgbench's backends: the pids with the most statements in the log
awk '$2 == "LOG:" && $3 == "statement:" { n[$1]++ } END { for (p in n) print n[p], p }' server.log |
    sort -rn > queries.txt
nb=0
for pid in $(head -n 2 queries.txt | awk '{ print $2 }'); do
    q=$(awk -v p="$pid" '$2 == p { print $1 }' queries.txt)
    want=$((q / 50))
    grep -q "^ *$pid .*postgres: pgtest postgres \[local\]" list.out || fail "list shows no title for backend $pid"
    rip=$(awk -v p="$pid" 'NR > 1 && $1 == p { print $(NF - 4) }' list.out)
    rip=$(awk -v p="$pid" 'NR > 1 && $1 == p { for (i = 1; i <= NF; i++) if ($i ~ /\/rip-/) print $i }' list.out)
    "$bin/rheaper-convert" --quiet "$rip" "$pid.db" > conv.log 2>&1 || { cat conv.log; fail "convert $rip"; }
    meta() { sqlite3 "$pid.db" "SELECT value FROM meta WHERE key = '$1'"; }
    [ "$(meta clean)" = 1 ] && [ "$(meta events_lost)" = 0 ] || fail "backend $pid: not clean"
    unk=$(meta unknown_frees)
    eq "backend $pid: unknown frees" "$unk" 0
    "$bin/rheaper" leaks --csv "$pid.db" > "leaks-$pid.csv" 2> /dev/null || fail "rheaper leaks $pid"
    # columns by name
    col() { head -n 1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
    fc=$(col "leaks-$pid.csv" function) bc=$(col "leaks-$pid.csv" leaked_blocks)
    top=$(sed -n 2p "leaks-$pid.csv")
    fn=$(echo "$top" | cut -d, -f"$fc") blocks=$(echo "$top" | cut -d, -f"$bc")
    [ "$fn" = planted_leak ] || { head -5 "leaks-$pid.csv"; fail "backend $pid: leaks ranks $fn first"; }
    [ "$blocks" = "$want" ] || fail "backend $pid: $blocks planted leaks, expected $q queries / 50 = $want"
    # the scratch chunk: one per query, in MessageContext, none leaked
    sc="SELECT count(*), sum(a.dealloc_after IS NULL) FROM allocations a
        JOIN region_blocks rb ON rb.id = a.id JOIN regions r ON r.id = rb.region
        WHERE r.name = 'MessageContext' AND a.bt IN
          (SELECT s.id FROM stacks s JOIN backtraces b ON b.id = s.id AND b.frame_no = s.callsite
           WHERE b.sym = 'planted_scratch')"
    got=$(sqlite3 "$pid.db" "$sc")
    eq "backend $pid: planted_scratch chunks in MessageContext, leaked" "$got" "$q|0"
    # the top five: PostgreSQL's code, not its allocator
    "$bin/rheaper" top -n 5 --stacks --csv "$pid.db" > "top-$pid.csv" 2> /dev/null || fail "rheaper top $pid"
    "$bin/rheaper" top -n 5 --csv "$pid.db" > "top5-$pid.csv" 2> /dev/null
    n=$(awk 'NR > 1' "top5-$pid.csv" | wc -l)
    [ "$n" = 5 ] || fail "backend $pid: top has $n rows"
    lc=$(col "top5-$pid.csv" location)
    if awk -F, -v l="$lc" 'NR > 1 { print $l }' "top5-$pid.csv" | grep -Eq '^(aset|mcxt|generation|slab)\.c:'; then
        cat "top5-$pid.csv"; fail "backend $pid: an allocator file in the top five"
    fi
    if awk -F, 'NR > 1 { print $1 }' "top5-$pid.csv" |
        grep -Eqx '(palloc0?|palloc_extended|MemoryContextAlloc.*|AllocSet.*|Generation.*|Slab.*|pstrdup|pnstrdup|repalloc.*)'; then
        cat "top5-$pid.csv"; fail "backend $pid: an allocator function in the top five"
    fi
    # every site is a frame of PostgreSQL's source (a file of its tree)
    for loc in $(awk -F, -v l="$lc" 'NR > 1 { sub(/:[0-9]+$/, "", $l); print $l }' "top5-$pid.csv"); do
        find "$inst/../tree/src" -name "$loc" | grep -q . || fail "backend $pid: top-five site $loc is not PostgreSQL's"
    done
    "$bin/rheaper" top --by region -n 1000 --csv "$pid.db" > "regions-$pid.csv" 2> /dev/null ||
        fail "rheaper top --by region $pid"
    for r in MessageContext CacheMemoryContext; do
        grep -q "^\"\{0,1\}$r\"\{0,1\}," "regions-$pid.csv" || { cat "regions-$pid.csv"; fail "backend $pid: --by region lacks $r"; }
    done
    rows=$(sqlite3 "$pid.db" "SELECT count(*) FROM allocations")
    chunks=$(sqlite3 "$pid.db" "SELECT count(*) FROM region_blocks")
    echo "ok: backend $pid: $q queries, planted_leak first with $blocks = $q / 50, $q scratch chunks" \
         "all freed by MessageContext's reset, 0 unknown frees, $rows rows ($chunks region chunks)"
    echo "    top five: $(awk -F, 'NR > 1 { printf "%s%s %s", s, $1, $2; s = "; " }' "top5-$pid.csv")"
    nb=$((nb + 1))
done
[ "$nb" = 2 ] || fail "checked $nb backends"

# psql's backend builds an index: tuplesort keeps the tuples in a Generation
# context ("Caller tuples") under its sort context, and deletes the parent
# with its children at the end of the sort
ipid=$(awk '$2 == "LOG:" && / statement: CREATE INDEX t_i ON t/ { print $1; exit }' server.log)
[ -n "$ipid" ] || fail "no CREATE INDEX backend in the log"
rip=$(awk -v p="$ipid" 'NR > 1 && $1 == p { for (i = 1; i <= NF; i++) if ($i ~ /\/rip-/) print $i }' list.out)
"$bin/rheaper-convert" --quiet "$rip" index.db > conv.log 2>&1 || { cat conv.log; fail "convert $rip"; }
eq "CREATE INDEX backend $ipid: unknown frees" "$(sqlite3 index.db "SELECT value FROM meta WHERE key = 'unknown_frees'")" 0
gen=$(sqlite3 index.db "SELECT count(*), sum(a.dealloc_after IS NULL) FROM allocations a
    JOIN region_blocks rb ON rb.id = a.id JOIN regions r ON r.id = rb.region
    WHERE r.name = 'Caller tuples'")
n=${gen%%|*}
[ "$n" -gt 0 ] || fail "CREATE INDEX backend $ipid: no chunk of a Generation context (Caller tuples)"
eq "CREATE INDEX backend $ipid: Caller tuples chunks leaked" "${gen#*|}" 0
par=$(sqlite3 index.db "SELECT count(*) FROM regions c JOIN regions p ON p.id = c.parent
    WHERE c.name = 'Caller tuples' AND p.name = 'TupleSort sort'")
[ "$par" -gt 0 ] || fail "CREATE INDEX backend $ipid: Caller tuples is under no TupleSort sort context"
echo "ok: CREATE INDEX backend $ipid: $n chunks of the Generation context Caller tuples (under TupleSort sort)," \
     "all ended with their parent's delete; 0 unknown frees"
echo PASS
