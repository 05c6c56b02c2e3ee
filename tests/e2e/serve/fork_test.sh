#!/bin/sh
# fork_test.sh: the server's charts and a site's detail on a fork child's
# profile, whose inherited stacks have ids from 2^40 (fork_prog.c's plan).
#
# usage: fork_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rm -rf "$W" && mkdir -p "$W/rec"
"$BIN/rheaper-cc" -O1 -o "$W/prog" "$SRC/fork_prog.c" || { echo "FAIL: rheaper-cc failed"; exit 1; }
(cd "$W/rec" && RHEAPER_ENABLE=1 ../prog) || { echo "FAIL: fork_prog failed"; exit 1; }
DB=
for r in "$W"/rec/rip-*; do
    "$BIN/rheaper" convert "$r" "$r.db" --quiet --force || { echo "FAIL: convert $r failed"; exit 1; }
    [ -n "$(sqlite3 "$r.db" "SELECT value FROM meta WHERE key = 'inherited_from'")" ] && DB=$r.db
done
[ -n "$DB" ] || { echo "FAIL: no profile names its parent's"; exit 1; }
eq "inherited stacks" "$(sq "SELECT count(*) > 0 FROM stacks WHERE id >= 1099511627776")" 1
rh_serve "$DB"

eq "/timeline_allocations status" "$(get '/data/0/timeline_allocations')" 200
eq "/timeline_allocations last total" "$(jq '.total[-1]' "$W/body")" \
    "$(sq "SELECT count(*) FROM allocations")"
eq "/timeline_allocations child_alloc's series" \
    "$(jq '[.series[] | select(.function == "child_alloc") | .values[-1]] | .[0]' "$W/body")" 30
eq "/timeline_sites status" "$(get '/data/0/timeline_sites')" 200
eq "/timeline_sites series" "$(jq '[.series[] | select(.function == "child_alloc")] | length' "$W/body")" 1
loc=$(sq "SELECT b.file FROM allocations a JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0
          WHERE a.size = 300 LIMIT 1" | sed 's|.*/||'):$(sq "SELECT b.line FROM allocations a
          JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 WHERE a.size = 300 LIMIT 1")
eq "/site status" "$(get "/data/0/site?function=child_alloc&location=$loc")" 200
eq "/site blocks" "$(jq '.figures[0].count' "$W/body")" 30
eq "/site leaked" "$(jq '.figures[0].leaked_blocks' "$W/body")" 20
rh_stop
rh_done
