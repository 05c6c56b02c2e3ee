#!/bin/sh
# memcached.sh: Debian's memcached 1.6, built with rheaper-cc, run the way its
# users run it (docs/servers.md): as root with `-d -u nobody`, which switches
# to nobody first and then forks its daemon, four worker threads, a small
# cache (-m 8) filled until it evicts. mc_load.c (built with the system
# compiler) is the client: ASCII get/set on persistent connections.
#
#   memcached.sh BIN_DIR SRC_DIR WORK_DIR
#
# 1. The recipe for a daemon that drops privileges before it forks
#    (RHEAPER_ENABLE=1, the profile directory given to nobody): the start-up
#    process's and the daemon's profiles are complete, nobody's, mode 0600;
#    the daemon's names its parent, has 0 unknown frees, and holds what
#    memcached is known to allocate: 8 slab pages of 1 MiB (-m 8), one hash
#    table of 65 536 pointers (hashpower 16), one connection structure per
#    socket number it served on. In a root-owned 0755
#    directory the daemon cannot create its profile and says so in its log.
# 2. Armed (RHEAPER_ENABLE=signal), the cache full (evictions), a get/set load
#    that only reuses slabs and never allocates: `rheaper record -p DAEMON -d
#    2s` starts within 1 s of the request (the runtime's helper thread takes
#    the toggle: no allocation comes) and lasts 2 to 3 s; the rows are the
#    window's own: `cache_memlimit 10` inside it lets the sets take exactly
#    two more 1 MiB slab pages, and the load itself allocates nothing;
#    two toggles sent together cancel each other and leave no recording.
# Must run as root; under CI a missing tool or source fails the test.
set -eu
bin=$1 src=$2 work=$3
CASE= RH_DUMP=
. "$src/../../lib/check.sh" # fail, ok, eq
skip() {
    [ -n "${CI:-}" ] && fail "$* (CI must run it)"
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root (memcached -u nobody)"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
command -v cc >/dev/null || skip "no system C compiler for the client"
[ -f /usr/include/event2/event.h ] || skip "libevent-dev is not installed"

mkdir -p "$work"
cd "$work"
rm -rf tree ./*.db ./*.out ./*.err
rc=0
sh "$src/../../e2e/programs/fetch_source.sh" memcached "$work/../memcached-src" || rc=$?
[ $rc = 77 ] && skip "cannot fetch the memcached source"
[ $rc = 0 ] || fail "fetching the memcached source"
# cp -a: the autotools outputs must stay newer than their inputs
cp -a "$work/../memcached-src/src" tree
t0=$(date +%s)
(
    cd tree
    CC="$bin/rheaper-cc" ./configure --disable-extstore --disable-sasl --disable-tls \
        --disable-docs > ../configure.log 2>&1 || { tail -20 ../configure.log; exit 1; }
    make -j2 memcached > ../make.log 2>&1 || { tail -30 ../make.log; exit 1; }
) || fail "building memcached with rheaper-cc"
echo "ok: memcached built with rheaper-cc in $(($(date +%s) - t0)) s"
mc="$work/tree/memcached"
cc -O2 -o mc_load "$src/mc_load.c" || fail "building mc_load"

port=$((21000 + $$ % 9000))
pdir=$(mktemp -d /tmp/rh-mc.XXXXXX)
daemon=
cleanup() {
    if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then kill "$daemon" || true; fi
    rm -rf "$pdir"
}
trap 'st=$?; set +e; cleanup; exit $st' EXIT
chmod 0755 "$pdir"

# start DIR ENV...: memcached -d -u nobody, profiles in DIR, its pid file in
# $run (nobody writes it, after the switch); sets $daemon once it answers.
run=$pdir/run
install -d -o nobody -m 0755 "$run"
start() {
    d=$1
    shift
    for try in 1 2 3 4 5; do
        rm -f "$run/mc.pid" pid.out
        env "$@" RHEAPER_PROFILE_DIR="$d" "$mc" -d -u nobody -m 8 -t 4 -l 127.0.0.1 \
            -p "$port" -P "$run/mc.pid" 2> start.err || { cat start.err; fail "memcached -d failed"; }
        for i in $(seq 100); do
            [ -s "$run/mc.pid" ] && ./mc_load "$port" stat pid > pid.out 2>/dev/null && break
            sleep 0.05
        done
        if [ -s pid.out ] && [ "$(cat pid.out)" = "$(cat "$run/mc.pid" 2>/dev/null)" ]; then
            daemon=$(cat pid.out)
            return 0
        fi
        [ -s "$run/mc.pid" ] && kill "$(cat "$run/mc.pid")" 2>/dev/null
        port=$((port + 1)) # taken by something else: another port
    done
    fail "memcached did not answer on 127.0.0.1"
}
# stop: SIGTERM (memcached's clean shutdown), until the daemon is gone.
stop() {
    kill "$daemon"
    for i in $(seq 200); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$daemon" 2>/dev/null && fail "memcached did not exit on SIGTERM"
    old=$daemon daemon=
}
q() { sqlite3 "$1" "$2"; }
meta() { q "$1" "SELECT value FROM meta WHERE key = '$2'"; }
# rows DB FN [frame0]: rows whose stack has function FN (at frame 0 with frame0)
rows() {
    q "$1" "SELECT count(*) FROM allocations a WHERE EXISTS (SELECT 1 FROM backtraces b
            WHERE b.id = a.bt AND b.sym = '$2' ${3:+AND b.frame_no = 0})"
}

# ---- 1. the recipe: a daemon that drops privileges before it forks ------------
d1=$pdir/recipe
install -d -o nobody -m 0755 "$d1"
start "$d1" RHEAPER_ENABLE=1 RHEAPER_LOG="$d1/rheaper.log"
./mc_load "$port" fill 20000 1000 > /dev/null || fail "fill"
./mc_load "$port" load 1 4 20000 1000 > load1.out || fail "load"
./mc_load "$port" conns 10 > /dev/null || fail "10 connections"
stop
"$bin/rheaper" list "$d1" > list1.out || fail "rheaper list"
cat list1.out
[ "$(grep -c ' complete ' list1.out)" = 2 ] || fail "expected 2 complete profiles"
[ -f "$d1/rip-$old" ] || fail "no profile of the daemon $old"
for f in "$d1"/rip-*; do
    [ "$(stat -c '%U %a' "$f")" = "nobody 600" ] || fail "$f: $(stat -c '%U %a' "$f"), want nobody 600"
done
"$bin/rheaper-convert" --quiet "$d1/rip-$old" d1.db > conv.log 2>&1 || { cat conv.log; fail "convert"; }
starter=$(awk -v d="$old" '$1 != d && $1 ~ /^[0-9]+$/ { print $1 }' list1.out)
eq "the daemon's profile is clean" "$(meta d1.db clean)" 1
eq "the daemon's fork parent" "$(meta d1.db fork_parent_pid)" "$starter"
eq "the daemon's credentials changed" "$(meta d1.db credentials_changed)" 1
eq "unknown frees" "$(meta d1.db unknown_frees)" 0
eq "slab pages (-m 8)" "$(q d1.db "SELECT count(*) || ' ' || sum(size) FROM allocations a
    WHERE EXISTS (SELECT 1 FROM backtraces b WHERE b.id = a.bt AND b.frame_no = 0
    AND b.sym = 'memory_allocate')")" "8 8388608"
eq "hash table (2^16 pointers)" "$(q d1.db "SELECT group_concat(size) FROM allocations a
    WHERE EXISTS (SELECT 1 FROM backtraces b WHERE b.id = a.bt AND b.frame_no = 0
    AND b.sym = 'assoc_init')")" 524288
n=$(rows d1.db conn_new 0)
[ "$n" -ge 11 ] && [ "$n" -le 16 ] || fail "$n connection structures: the listener and 10 at once, plus the few a lagging close adds"
eq "profiles the log reports written" "$(grep -c "^rheaper: wrote $d1/rip-" "$d1/rheaper.log")" 2

# The same in a root-owned 0755 directory: the daemon (already nobody) cannot
# create its profile, and its log (in a directory nobody may write) says so.
d0=$pdir/rootdir
logs=$pdir/logs
install -d -m 0755 "$d0"
install -d -o nobody -m 0755 "$logs"
start "$d0" RHEAPER_ENABLE=1 RHEAPER_LOG="$logs/rheaper-%p.log"
./mc_load "$port" fill 100 1000 > /dev/null || fail "fill"
stop
[ -f "$d0/rip-$old" ] && fail "the daemon created a profile in a root-owned 0755 directory"
grep -q "cannot create profile .*rip-$old: Permission denied; tracking stays off" \
    "$logs/rheaper-$old.log" || fail "the daemon's log: $(cat "$logs"/* 2>/dev/null)"
echo "ok: in a root-owned 0755 directory the daemon says: $(cat "$logs/rheaper-$old.log")"

# ---- 2. armed, a full cache that no longer allocates -----------------------------
d2=$pdir/armed
install -d -o nobody -m 0755 "$d2"
start "$d2" RHEAPER_ENABLE=signal
./mc_load "$port" fill 20000 1000 > /dev/null || fail "fill"
ev=$(./mc_load "$port" stat evictions)
[ "$ev" -gt 0 ] || fail "the cache is not full (no evictions)"
echo "ok: cache full: $ev evictions, $(./mc_load "$port" stat curr_items) items in 8 MiB"
nh=$(cat /proc/"$daemon"/task/*/comm | grep -cx rheaper || true)
eq "helper threads in the daemon (threads named rheaper)" "$nh" 1
grep -q '^state armed$' "$d2/rheaper-$daemon.ctl" || fail "the daemon's marker does not say armed"
SIG=$(sed -n 's/^signal //p' "$d2/rheaper-$daemon.ctl")
ls "$d2"/rip-* >/dev/null 2>&1 && fail "an armed daemon wrote a profile"

./mc_load "$port" load 6 4 20000 1000 > load2.out &
lpid=$!
sleep 0.5
# The window's sets come over a connection opened (and served once) before
# it: a new connection would take a structure and buffers of its own.
rm -f go
./mc_load "$port" fill 4000 1000 10 go > fill.out &
fpid=$!
for i in $(seq 2000); do grep -q connected fill.out && break; sleep 0.01; done
t0=$(date +%s%N)
"$bin/rheaper" record -p "$daemon" --dir "$d2" -d 2s -o rec.db > rec.out 2> rec.err &
rpid=$!
for i in $(seq 500); do grep -q 'recording process' rec.err && break; sleep 0.01; done
t1=$(date +%s%N)
: > go # cache_memlimit 10, then 4000 sets
wait "$fpid" || fail "cache_memlimit 10 and the sets in the window"
wait "$rpid" || { cat rec.err; fail "rheaper record failed"; }
t2=$(date +%s%N)
wait "$lpid" || fail "the load failed"
read -r _ ops _ hits < load2.out
echo "ok: load: $ops get/set over 6 s on 4 connections ($hits hits)"
[ "$ops" -gt 1000 ] || fail "the load made only $ops requests"
start_ns=$(date -d "$(meta rec.db start_time)" +%s%N)
dur=$(meta rec.db duration_ns)
echo "ok: the recording started $(( (start_ns - t0) / 1000000 )) ms after the request (record saw it after $(( (t1 - t0) / 1000000 )) ms), lasted $(( dur / 1000000 )) ms, record returned after $(( (t2 - t0) / 1000000 )) ms"
# Started by the helper: after the request and before record saw it (t1),
# while the get/set load made no allocation (the rows below: none but the
# window's slab pages). The delays are printed above, not bounded tightly
# (a loaded machine stretches them).
[ "$start_ns" -ge "$t0" ] && [ "$start_ns" -le "$t1" ] ||
    fail "the recording started $(( (start_ns - t0) / 1000000 )) ms after the request, record saw it after $(( (t1 - t0) / 1000000 )) ms"
[ "$start_ns" -le $((t0 + 10000000000)) ] ||
    fail "the recording started $(( (start_ns - t0) / 1000000 )) ms after the request"
[ "$dur" -ge 2000000000 ] && [ "$dur" -le 10000000000 ] || fail "recorded $dur ns for a 2 s window"
[ $((start_ns + dur)) -le "$t2" ] || fail "the recording ended after record returned"
eq "the window's profile is clean" "$(meta rec.db clean)" 1
eq "slab pages the window's 2 MiB more took" "$(q rec.db "SELECT count(*) || ' ' || sum(size)
    FROM allocations a WHERE EXISTS (SELECT 1 FROM backtraces b WHERE b.id = a.bt
    AND b.frame_no = 0 AND b.sym = 'memory_allocate')")" "2 2097152"
eq "rows not from a slab page (the get/set load's)" "$(q rec.db "SELECT count(*)
    FROM allocations a WHERE NOT EXISTS (SELECT 1 FROM backtraces b WHERE b.id = a.bt
    AND b.frame_no = 0 AND b.sym = 'memory_allocate')")" 0
eq "the helper thread in the profile's threads" "$(q rec.db "SELECT count(*) FROM threads WHERE name = 'rheaper'")" 0

# Two toggles sent together pair off: no recording, the marker still armed.
# The helper's poll may fall between the two signals: then the first starts
# a recording and the second stops it at the next poll, a clean profile with
# no rows (the daemon is idle): seq one more, one more profile.
seq0=$(sed -n 's/^seq //p' "$d2/rheaper-$daemon.ctl")
ls "$d2" | grep '^rip-' > rips0
kill -s "$SIG" "$daemon" "$daemon"
sleep 0.5
seq1=$(sed -n 's/^seq //p' "$d2/rheaper-$daemon.ctl")
np=1
if [ "$seq1" = "$seq0" ]; then
    echo "ok: two toggles at once paired off (seq $seq0)"
elif [ "$seq1" = $((seq0 + 1)) ]; then
    ls "$d2" | grep '^rip-' > rips1
    new=$(grep -vxF -f rips0 rips1)
    eq "new profiles after two toggles taken apart" "$(printf '%s\n' "$new" | grep -c .)" 1
    "$bin/rheaper-convert" --quiet "$d2/$new" pair.db > conv.log 2>&1 || { cat conv.log; fail "convert $new"; }
    eq "the toggles' recording is clean" "$(meta pair.db clean)" 1
    eq "rows in the toggles' recording" "$(q pair.db "SELECT count(*) FROM allocations")" 0
    echo "ok: two toggles at once taken by two polls: seq $seq0 -> $seq1, $new clean with no rows"
    np=2
else
    fail "recordings after two toggles at once: seq $seq0 -> $seq1"
fi
grep -q '^state armed$' "$d2/rheaper-$daemon.ctl" || fail "the marker does not say armed"
eq "profiles" "$(ls "$d2" | grep -c '^rip-')" "$np"
./mc_load "$port" stat pid > /dev/null || fail "memcached stopped answering"
stop
[ -f "$d2/rheaper-$old.ctl" ] && fail "marker left behind at exit"
eq "profiles after the daemon's exit" "$(ls "$d2" | grep -c '^rip-')" "$np"
echo "PASS: memcached"
