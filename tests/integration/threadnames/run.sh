#!/bin/sh
# run.sh: thread names as the program set them (names.c): four workers named
# by main after they started and allocated, one that renamed itself after its
# first allocation, all still running at exit, and one named by main that
# exited first. The profile's threads table holds exactly the names the
# program printed, by tid, for a local file and for a stream.
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR CASE
set -u
bin=$1 src=$2 work=$3 case=$4
CASE=$case RH_DUMP="prog.err conv.err"
. "$(dirname "$0")/../../lib/check.sh"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

"$bin/rheaper-cc" -O2 -pthread -o names "$src/names.c" || fail "rheaper-cc failed"
case $case in
local)
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./names > out.txt 2> prog.err || fail "the program failed"
    ;;
stream)
    "$bin/rheaper" collect --listen 127.0.0.1:0 --dir "$work" > collect.out 2> collect.err &
    SPID=$!
    port=
    for i in $(seq 100); do
        port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' collect.out)
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || fail "rheaper collect did not start"
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$port ./names > out.txt 2> prog.err || fail "the program failed"
    kill "$SPID"; wait "$SPID"; SPID=
    ;;
*) fail "unknown case" ;;
esac
rip=$(ls rip-* | head -1)
[ -n "$rip" ] || fail "no profile"
"$bin/rheaper-convert" --quiet "$rip" p.db 2> conv.err || fail "conversion failed"
n=$(grep -c '^THREAD ' out.txt)
[ "$n" = 7 ] && ok || fail "the program printed $n threads, expected 7"
while read -r tag tid want; do
    [ "$tag" = THREAD ] || continue
    got=$(sqlite3 p.db "SELECT group_concat(name, '|') FROM threads WHERE tid = $tid")
    expect "thread $tid's name" "$got" "$want"
done < out.txt
checks_done
