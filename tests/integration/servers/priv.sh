#!/bin/sh
# priv.sh: a program that starts as root and switches to an unprivileged user
# keeps its profile complete (docs/servers.md "Privilege drops").
#
#   priv.sh BIN_DIR SRC_DIR WORK_DIR NAME LINKMODE
#
# NAME is priv_drop (the process itself switches after a few allocations),
# priv_fork (a forked child switches before its first allocation while the
# parent stays root) or priv_chroot (chroot after a few allocations: the
# recording is closed cleanly before it, with one line). Built with rheaper-cc (LINKMODE dynamic or static), run
# with RHEAPER_ENABLE=1 into a root-owned 0755 directory that the new user
# cannot write. Checks: the program's own output, no rheaper line on stderr,
# every profile converts clean with nothing lost, its rows of the program's
# marker sizes are exactly the program's counts, and each file belongs to the
# user that ended the recording, mode 0600.
# Must run as root: under CI it fails otherwise (the feature is about root).
set -eu
bin=$1 src=$2 work=$3 name=$4 mode=$5
CASE= RH_DUMP=
. "$src/../../lib/check.sh" # fail, ok, eq
if [ "$(id -u)" != 0 ]; then
    [ -n "${CI:-}" ] && fail "must run as root (it switches users)"
    echo "SKIP: not root"
    exit 77
fi
nuid=$(id -u nobody) || fail "no user nobody"
ngid=$(getent group nogroup | cut -d: -f3)
[ -n "$ngid" ] || ngid=$(id -g nobody)

rm -rf "$work" && mkdir -p "$work"
cd "$work"
ldflags=""
[ "$mode" = static ] && ldflags="-static"
RHEAPER_CC=gcc "$bin/rheaper-cc" -O2 -g -o prog "$src/$name.c" $ldflags 2> build.err ||
    { cat build.err; fail "rheaper-cc build"; }
# The profile directory: root's, 0755, under /tmp so every directory above it
# is searchable by the new user (the build tree may sit in a 0700 home).
pdir=$(mktemp -d /tmp/rh-servers.XXXXXX)
trap 'rm -rf "$pdir"' EXIT
chmod 0755 "$pdir"

# check_rip RIP OWNER SIZE COUNT [SIZE COUNT...]
check_rip() {
    rip=$1 owner=$2
    shift 2
    got=$(stat -c '%U %a' "$rip")
    [ "$got" = "$owner 600" ] || fail "$rip belongs to '$got', not '$owner 600'"
    "$bin/rheaper-convert" --quiet "$rip" "$rip.db" > conv.log 2>&1 ||
        { cat conv.log; fail "conversion of $rip"; }
    for kv in clean:1 events_lost:0; do
        key=${kv%%:*} want=${kv#*:}
        got=$(sqlite3 "$rip.db" "SELECT value FROM meta WHERE key = '$key'")
        [ "$got" = "$want" ] || fail "$rip: meta $key is '$got', not $want"
    done
    while [ $# -ge 2 ]; do
        got=$(sqlite3 "$rip.db" "SELECT count(*) FROM alloc_rows WHERE size = $1")
        [ "$got" = "$2" ] || fail "$rip: $got rows of $1 bytes, the program made $2"
        echo "ok: $rip: $2 rows of $1 bytes, clean, owner $owner"
        shift 2
    done
}

case $name in
priv_drop)
    pre=1000 post=199000
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir" ./prog "$nuid" "$ngid" $pre $post \
        > out 2> err || { cat err; fail "the program failed"; }
    grep -qx "ids $nuid $ngid" out || fail "the program did not switch: $(cat out)"
    grep -qx "allocs $((pre + post))" out || fail "output: $(cat out)"
    if grep -q '^rheaper: ' err; then cat err; fail "runtime lines on stderr"; fi
    set -- "$pdir"/rip-*
    [ $# = 1 ] && [ -e "$1" ] || fail "expected one profile, found: $*"
    check_rip "$1" nobody 777 $((pre + post))
    ;;
priv_fork)
    parent=500 child=30000
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir" ./prog "$nuid" "$ngid" $parent $child \
        > out 2> err || { cat err; fail "the program failed"; }
    cpid=$(sed -n 's/^child \([0-9]*\) status 0$/\1/p' out)
    [ -n "$cpid" ] || fail "the child failed: $(cat out)"
    if grep -q '^rheaper: ' err; then cat err; fail "runtime lines on stderr"; fi
    [ -e "$pdir/rip-$cpid" ] || fail "no profile of the child $cpid: $(ls "$pdir")"
    check_rip "$pdir/rip-$cpid" nobody 666 $child 555 0
    set -- $(ls "$pdir" | grep '^rip-[0-9]*$' | grep -v "^rip-$cpid\$")
    [ $# = 1 ] || fail "expected one parent profile, found: $*"
    check_rip "$pdir/$1" root 555 $((2 * parent)) 666 0
    ;;
priv_chroot)
    root=$(mktemp -d /tmp/rh-chroot.XXXXXX)
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir" ./prog "$root" 500 700 > out 2> err ||
        { cat err; rm -rf "$root"; fail "the program failed"; }
    rm -rf "$root"
    grep -qx "chroot 0" out || fail "chroot failed: $(cat out)"
    [ "$(grep -c '^rheaper: ' err)" = 1 ] && grep -q '^rheaper: the program calls chroot(' err ||
        { cat err; fail "expected one rheaper line about chroot"; }
    set -- "$pdir"/rip-*
    [ $# = 1 ] && [ -e "$1" ] || fail "expected one profile, found: $*"
    check_rip "$1" root 333 500 444 0
    got=$(sqlite3 "$1.db" "SELECT value FROM meta WHERE key = 'end_reason'")
    [ "$got" = chroot ] || fail "end_reason '$got', not chroot"
    echo "ok: the recording was closed before chroot, one line: $(cat err)"
    ;;
*) fail "unknown case $name" ;;
esac
echo "PASS: $name $mode"
