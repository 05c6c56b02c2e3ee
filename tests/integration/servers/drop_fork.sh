#!/bin/sh
# drop_fork.sh BIN_DIR SRC_DIR WORK_DIR: the recipe of docs/servers.md for a
# daemon that drops privileges before it forks (drop_fork.c, memcached -d -u
# nobody's order). In a root-owned 0755 directory the worker, already nobody,
# cannot create its profile: one "Permission denied" line, no worker profile.
# In a directory that belongs to the worker user (chown nobody, 0755) both
# profiles are complete: the master's 3 rows of 555 bytes (handed to nobody
# at its setuid), the worker's 7 rows of 666 bytes, owner nobody, 0600. The
# same program started as nobody (a server run as its own user, PostgreSQL's
# way) in nobody's own 0700 directory: both profiles complete.
# Must run as root.
set -eu
bin=$1 src=$2 work=$3
CASE= RH_DUMP=
. "$src/../../lib/check.sh"
if [ "$(id -u)" != 0 ]; then
    [ -n "${CI:-}" ] && fail "must run as root (it switches users)"
    echo "SKIP: not root"
    exit 77
fi
nuid=$(id -u nobody) || fail "no user nobody"
ngid=$(getent group nogroup | cut -d: -f3)
[ -n "$ngid" ] || ngid=$(id -g nobody)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
RHEAPER_CC=gcc "$bin/rheaper-cc" -O2 -g -o prog "$src/drop_fork.c" 2> build.err ||
    { cat build.err; fail "rheaper-cc build"; }
chmod 0755 "$work" prog
pdir=$(mktemp -d /tmp/rh-dropfork.XXXXXX)
trap 'rm -rf "$pdir"' EXIT
chmod 0755 "$pdir"

# 1. root's 0755 directory: the worker's profile cannot be created
mkdir -m 0755 "$pdir/root"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir/root" ./prog "$nuid" "$ngid" > out1 2> err1
grep -q "Permission denied" err1 || { cat err1; fail "no line says why the worker is not recorded"; }
n=$(ls "$pdir/root" | grep -c '^rip-' || true)
[ "$n" = 1 ] || fail "root's directory holds $n profiles, not the master's alone"
ok "root's 0755 directory: the worker says Permission denied and is not recorded"

# 2. the recipe: the directory belongs to the worker user
mkdir -m 0755 "$pdir/worker"
chown nobody "$pdir/worker"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir/worker" ./prog "$nuid" "$ngid" > out2 2> err2
[ ! -s err2 ] || { cat err2; fail "rheaper lines on stderr"; }
wpid=$(sed -n 's/^worker \([0-9]*\) status 0$/\1/p' out2)
[ -n "$wpid" ] || fail "worker did not exit 0: $(cat out2)"
for f in "$pdir"/worker/rip-*; do
    got=$(stat -c '%U %a' "$f")
    [ "$got" = "nobody 600" ] || fail "$f belongs to '$got'"
    "$bin/rheaper-convert" --quiet "$f" "$f.db" || fail "convert $f"
    [ "$(sqlite3 "$f.db" "SELECT value FROM meta WHERE key = 'clean'")" = 1 ] || fail "$f not clean"
done
w="$pdir/worker/rip-$wpid"
[ -f "$w" ] || fail "no worker profile rip-$wpid"
eq "worker's rows of 666 bytes" "$(sqlite3 "$w.db" "SELECT count(*) FROM alloc_rows WHERE size = 666")" 7
m=$(ls "$pdir"/worker/rip-* | grep -v "rip-$wpid" | grep -v '\.db$')
eq "master's rows of 555 bytes" "$(sqlite3 "$m.db" "SELECT count(*) FROM alloc_rows WHERE size = 555")" 3
ok "the worker user's directory: both profiles complete, owner nobody"

# 3. a server started as its own user (PostgreSQL's pg_ctl as postgres): no
# drop at all, the directory belongs to that user alone (0700 is enough)
install -d -o nobody -m 0700 "$pdir/own"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir/own" \
    setpriv --reuid=nobody --regid="$ngid" --clear-groups ./prog - - > out3 2> err3
[ ! -s err3 ] || { cat err3; fail "rheaper lines on stderr"; }
wpid=$(sed -n 's/^worker \([0-9]*\) status 0$/\1/p' out3)
[ -n "$wpid" ] || fail "worker did not exit 0: $(cat out3)"
eq "profiles in the user's own 0700 directory" "$(ls "$pdir/own" | grep -c '^rip-')" 2
for f in "$pdir"/own/rip-*; do
    got=$(stat -c '%U %a' "$f")
    [ "$got" = "nobody 600" ] || fail "$f belongs to '$got'"
    "$bin/rheaper-convert" --quiet "$f" "$f.db" || fail "convert $f"
    [ "$(sqlite3 "$f.db" "SELECT value FROM meta WHERE key = 'clean'")" = 1 ] || fail "$f not clean"
done
w="$pdir/own/rip-$wpid"
eq "worker's rows of 666 bytes (own user)" "$(sqlite3 "$w.db" "SELECT count(*) FROM alloc_rows WHERE size = 666")" 7
m=$(ls "$pdir"/own/rip-* | grep -v "rip-$wpid" | grep -v '\.db$')
eq "master's rows of 555 bytes (own user)" "$(sqlite3 "$m.db" "SELECT count(*) FROM alloc_rows WHERE size = 555")" 3
ok "a server started as its own user: its own 0700 directory, both profiles complete"
