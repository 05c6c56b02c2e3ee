#!/bin/sh
# titled.sh BIN_DIR SRC_DIR WORK_DIR: the process title where the program set
# one: `live` on the running program, then `view` and `summary` on its
# converted profile, and the web UI's summary request (the card shows its
# title field) and /list (the profile picker shows it), all name the title.
set -eu
bin=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$bin/rheaper-cc" -O1 -g "$src/titled.c" -o prog
# an argument long enough for the title to fit over argv
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog 3 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx &
pid=$!
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
title="worker: pgtest postgres [local] idle"
sleep 1
RHEAPER_PROFILE_DIR="$work" "$bin/rheaper" live --once "$pid" > live.txt 2> live.err || true
head -n 1 live.txt
head -n 1 live.txt | grep -qF "$title" && ok || { bad "live shows no title"; cat live.txt live.err; }
RHEAPER_PROFILE_DIR="$work" "$bin/rheaper" live --once --json "$pid" 2>/dev/null |
    grep -qF "\"title\": \"$title\"" && ok || bad "live --json has no title"
wait "$pid"
rip=$(ls rip-* | head -n 1)
"$bin/rheaper-convert" --quiet "$rip" p.db
"$bin/rheaper" view --once p.db > view.txt
head -n 1 view.txt
head -n 1 view.txt | grep -qF "$title" && ok || { bad "view shows no title"; head -n 2 view.txt; }
"$bin/rheaper" summary p.db | grep -qF "title          $title" && ok || bad "summary shows no title"
port=$((20000 + $$ % 20000))
"$bin/rheaper" serve p.db --listen "127.0.0.1:$port" > serve.log 2>&1 &
spid=$!
got=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
    got=$(curl -s "http://127.0.0.1:$port/data/0/summary?" || true)
    [ -n "$got" ] && break
    sleep 0.3
done
list=$(curl -s "http://127.0.0.1:$port/list" || true)
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
printf '%s' "$got" | grep -qF "\"title\":\"$title\"" && ok || bad "serve's summary has no title: $got"
# the web UI's profile picker names each profile by its title (app.js)
printf '%s' "$list" | grep -qF "\"title\":\"$title\"" && ok || bad "serve's /list has no title: $list"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
