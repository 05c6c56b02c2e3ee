#!/bin/sh
# execself.sh BIN_DIR SRC_DIR WORK_DIR: `rheaper list` on the profiles of a
# process that exec'd itself: the first image is exec'd and listed right
# before the second, which is complete; both have the same pid; no row is
# damaged; each image's rows are its own (10 and 20 allocations).
# With `orphan` (execself.sh BIN SRC WORK orphan): the process forks, the
# parent exits and the child execs itself once orphaned, so the new image's
# parent is not the one the old image's profile names; the exec'd trailer and
# the times join them all the same (the parent's own profile is a third row).
set -eu
bin=$1 src=$2 work=$3 mode=${4:-}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$bin/rheaper-cc" -O1 -g "$src/execself.c" -o prog
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work" ./prog $mode
if [ "$mode" = orphan ]; then
    # the child goes on after its parent: wait for its new image's trailer
    for _ in $(seq 100); do
        "$bin/rheaper" list "$work" 2>/dev/null | grep -q "complete .*rip-[0-9]*\.1 " && break
        sleep 0.1
    done
    # the parent's profile is the one without a new image
    mkdir parent alone
    for f in rip-*; do
        case $f in *.1) ;; *) [ -e "$f.1" ] || mv "$f" parent/ ;; esac
    done
    # joining needs the old image's trailer to say it ended in an exec: alone
    # in a directory, list has nothing to infer it from
    for f in rip-*; do
        case $f in *.*) ;; *) cp "$f" alone/ ;; esac
    done
    if ! "$bin/rheaper" list alone | grep -q "exec'd"; then
        echo "SKIP: this runtime does not mark an exec's end in the trailer"
        exit 77
    fi
fi
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
"$bin/rheaper" list "$work" > list.txt
cat list.txt
n=$(ls rip-* | wc -l)
[ "$n" -eq 2 ] && ok || bad "expected 2 profiles, got $n"
grep -q damaged list.txt && bad "a damaged row" || ok
first=$(sed -n 2p list.txt) second=$(sed -n 3p list.txt)
case "$first" in *"exec'd"*rip-[0-9]*) ok ;; *) bad "first row not exec'd: $first" ;; esac
case "$second" in *complete*rip-[0-9]*.1*) ok ;; *) bad "second row not the new image: $second" ;; esac
p1=$(echo "$first" | awk '{print $1}') p2=$(echo "$second" | awk '{print $1}')
[ "$p1" = "$p2" ] && ok || bad "pids differ: $p1 $p2"
"$bin/rheaper" list --json "$work" | grep -c "\"state\": \"exec'd\"" | grep -qx 1 && ok || bad "json state"
for f in rip-*; do
    case "$f" in *.db) continue ;; esac
    "$bin/rheaper-convert" --quiet "$f" "$f.db" || { bad "convert $f"; continue; }
done
a=$(sqlite3 "rip-$p1.db" "SELECT count(*) FROM allocations WHERE size BETWEEN 100 AND 119" 2>/dev/null || echo x)
b=$(sqlite3 "rip-$p1.1.db" "SELECT count(*) FROM allocations WHERE size BETWEEN 100 AND 119" 2>/dev/null || echo x)
[ "$a" = 10 ] && ok || bad "first image rows: $a"
[ "$b" = 20 ] && ok || bad "second image rows: $b"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
