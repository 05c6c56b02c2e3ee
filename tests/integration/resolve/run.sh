#!/bin/sh
# run.sh: profiles resolve anywhere. host.c dlopens ./plugin.so (a relative
# path); the profile is converted from another directory, and the plugin's
# frames must carry the function names and lines the program printed:
#   reldlopen  no option: the runtime recorded the plugin's absolute path
#   buildid    the plugin was rebuilt at its path (another build id); its
#              debug file under --debug-dir DIR/.build-id/xx/yyyy.debug is
#              found by build id (and without --debug-dir the frames stay
#              unresolved, with the warning)
#   search     the plugin moved away; --search DIR finds it
#   fifo       the plugin's .gnu_debuglink file, then the plugin's path, then
#              the program's path is a FIFO: the converter warns and
#              finishes (under a timeout), the rest resolves
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR CASE
set -u
bin=$1 src=$2 work=$3 case=$4
CASE=$case RH_DUMP="conv.err"
. "$(dirname "$0")/../../lib/check.sh"
rm -rf "$work" && mkdir -p "$work/run" "$work/elsewhere" && cd "$work/run" || exit 1

build_plugin() { # build_plugin [CFLAGS...]: plugin.so in the current directory
    "$bin/rheaper-cc" -g -O1 -fPIC -shared "$@" "$src/plugin.c" -o plugin.so ||
        fail "rheaper-cc plugin.c failed"
}
build_plugin
[ "$case" = fifo ] && {
    # DWARF in a separate file, named by .gnu_debuglink
    objcopy --only-keep-debug plugin.so plugin.so.debug &&
        objcopy --strip-debug --add-gnu-debuglink=plugin.so.debug plugin.so ||
        fail "objcopy failed"
}
"$bin/rheaper-cc" -g -O1 "$src/host.c" -o host -ldl || fail "rheaper-cc host.c failed"
RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$work/run" ./host > out.txt 2> prog.err || fail "the program failed: $(cat prog.err)"
rip=$(ls "$work"/run/rip-* | head -1)

# convert DB [OPTIONS...]: from another directory, under a timeout
convert() {
    db=$1
    shift
    (cd "$work/elsewhere" && timeout 60 "$bin/rheaper-convert" "$@" "$rip" "$work/$db" 2> "$work/conv.err")
}
# check_sites DB: every SITE line's size has frame 0 in its function at its line
check_sites() {
    while read -r tag size fn line; do
        [ "$tag" = SITE ] || continue
        got=$(sqlite3 "$work/$1" "SELECT b.sym || ':' || coalesce(b.line, '?') FROM allocations a
              JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 WHERE a.size = $size")
        expect "the $size-byte block's frame" "$got" "$fn:$line"
    done < out.txt
}
plugin_module() {
    sqlite3 "$work/$1" "SELECT DISTINCT b.module FROM allocations a JOIN backtraces b ON b.id = a.bt
                        AND b.frame_no = 0 WHERE a.size = 7001"
}
build_id() { # the GNU build id of $1, in hex
    readelf -n "$1" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p'
}

case $case in
reldlopen)
    convert p.db --quiet || fail "conversion failed: $(cat "$work/conv.err")"
    check_sites p.db
    expect "the plugin's recorded path" "$(plugin_module p.db)" "$work/run/plugin.so"
    ;;
buildid)
    id=$(build_id plugin.so)
    [ -n "$id" ] || fail "no build id in plugin.so"
    dbg="$work/debug/.build-id/$(echo "$id" | cut -c1-2)"
    mkdir -p "$dbg"
    objcopy --only-keep-debug plugin.so "$dbg/$(echo "$id" | cut -c3-).debug" || fail "objcopy failed"
    build_plugin -DVARIANT=16 # a rebuild at the recorded path
    [ "$(build_id plugin.so)" != "$id" ] && ok || fail "the rebuilt plugin kept its build id"
    convert bare.db || fail "conversion without --debug-dir failed"
    grep -q "plugin.so: build id differs from the profiled program" "$work/conv.err" && ok ||
        bad "no build-id warning without --debug-dir: $(cat "$work/conv.err")"
    got=$(sqlite3 "$work/bare.db" "SELECT count(*) FROM allocations a JOIN backtraces b ON b.id = a.bt
          AND b.frame_no = 0 WHERE a.size IN (7001, 7002) AND b.sym IS NOT NULL")
    expect "frames resolved from the rebuilt plugin" "$got" 0
    convert p.db --debug-dir "$work/debug" || fail "conversion failed"
    grep -q warning "$work/conv.err" && bad "warnings with --debug-dir: $(cat "$work/conv.err")" || ok
    check_sites p.db
    ;;
search)
    mkdir -p "$work/moved" && mv plugin.so "$work/moved/" || fail "cannot move the plugin"
    convert p.db --quiet --search "$work/moved" || fail "conversion failed: $(cat "$work/conv.err")"
    check_sites p.db
    ;;
fifo)
    # the debug file is a FIFO: names come from the plugin's symbol table
    mv plugin.so.debug plugin.so.debug.real && mkfifo plugin.so.debug
    convert p1.db
    rc=$?
    expect "conversion status with a FIFO debug file" "$rc" 0
    got=$(sqlite3 "$work/p1.db" "SELECT b.sym FROM allocations a JOIN backtraces b ON b.id = a.bt
          AND b.frame_no = 0 WHERE a.size = 7001")
    expect "the 7001-byte block's function (from .symtab)" "$got" plugin_alpha
    rm -f plugin.so.debug && mv plugin.so.debug.real plugin.so.debug
    # the plugin itself is a FIFO: one warning, the host's frames resolve
    mv plugin.so plugin.so.real && mkfifo plugin.so
    convert p2.db
    rc=$?
    expect "conversion status with a FIFO module" "$rc" 0
    grep -q "plugin.so: is a FIFO, not a regular file" "$work/conv.err" && ok ||
        bad "no FIFO warning: $(cat "$work/conv.err")"
    got=$(sqlite3 "$work/p2.db" "SELECT count(*) FROM backtraces WHERE sym = 'main' AND file LIKE '%host.c'")
    [ "${got:-0}" -gt 0 ] && ok || bad "the host's main is not resolved"
    got=$(sqlite3 "$work/p2.db" "SELECT coalesce(b.sym, 'unresolved') FROM allocations a JOIN backtraces b
          ON b.id = a.bt AND b.frame_no = 0 WHERE a.size = 7001")
    expect "the 7001-byte block's frame" "$got" unresolved
    rm -f plugin.so && mv plugin.so.real plugin.so
    # the program itself is a FIFO: one warning, the plugin's frames resolve
    mv host host.real && mkfifo host
    convert p3.db
    rc=$?
    expect "conversion status with a FIFO program" "$rc" 0
    grep -q "/host: is a FIFO, not a regular file" "$work/conv.err" && ok ||
        bad "no FIFO warning for the program: $(cat "$work/conv.err")"
    got=$(sqlite3 "$work/p3.db" "SELECT b.sym FROM allocations a JOIN backtraces b ON b.id = a.bt
          AND b.frame_no = 0 WHERE a.size = 7001")
    expect "the 7001-byte block's function" "$got" plugin_alpha
    rm -f host
    ;;
*) fail "unknown case" ;;
esac
checks_done
