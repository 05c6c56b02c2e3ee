#!/bin/sh
# bad_test.sh: bad requests and heavy ones never crash or hang the server.
#
# usage: bad_test.sh BIN SRC WORK SLOW_CLIENT
# A fuzzed query string, a huge count, catastrophic and invalid regular
# expressions, paths with "..", clients that send half a request and wait,
# 8 clients at once for 20 s, and a query past its time budget. After each,
# the server must still answer /list.
BIN=$1 SRC=$2 W=$3 SLOW=$4
. "$SRC/lib.sh"
rh_setup
rh_serve "$DB" --row-cap 50

alive() {
    eq "still answering after $1" "$(get /list)" 200
}

# bad parameters: 400 with a JSON error naming the parameter
for p in size_min=abc size_max=-1 from=xyz to=150%25 lifetime=sometimes address_min=0x \
    backtrace_depth_max=zz lifetime_min=3parsecs group_allocations_min=10%25%25 \
    group_interval_max=1y order=up sort_by=colour count=-3 skip=x no_skip=maybe bogus=1; do
    name=${p%%=*}
    eq "$p status" "$(get "/data/0/allocations?$p")" 400
    eq "$p names it" "$(jq -r .parameter "$W/body")" "$name"
done
# the log speaks of URL parameters, never of the CLI's options
eq "the log names no CLI option" "$(grep -c -- "--[a-z]" "$W/serve.err")" 0
# the web UI's own endpoints refuse bad values the same way
for q in "sites?sort_by=colour:sort_by" "tree?kind=sideways:kind" "tree?kind=callers:function" \
    "tree?cpu=2:cpu" "tree?min_share=2:min_share" "site?location=x:function" \
    "export/flamegraph?mode=heat:mode" "diff/0?by=size:by" "diff/0?noise=101:noise" \
    "allocations?backtraces=999999:backtraces"; do
    path=${q%%:*} name=${q##*:}
    code=$(get "/data/0/$path")
    case $path in allocations*) want=404 ;; *) want=400 ;; esac
    eq "$path status" "$code" "$want"
    eq "$path names $name" "$(jq -r .parameter "$W/body")" "$name"
done
eq "a site not in the scope" "$(get "/data/0/site?function=nowhere&location=x.c:1")" 404
eq "unknown id" "$(get "/data/7/allocations")" 404
eq "unknown endpoint" "$(get "/data/0/nothing")" 404
eq "unknown page" "$(get "/nothing.html")" 404
eq "POST refused" "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x=1 "$B/list")" 405
alive "bad parameters"

# a fuzzed query string: random keys (known and not) and random bytes, which
# get 200 or 400 with valid JSON, never anything else
awk 'BEGIN {
    srand(15);
    split("from to lifetime address_min address_max size_min size_max lifetime_min lifetime_max backtrace_depth_min backtrace_depth_max function_regex source_regex negative_function_regex negative_source_regex group_interval_min group_interval_max group_allocations_min group_allocations_max group_leaked_allocations_min group_leaked_allocations_max sort_by order count skip thread skip_function no_skip kind x %00 %ff a[b]", keys, " ");
    split("0 1 7 50%25 100%25 -1 %25 %00 %ff%fe %C3%A9 only_leaked all.size dsc asc ( ) [ * + ? %5C1 .* a%7Cb 1ms 2h3m 0x10 18446744073709551615 99999999999999999999 %26 %3D = ; %20", vals, " ");
    for (i = 0; i < 300; i++) {
        q = "";
        n = 1 + int(rand() * 5);
        for (j = 0; j < n; j++) {
            k = keys[1 + int(rand() * length(keys))];
            v = "";
            m = int(rand() * 3);
            for (l = 0; l <= m; l++) v = v vals[1 + int(rand() * length(vals))];
            q = q (j ? "&" : "") k "=" v;
        }
        print q;
    }
}' >"$W/fuzz"
n=0
bad=0
while read -r qs; do
    for ep in allocations allocation_groups; do
        code=$(get "/data/0/$ep?$qs")
        n=$((n + 1))
        case $code in
        200 | 400) jq -e . "$W/body" >/dev/null 2>&1 || { bad=$((bad + 1)); echo "not JSON: $ep?$qs"; } ;;
        *) bad=$((bad + 1)); echo "status $code: $ep?$qs" ;;
        esac
    done
done <"$W/fuzz"
eq "fuzzed requests" "$n" 600
eq "fuzzed requests answered 200 or 400 with JSON" "$bad" 0
alive "the fuzzed query strings"

# a huge count is capped at the row cap, and says so
eq "huge count" "$(get "/data/0/allocations?count=9000000000000000")" 200
eq "huge count: rows" "$(jq '.allocations|length' "$W/body")" 50
eq "huge count: capped" "$(jq -r '"\(.capped) \(.row_cap)"' "$W/body")" "true 50"
eq "count past int64" "$(get "/data/0/allocations?count=99999999999999999999999")" 400
eq "huge skip" "$(get "/data/0/allocations?skip=4000000000000000000"; jq '.allocations|length' "$W/body")" 2000

# regular expressions: catastrophic ones stay polynomial (no backtracking
# engine), back-references, long and invalid ones are refused
for re in '(a%2B)%2B%24' '(a%7Caa)*b' '(.*)*x' '((a*)*)*%24' '(x%2Bx%2B)%2By'; do
    eq "catastrophic regex $re" "$(get "/data/0/allocations?function_regex=$re&count=1")" 200
done
eq "back-reference" "$(get "/data/0/allocations?function_regex=(a)%5C1")" 400
eq "back-reference: why" "$(jq -r .error "$W/body" | grep -c back-reference)" 1
eq "invalid regex" "$(get "/data/0/allocations?source_regex=(")" 400
eq "invalid regex names it" "$(jq -r .parameter "$W/body")" source_regex
long=$(awk 'BEGIN {for (i = 0; i < 300; i++) printf "a"}')
eq "too long regex" "$(get "/data/0/allocations?negative_function_regex=$long")" 400
eq "huge repetition" "$(get "/data/0/allocations?function_regex=a%7B1000%7D")" 400
alive "the regular expressions"

# paths with "..": refused, and nothing from disk is ever served
for p in /../etc/passwd /data/0/../../etc/passwd /%2e%2e/etc/passwd /..%2f..%2fetc/passwd /index.html/.. /../index.html; do
    code=$(curl -s --path-as-is -o "$W/body" -w '%{http_code}' "$B$p")
    eq "path $p refused" "$(echo "$code" | grep -c '^4')" 1
    eq "path $p: no file content" "$(grep -c 'root:' "$W/body")" 0
done
eq "the UI is served" "$(get /)" 200
alive "the paths"

# slowloris: 20 connections that send half a request and wait; the server
# answers others meanwhile and closes them after its connection timeout
PORT=${B##*:}
"$SLOW" "$PORT" 20 40 >"$W/slow.out" &
SLOWPID=$!
sleep 1
for i in 1 2 3 4 5; do
    eq "answering beside half requests ($i)" "$(get "/data/0/allocation_groups?count=2")" 200
done
wait $SLOWPID
eq "half requests closed by the server" "$?" 0
cat "$W/slow.out"
alive "the half requests"

# 8 clients at once for 20 s (SERVE_CLIENTS_SECONDS overrides the duration)
SECS=${SERVE_CLIENTS_SECONDS:-20}
end=$(($(date +%s) + SECS))
CLIENTS=""
for c in 1 2 3 4 5 6 7 8; do
    (
        ok=0 ko=0
        while [ "$(date +%s)" -lt $end ]; do
            for u in "/list" "/data/0/allocations?sort_by=size&order=dsc&count=3" \
                "/data/0/allocation_groups?group_allocations_min=10&group_leaked_allocations_min=50%25" \
                "/data/0/export/flamegraph?lifetime=only_leaked" "/data/0/timeline" \
                "/data/0/leaks" "/data/0/allocation_ascii_tree?function_regex=group"; do
                code=$(curl -s -g --max-time 60 -o /dev/null -w '%{http_code}' "$B$u")
                if [ "$code" = 200 ]; then ok=$((ok + 1)); else ko=$((ko + 1)); fi
            done
        done
        echo "$ok $ko" >"$W/client-$c"
    ) &
    CLIENTS="$CLIENTS $!"
done
# shellcheck disable=SC2086 # one pid per word; a bare `wait` would wait for the server too
wait $CLIENTS
for c in 1 2 3 4 5 6 7 8; do
    read -r ok ko <"$W/client-$c"
    eq "client $c: some answers" "$([ "$ok" -gt 0 ] && echo yes)" yes
    eq "client $c: no failures" "$ko" 0
done
alive "8 clients for $SECS s"
rh_stop

# the time budget: a query over 200000 rows with a 10 ms budget answers 503
# and says why; the server answers the next request
rh_record "$W/many.db" many
rh_serve "$W/many.db" --budget-ms 10
code=$(get "/data/0/allocations?lifetime_min=0&sort_by=size&order=dsc&count=5")
eq "over budget" "$code" 503
eq "over budget: why" "$(jq -r .error "$W/body" | grep -c 'time budget of 10 ms')" 1
eq "after the budget" "$(get /list)" 200
rh_stop
rh_done
