#!/bin/sh
# nginx.sh: what tracking costs a prefork server (docs/servers.md
# "Benchmark").
#
#   sh bench/nginx.sh [--build DIR] [--out DIR] [--runs N] [--requests N]
#
# Builds Debian's nginx 1.22 (apt-get source through the private list,
# tests/e2e/programs/fetch_source.sh; the minimal configure and the leak patch of
# tests/integration/servers/nginx.sh) twice: with gcc and with rheaper-cc. Each round
# starts nginx as root (daemon, user nobody, 2 workers, access log), warms it
# up with 2 000 requests, measures `ab -k -c 8 -n N` over 127.0.0.1, and
# quits, for three variants interleaved:
#   plain      the gcc build
#   tracked    the rheaper-cc build with RHEAPER_ENABLE=1 (every process
#              recorded from its start: master and both workers)
#   heaptrack  the gcc build with `heaptrack -p` attached to one worker
#              (gdb injection; heaptrack records one process at a time)
# and writes OUT/nginx.md: the median req/s of each variant with its ratio to
# plain, the median CPU seconds the workers used (/proc/PID/stat utime+stime,
# summed over the workers at quit), the profile bytes and events of the
# tracked run, and the load average before and after. Not part of the test
# suite (network, several minutes, root). Exit 77 when the source cannot be
# fetched.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build="$root/build" out="" runs=5 requests=50000
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    *) echo "usage: nginx.sh [--build DIR] [--out DIR] [--runs N] [--requests N]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "nginx.sh: run as root (nginx's workers switch to nobody)" >&2; exit 1; }
command -v ab >/dev/null || { echo "nginx.sh: ab (apache2-utils) is missing" >&2; exit 1; }
build=$(cd "$build" && pwd)
[ -n "$out" ] || out="$build/bench/nginx"
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin="$build/bin"
[ -x "$bin/rheaper-cc" ] || { echo "nginx.sh: build rheaper first" >&2; exit 1; }
sh "$root/tests/e2e/programs/fetch_source.sh" nginx "$out/source" || exit $?

# build NAME CC: the source, patched, built in $out/NAME (kept; the rheaper
# build is relinked each time so it has the current runtime).
build_one() {
    name=$1 cc=$2
    if [ ! -x "$out/$name/objs/nginx" ]; then
        rm -rf "$out/$name"
        cp -r "$out/source/src" "$out/$name"
        (cd "$out/$name" && patch -p1 -s < "$root/tests/integration/servers/nginx-leak.patch")
        echo "building $name (CC=$cc) ..." >&2
        (cd "$out/$name" && CC="$cc" ./configure --without-pcre \
            --without-http_rewrite_module --without-http_gzip_module \
            --without-http_proxy_module --without-http_fastcgi_module \
            --without-http_uwsgi_module --without-http_scgi_module \
            --without-http_grpc_module --without-http_memcached_module > configure.log 2>&1)
    fi
    rm -f "$out/$name/objs/nginx"
    (cd "$out/$name" && make -j2 > build.log 2>&1) ||
        { echo "nginx.sh: building $name failed; see $out/$name/build.log" >&2; exit 1; }
}
build_one plain cc
build_one rheaper "$bin/rheaper-cc"

port=$((20000 + $$ % 10000)) # below the ephemeral ports ab connects from
conf() {
    rm -rf "$1" && mkdir -p "$1/conf" "$1/logs" "$1/html"
    head -c 612 /dev/zero | tr '\0' x > "$1/html/index.html"
    cat > "$1/conf/nginx.conf" <<EOF
user nobody nogroup;
worker_processes 2;
error_log logs/error.log notice;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
    access_log logs/access.log;
    keepalive_requests 1000000;
    server { listen 127.0.0.1:$port; location / { root html; } }
}
EOF
}

# cpu_of PIDS: utime + stime in seconds, summed.
cpu_of() {
    t=0
    for p in "$@"; do
        v=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
        t=$((t + v))
    done
    echo "$t $(getconf CLK_TCK)" | awk '{ printf "%.2f", $1 / $2 }'
}

# run VARIANT ROUND: one server life; appends "VARIANT rps cpu" to results.
run() {
    v=$1 r=$2 d="$out/run-$1"
    conf "$d"
    ngx="$out/plain/objs/nginx"
    [ "$v" = tracked ] && ngx="$out/rheaper/objs/nginx"
    pdir="$out/prof-$v-$r"
    rm -rf "$pdir" && mkdir -p "$pdir" && chmod 0755 "$pdir"
    if [ "$v" = tracked ]; then
        RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir" "$ngx" -p "$d/" -c conf/nginx.conf
    else
        "$ngx" -p "$d/" -c conf/nginx.conf
    fi
    for i in $(seq 100); do [ -s "$d/logs/nginx.pid" ] && break; sleep 0.05; done
    master=$(cat "$d/logs/nginx.pid")
    sleep 0.3
    ws=$(ps -o pid= --ppid "$master" | tr -d ' ' | tr '\n' ' ')
    htpid=""
    if [ "$v" = heaptrack ]; then
        w1=${ws%% *}
        (cd "$out" && heaptrack -p "$w1" > "$out/ht-$r.log" 2>&1) &
        htpid=$!
        for i in $(seq 300); do grep -q 'injection finished' "$out/ht-$r.log" 2>/dev/null && break
            sleep 0.1; done
        sleep 1
        if grep -q 'No symbol "heaptrack_inject"' "$out/ht-$r.log"; then
            # gdb could not call into the worker (seen on VMs: "Couldn't write
            # extended state status"): no heaptrack figure from this machine
            echo "heaptrack -p failed: $(grep -m1 "Couldn't\|No symbol" "$out/ht-$r.log")" \
                > "$out/heaptrack-failed"
        fi
    fi
    ab -q -k -n 2000 -c 8 "http://127.0.0.1:$port/" > /dev/null 2>&1 || true
    c0=$(cpu_of $ws)
    rps=$(ab -q -k -n "$requests" -c 8 "http://127.0.0.1:$port/" 2>&1 |
        awk '/^Requests per second/ { print $4 }')
    c1=$(cpu_of $ws)
    "$ngx" -p "$d/" -c conf/nginx.conf -s quit
    for i in $(seq 200); do kill -0 "$master" 2>/dev/null || break; sleep 0.05; done
    if [ -n "$htpid" ] && [ -e "$out/heaptrack-failed" ]; then
        # nothing to wait for: end the heaptrack processes this round started
        kids=$(ps -o pid= --ppid "$htpid" | tr -d ' ')
        grand=""
        for k in $kids; do grand="$grand $(ps -o pid= --ppid "$k" | tr -d ' ')"; done
        kill $grand $kids "$htpid" 2>/dev/null || true
    fi
    [ -n "$htpid" ] && wait "$htpid" 2>/dev/null || true
    cpu=$(echo "$c0 $c1" | awk '{ printf "%.2f", $2 - $1 }')
    echo "$v $rps $cpu" >> "$out/results"
    echo "round $r $v: $rps req/s, workers' CPU $cpu s" >&2
}

load0=$(rh_loadavg)
rm -f "$out/results" "$out/heaptrack-failed"
for r in $(seq "$runs"); do
    for v in plain tracked heaptrack; do run "$v" "$r"; done
done
load1=$(rh_loadavg)

med() { rh_col "$out/results" "$1" "$2" | rh_median; }
p_rps=$(med plain 2) p_cpu=$(med plain 3)
{
    echo "nginx 1.22 (Debian source), 2 workers as nobody, \`ab -k -c 8 -n $requests\` over 127.0.0.1,"
    echo "$runs rounds, variants interleaved; medians. Load average before: $load0; after: $load1."
    echo
    echo "| variant | req/s | vs plain | workers' CPU s per run | vs plain |"
    echo "|---|---|---|---|---|"
    for v in plain tracked heaptrack; do
        if [ "$v" = heaptrack ] && [ -e "$out/heaptrack-failed" ]; then
            echo "| heaptrack -p | not measured: $(cat "$out/heaptrack-failed") | | | |"
            continue
        fi
        rps=$(med "$v" 2) cpu=$(med "$v" 3)
        echo "| $v | $rps | $(echo "$rps $p_rps" | awk '{ printf "%.2f", $1 / $2 }') |" \
             "$cpu | $(echo "$cpu $p_cpu" | awk '{ printf "%.2f", ($2 > 0 ? $1 / $2 : 0) }') |"
    done
    echo
    last="$out/prof-tracked-$runs"
    echo "Tracked, last round: profiles $(ls "$last" | wc -l), $(du -sk "$last" | cut -f1) KiB;" \
         "events per worker:"
    "$bin/rheaper" list "$last" | awk 'NR > 1 && / worker process/ { print "  " $1 ": " $7 " events" }'
} > "$out/nginx.md"
cat "$out/nginx.md"
