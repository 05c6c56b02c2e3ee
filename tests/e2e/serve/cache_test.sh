#!/bin/sh
# cache_test.sh: the answer cache of `rheaper serve` (rh_serve_cache.c). A
# question asked again, with its parameters in another order, is a hit
# (header X-Rheaper-Cache) whose body is byte for byte the answer a server
# without the cache computes; another question, an error and a second
# profile are not confused with it; --no-cache sends no header.
#
# usage: cache_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rh_setup
hget() { # PATH OUT: the body into OUT, prints "STATUS CACHE-HEADER"
    curl -s -g --max-time 60 -D "$W/h" -o "$2" -w '%{http_code}' "$B$1" >"$W/st"
    printf '%s %s' "$(cat "$W/st")" "$(sed -n 's/^X-Rheaper-Cache: \([a-z]*\).*/\1/Ip' "$W/h")"
}
Q1="/data/0/allocation_groups?size_min=40&sort_by=all.size&order=dsc&count=3"
Q1b="/data/0/allocation_groups?count=3&order=dsc&sort_by=all.size&size_min=40"
Q2="/data/0/allocation_groups?size_min=41&sort_by=all.size&order=dsc&count=3"

rh_serve "$W/a.db" "$W/b.db"
eq "first ask: computed" "$(hget "$Q1" "$W/c1")" "200 miss"
eq "asked again, parameters reordered: a hit" "$(hget "$Q1b" "$W/c2")" "200 hit"
eq "the hit's body is the computed one" "$(cmp -s "$W/c1" "$W/c2" && echo same)" same
eq "another filter: computed" "$(hget "$Q2" "$W/c3")" "200 miss"
eq "another profile, same question: computed" "$(hget "/data/1/allocation_groups?size_min=40&sort_by=all.size&order=dsc&count=3" "$W/c4")" "200 miss"
eq "the other profile's answer differs (the leak run)" "$(cmp -s "$W/c1" "$W/c4" && echo same)" ""
eq "a bad request is not kept" "$(hget "/data/0/allocations?size_min=x" "$W/e1") $(hget "/data/0/allocations?size_min=x" "$W/e2")" \
    "400 miss 400 miss"
eq "a hit of /list" "$(hget /list "$W/l1") $(hget /list "$W/l2")" "200 miss 200 hit"
rh_stop

rh_serve "$W/a.db" "$W/b.db" --no-cache
eq "--no-cache: no header" "$(hget "$Q1b" "$W/n1") $(hget "$Q1b" "$W/n2")" "200  200 "
eq "--no-cache computes the answer the cache kept" "$(cmp -s "$W/c1" "$W/n1" && echo same)" same
rh_stop
rh_done
