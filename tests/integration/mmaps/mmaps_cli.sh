#!/bin/sh
# mmaps_cli.sh: `rheaper mmaps` against the database of mmaps-dynamic.
#
#   mmaps_cli.sh BIN_DIR WORK_DIR (mmaps-dynamic's work dir)
#
# The listing has one line per row of the mmaps table, in id order, with the
# table's op, length and calling function; --mallopts lists the mallopts
# table; --json gives the same rows as a JSON array; a database without the
# tables (a profile converted before version 3) lists nothing and succeeds.
set -eu
bin=$1 work=$2
db=$(ls "$work"/rip-*.db | head -n 1)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

n=$(sqlite3 "$db" "SELECT count(*) FROM mmaps")
[ "$n" -gt 0 ] || bad "no mmaps rows in $db"
"$bin/rheaper" mmaps "$db" --csv > csv.out
[ "$(($(wc -l < csv.out) - 1))" = "$n" ] || bad "--csv: $(wc -l < csv.out) lines for $n rows"
want=$(sqlite3 -csv "$db" "SELECT m.id, m.op, m.length, b.sym FROM mmaps m JOIN backtraces b
    ON b.id = m.stack_id AND b.frame_no = 0 ORDER BY m.id")
got=$(awk -F, 'NR > 1 { print $1 "," $4 "," $6 "," $15 }' csv.out)
[ "$got" = "$want" ] || bad "--csv rows differ: got [$got] want [$want]"
"$bin/rheaper" mmaps "$db" > text.out
[ "$(($(wc -l < text.out) - 1))" = "$n" ] || bad "text: $(wc -l < text.out) lines for $n rows"
grep -q ' mremap .* main ' text.out || bad "text: no mremap line naming main"
"$bin/rheaper" mmaps --mallopts "$db" --json > json.out
[ "$(grep -c '"param":' json.out)" = "$(sqlite3 "$db" "SELECT count(*) FROM mallopts")" ] ||
    bad "--mallopts --json: $(grep -c '"param":' json.out) objects"
"$bin/rheaper" mmaps -n 2 "$db" --csv > two.out
[ "$(wc -l < two.out)" = 3 ] || bad "-n 2: $(wc -l < two.out) lines"

cp "$db" old.db
sqlite3 old.db "DROP TABLE mmaps; DROP TABLE mallopts"
"$bin/rheaper" mmaps old.db > old.out || bad "a database without the tables: exit $?"
[ "$(wc -l < old.out)" -le 1 ] || bad "a database without the tables listed rows"
"$bin/rheaper" mmaps --mallopts old.db --json > old.json || bad "--mallopts on an old database"
echo "mmaps_cli: $([ $fail = 0 ] && echo ok || echo failed)"
exit $fail
