# lib.sh: what the tests of `rheaper serve` share (sourced, POSIX sh).
#
# Usage from a test: BIN=build/bin SRC=tests/e2e/serve W=work-dir; . lib.sh
#   rh_setup            builds serve_prog.c with rheaper-cc, records it twice
#                       (plain and "leak") into $W/a.db and $W/b.db
#   rh_serve ARGS...    starts `rheaper serve ARGS --listen 127.0.0.1:0`, sets
#                       $B (base URL) and $SPID; rh_stop stops it (SIGTERM) and
#                       checks that it exited 0
#   get PATH            GETs $B$PATH into $W/body, prints the HTTP status
#   sq SQL              runs SQL on $DB (the sqlite3 shell)
#   eq WHAT GOT WANT    counts a check; prints and counts a failure
#   rh_done             prints the summary, exits 1 when a check failed
set -u
FAILS=0
CHECKS=0

fail() {
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}

eq() {
    CHECKS=$((CHECKS + 1))
    if [ "$2" != "$3" ]; then
        fail "$1: got '$2', want '$3'"
    fi
}

sq() {
    sqlite3 "$DB" "$1"
}

rh_record() { # OUT.db [ARG]: one run of serve_prog, converted
    out=$1
    shift
    rm -rf "$W/rec"
    mkdir -p "$W/rec"
    (cd "$W/rec" && RHEAPER_ENABLE=1 ../prog "$@") || { echo "serve_prog failed"; exit 1; }
    set -- "$W"/rec/rip-*
    "$BIN/rheaper" convert "$1" "$out" --quiet --force || { echo "convert failed"; exit 1; }
    rm -rf "$W/rec"
}

rh_setup() {
    rm -rf "$W"
    mkdir -p "$W"
    "$BIN/rheaper-cc" -O1 -pthread -o "$W/prog" "$SRC/serve_prog.c" || { echo "rheaper-cc failed"; exit 1; }
    rh_record "$W/a.db"
    rh_record "$W/b.db" leak
    DB=$W/a.db
}

rh_serve() {
    rm -f "$W/serve.out"
    "$BIN/rheaper" serve "$@" --listen 127.0.0.1:0 >"$W/serve.out" 2>"$W/serve.err" &
    SPID=$!
    i=0
    B=""
    while [ $i -lt 300 ]; do
        port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$W/serve.out" 2>/dev/null)
        if [ -n "$port" ]; then
            B="http://127.0.0.1:$port"
            return 0
        fi
        if ! kill -0 "$SPID" 2>/dev/null; then
            break
        fi
        sleep 0.1
        i=$((i + 1))
    done
    echo "the server did not start:"
    cat "$W/serve.err"
    exit 1
}

rh_stop() {
    kill -TERM "$SPID"
    wait "$SPID"
    eq "server exit status after SIGTERM" "$?" 0
}

get() {
    curl -s -g --max-time 60 -o "$W/body" -w '%{http_code}' "$B$1"
}

rh_done() {
    echo "$CHECKS checks, $FAILS failed"
    [ "$FAILS" -eq 0 ]
    exit $?
}
