# check.sh: the checks every shell test shares. Source it after setting CASE
# (the ctest case name, may be empty) and RH_DUMP (the files, globs allowed,
# whose contents a failure prints, relative to the current directory).
#
#   fail MESSAGE...      prints "FAIL: CASE: MESSAGE", every RH_DUMP file, stops
#                        the process in SPID if set, and exits 1
#   ok MESSAGE...        prints "ok: CASE: MESSAGE"
#   eq WHAT GOT WANT     fails unless GOT equals WANT, else says ok
#
# ctest marks a test failed on its exit status and on the "FAIL:" prefix.

fail() {
    echo "FAIL: ${CASE:+$CASE: }$*"
    for rh_f in ${RH_DUMP:-}; do
        [ -f "$rh_f" ] && { echo "--- $rh_f"; cat "$rh_f"; }
    done
    [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null
    exit 1
}

ok() { echo "ok: ${CASE:+$CASE: }$*"; }

eq() {
    [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
    ok "$1 = $3"
}
