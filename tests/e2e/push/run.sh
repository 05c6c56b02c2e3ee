#!/bin/sh
# tests/e2e/push/run.sh BIN HELPERS WORK DOC: `rheaper push` and `collect
# --clickhouse` against two real clickhouse-server processes, two shards of a
# cluster with Distributed tables in front (see CMakeLists.txt). DOC is
# docs/fleet.md: its queries and DDL are run as written there. Prints
# "FAIL: ..." and exits 1 on a failure; exits 77 (skipped) when ClickHouse is
# not installed, unless CI=true, where that is a failure.
set -u
BIN=$1 H=$2 WORK=$3 DOC=$4
RH=$BIN/rheaper
CPID=

fail() {
    echo "FAIL: $*" >&2
    for f in "$WORK"/*.out "$WORK"/*.err; do
        [ -s "$f" ] && { echo "--- $f"; tail -20 "$f"; }
    done
    for n in 1 2; do
        [ -s "$WORK/ch$n/log/err.log" ] && { echo "--- ch$n err.log"; tail -5 "$WORK/ch$n/log/err.log"; }
    done
    exit 1 # the EXIT trap stops the servers (a failure inside $(...) only ends that subshell)
}

# The servers and the collector are this script's children: stopped at exit.
. "$(dirname "$0")/clickhouse.sh"
stop_all() {
    [ -n "$CPID" ] && kill "$CPID" 2>/dev/null
    ch_stop_all
}
trap stop_all EXIT
trap 'stop_all; exit 1' INT TERM
ch_need

rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
export LC_ALL=C

# ---- two servers on free loopback ports, two shards of rheaper_fleet -------------------

ch_ports 4
HTTP1=$PORT1 TCP1=$PORT2 HTTP2=$PORT3 TCP2=$PORT4
ch_config "$WORK/ch1" "$HTTP1" "$TCP1" "$TCP1" "$TCP2"
ch_config "$WORK/ch2" "$HTTP2" "$TCP2" "$TCP1" "$TCP2"
ch_start "$WORK/ch1" "$HTTP1"
ch_start "$WORK/ch2" "$HTTP2"
URL1=http://127.0.0.1:$HTTP1/
URL2=http://127.0.0.1:$HTTP2/
# ch N [clickhouse-client options] QUERY: TSV, NULL as empty (as sqlite3 prints it)
ch() {
    n=$1
    shift
    port=$TCP1
    [ "$n" = 2 ] && port=$TCP2
    clickhouse-client --port "$port" "$@" >"$WORK/ch-client.txt" 2>"$WORK/ch-client.err" ||
        fail "clickhouse-client $*: $(cat "$WORK/ch-client.err")"
    sed 's/\\N//g' "$WORK/ch-client.txt"
}
q() { sqlite3 -separator '	' "$1" "$2"; }
# doc NAME: the sql block after <!-- test:NAME --> in docs/fleet.md
doc() {
    awk -v name="<!-- test:$1 -->" '
        $0 == name { found = 1; next }
        found && /^```sql/ { inside = 1; next }
        inside && /^```/ { exit }
        inside { print }' "$DOC"
}
for name in fleet-ddl top-callsites seed-bytes seed-avg seed-spread top-callsites-per-profile long-lived fleet-leaks every-host by-build median; do
    [ -n "$(doc "$name")" ] || fail "docs/fleet.md has no query $name"
done

# ---- three recordings of a program with a planted leak ---------------------------

for h in a b c; do mkdir -p "$h"; done
# a without address randomization, b and c with it: their modules load at
# other addresses, and the stacks must still get the same ids
# (setarch may be refused in a container: then plain ASLR tells them apart)
norand=
setarch "$(uname -m)" -R true 2>/dev/null && norand="setarch $(uname -m) -R"
(cd a && RHEAPER_ENABLE=1 $norand "$H/push_leak" 300 >/dev/null 2>../rec.err) || fail "run a"
(cd b && RHEAPER_ENABLE=1 "$H/push_leak" 200 extra >/dev/null 2>../rec.err) || fail "run b"
(cd c && RHEAPER_ENABLE=1 "$H/push_leak" 300 >/dev/null 2>../rec.err) || fail "run c"
for h in a b c; do
    "$BIN/rheaper-convert" "$h"/rip-* "$h.db" >/dev/null 2>conv.err || fail "convert $h: $(cat conv.err)"
done
RIPB=$(ls b/rip-*)

# push DB-or-RIP URL labels...: pushes, returns the profile id in $PID_
push() {
    src=$1 url=$2
    shift 2
    "$RH" push "$src" --clickhouse "$url" "$@" >push.out 2>push.err || fail "push $src: $(cat push.err)"
    PID_=$(sed -n 's/.* as profile \([0-9]*\).*/\1/p' push.out)
    [ -n "$PID_" ] || fail "push $src printed no profile id: $(cat push.out)"
}
push a.db "$URL1" --label host=host-a --label service=shop --label build=v1
PA=$PID_
push "$RIPB" "$URL2" --label host=host-b --label service=shop --label build=v2 # a rip, converted first
PB=$PID_
push c.db "$URL1" --label host=host-c --label service=shop --label build=v1
PC=$PID_
[ "$PA" != "$PB" ] && [ "$PA" != "$PC" ] || fail "two recordings got one profile id"

# ---- per profile: every table's rows and sums equal the database's -------------------

# check_profile DB SHARD PROFILE
check_profile() {
    db=$1 n=$2 p=$3
    for t in allocations backtraces stacks threads modules meta mmaps mallopts stack_stats cpu_samples; do
        want=$(q "$db" "select count(*) from $t" 2>/dev/null) || continue
        got=$(ch "$n" -q "SELECT count() FROM rheaper.$t WHERE profile = $p")
        [ "$got" = "$want" ] || fail "$db: $t has $got rows in ClickHouse, $want in SQLite"
    done
    want=$(q "$db" "select count(*), sum(size), sum(dealloc_after is null),
        sum(case when dealloc_after is null then size else 0 end), sum(alloc_after),
        sum(coalesce(dealloc_after, 0)), sum(temporary), count(distinct bt), sum(alloc_thread)
        from allocations")
    got=$(ch "$n" -q "SELECT count(), sum(size), sum(dealloc_after IS NULL),
        sum(if(dealloc_after IS NULL, size, 0)), sum(alloc_after), sum(ifNull(dealloc_after, 0)),
        sum(temporary), uniqExact(bt), sum(alloc_thread) FROM rheaper.allocations WHERE profile = $p")
    [ "$got" = "$want" ] || fail "$db: allocations sums: ClickHouse '$got', SQLite '$want'"
    want=$(q "$db" "select kind, count(*), sum(size) from allocations group by kind order by kind")
    got=$(ch "$n" -q "SELECT kind, count(), sum(size) FROM rheaper.allocations WHERE profile = $p GROUP BY kind ORDER BY kind")
    [ "$got" = "$want" ] || fail "$db: kinds: ClickHouse '$got', SQLite '$want'"
    want=$(q "$db" "select frame_no, file, line, sym, module, address, inlined from backtraces" | sort)
    got=$(ch "$n" -q "SELECT frame_no, file, line, sym, module, address, inlined FROM rheaper.backtraces WHERE profile = $p" | sort)
    [ "$got" = "$want" ] || fail "$db: backtraces' frames differ"
    want=$(q "$db" "select count(*) from allocations where dealloc_after is null and bt in (select b.id from backtraces b where b.sym = 'remember_session')")
    [ "$want" -gt 0 ] || fail "$db: no remember_session leak in the profile"
}
check_profile a.db 1 "$PA"
check_profile b.db 2 "$PB"
check_profile c.db 1 "$PC"
echo "ok: per profile, every table's rows and sums equal the SQLite database's"

# ---- the Distributed tables, as docs/fleet.md creates them ---------------------------

ch 1 -q "CREATE DATABASE IF NOT EXISTS fleet"
doc fleet-ddl | ch 1 -d fleet -mn
for v in callsites leaks sites profile_labels; do
    pushed=$(ch 1 -q "SHOW CREATE TABLE rheaper.$v" | sed 's/rheaper\./DB./g')
    documented=$(ch 1 -q "SHOW CREATE TABLE fleet.$v" | sed 's/fleet\./DB./g')
    [ "$pushed" = "$documented" ] || fail "view $v: push creates '$pushed', docs/fleet.md '$documented'"
done
got=$(ch 1 -d fleet -q "SELECT count() FROM profiles")
[ "$got" = 3 ] || fail "fleet.profiles has $got rows, not 3"

# stable stack ids: the leak's stack has one id on all three hosts
got=$(ch 1 -d fleet -q "SELECT uniqExact(id), uniqExact(profile) FROM backtraces WHERE frame_no = 0 AND sym = 'remember_session'")
[ "$got" = "1	3" ] || fail "remember_session's stack: '$got' (ids, profiles), wanted one id in 3 profiles"
b1=$(q a.db "select min(base) from modules where path like '%push_leak'")
b2=$(q b.db "select min(base) from modules where path like '%push_leak'")
[ -n "$b1" ] || fail "no module push_leak in a.db"
if [ "$b1" = "$b2" ]; then
    [ "$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null)" = 0 ] ||
        fail "push_leak loaded at the same address in runs a and b ($b1)"
    echo "note: address randomization is off here: the ids were not compared across load addresses"
fi
echo "ok: one stack id for the leak on three hosts (push_leak loaded at $b1 and $b2)"

# ---- the documented questions ------------------------------------------------------------

# the seed's top call sites, on a shard holding one profile (B), as SQLite says
got=$(doc top-callsites | ch 2 -d rheaper -mn)
want=$(q b.db "$(doc top-callsites)")
[ -n "$want" ] && [ "$got" = "$want" ] || fail "top call sites on shard 2: '$got', SQLite '$want'"
# the seed's other queries on shard 2: the same figures (bt is the stable id there)
got=$(doc seed-bytes | ch 2 -d rheaper -mn | cut -f2)
want=$(q b.db "select sum(size) from allocations group by bt order by 1 desc limit 10")
[ -n "$want" ] && [ "$got" = "$want" ] || fail "seed-bytes: '$got', SQLite '$want'"
num() { awk -F'\t' -v OFS='\t' '{ for (i = 1; i <= NF; i++) $i = sprintf("%.6g", $i); print }'; }
got=$(doc seed-avg | ch 2 -d rheaper -mn | num)
want=$(q b.db "$(doc seed-avg)" | num)
[ "$got" = "$want" ] && [ "$(echo "$got" | cut -f2)" = 640 ] || fail "seed-avg: '$got', SQLite '$want'"
got=$(doc seed-spread | ch 2 -d rheaper -mn | cut -f2,3)
want=$(q b.db "$(doc seed-spread)" | cut -f2,3)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "seed-spread: '$got', SQLite '$want'"
id=$(ch 2 -q "SELECT id FROM rheaper.backtraces WHERE frame_no = 0 AND sym = 'remember_session'")
lid=$(q b.db "select id from backtraces where frame_no = 0 and sym = 'remember_session'")
got=$(ch 2 -d rheaper -q "SELECT frame_no, sym, file, line, inlined FROM backtraces WHERE id = $id ORDER BY frame_no")
want=$(q b.db "SELECT frame_no, sym, file, line, inlined FROM backtraces WHERE id = $lid ORDER BY frame_no")
[ -n "$want" ] && [ "$got" = "$want" ] || fail "the leak's stack: '$got', SQLite '$want'"
got=$(doc top-callsites-per-profile | ch 1 -d fleet -mn | grep -c "^$PB	")
[ "$got" = "$(q b.db "select count(*) from (select 1 from callsites limit 10)")" ] ||
    fail "top call sites per profile: $got rows of B"

# long-lived: per profile, the blocks and bytes of each stack as SQLite counts them
got=$(doc long-lived | ch 1 -d fleet -mn | cut -f1,3,4 | sort)
want=$(for x in "a $PA" "b $PB" "c $PC"; do
    set -- $x
    q "$1.db" "select '$2', count(*), sum(a.size) from allocations a,
        (select value as end_ns from meta where key = 'duration_ns')
        where coalesce(a.dealloc_after, end_ns) - a.alloc_after > end_ns / 2 group by a.bt"
done | sort)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "long-lived: '$got', SQLite '$want'"

# leaks per call site (stacks.callsite's frame) in each database: sym file line bytes blocks
sites() {
    q "$1" "select b.sym, b.file, b.line, sum(a.size), count(*) from allocations a
        join stacks s on s.id = a.bt join backtraces b on b.id = a.bt and b.frame_no = s.callsite
        where a.dealloc_after is null group by b.sym, b.file, b.line"
}
for h in a b c; do sites "$h.db" >"sites.$h"; done
# the union: leaked bytes, blocks and profiles per site, ordered as the query orders
cat sites.a sites.b sites.c | awk -F'\t' -v OFS='\t' '
    { k = $1 FS $2 FS $3; by[k] += $4; bl[k] += $5; np[k]++ }
    END { for (k in by) print k, by[k], bl[k], np[k] }' |
    sort -t '	' -k4,4nr -k1,1 -k2,2 -k3,3n | head -20 >union.txt
doc fleet-leaks | ch 1 -d fleet -mn >fleet.txt
[ -s union.txt ] && cmp -s fleet.txt union.txt ||
    fail "the fleet's top call sites by leaked bytes differ from the union of the databases: $(diff union.txt fleet.txt)"
[ "$(head -1 fleet.txt | cut -f1)" = remember_session ] || fail "the planted leak is not first: $(head -1 fleet.txt)"
echo "ok: the fleet's top call sites by leaked bytes (Distributed) equal the union of the three databases, the leak first"

# every host of the service: the sites in all three databases
got=$(doc every-host | ch 1 -d fleet -mn)
want=$(awk -F'\t' -v OFS='\t' '$6 == 3 { print $1, $2, $3, 3, $4 }' union.txt | sort -t '	' -k5,5nr -k1,1)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "every-host: '$got', wanted '$want'"
echo "$got" | grep -q '^audit_trail' && fail "every-host lists audit_trail, a leak of host-b only"

# a site's bytes by build: v1 is a and c, v2 is b
sb() { q "$1" "select coalesce(sum(a.size), 0) from allocations a join stacks s on s.id = a.bt join backtraces b on b.id = a.bt and b.frame_no = s.callsite where b.sym = 'remember_session' $2"; }
want=$(printf 'v1\t2\t%s\t%s\nv2\t1\t%s\t%s' \
    $(( $(sb a.db '') + $(sb c.db '') )) $(( $(sb a.db 'and a.dealloc_after is null') + $(sb c.db 'and a.dealloc_after is null') )) \
    "$(sb b.db '')" "$(sb b.db 'and a.dealloc_after is null')")
got=$(doc by-build | ch 1 -d fleet -mn)
[ "$got" = "$want" ] || fail "by-build: '$got', wanted '$want'"

# hosts off the median: leaked bytes per database, the median of three
la=$(q a.db "select sum(size) from allocations where dealloc_after is null")
lb=$(q b.db "select sum(size) from allocations where dealloc_after is null")
lc=$(q c.db "select sum(size) from allocations where dealloc_after is null")
med=$(printf '%s\n' "$la" "$lb" "$lc" | sort -n | sed -n 2p)
want=$(printf 'host-a %s\nhost-b %s\nhost-c %s\n' "$la" "$lb" "$lc" | awk -v m="$med" -v OFS='\t' '
    { r = $2 / m; if (r - 1 > 0.2 || 1 - r > 0.2) printf "%s\t%s\t%s\t%.2f\n", $1, $2, m, r }' | sort -t '	' -k4,4nr)
got=$(doc median | ch 1 -d fleet -mn | awk -F'\t' -v OFS='\t' '{ $4 = sprintf("%.2f", $4); print }')
[ -n "$want" ] && [ "$got" = "$want" ] || fail "median: '$got', wanted '$want'"
echo "$got" | grep -q '^host-b' || fail "median: host-b (another build, another leak) is not listed"
echo "ok: each question of docs/fleet.md answers what the databases say"

# ---- once, and all or nothing ---------------------------------------------------------------

totals() {
    for t in allocations backtraces stacks threads modules meta profiles; do
        printf '%s ' "$(ch 1 -q "SELECT count(), uniqExact(_part) FROM rheaper.$t" | tr '\t' /)"
    done
}
before=$(totals)
"$RH" push a.db --clickhouse "$URL1" --label host=host-a >push.out 2>push.err || fail "second push: $(cat push.err)"
grep -q "already in .* as profile $PA; nothing sent" push.out || fail "second push: $(cat push.out)"
[ "$(totals)" = "$before" ] || fail "a second push changed the tables: $before -> $(totals)"
# an interrupted push (data moved, no profiles row): pushing again completes it, adding nothing
ch 1 -q "ALTER TABLE rheaper.profiles DROP PARTITION $PA"
push a.db "$URL1" --label host=host-a --label service=shop --label build=v1
[ "$PID_" = "$PA" ] || fail "the profile id changed: $PA -> $PID_"
after=$(totals | sed 's#/[0-9]*##g')
[ "$after" = "$(echo "$before" | sed 's#/[0-9]*##g')" ] || fail "pushing an interrupted profile again: $before -> $after"
[ -z "$(ch 1 -q "SELECT name FROM system.tables WHERE name LIKE 'rheaper_stage%'")" ] || fail "staging tables left"
echo "ok: a second push changes nothing; one after an interrupted push leaves the same rows"

# a push that fails (a column rheaper cannot write) leaves no rows and no staging table
ch 1 -q "CREATE DATABASE broken"
ch 1 -q "CREATE TABLE broken.threads (profile UInt64, id Int64, tid Nullable(Int64), name Array(String)) ENGINE = MergeTree PARTITION BY profile ORDER BY (profile, id)"
"$RH" push a.db --clickhouse "$URL1" --database broken >push.out 2>push.err && fail "a push into a broken schema succeeded"
[ "$(wc -l <push.err)" = 1 ] && grep -q 'threads.name has type Array(String)' push.err || fail "broken push: $(cat push.err)"
[ "$(ch 1 -q "SELECT count() FROM broken.allocations")$(ch 1 -q "SELECT count() FROM broken.profiles")" = 00 ] ||
    fail "a failed push left rows"
[ -z "$(ch 1 -q "SELECT name FROM system.tables WHERE database = 'broken' AND name LIKE 'rheaper_stage%'")" ] ||
    fail "a failed push left staging tables"
# ClickHouse's own error: one line with its message
ch 1 -q "CREATE DATABASE broken2"
ch 1 -q "CREATE TABLE broken2.profiles (profile UInt64, host String) ENGINE = MergeTree PARTITION BY profile ORDER BY profile"
"$RH" push a.db --clickhouse "$URL1" --database broken2 >push.out 2>push.err && fail "a push into broken2 succeeded"
[ "$(wc -l <push.err)" = 1 ] && grep -q 'ClickHouse says Code [0-9]*: .*labels' push.err ||
    fail "ClickHouse's error is not one line with its message: $(cat push.err)"
[ "$(ch 1 -q "SELECT count() FROM broken2.allocations")" = 0 ] || fail "a failed push left rows in broken2"
echo "ok: a failed push leaves nothing; ClickHouse's error is one line: $(cat push.err)"

# ---- the memory samples, and a table this code does not know, pushed as they are -----------

cp c.db m.db
[ "$(q m.db "select count(*) from memory")" -ge 1 ] || fail "c.db has no memory samples"
q m.db "CREATE TABLE extra(id INTEGER PRIMARY KEY, time INTEGER, thread INTEGER, rss INTEGER,
    heap INTEGER, final INTEGER, note TEXT, ratio REAL);
    INSERT INTO extra VALUES(1, 1000, 1, 4096000, 1000, 0, 'start', 0.5),
        (2, 2000, 1, 8192000, NULL, 0, NULL, 0.25), (3, 3000, 2, 12288000, 3000, 1, 'end', NULL);"
push m.db "$URL2" --database mem --label host=host-c
got=$(ch 2 -q "SELECT id, time, rss, rss_anon, heap, final FROM mem.memory WHERE profile = $PID_ ORDER BY id")
want=$(q m.db "select id, time, rss, rss_anon, heap, final from memory order by id")
[ "$got" = "$want" ] || fail "memory samples: ClickHouse '$got', SQLite '$want'"
got=$(ch 2 -q "SELECT id, time, thread, rss, heap, final, note, ratio FROM mem.extra WHERE profile = $PID_ ORDER BY id")
want=$(q m.db "select id, time, thread, rss, heap, final, note, ratio from extra order by id")
[ "$got" = "$want" ] || fail "a table unknown to push: ClickHouse '$got', SQLite '$want'"
got=$(ch 2 -q "SELECT type FROM system.columns WHERE database = 'mem' AND table = 'extra' AND name IN ('rss', 'note', 'ratio') ORDER BY name" | tr '\n' ' ')
[ "$got" = "Nullable(String) Nullable(Float64) Nullable(Int64) " ] || fail "extra's column types: $got"
echo "ok: the memory samples ($(q m.db "select count(*) from memory") rows) and a table unknown to push arrive row for row"

# ---- credentials ---------------------------------------------------------------------------------

RHEAPER_CLICKHOUSE_USER=pusher RHEAPER_CLICKHOUSE_PASSWORD='s3cret words' \
    "$RH" push c.db --clickhouse "$URL2" --database cred --label host=host-c >push.out 2>push.err ||
    fail "push with the password from the environment: $(cat push.err)"
printf 's3cret words\n' >pw
RHEAPER_CLICKHOUSE_USER=pusher RHEAPER_CLICKHOUSE_PASSWORD_FILE=$WORK/pw \
    "$RH" push c.db --clickhouse "$URL2" --database cred >push.out 2>push.err ||
    fail "push with the password from a file: $(cat push.err)"
grep -q 'already in' push.out || fail "password file: $(cat push.out)"
RHEAPER_CLICKHOUSE_USER=pusher RHEAPER_CLICKHOUSE_PASSWORD=wrong \
    "$RH" push c.db --clickhouse "$URL2" --database cred >push.out 2>push.err && fail "a wrong password was accepted"
[ "$(wc -l <push.err)" = 1 ] && grep -q 'ClickHouse says Code [0-9]*: .*pusher' push.err || fail "wrong password: $(cat push.err)"
"$RH" push c.db --clickhouse "http://pusher:x@127.0.0.1:$HTTP2/" >push.out 2>push.err && fail "a URL with a password was accepted"
grep -q 'credentials do not belong on the command line' push.err || fail "URL with a password: $(cat push.err)"
other=$(hostname -I 2>/dev/null | awk '{print $1}')
case $other in 127.*|'') other=192.0.2.1 ;; esac
"$RH" push c.db --clickhouse "http://$other:1/" >push.out 2>push.err && fail "a push to $other:1 succeeded"
grep -q "warning: .*plain http:// to $other.*unencrypted" push.err || fail "no warning for http:// to $other: $(cat push.err)"
echo "ok: credentials from the environment and a file; wrong ones are one line; http:// to $other warns"

# ---- collect --clickhouse ---------------------------------------------------------------------------

mkdir -p col
"$RH" collect --listen 127.0.0.1:0 --dir col --clickhouse "$URL2" --database col --label service=shop >col.out 2>col.err &
CPID=$!
i=0
until grep -q 'listening on' col.out 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "collect did not start"; sleep 0.1
done
PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' col.out)
for r in 40 60; do
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT "$H/push_leak" $r >/dev/null 2>stream.err || fail "streamed run"
done
i=0
# polled without ch's fail: a query of system.tables can meet a staging table
# that collect is dropping at that moment and fail, and the table may not be
# there yet
until [ "$(clickhouse-client --port "$TCP2" -q "EXISTS TABLE col.profiles" 2>/dev/null)" = 1 ] &&
    [ "$(clickhouse-client --port "$TCP2" -q "SELECT count() FROM col.profiles" 2>/dev/null)" = 2 ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "collect did not push two profiles in 30 s"; sleep 0.1
done
kill -TERM "$CPID"
wait "$CPID" || fail "collect exited $?"
CPID=
got=$(ch 2 -q "SELECT allocations FROM col.profiles ORDER BY allocations" | tr '\n' ' ')
want=$(for f in col/rip-*; do
    "$BIN/rheaper-convert" "$f" "$f.db" >/dev/null 2>&1 || fail "convert $f"
    q "$f.db" "select count(*) from allocations"
done | sort -n | tr '\n' ' ')
[ "$got" = "$want" ] || fail "collect pushed $got allocations, the rips hold $want"
got=$(ch 2 -q "SELECT DISTINCT host, arrayStringConcat(labels.value, ',') FROM col.profiles")
[ "$got" = "127.0.0.1	shop" ] || fail "collected profiles' host and labels: '$got' (wanted the sender's address)"
got=$(ch 2 -q "SELECT count() FROM col.allocations")
[ "$got" = "$(echo "$want" | awk '{print $1 + $2}')" ] || fail "col.allocations has $got rows"
echo "ok: collect --clickhouse pushed each streamed profile ($want allocations)"

stop_all
echo "push: all checks passed"
