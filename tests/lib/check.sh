# check.sh: the checks every shell test shares. Source it after setting CASE
# (the ctest case name, may be empty) and RH_DUMP (the files, globs allowed,
# whose contents a failure prints, relative to the current directory).
#
# Checks that stop the test at the first failure:
#   fail MESSAGE...      prints "FAIL: CASE: MESSAGE", every RH_DUMP file, stops
#                        the process in SPID if set, and exits 1
#   ok [MESSAGE...]      counts a passed check; with a message, prints "ok: CASE: MESSAGE"
#   eq WHAT GOT WANT     fails unless GOT equals WANT, else says ok
# Checks that count, for a test that goes on after a failure and sums up:
#   bad MESSAGE...       prints "FAIL: CASE: MESSAGE" and counts a failed check
#   expect WHAT GOT WANT bad unless GOT equals WANT, else ok
#   checks_done          prints "N passed, N failed"; status 1 when one failed
#
# ctest marks a test failed on its exit status and on the "FAIL:" prefix.

rh_passed=0 rh_failed=0

fail() {
    echo "FAIL: ${CASE:+$CASE: }$*"
    for rh_f in ${RH_DUMP:-}; do
        [ -f "$rh_f" ] && { echo "--- $rh_f"; cat "$rh_f"; }
    done
    [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null
    exit 1
}

ok() {
    rh_passed=$((rh_passed + 1))
    [ $# -eq 0 ] || echo "ok: ${CASE:+$CASE: }$*"
}

eq() {
    [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
    ok "$1 = $3"
}

bad() {
    rh_failed=$((rh_failed + 1))
    echo "FAIL: ${CASE:+$CASE: }$*"
}

expect() {
    if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

checks_done() {
    echo "$rh_passed passed, $rh_failed failed"
    [ "$rh_failed" -eq 0 ]
}
