# serve_test.sh: `rheaper serve` against a hostile local user and hostile
# web pages. Root serves a profile on 127.0.0.1; nobody (setpriv) sends:
# requests under foreign Host names (DNS rebinding), pathological regular
# expressions, 300 half requests, one request trickled a header at a time,
# a kept-alive connection that asks nothing more, and a crowd larger than the
# connection table. Each step is bounded by
# `timeout`; the figures are printed.
#
# usage: sh serve_test.sh BIN SRC WORK HOSTILE
BIN=$1 SRC=$2 W=$3 HOSTILE=$4 CASE=serve
. "$SRC/lib.sh"
sec_setup
RH_DUMP="$W/serve.err"

sec_record "$W/a.rip"
"$BIN/rheaper" convert "$W/a.rip" "$W/a.db" --quiet || fail "convert failed"
"$BIN/rheaper" serve "$W/a.db" --listen 127.0.0.1:0 --allow-host profiles.example \
    --budget-ms 3000 >"$W/serve.out" 2>"$W/serve.err" &
SPID=$!
i=0
PORT=""
while [ $i -lt 100 ] && [ -z "$PORT" ]; do
    PORT=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$W/serve.out" 2>/dev/null)
    [ -n "$PORT" ] || sleep 0.1
    i=$((i + 1))
done
[ -n "$PORT" ] || fail "the server did not start"
B=http://127.0.0.1:$PORT

# code HOST PATH: the status of GET PATH with that Host header, as nobody
code() {
    rm -f "$BODY"
    AS curl -s -g --max-time 10 -o "$BODY" -w '%{http_code}' -H "Host: $1" "$B$2"
}

# ---- Host: only this server's names ----
for h in attacker.example "attacker.example:$PORT" profiles.example.attacker.example \
    127.0.0.1.attacker.example "localhost.attacker.example" "[::2]:$PORT" 10.1.2.3 "x:y:z"; do
    expect "Host $h refused" "$(code "$h" /data/0/allocations)" 403
    expect "Host $h: no profile data" "$(grep -c '"allocations"' "$BODY")" 0
done
expect "Host attacker.example on the UI" "$(code attacker.example /)" 403
expect "empty Host" "$(AS curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'Host;' "$B/list")" 403
for h in "127.0.0.1:$PORT" 127.0.0.1 localhost "localhost:$PORT" LOCALHOST. "[::1]:$PORT" \
    127.0.0.2 profiles.example "Profiles.Example.:$PORT"; do
    expect "Host $h answered" "$(code "$h" /data/0/allocations?count=1)" 200
done
expect "plain curl (Host 127.0.0.1:PORT)" "$(AS curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$B/list")" 200
expect "--allow-host needs a name" "$("$BIN/rheaper" serve "$W/a.db" --allow-host 'a:1' >/dev/null 2>&1; echo $?)" 2

# ---- regular expressions: 400, or an answer within the budget (a 503 at the
# budget included); no growth ----
code localhost "/data/0/allocations?count=5&function_regex=main" >/dev/null
hwm0=$(hwm "$SPID")
n=0 slow=0 worst=0 n400=0 n503=0
while IFS= read -r re; do
    [ -n "$re" ] || continue
    e=$("$HOSTILE" urlencode "$re")
    for p in allocations allocation_groups allocation_ascii_tree; do
        rm -f "$BODY"
        out=$(AS curl -s -g --max-time 15 -o "$BODY" -w '%{http_code} %{time_total}' \
            "$B/data/0/$p?count=5&function_regex=$e&negative_source_regex=$e")
        c=${out% *}
        ms=$(echo "${out#* }" | awk '{printf "%d", $1 * 1000}')
        [ "$ms" -gt "$worst" ] && worst=$ms
        case $c in
        200) ok ;;
        400) ok; n400=$((n400 + 1)) ;;
        503) # stopped by the time budget: bounded too, when it says so
            if grep -q 'ran out of its time budget' "$BODY"; then
                ok
                n503=$((n503 + 1))
            else
                bad "regex $re on /$p: 503 ($(head -c 200 "$BODY"))"
            fi ;;
        *) bad "regex $re on /$p: status $c ($(head -c 200 "$BODY"))" ;;
        esac
        [ "$ms" -le 5000 ] || slow=$((slow + 1)) # the budget, 3 s, and room for a loaded host
        n=$((n + 1))
    done
done <<'PATTERNS'
((a{1,100}){1,100}){1,100}
(((a{1,100}){1,100}){1,100}){1,100}
((((a{1,100}){1,100}){1,100}){1,100}){1,100}
(a{1,100}){1,100}
((a|b){1,100}){1,100}
(a{0,100}){0,100}b
(a+)+$
(a|aa)*b
(.*)*x
((a*)*)*$
(x+x+)+y
(.*a){20}
([a-z]+)*[0-9]
(a|a?)+b
(\w+\s?)+$
((ab)*|(ba)*)*c
(.*){1,100}(.*){1,100}(.*){1,100}z
[[:alpha:]]{100}[[:digit:]]{100}
((((((((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))))))))
([^x]*[^y]*)*z
(.?){100}.{100}
x{1,100}y{1,100}z{1,100}(.{1,100}){1,100}
^(([a-z])+.)+[A-Z]([a-z])+$
(((.*)*)*)*(((.*)*)*)*(((.*)*)*)*!
PATTERNS
hwm1=$(hwm "$SPID")
echo "regex: $n requests, $n400 answered 400, $n503 stopped at the budget, slowest $worst ms, VmHWM $hwm0 -> $hwm1 KiB"
expect "regex requests past 5 s" "$slow" 0
le "regex: the server's VmHWM growth in KiB" $((hwm1 - hwm0)) 65536
expect "still answering after the regexes" "$(code localhost /list)" 200

# ---- 300 half requests and a trickled one; a real client goes on ----
hostile half "$PORT" 300 25 >"$W/half.out" &
HALF=$!
hostile trickle "$PORT" 2 40 >"$W/trickle.out" &
TRICKLE=$!
sleep 2
for i in 1 2 3 4 5; do
    expect "a real client beside 300 half requests ($i)" \
        "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$B/data/0/allocation_groups?count=2")" 200
done
wait $HALF
wait $TRICKLE
echo "300 half requests: $(cat "$W/half.out"); trickled headers: $(cat "$W/trickle.out")"
set -- $(cat "$W/half.out")
expect "half requests opened" "$2" 300
expect "half requests closed by the server" "$4" 300
le "half requests: seconds until the last close (documented 10 s)" "$(printf %.0f "$6")" 12
t=$(sed -n 's/closed \(-*[0-9]*\).*/\1/p' "$W/trickle.out")
[ "$t" -ge 9 ] && ok "trickle held till the timeout" || bad "trickle closed after $t s, before 10 s"
le "trickled headers: seconds until closed (documented 10 s)" "$t" 12

# ---- a kept-alive connection that asks nothing more ----
hostile kept "$PORT" 30 >"$W/kept.out"
echo "kept-alive: $(cat "$W/kept.out")"
expect "kept-alive: answered" "$(cut -d' ' -f2 "$W/kept.out")" 200
t=$(cut -d' ' -f4 "$W/kept.out" | cut -d. -f1)
[ "$t" -ge 9 ] && ok "kept-alive connection held till the timeout" || bad "kept-alive closed after $t s"
le "kept-alive: seconds until closed after its answer (documented 10 s)" "$t" 12

# ---- more half requests than the table holds: a real client still gets in ----
hostile half "$PORT" 560 12 >"$W/crowd.out" &
CROWD=$!
sleep 3
for i in 1 2 3; do
    expect "a real client beside 560 half requests ($i)" \
        "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$B/list")" 200
done
wait $CROWD
echo "560 half requests: $(cat "$W/crowd.out")"

kill -TERM "$SPID"
timeout 20 sh -c "while kill -0 $SPID 2>/dev/null; do sleep 0.1; done" || bad "the server did not stop"
wait "$SPID"
expect "server exit status after SIGTERM" "$?" 0
SPID=
grep 'cut' "$W/serve.err"
checks_done
