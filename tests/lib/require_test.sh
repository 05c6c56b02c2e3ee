#!/bin/sh
# require_test.sh: the missing-tool rule (require.sh) and the shared checks
# (check.sh), as a test run meets them.
#
#   require_test.sh SRC_DIR INPROC_BIN INPROC_HELPERS WORK
#
# 1. require_tool on a tool that is there returns; on one that is not it prints
#    the apt-get line naming the package and exits 1 under CI=true, 77 elsewhere;
#    require_file the same for a file.
# 2. A real test script with the tool taken off PATH: tests/integration/inproc/run.sh's http
#    case, with a PATH that holds every program of /usr/bin and /bin except curl,
#    fails under CI=true naming the package curl, and skips (77) otherwise.
# 3. check.sh's eq and fail: exit status and the "FAIL:" line; its counting
#    checks (expect, bad, checks_done) go on after a failure and sum up.
set -u
src=$1 ibin=$2 ihelpers=$3 work=$4
CASE=require RH_DUMP=
. "$src/tests/lib/check.sh"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
lib="$src/tests/lib"

# run_sh EXPECTED_STATUS EXPECTED_LINE LABEL COMMAND...: runs COMMAND, checks
# its exit status and that its output has EXPECTED_LINE.
run_sh() {
    want=$1 line=$2 what=$3
    shift 3
    "$@" >out 2>&1
    got=$?
    [ "$got" -eq "$want" ] || { cat out; fail "$what: exit status $got, want $want"; }
    grep -qxF -e "$line" out || { cat out; fail "$what: no line '$line'"; }
    ok "$what: exit $got, the expected line"
}

probe='. "$1/require.sh"; require_tool "$2" "$3"; echo present'
run_sh 0 "present" "a tool that is there" sh -c "$probe" sh "$lib" sh dash
run_sh 1 "FAIL: missing tool rh-no-such-tool: apt-get install -y rh-no-such-package" \
    "CI=true, tool missing" env CI=true sh -c "$probe" sh "$lib" rh-no-such-tool rh-no-such-package
run_sh 77 "SKIP: missing tool rh-no-such-tool: apt-get install -y rh-no-such-package" \
    "no CI, tool missing" env -u CI sh -c "$probe" sh "$lib" rh-no-such-tool rh-no-such-package
fprobe='. "$1/require.sh"; require_file "$2" "$3"; echo present'
run_sh 0 "present" "a file that is there" sh -c "$fprobe" sh "$lib" "$lib/require.sh" x
run_sh 1 "FAIL: missing file /rh/no/such.h: apt-get install -y rh-no-such-dev" \
    "CI=true, file missing" env CI=true sh -c "$fprobe" sh "$lib" /rh/no/such.h rh-no-such-dev

# A PATH without curl: every other program of /usr/bin and /bin, linked.
mkdir nocurl
for d in /usr/bin /bin; do
    for p in "$d"/*; do
        n=${p##*/}
        [ "$n" = curl ] || [ -e "nocurl/$n" ] || ln -s "$p" "nocurl/$n"
    done
done
PATH="$work/nocurl" command -v curl >/dev/null && fail "curl still on the stripped PATH"
run_sh 1 "FAIL: missing tool curl: apt-get install -y curl" "inproc-http under CI=true without curl" \
    env PATH="$work/nocurl" CI=true sh "$src/tests/integration/inproc/run.sh" "$ibin" "$ihelpers" "$work/http-ci" http
run_sh 77 "SKIP: missing tool curl: apt-get install -y curl" "inproc-http without CI, without curl" \
    env -u CI PATH="$work/nocurl" sh "$src/tests/integration/inproc/run.sh" "$ibin" "$ihelpers" "$work/http" http

# check.sh: eq passes equal values, fails unequal ones with a FAIL: line.
chk='CASE=c RH_DUMP=; . "$1/check.sh"; eq "$2" "$3" "$4"; echo after'
run_sh 0 "ok: c: n = 3" "eq equal" sh -c "$chk" sh "$lib" n 3 3
run_sh 1 "FAIL: c: n: got '2', want '3'" "eq unequal" sh -c "$chk" sh "$lib" n 2 3
grep -q after out && fail "fail did not stop the script"
# check.sh's counting checks: expect and bad go on; checks_done counts and decides.
cnt='CASE=c RH_DUMP=; . "$1/check.sh"; expect one 1 1; expect two 2 3; bad "three"; ok; echo after; checks_done'
run_sh 1 "2 passed, 2 failed" "counting checks, two failed" sh -c "$cnt" sh "$lib"
grep -qxF "FAIL: c: two: got '2', want '3'" out || fail "expect did not say what differed"
grep -qxF "FAIL: c: three" out || fail "bad did not print its line"
grep -qx after out || fail "expect or bad stopped the script"
cnt='CASE=c RH_DUMP=; . "$1/check.sh"; expect one 1 1; ok; checks_done'
run_sh 0 "2 passed, 0 failed" "counting checks, none failed" sh -c "$cnt" sh "$lib"
echo "require: all checks passed"
