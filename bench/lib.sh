# bench/lib.sh: the helpers the benchmark scripts share. Source it first:
#
#     . "$(dirname "$0")/lib.sh"
#
# rh_median [FMT]    the median of the numbers on stdin (one per line, or
#                    separated by blanks), printed with printf FMT (default
#                    %.10g); "-" when there is none. The convention, for every
#                    benchmark: an odd count gives the middle value, an even
#                    count the mean of the two middle values (so 4 rounds of
#                    1 2 3 10 give 2.5, never the lower or upper middle alone).
# rh_min, rh_max     the least and the largest number on stdin ("-": none).
# rh_col FILE KEY K  column K of the lines of FILE whose first field is KEY.
# rh_loadavg         the 1, 5 and 15 minute load averages of the machine.
#
# POSIX sh and awk only; every benchmark's figures go through these, so two
# tables never disagree on what "median" means.

# the numbers of stdin, one per line, sorted (general numeric: 1e3 too)
rh_bench_sorted() { tr -s ' \t' '\n\n' | grep -v '^$' | sort -g; }

rh_median() {
    rh_bench_sorted | awk -v fmt="${1:-%.10g}" '{ v[NR] = $1 } END {
        if (!NR) { print "-"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf fmt "\n", m }'
}

rh_min() { rh_bench_sorted | awk 'NR == 1 { print; f = 1 } END { if (!f) print "-" }'; }
rh_max() { rh_bench_sorted | awk '{ l = $1 } END { print NR ? l : "-" }'; }

rh_col() { awk -v key="$2" -v k="$3" '$1 == key { print $k }' "$1"; }

rh_loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
