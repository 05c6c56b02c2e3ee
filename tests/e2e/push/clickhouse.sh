#!/bin/sh
# tests/e2e/push/clickhouse.sh: clickhouse-server processes for the push test
# (tests/e2e/push/run.sh) and the push benchmark (bench/push.sh), sourced by
# both. Each server is an ordinary child process listening on free loopback
# ports, with its configuration, data and logs in one directory of the build
# tree. The caller defines fail() and runs ch_stop_all at exit (trap).
# Debian's clickhouse-server 18.16 runs as root as it is (CI runs as root):
# no user switch, nothing in the configuration for it.
#
#   ch_need                 sets CHS, the server binary; when a tool is missing
#                           exits 77 (skipped), or fails under CI=true
#   ch_ports N              sets PORT1 .. PORTn to distinct free TCP ports
#   ch_config DIR HTTP TCP SHARD_TCP...
#                           writes DIR's configuration: ports HTTP and TCP on
#                           127.0.0.1, cluster rheaper_fleet with one shard per
#                           SHARD_TCP port, users default (no password) and
#                           pusher (password "s3cret words"), loopback only
#   ch_start DIR HTTP       starts the server of DIR, waits for /ping (30 s)
#   ch_stop_all             SIGTERM to every server started, SIGKILL after 10 s
SPIDS=

ch_need() {
    CHS=$(command -v clickhouse-server ||
        { [ -x /usr/sbin/clickhouse-server ] && echo /usr/sbin/clickhouse-server; })
    for _t in "$CHS" "$(command -v clickhouse-client)" "$(command -v sqlite3)" "$(command -v curl)"; do
        if [ -z "$_t" ]; then
            if [ "${CI:-}" = true ]; then
                fail "clickhouse-server, clickhouse-client, sqlite3 and curl are needed (cmake/quickstart.sh TEST_PKGS installs them)"
            fi
            echo "SKIP: clickhouse-server, clickhouse-client, sqlite3 or curl is not installed"
            exit 77
        fi
    done
}

# 1 when something listens on TCP port $1 (from /proc/net/tcp and tcp6)
ch_port_busy() {
    _hex=$(printf '%04X' "$1")
    awk '{print $2}' /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q ":$_hex\$"
}

ch_ports() {
    _k=1 _taken=
    while [ $_k -le "$1" ]; do
        _p=$(( ($$ * 7919 + _k * 104729 + $(date +%N | sed 's/^0*//;s/^$/0/')) % 30000 + 20000 ))
        case " $_taken " in *" $_p "*) continue ;; esac
        ch_port_busy "$_p" && continue
        _taken="$_taken $_p"
        eval "PORT$_k=$_p"
        _k=$((_k + 1))
    done
}

ch_config() {
    _d=$1 _http=$2 _tcp=$3
    shift 3
    mkdir -p "$_d/log" "$_d/data" "$_d/tmp" "$_d/user_files" "$_d/format_schemas"
    _shards=
    for _s in "$@"; do
        _shards="$_shards<shard><replica><host>127.0.0.1</host><port>$_s</port></replica></shard>"
    done
    cat >"$_d/config.xml" <<EOC
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$_d/log/server.log</log><errorlog>$_d/log/err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>$_http</http_port>
  <tcp_port>$_tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$_d/data/</path>
  <tmp_path>$_d/tmp/</tmp_path>
  <user_files_path>$_d/user_files/</user_files_path>
  <format_schema_path>$_d/format_schemas/</format_schema_path>
  <users_config>$_d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
  <remote_servers><rheaper_fleet>$_shards</rheaper_fleet></remote_servers>
</yandex>
EOC
    cat >"$_d/users.xml" <<EOC
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default>
    <pusher><password>s3cret words</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></pusher>
  </users>
  <quotas><default></default></quotas>
</yandex>
EOC
}

ch_start() {
    "$CHS" --config-file="$1/config.xml" >"$1/server.out" 2>&1 &
    SPIDS="$SPIDS $!"
    _i=0
    until [ "$(curl -s "http://127.0.0.1:$2/ping")" = "Ok." ]; do
        _i=$((_i + 1))
        [ $_i -gt 300 ] &&
            fail "clickhouse-server on port $2 did not answer in 30 s: $(tail -3 "$1/log/err.log" 2>/dev/null)"
        sleep 0.1
    done
}

ch_stop_all() {
    for _p in $SPIDS; do kill -TERM "$_p" 2>/dev/null || :; done
    for _p in $SPIDS; do
        _i=0
        while kill -0 "$_p" 2>/dev/null && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
        kill -KILL "$_p" 2>/dev/null || :
    done
    SPIDS=
    return 0
}
