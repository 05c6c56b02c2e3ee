#!/bin/sh
# expect.sh: the reader of expect.h's EXPECT lines, and the check of one line,
# sourced by the test runners (tests/e2e/programs/check.sh, tests/integration/whole/run.sh,
# tests/integration/hostile/run.sh, tests/integration/alloc/check_alloc.sh, tests/integration/reliability/run.sh).
#
#   expect_each FILE DB_DIR FIRST_DB FN
#
# Calls FN VALUE DB SQL for every "EXPECT<TAB>value<TAB>SQL" line of FILE. A
# program that writes several profiles (fork) names one with a leading
# "@rip-PID " in SQL, which is taken off and makes DB DB_DIR/rip-PID.db;
# otherwise DB is FIRST_DB.
expect_each() {
    _ex_tab=$(printf '\t')
    while IFS="$_ex_tab" read -r _ex_tag _ex_value _ex_sql; do
        [ "$_ex_tag" = EXPECT ] || continue
        _ex_db=$3
        case $_ex_sql in
        @*) _ex_key=${_ex_sql%% *}; _ex_sql=${_ex_sql#* }; _ex_db="$2/${_ex_key#@}.db" ;;
        esac
        "$4" "$_ex_value" "$_ex_db" "$_ex_sql"
    done < "$1"
}

# expect_sql VALUE DB SQL: runs SQL on DB with the sqlite3 shell and compares
# its output with VALUE. Counts a match in ex_pass, a mismatch in ex_fail (with
# one "FAIL:" line naming both); the runner adds them to its own totals.
ex_pass=0 ex_fail=0
expect_sql() {
    _ex_got=$(sqlite3 "$2" "$3" 2>&1) || _ex_got="error: $_ex_got"
    if [ "$_ex_got" = "$1" ]; then
        ex_pass=$((ex_pass + 1))
    else
        ex_fail=$((ex_fail + 1))
        echo "FAIL: expected $1, got '$_ex_got' from: $3"
    fi
}
