# require.sh: the missing-tool rule every shell test shares.
#
#   require_tool TOOL PACKAGE   returns if TOOL is on PATH; otherwise prints
#                               "missing tool TOOL: apt-get install -y PACKAGE"
#                               and exits 1 when CI=true (a CI run must have
#                               every tool; the test fails) or 77 elsewhere
#                               (ctest's SKIP_RETURN_CODE: the test is skipped)
#   require_file FILE PACKAGE   the same for a file a package installs (a header
#                               of a library the test links)
#
# A test is registered whatever is installed; this is where it finds out.

RH_SKIP=77

require_tool() {
    command -v "$1" >/dev/null 2>&1 && return 0
    rh_missing "tool $1" "$2"
}

require_file() {
    [ -e "$1" ] && return 0
    rh_missing "file $1" "$2"
}

# rh_missing WHAT PACKAGE: the line, then the exit status of the rule
rh_missing() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: missing $1: apt-get install -y $2"
        exit 1
    fi
    echo "SKIP: missing $1: apt-get install -y $2"
    exit $RH_SKIP
}
