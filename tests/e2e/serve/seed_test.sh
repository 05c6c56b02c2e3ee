#!/bin/sh
# seed_test.sh: the four example requests of the REST API, answered about
# serve_prog.c, whose plan (its header) gives the right answers by name.
#
# usage: seed_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rh_setup
rh_serve "$DB"

# 1. the three biggest allocations: big_block's 300000, 200000, 100000, leaked
eq "1 status" "$(get "/data/0/allocations?sort_by=size&order=dsc&count=3")" 200
eq "1 sizes" "$(jq -r '[.allocations[].size]|join(",")' "$W/body")" "300000,200000,100000"
eq "1 call sites" "$(jq -r '[.allocations[]|.backtrace[.callsite].function]|join(",")' "$W/body")" \
    "big_block,big_block,big_block"
eq "1 never freed" "$(jq -r '[.allocations[].deallocation]|join(",")' "$W/body")" ",,"
eq "1 total_count" "$(jq .total_count "$W/body")" "$(sq "SELECT count(*) FROM allocations")"

# 2. groups of at least 10 allocations of which at least half leaked, by
# all.size (bytehound's default order, ascending): group_half (20 x 48, 10
# leaked) then group_hit (20 x 64, 12 leaked); group_miss leaked 25 %, and
# few_leaks and big_block have fewer than 10
eq "2 status" "$(get "/data/0/allocation_groups?group_allocations_min=10&group_leaked_allocations_min=50%25&sort_by=all.size&count=3")" 200
eq "2 sites" "$(jq -r '[.allocations[]|.backtrace[.callsite].function]|join(",")' "$W/body")" "group_half,group_hit"
eq "2 all.size" "$(jq -r '[.allocations[].all.size]|join(",")' "$W/body")" "960,1280"
eq "2 all.allocated_count" "$(jq -r '[.allocations[].all.allocated_count]|join(",")' "$W/body")" "20,20"
eq "2 all.leaked_count" "$(jq -r '[.allocations[].all.leaked_count]|join(",")' "$W/body")" "10,12"
eq "2 total_count" "$(jq .total_count "$W/body")" 2
get "/data/0/allocation_groups?group_allocations_min=10&group_leaked_allocations_min=50%25&sort_by=all.size&order=dsc&count=1" >/dev/null
eq "2 the biggest (order=dsc)" "$(jq -r '.allocations[0]|.backtrace[.callsite].function' "$W/body")" group_hit

# 3. the flamegraph of what leaked: every leaking site, nothing that was freed
LEAKED=$(sq "SELECT sum(size) || ' bytes, 100.00%, ' || count(*) || ' allocations' FROM allocations WHERE dealloc_after IS NULL")
eq "3 status" "$(get "/data/0/export/flamegraph?lifetime=only_leaked")" 200
eq "3 well-formed SVG" "$(xmllint --noout "$W/body" 2>&1 && echo ok)" ok
eq "3 root" "$(grep -c "<title>all ($LEAKED)</title>" "$W/body")" 1
for f in big_block group_hit group_half group_miss few_leaks; do
    eq "3 has $f" "$(grep -c "<title>$f (" "$W/body" | awk '{print ($1 > 0)}')" 1
done
eq "3 big_block's bytes" "$(grep -c '<title>big_block (600000 bytes' "$W/body")" 1
for f in temp_churn worker; do
    eq "3 has no $f" "$(grep -c "<title>$f (" "$W/body")" 0
done

# 4. the call tree of what leaked: size, count, leaked per frame
eq "4 status" "$(get "/data/0/allocation_ascii_tree?lifetime=only_leaked")" 200
eq "4 root" "$(awk '$4 == "all" {print $1, $2, $3}' "$W/body")" \
    "$(sq "SELECT sum(size) || ' ' || count(*) || ' ' || count(*) FROM allocations WHERE dealloc_after IS NULL")"
eq "4 big_block" "$(awk '$5 == "big_block" {print $1, $2, $3}' "$W/body")" "600000 3 3"
eq "4 group_hit" "$(awk '$5 == "group_hit" {print $1, $2, $3}' "$W/body")" "768 12 12"
eq "4 group_half" "$(awk '$5 == "group_half" {print $1, $2, $3}' "$W/body")" "480 10 10"
eq "4 group_miss" "$(awk '$5 == "group_miss" {print $1, $2, $3}' "$W/body")" "160 5 5"
eq "4 few_leaks" "$(awk '$5 == "few_leaks" {print $1, $2, $3}' "$W/body")" "640 5 5"
eq "4 no temp_churn" "$(grep -c temp_churn "$W/body")" 0
rh_stop

# a rip argument is converted beside it, and nothing that exists is overwritten
mkdir -p "$W/rip"
(cd "$W/rip" && RHEAPER_ENABLE=1 ../prog) || exit 1
set -- "$W"/rip/rip-*
RIP=$1
echo keep >"$RIP.db"
rh_serve "$RIP"
eq "rip: converted beside it" "$(grep -c "converting .* into $RIP.1.db" "$W/serve.err")" 1
eq "rip: the existing file is untouched" "$(cat "$RIP.db")" keep
eq "rip: served" "$(get /list; jq -r '.[0].allocations' "$W/body")" "200$(sq "SELECT count(*) FROM allocations")"
rh_stop

# a non-loopback address needs --any, which warns
"$BIN/rheaper" serve "$DB" --listen 0.0.0.0:0 >/dev/null 2>"$W/any.err" &
APID=$!
wait $APID
eq "non-loopback without --any" "$?" 2
eq "non-loopback: why" "$(grep -c 'not a loopback address' "$W/any.err")" 1
"$BIN/rheaper" serve "$DB" --listen 0.0.0.0:0 --any >"$W/any.out" 2>"$W/any.err" &
APID=$!
i=0
while [ $i -lt 100 ] && ! grep -q serving "$W/any.out"; do sleep 0.1; i=$((i + 1)); done
eq "--any warns" "$(grep -c 'no authentication' "$W/any.err")" 1
kill -INT $APID
wait $APID
eq "SIGINT stops it cleanly" "$?" 0
rh_done
