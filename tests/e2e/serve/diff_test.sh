#!/bin/sh
# diff_test.sh: `rheaper diff A B` (text, --json, --csv) and the server's
# /diff on two runs of serve_prog.c that differ by a known leak: the second
# run ("leak") adds extra_leak (10 x 1000 bytes, never freed) and few_leaks
# leaks 10 blocks of 128 bytes instead of 5. Every other site of the plan is
# the same in both.
#
# usage: diff_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
rh_setup
A=$W/a.db
Bdb=$W/b.db

# --json: the statuses and figures of the plan's sites
"$BIN/rheaper" diff "$A" "$Bdb" --json --all >"$W/d.json" 2>"$W/d.err"
eq "diff --json exit" "$?" 0
site() { jq -r --arg f "$1" '.[]|select(.function == $f)|"\(.status) \(.a_count) \(.b_count) \(.a_leaked_bytes) \(.b_leaked_bytes)"' "$W/d.json"; }
eq "extra_leak appeared" "$(site extra_leak)" "appeared 0 10 0 10000"
eq "few_leaks grew" "$(site few_leaks)" "grew 5 10 640 1280"
for f in big_block group_hit group_half group_miss temp_churn worker; do
    eq "$f same" "$(site $f | cut -d' ' -f1)" same
done
eq "the first row is the new leak" "$(jq -r '.[0].function' "$W/d.json")" extra_leak
# the other way round
"$BIN/rheaper" diff "$Bdb" "$A" --json >"$W/r.json" 2>/dev/null
eq "reversed: vanished" "$(jq -r '.[]|select(.function == "extra_leak")|.status' "$W/r.json")" vanished
eq "reversed: shrank" "$(jq -r '.[]|select(.function == "few_leaks")|.status' "$W/r.json")" shrank
eq "without --all, no unchanged site" "$(jq '[.[]|select(.status == "same")]|length' "$W/r.json")" 0

# text and CSV say the same
"$BIN/rheaper" diff "$A" "$Bdb" >"$W/d.txt" 2>/dev/null
eq "text: extra_leak" "$(awk '$NF ~ /serve_prog/ && $(NF-1) == "extra_leak" {print $1, $2, $3, $6}' "$W/d.txt")" "appeared 10 +10 +10000"
eq "text: few_leaks" "$(awk '$(NF-1) == "few_leaks" {print $1, $2, $3, $6}' "$W/d.txt")" "grew 10 +5 +640"
"$BIN/rheaper" diff "$A" "$Bdb" --csv >"$W/d.csv" 2>/dev/null
eq "csv header" "$(head -1 "$W/d.csv")" \
    "status,function,location,a_count,b_count,a_bytes,b_bytes,a_leaked_blocks,b_leaked_blocks,a_leaked_bytes,b_leaked_bytes,delta_leaked_bytes,a_peak_bytes,b_peak_bytes,delta_peak_bytes"
eq "csv: extra_leak" "$(grep '^appeared,extra_leak,' "$W/d.csv" | cut -d, -f4-12)" "0,10,0,10000,0,10,0,10000,10000"
# --by peak: ranked by the change of the bytes each site held at its
# profile's peak, which the profiles' own aggregates give
"$BIN/rheaper" diff "$A" "$Bdb" --json --all --by peak >"$W/p.json" 2>/dev/null
eq "diff --by peak exit" "$?" 0
eq "--by peak: extra_leak held its 10000 bytes at B's peak" \
    "$(jq -r '.[]|select(.function == "extra_leak")|"\(.a_peak_bytes) \(.b_peak_bytes) \(.delta_peak_bytes)"' "$W/p.json")" "0 10000 10000"
eq "--by peak: the largest change first" \
    "$(jq '[.[]|.delta_peak_bytes|fabs]|(.[0] == max)' "$W/p.json")" true
DB=$Bdb
eq "--by peak: B's figure is stack_stats'" \
    "$(jq -r '.[]|select(.function == "big_block")|.b_peak_bytes' "$W/p.json")" \
    "$(sq "SELECT sum(peak_bytes) FROM stack_stats WHERE bt IN (SELECT bt FROM stack_stats s JOIN backtraces b ON b.id = s.bt WHERE b.sym = 'big_block')")"
DB=$A
# a noise threshold of 100 % leaves only what appeared or vanished
"$BIN/rheaper" diff "$A" "$Bdb" --json --noise 100 >"$W/n.json" 2>/dev/null
eq "--noise 100" "$(jq -r '[.[]|"\(.function):\(.status)"]|join(",")' "$W/n.json")" "extra_leak:appeared"
"$BIN/rheaper" diff "$A" "$Bdb" --by size 2>/dev/null
eq "--by size is a usage error" "$?" 2
# filters apply to both sides: only blocks of 1000 bytes
"$BIN/rheaper" diff "$A" "$Bdb" --json --min-size 1000 --max-size 1000 >"$W/f.json" 2>/dev/null
eq "filtered diff" "$(jq -r '[.[]|.function]|join(",")' "$W/f.json")" extra_leak
# bad input
"$BIN/rheaper" diff "$A" 2>/dev/null
eq "one profile is a usage error" "$?" 2
"$BIN/rheaper" diff "$A" "$W/missing.db" 2>/dev/null
eq "a missing profile fails" "$?" 1

# the server's /diff is the same computation
rh_serve "$A" "$Bdb"
eq "/diff status" "$(get "/data/0/diff/1")" 200
eq "/diff extra_leak" "$(jq -r '.sites[]|select(.function == "extra_leak")|"\(.status) \(.a.count) \(.b.count) \(.b.leaked_size)"' "$W/body")" "appeared 0 10 10000"
eq "/diff few_leaks" "$(jq -r '.sites[]|select(.function == "few_leaks")|"\(.status) \(.a.leaked_count) \(.b.leaked_count)"' "$W/body")" "grew 5 10"
eq "/diff/last is /diff/1" "$(get "/data/0/diff/last"; jq -r '.sites[0].function' "$W/body")" "200extra_leak"
eq "/diff unknown other" "$(get "/data/0/diff/7")" 404
eq "/diff?by=peak: deltas and peaks" "$(get "/data/0/diff/1?by=peak"; jq -r '"\(.by) \(.peak.b > 0) \((.sites[0].delta.peak_size|fabs) == ([.sites[].delta.peak_size|fabs]|max))"' "$W/body")" "200peak true true"
eq "/diff?noise=x" "$(get "/data/0/diff/1?noise=x"; jq -r .parameter "$W/body")" "400noise"
eq "/diff with a filter" "$(get "/data/0/diff/1?size_min=1000&size_max=1000"; jq -r '[.sites[].function]|join(",")' "$W/body")" "200extra_leak"
rh_stop
rh_done
