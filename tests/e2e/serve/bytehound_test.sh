#!/bin/sh
# bytehound_test.sh: bytehound's own client calls against `rheaper serve`.
#
# usage: bytehound_test.sh BIN SRC WORK
# bytehound_prog.c (its plan is in its header) is built with rheaper-cc,
# recorded and served on port 0; bytehound_client.py makes the calls
# bytehound's client makes and checks every field's type against bytehound's
# protocol and the values against the plan.
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rm -rf "$W"
mkdir -p "$W/rec"
"$BIN/rheaper-cc" -O0 -pthread -o "$W/bytehound_prog" "$SRC/bytehound_prog.c" || { echo "rheaper-cc failed"; exit 1; }
(cd "$W/rec" && RHEAPER_ENABLE=1 ../bytehound_prog) || { echo "bytehound_prog failed"; exit 1; }
set -- "$W"/rec/rip-*
"$BIN/rheaper" convert "$1" "$W/b.db" --quiet --force || { echo "convert failed"; exit 1; }
DB=$W/b.db
rh_serve "$DB"
python3 "$SRC/bytehound_client.py" "$B" "$(getconf PAGESIZE)"
eq "bytehound_client.py" "$?" 0
rh_stop
rh_done
