#!/bin/sh
# run.sh: one hostile program (tests/integration/hostile/NAME.c), built plain and with
# rheaper-cc, run side by side; the profiled run must change nothing.
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR NAME LINKMODE [ARG]
#
# LINKMODE is dynamic or static; ARG is the program's mode. Both builds run in
# a directory of their own (the program writes its files under ./data, the
# profiles go to ./prof), under the same time bound and the same resource
# limits. Checks: same exit status, same stdout, byte-identical data/, no
# runtime warning, every profile converts clean with nothing lost, `rheaper
# summary` shows the re-entered count when there is one, and every EXPECT line
# the profiled program printed (its own counts) holds.
set -eu
bin=$1 src=$2 work=$3 name=$4 mode=$5
arg=${6:-}
. "$(dirname "$0")/../../lib/check.sh"   # fail, ok, eq
. "$(dirname "$0")/../../lib/require.sh" # require_tool
require_tool sqlite3 sqlite3

rm -rf "$work" && mkdir -p "$work"
cd "$work"
ldflags=""
[ "$mode" = static ] && ldflags="-static"
# -fno-ipa-icf: the programs' allocation sites are tiny functions gcc would
# otherwise fold into one, and their names are what the EXPECT lines check.
cflags="-O2 -g -pthread -std=gnu11 -fno-ipa-icf -I$src -I$src/../../e2e/programs"
gcc -O2 "$src/launch.c" -o launch || fail "building launch"
# shellcheck disable=SC2086
gcc $cflags -fno-omit-frame-pointer "$src/$name.c" -o prog.plain $ldflags -ldl 2> build.plain.err ||
    { cat build.plain.err; fail "plain build"; }
# shellcheck disable=SC2086
RHEAPER_CC=gcc "$bin/rheaper-cc" $cflags "$src/$name.c" -o prog.rh $ldflags -ldl 2> build.rh.err ||
    { cat build.rh.err; fail "rheaper-cc build"; }

# The limits a case runs under, the same for both builds.
case $name in
nofile) limits="prlimit --nofile=4 --" ;;
rlimit_as) limits="prlimit --as=209715200 --" ;;
*) limits="" ;;
esac

# run VARIANT: runs prog.VARIANT in VARIANT/ with a 60 s bound.
run() {
    mkdir -p "$1/data" "$1/prof"
    (
        cd "$1"
        export RH_EXPECT_FILE="$work/$1/expect.txt" RHEAPER_PROFILE_DIR="$work/$1/prof"
        [ "$1" = rh ] && export RHEAPER_ENABLE=1
        # shellcheck disable=SC2086
        timeout 60 ../launch $limits "../prog.$1" $arg > stdout 2> stderr
    ) && echo 0 > "$1/status" || echo $? > "$1/status"
}
run plain
run rh

[ "$(cat plain/status)" != 124 ] || fail "the plain build did not finish within 60 s"
[ "$(cat rh/status)" != 124 ] || fail "the profiled build did not finish within 60 s (the plain one did)"
[ "$(cat plain/status)" = "$(cat rh/status)" ] ||
    { cat rh/stderr; fail "exit status $(cat rh/status) profiled, $(cat plain/status) plain"; }
cmp -s plain/stdout rh/stdout ||
    { diff plain/stdout rh/stdout || true; fail "stdout differs from the plain run's"; }
diff -r plain/data rh/data > data.diff 2>&1 ||
    { head -20 data.diff; fail "the program's own files differ from the plain run's"; }
warn=$(grep '^rheaper: ' rh/stderr | grep -v ': wrote ' || true)
[ -z "$warn" ] || fail "runtime warnings: $warn"

cd rh/prof
set -- rip-*
[ -e "$1" ] || fail "no profile written"
pass=0 nfail=0
for rip in "$@"; do
    "$bin/rheaper-convert" --quiet "$rip" "$rip.db" > conv.log 2>&1 ||
        { cat conv.log; fail "conversion of $rip"; }
    for key in clean events_lost; do
        want=1
        [ $key = events_lost ] && want=0
        got=$(sqlite3 "$rip.db" "SELECT value FROM meta WHERE key = '$key'")
        [ "$got" = "$want" ] || fail "$rip: meta $key is '$got', not $want (profile incomplete)"
    done
    # `rheaper summary` prints the re-entered count exactly when it is not zero
    re=$(sqlite3 "$rip.db" "SELECT value FROM meta WHERE key = 'reentered_unrecorded'")
    n=$("$bin/rheaper" summary "$rip.db" | grep -c "^unrecorded  *$re calls re-entered" || true)
    if [ "$re" -gt 0 ]; then want=1; else want=0; fi
    [ "$n" = "$want" ] || fail "$rip: rheaper summary shows the re-entered count ($re) $n times, not $want"
done

. "$src/../../e2e/programs/expect.sh"
expect_each "$work/rh/expect.txt" . "$(ls rip-*.db | head -n 1)" expect_sql
pass=$((pass + ex_pass)) nfail=$((nfail + ex_fail))
[ $((pass + nfail)) -gt 0 ] || fail "the program stated no expectations"
echo "$pass passed, $nfail failed"
[ "$nfail" -eq 0 ]
