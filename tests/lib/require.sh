# require.sh: the missing-tool rule every shell test shares.
#
#   require_tool TOOL PACKAGE   returns if TOOL is on PATH; otherwise prints
#                               "missing tool TOOL: apt-get install -y PACKAGE"
#                               and exits 1 when CI=true (a CI run must have
#                               every tool; the test fails) or 77 elsewhere
#                               (ctest's SKIP_RETURN_CODE: the test is skipped)
#
# A test is registered whatever is installed; this is where it finds out.

RH_SKIP=77

require_tool() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "${CI:-}" = true ]; then
        echo "FAIL: missing tool $1: apt-get install -y $2"
        exit 1
    fi
    echo "SKIP: missing tool $1: apt-get install -y $2"
    exit $RH_SKIP
}
