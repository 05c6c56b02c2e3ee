#!/bin/sh
# nginx.sh: Debian's nginx 1.22, built with rheaper-cc and run the way its
# users run it (docs/servers.md "nginx"): as root, daemonised, two workers
# that switch to `user nobody`, an error log and an access log, loopback only.
# A patch (nginx-leak.patch) plants a 48-byte leak every 50th logged request
# in ngx_http_log_handler. nginx is linked with the shipped allocator file
# share/rheaper/allocators/nginx.alloc (RHEAPER_ALLOCATORS): its pools'
# chunks are rows of their own, at the code that asked for them.
#
#   nginx.sh BIN_DIR SRC_DIR WORK_DIR
#
# Whole-life run (RHEAPER_ENABLE=1): 2 x REQ requests with ab, a SIGHUP (the
# master re-reads its configuration and starts two new workers) between them,
# then `nginx -s quit`. Checks:
#   - every worker's profile converts clean, nothing lost, with a trailer
#     (it covers the worker's whole life) and names the master as its parent;
#   - `rheaper leaks` ranks ngx_http_log_handler first in every worker, with
#     exactly (that worker's requests in the access log, by $pid) / 50 blocks;
#   - the top five call sites of every worker are none of the pool's
#     functions (ngx_palloc, ngx_pnalloc, ngx_pcalloc, ngx_memalign,
#     ngx_alloc, ngx_calloc, ngx_create_pool, ...) and the workers hold pool
#     chunks (region_blocks);
#   - unknown frees at most 2 per worker (the master's blocks are imported);
#   - `rheaper list` shows the master's and the workers' titles;
#   - error.log holds no rheaper line.
# Armed run (RHEAPER_ENABLE=signal): `rheaper record -P 'nginx: worker'`
# lists both workers and sends nothing; `rheaper record -p WORKER -d 1s`
# records a window of a worker that switched to nobody while ab runs.
# A server that does not fork: `rheaper run -- nginx -g 'daemon off;
# master_process off;'` converts its one profile; leaks ranks requests / 50.
# Must run as root; under CI a missing tool or source fails the test.
set -eu
bin=$1 src=$2 work=$3
REQ=${RH_NGINX_REQUESTS:-1500}
CASE= RH_DUMP=
. "$src/../../lib/check.sh" # fail, ok, eq
skip() {
    [ -n "${CI:-}" ] && fail "$* (CI must run it)"
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root (nginx's workers switch to nobody)"
command -v ab >/dev/null || skip "ab (apache2-utils) is not installed"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"

mkdir -p "$work"
cd "$work"
rm -rf run run2 run3 tree ./*.db
# The source, once (tests/e2e/programs/fetch_source.sh: apt-get source, private list).
rc=0
sh "$src/../../e2e/programs/fetch_source.sh" nginx "$work/../nginx-src" || rc=$?
[ $rc = 77 ] && skip "cannot fetch the nginx source"
[ $rc = 0 ] || fail "fetching the nginx source"
cp -r "$work/../nginx-src/src" tree
(cd tree && patch -p1 -s < "$src/nginx-leak.patch") || fail "the leak patch does not apply"

# A minimal build: the http core, static files and the access log; no PCRE,
# no zlib, no proxies (about 20 s on two cores).
t0=$(date +%s)
(
    cd tree
    CC="$bin/rheaper-cc" ./configure --prefix="$work/run" --without-pcre \
        --without-http_rewrite_module --without-http_gzip_module \
        --without-http_charset_module --without-http_ssi_module \
        --without-http_userid_module --without-http_auth_basic_module \
        --without-http_mirror_module --without-http_autoindex_module \
        --without-http_geo_module --without-http_map_module \
        --without-http_split_clients_module --without-http_referer_module \
        --without-http_proxy_module --without-http_fastcgi_module \
        --without-http_uwsgi_module --without-http_scgi_module \
        --without-http_grpc_module --without-http_memcached_module \
        --without-http_limit_conn_module --without-http_limit_req_module \
        --without-http_empty_gif_module --without-http_browser_module \
        --without-http_upstream_hash_module --without-http_upstream_ip_hash_module \
        --without-http_upstream_least_conn_module --without-http_upstream_random_module \
        --without-http_upstream_keepalive_module --without-http_upstream_zone_module \
        > ../configure.log 2>&1 || { tail -20 ../configure.log; exit 1; }
    RHEAPER_ALLOCATORS="$src/../../../share/rheaper/allocators/nginx.alloc" \
        nice make -j2 > ../make.log 2>&1 || { tail -30 ../make.log; exit 1; }
) || fail "building nginx with rheaper-cc"
echo "ok: nginx built with rheaper-cc in $(($(date +%s) - t0)) s"
ngx="$work/tree/objs/nginx"

# A free loopback port: nginx says so when it cannot bind. Below the kernel's
# ephemeral range (32768 and up), which ab's client sockets take their ports
# from: a client socket left in TIME_WAIT on the port would make a later
# nginx's bind fail.
port=$((20000 + $$ % 10000))

# conf DIR: a configuration in DIR/conf, logs in DIR/logs, pages in DIR/html.
conf() {
    mkdir -p "$1/conf" "$1/logs" "$1/html"
    echo "hello from nginx" > "$1/html/index.html"
    cat > "$1/conf/nginx.conf" <<EOF
user nobody nogroup;
worker_processes 2;
error_log logs/error.log notice;
pid logs/nginx.pid;
events { worker_connections 256; accept_mutex off; }
http {
    log_format bypid '\$pid \$status \$request';
    access_log logs/access.log bypid;
    server {
        listen 127.0.0.1:$port;
        location / { root html; }
    }
}
EOF
}

# start DIR ENV...: starts nginx (it daemonises), waits for its pid file.
start() {
    d=$1
    shift
    for try in 1 2 3 4 5; do
        rm -f "$d/logs/nginx.pid"
        (cd "${START_CWD:-$d}" && env "$@" "$ngx" -p "$d/" -c conf/nginx.conf) 2> "$d/start.err" && break
        if grep -q 'Address already in use' "$d/start.err" "$d/logs/error.log" 2>/dev/null; then
            port=$((port + 1))
            conf "$d"
            continue
        fi
        cat "$d/start.err"
        fail "nginx did not start"
    done
    for i in $(seq 100); do [ -s "$d/logs/nginx.pid" ] && break; sleep 0.05; done
    [ -s "$d/logs/nginx.pid" ] || fail "no pid file"
    master=$(cat "$d/logs/nginx.pid")
}

# workers MASTER: the pids of its worker processes.
workers() { ps -o pid= --ppid "$1" | tr -d ' '; }

# wait_workers MASTER N: until it has N workers, all switched to nobody.
wait_workers() {
    for i in $(seq 200); do
        n=0
        for w in $(workers "$1"); do
            [ "$(ps -o user= -p "$w" | tr -d ' ')" = nobody ] && n=$((n + 1))
        done
        [ $n = "$2" ] && return 0
        sleep 0.05
    done
    ps -o pid,ppid,user,args --ppid "$1"
    fail "master $1 does not have $2 workers running as nobody"
}

# stop DIR: nginx -s quit, until the master is gone.
stop() {
    "$ngx" -p "$1/" -c conf/nginx.conf -s quit || fail "nginx -s quit"
    for i in $(seq 200); do kill -0 "$master" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$master" 2>/dev/null && fail "the master did not quit"
    sleep 0.2 # its workers
    return 0
}

load() { ab -q -n "$1" -c 4 "http://127.0.0.1:$port/" > ab.out 2>&1 || { cat ab.out; fail "ab"; }
         grep -q "^Failed requests: *0" ab.out || { cat ab.out; fail "ab: failed requests"; }; }

# ---- whole-life run -----------------------------------------------------------
run="$work/run"
pdir=$(mktemp -d /tmp/rh-nginx.XXXXXX)
cleanup() {
    rm -rf "$pdir" "${pdir2:-}"
    if [ -n "${master:-}" ] && kill -0 "$master" 2>/dev/null; then kill "$master" || true; fi
}
trap 'st=$?; set +e; cleanup; exit $st' EXIT
chmod 0755 "$pdir"
conf "$run"
start "$run" RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$pdir"
wait_workers "$master" 2
load "$REQ"
kill -HUP "$master"
sleep 0.3
wait_workers "$master" 2
load "$REQ"
stop "$run"
echo "ok: nginx served $((2 * REQ)) requests, reloaded once and quit"

grep -i rheaper "$run/logs/error.log" && fail "rheaper lines in nginx's error.log"
echo "ok: error.log holds no rheaper line ($(wc -l < "$run/logs/error.log") lines of nginx's)"

"$bin/rheaper" list "$pdir" > list.out || fail "rheaper list"
cat list.out
mrow=$(grep " nginx: master process " list.out | awk -v m="$master" '$1 == m') ||
    fail "list shows no master $master"
nw=$(awk -v m="$master" '$2 == m && / nginx: worker process/' list.out | wc -l)
[ "$nw" = 4 ] || fail "list shows $nw workers of master $master, expected 4 (2 + 2 after SIGHUP)"
echo "ok: list tells the master ($master) and its 4 workers apart"

nworkers=0
for w in $(awk -v m="$master" '$2 == m { print $1 }' list.out); do
    rip="$pdir/rip-$w"
    "$bin/rheaper-convert" --quiet "$rip" "$w.db" > conv.log 2>&1 || { cat conv.log; fail "convert $rip"; }
    meta() { sqlite3 "$w.db" "SELECT value FROM meta WHERE key = '$1'"; }
    [ "$(meta clean)" = 1 ] && [ "$(meta events_lost)" = 0 ] ||
        fail "worker $w: profile not clean ($(meta clean), lost $(meta events_lost))"
    [ "$(meta fork_parent_pid)" = "$master" ] || fail "worker $w: parent '$(meta fork_parent_pid)'"
    [ "$(meta credentials_changed)" = 1 ] || fail "worker $w: no privilege drop recorded"
    inh=$(meta inherited_rows)
    [ "${inh:-0}" -gt 0 ] || fail "worker $w: no block inherited from the master"
    unk=$(meta unknown_frees)
    [ "$unk" -le 2 ] || fail "worker $w: $unk unknown frees (the master's blocks not matched)"
    reqs=$(awk -v w="$w" '$1 == w' "$run/logs/access.log" | wc -l)
    want=$((reqs / 50))
    "$bin/rheaper" leaks --csv "$w.db" > leaks.csv 2> /dev/null || fail "rheaper leaks $w"
    top=$(sed -n 2p leaks.csv)
    fn=$(echo "$top" | cut -d, -f8)
    blocks=$(echo "$top" | cut -d, -f4)
    if [ "$want" -gt 1 ]; then
        [ "$fn" = ngx_http_log_handler ] || { cat leaks.csv; fail "worker $w: leaks ranks $fn first"; }
        [ "$blocks" = "$want" ] ||
            fail "worker $w: $blocks leaked blocks, expected $reqs requests / 50 = $want"
        how="ranked first by leaks"
    else # one block or none: no trend for leaks to rank; count them
        blocks=$(sqlite3 "$w.db" "SELECT count(*) FROM allocations WHERE size = 48 AND dealloc_after IS NULL AND id > $inh")
        [ "$blocks" = "$want" ] || fail "worker $w: $blocks 48-byte leaks for $reqs requests"
        how="counted"
    fi
    # the pool's functions are the allocator, not call sites
    "$bin/rheaper" top -n 5 --csv "$w.db" > "top5-$w.csv" 2> /dev/null || fail "rheaper top $w"
    [ "$(awk 'NR > 1' "top5-$w.csv" | wc -l)" = 5 ] || { cat "top5-$w.csv"; fail "worker $w: top has no five rows"; }
    if cut -d, -f1 "top5-$w.csv" | grep -Eqx 'ngx_(palloc|pnalloc|pcalloc|pmemalign|palloc_small|palloc_large|palloc_block|memalign|alloc|calloc|create_pool)'; then
        cat "top5-$w.csv"; fail "worker $w: a pool function in the top five"
    fi
    chunks=$(sqlite3 "$w.db" "SELECT count(*) FROM region_blocks")
    [ "$chunks" -gt 0 ] || fail "worker $w: no pool chunk recorded (nginx.alloc not linked?)"
    echo "ok: worker $w: clean, $reqs requests, $blocks planted leaks $how," \
         "$inh blocks inherited, $unk unknown frees, $chunks pool chunks;" \
         "top five: $(awk -F, 'NR > 1 { printf "%s%s", s, $1; s = ", " }' "top5-$w.csv")"
    nworkers=$((nworkers + 1))
done
[ "$nworkers" = 4 ] || fail "checked $nworkers workers"

# ---- armed run: record -p on a running worker ----------------------------------
run2="$work/run2"
pdir2=$(mktemp -d /tmp/rh-nginx2.XXXXXX)
# a recording toggled in a worker creates its file as nobody: the directory
# lets root and nobody write, no one else
chown nobody:nogroup "$pdir2"
chmod 0755 "$pdir2"
conf "$run2"
port=$((port + 1))
conf "$run2"
# started from the profile directory: `record -p` then finds the marker by
# the worker's working directory, its environment being nginx's title now
START_CWD=$pdir2 start "$run2" RHEAPER_ENABLE=signal RHEAPER_PROFILE_DIR="$pdir2"
wait_workers "$master" 2
load 100 # every worker allocates, so each writes its marker
"$bin/rheaper" record -P 'nginx: worker' -d 1s -o multi.db > multi.out 2>&1 &&
    fail "record -P with two matches recorded"
[ "$(grep -c 'nginx: worker process' multi.out)" = 2 ] || { cat multi.out; fail "record -P did not list both workers"; }
echo "ok: record -P 'nginx: worker' lists both workers and sends nothing"
w=$(workers "$master" | head -n 1)
ab -q -t 20 -n 1000000 -c 2 "http://127.0.0.1:$port/" > ab2.out 2>&1 &
abpid=$!
sleep 0.5
if tr '\0' '\n' < "/proc/$w/environ" | grep -q '^RHEAPER_PROFILE_DIR='; then
    envnote="its environment still names the directory"
else
    envnote="its environment no longer names the directory (nginx's title)"
fi
"$bin/rheaper" record -p "$w" -d 1s -o rec.db > rec.out 2>&1 || { cat rec.out; fail "record -p $w ($envnote)"; }
echo "ok: record -p found the marker without --dir; $envnote"
rows=$(sqlite3 rec.db "SELECT count(*) FROM allocations")
# a second window, the directory given (--dir)
"$bin/rheaper" record -p "$w" --dir "$pdir2" -d 0.5s -o rec2.db > rec2.out 2>&1 ||
    { cat rec2.out; fail "record -p $w --dir"; }
kill "$abpid" 2>/dev/null || true
wait "$abpid" 2>/dev/null || true
[ "$(sqlite3 rec2.db "SELECT count(*) > 0 FROM allocations")" = 1 ] || fail "the --dir window is empty"
[ "$(sqlite3 rec.db "SELECT value FROM meta WHERE key = 'clean'")" = 1 ] || fail "the window is not clean"
[ "$rows" -gt 0 ] || fail "the window of worker $w holds no rows"
kill -0 "$w" || fail "worker $w died"
stop "$run2"
grep -i rheaper "$run2/logs/error.log" && fail "rheaper lines in the armed nginx's error.log"
echo "ok: record -p $w (a worker running as nobody) recorded a window of $rows rows"

# ---- a server that does not fork: rheaper run (docs/servers.md recipe) ---------
run3="$work/run3"
port=$((port + 1))
conf "$run3"
rm -f "$run3/logs/nginx.pid"
"$bin/rheaper" run -o "$work/single.db" --force -- "$ngx" -p "$run3/" -c conf/nginx.conf \
    -g 'daemon off; master_process off;' > run3.out 2> run3.err &
runpid=$!
for i in $(seq 100); do [ -s "$run3/logs/nginx.pid" ] && break; sleep 0.05; done
[ -s "$run3/logs/nginx.pid" ] || { cat run3.err; fail "single-process nginx did not start"; }
master=$(cat "$run3/logs/nginx.pid")
load 500
"$ngx" -p "$run3/" -c conf/nginx.conf -s quit
wait "$runpid" || { cat run3.err; fail "rheaper run nginx"; }
grep -q '^events ' run3.out || { cat run3.out; fail "rheaper run printed no summary"; }
reqs=$(wc -l < "$run3/logs/access.log")
"$bin/rheaper" leaks --csv single.db > leaks3.csv 2> /dev/null || fail "rheaper leaks single.db"
top=$(sed -n 2p leaks3.csv)
[ "$(echo "$top" | cut -d, -f8)" = ngx_http_log_handler ] && [ "$(echo "$top" | cut -d, -f4)" = $((reqs / 50)) ] ||
    { cat leaks3.csv; fail "rheaper run: leaks does not rank $((reqs / 50)) planted leaks first"; }
[ "$(sqlite3 single.db "SELECT value FROM meta WHERE key = 'clean'")" = 1 ] || fail "run: not clean"
echo "ok: rheaper run -- nginx -g 'daemon off; master_process off;': $reqs requests," \
     "$((reqs / 50)) planted leaks ranked first, clean"
echo PASS
