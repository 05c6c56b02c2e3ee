#!/bin/sh
# query_project.sh: a projection of the query benchmark's figures to a larger
# profile (docs/benchmarks.md, "Query benchmark").
#
#   sh bench/query_project.sh SMALL.md N_SMALL LARGE.md N_LARGE N_TARGET
#
# SMALL.md and LARGE.md are OUT/query-results.md of bench/query.sh on two
# conversions of the same workload with N_SMALL and N_LARGE allocations (the
# same build). For every filter set and column the two share, it prints the
# cost at N_TARGET allocations on the line through the two figures,
# c(N) = c_large + (c_large - c_small) * (N - N_large) / (N_large - N_small),
# and never less than c_large (a cost that fell between the two sizes is
# noise at the 10 ms tick, not a trend). A cell is "?" when either figure is
# missing or was cut ("> S", "failed", "-"). Cells keep the three decimals of
# bench/query.sh; the RSS and load columns are left out (a reader's RSS is
# mostly the pages of the mapped database it touched, bounded by the map,
# not a line). Prints a markdown table.
set -eu
[ $# = 5 ] || { echo "usage: query_project.sh SMALL.md N_SMALL LARGE.md N_LARGE N_TARGET" >&2; exit 2; }
for f in "$1" "$3"; do
    [ -f "$f" ] || { echo "query_project.sh: $f: no such file" >&2; exit 1; }
done
for n in "$2" "$4" "$5"; do
    case $n in '' | *[!0-9]*) echo "query_project.sh: $n: not a count" >&2; exit 2 ;; esac
done
[ "$4" -gt "$2" ] || { echo "query_project.sh: N_LARGE must be larger than N_SMALL" >&2; exit 2; }
awk -v ns="$2" -v nl="$4" -v nt="$5" '
# the table of a results file: the first one whose header starts "| filter |"
function cells(line, out,   n, i, a, c) {
    n = split(line, a, "|")
    for (i = 2; i < n; i++) { c = a[i]; gsub(/^ +| +$/, "", c); out[i - 1] = c }
    return n - 2
}
FNR == 1 { file++; intable = 0; done = 0 }
done { next }
/^\| filter \|/ { if (!intable) { intable = 1; nh = cells($0, h); for (i = 1; i <= nh; i++) head[file, i] = h[i]; nhead[file] = nh; next } }
intable && /^\|---/ { next }
intable && /^\| / { k = cells($0, r); for (i = 2; i <= k; i++) val[file, r[1], head[file, i]] = r[i]
    if (file == 2) rows[++nrows] = r[1]; next }
intable { done = 1 }
function num(c,   d) { d = c; sub(/ \([0-9]+\)$/, "", d); return d ~ /^[0-9]+(\.[0-9]+)?$/ ? d + 0 : -1 }
END {
    printf "| filter |"
    m = 0
    for (i = 2; i <= nhead[2]; i++) {
        c = head[2, i]
        if (c == "load" || c ~ /RSS/) continue
        for (j = 2; j <= nhead[1]; j++) if (head[1, j] == c) { cols[++m] = c; printf " %s |", c; break }
    }
    printf "\n|---|"
    for (i = 1; i <= m; i++) printf "---|"
    printf "\n"
    for (ri = 1; ri <= nrows; ri++) {
        name = rows[ri]
        if (!((1, name, cols[1]) in val)) continue
        printf "| %s |", name
        for (i = 1; i <= m; i++) {
            a = num(val[1, name, cols[i]]); b = num(val[2, name, cols[i]])
            if (a < 0 || b < 0) { printf " ? |"; continue }
            p = b + (b - a) * (nt - nl) / (nl - ns)
            if (p < b) p = b
            printf " %.3f |", p
        }
        printf "\n"
    }
}' "$1" "$3"
