#!/bin/sh
# expect.sh: the reader of expect.h's EXPECT lines, sourced by check.sh and
# tests/reliability/run.sh.
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
