#!/bin/sh
# bytehound_test.sh: bytehound's own client calls against `rheaper serve`.
#
# usage: bytehound_test.sh BIN SRC WORK
# bytehound_prog.c (its plan is in its header) is built with rheaper-cc,
# recorded and served on port 0. This script makes the REST calls bytehound's
# client makes (its integration tests' analyze(): /list, /data/last/
# allocations, /data/last/allocation_groups, /data/last/maps?with_regions=
# true&with_usage_history=true; and the web UI's filters, sorting, paging and
# one map by id) with curl, checks each answer's status, content type and that
# no integer field is written as a fraction, and bytehound_checks.jq checks
# every field's type against bytehound's protocol and the values against the
# plan. It prints one line per failed check and the count of checks.
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rm -rf "$W"
mkdir -p "$W/rec" "$W/ans"
"$BIN/rheaper-cc" -O0 -pthread -o "$W/bytehound_prog" "$SRC/bytehound_prog.c" || { echo "rheaper-cc failed"; exit 1; }
(cd "$W/rec" && RHEAPER_ENABLE=1 ../bytehound_prog) || { echo "bytehound_prog failed"; exit 1; }
set -- "$W"/rec/rip-*
"$BIN/rheaper" convert "$1" "$W/b.db" --quiet --force || { echo "convert failed"; exit 1; }
DB=$W/b.db
PAGE=$(getconf PAGESIZE)
rh_serve "$DB"

# fetch NAME PATH: GETs $B$PATH into $W/ans/NAME.json; checks the status, the
# content type and that every number written with a fraction or an exponent
# is one of bytehound's f32 fields (jq reads 3.0 as 3, so it cannot tell).
fetch() {
    f=$W/ans/$1.json
    got=$(curl -s -g --max-time 60 -o "$f" -w '%{http_code} %{content_type}' "$B$2")
    eq "$2: status" "${got%% *}" 200
    eq "$2: content type" "${got#* }" application/json
    frac=$(grep -oE '"[A-Za-z_]+": *-?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?' "$f" |
        grep -E ':[^"]*[.eE]' | grep -vE '^"[a-z_]*timestamp_relative_p":' | head -3 | tr '\n' ' ')
    eq "$2: integer fields written as integers" "$frac" ""
}

fetch list /list
fetch allocs /data/last/allocations
fetch size '/data/last/allocations?size_min=123456&size_max=123456'
fetch foobar1 '/data/last/allocations?function_regex=%5Efoobar_1%24'
fetch seven '/data/last/allocations?function_regex=%5Eseven%24&count=3&skip=5&sort_by=timestamp'
fetch top '/data/last/allocations?sort_by=size&order=dsc&count=1'
fetch leak2 '/data/last/allocations?lifetime=only_leaked&function_regex=%5Efoobar_2%24'
fetch leakgrow '/data/last/allocations?lifetime=only_leaked&function_regex=%5Egrow'
fetch groups /data/last/allocation_groups
fetch maps '/data/last/maps?with_regions=true&with_usage_history=true'
# one map by id: the 5-page map's, as the web UI asks for it
id=$(jq --argjson page "$PAGE" '[.maps[] | select(.size == 5 * $page)][0].id // empty' "$W/ans/maps.json")
: >"$W/ans/one.json"
[ -z "$id" ] || fetch one "/data/last/maps?id=$id"

set --
for n in list allocs size foobar1 seven top leak2 leakgrow groups maps one; do
    set -- "$@" --slurpfile "$n" "$W/ans/$n.json"
done
jq -n -r --argjson page "$PAGE" "$@" -f "$SRC/bytehound_checks.jq" >"$W/checks.out" 2>"$W/checks.err"
eq "bytehound_checks.jq exit status" "$?" 0
cat "$W/checks.err"
grep '^FAIL: ' "$W/checks.out"
summary=$(tail -n 1 "$W/checks.out")
echo "bytehound_checks.jq: $summary"
n=$(echo "$summary" | sed -n 's/^\([0-9]*\) checks, \([0-9]*\) failed$/\1/p')
nf=$(echo "$summary" | sed -n 's/^\([0-9]*\) checks, \([0-9]*\) failed$/\2/p')
if [ -z "$n" ]; then
    fail "bytehound_checks.jq printed no summary"
else
    CHECKS=$((CHECKS + n))
    FAILS=$((FAILS + nf))
fi
rh_stop
rh_done
