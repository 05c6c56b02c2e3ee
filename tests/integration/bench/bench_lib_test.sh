#!/bin/sh
# bench_lib_test.sh SRC: the benchmarks' shared helpers (bench/lib.sh) give
# the figures their convention promises: the median of an odd count is the
# middle value, of an even count the mean of the two middle values, "-" for
# none; rh_min, rh_max and rh_col on known inputs.
set -eu
CASE=bench-lib
. "$1/tests/lib/check.sh"
. "$1/bench/lib.sh"
W=${TMPDIR:-/tmp}/rh-bench-lib.$$
mkdir -p "$W"
trap 'rm -rf "$W"' EXIT

eq "median of 3 1 2" "$(printf '3\n1\n2\n' | rh_median)" 2
eq "median of 1 2 3 10 (even: mean of 2 and 3)" "$(echo 10 3 1 2 | rh_median)" 2.5
eq "median of 7 rounds" "$(echo 9 1 8 2 7 3 6 | rh_median)" 6
eq "median of none" "$(printf '' | rh_median)" -
eq "median keeps large values whole" "$(echo 1234567 1234568 | rh_median)" 1234567.5
eq "median with a format" "$(echo 1.5 2.25 | rh_median %.3f)" 1.875
eq "median sorts numerically, exponents too" "$(echo 2e3 30 100 | rh_median)" 100
eq "min" "$(echo 5 1e3 -2 | rh_min)" -2
eq "max" "$(echo 5 1e3 -2 | rh_max)" 1e3
eq "min of none" "$(printf '' | rh_min)" -
printf 'plain 1.0 9\nfull 2.0 8\nplain 3.0 7\nplainer 50 50\n' >"$W/runs"
eq "rh_col takes the lines of one key" "$(rh_col "$W/runs" plain 2 | tr '\n' ' ')" "1.0 3.0 "
eq "median of a column" "$(rh_col "$W/runs" plain 3 | rh_median)" 8
eq "rh_loadavg has three fields" "$(rh_loadavg | awk '{ print NF }')" 3
checks_done
