# lib.sh: what the tools' security tests share (sourced, POSIX sh).
#
# Usage: BIN=build/bin SRC=tests/security/tools W=work-dir CASE=name
#        HOSTILE=path-of-hostile (hostile.c, built by CMakeLists.txt); . lib.sh
#   sec_setup           needs root (else exit 77, tests/lib/require.sh), the
#                       tools setpriv, curl (and $HOSTILE, when set);
#                       makes $W (root's) and $T, a root-owned 1777
#                       directory standing for /tmp; $BODY, where the
#                       attacker's curl writes an answer
#   AS ...              runs a command as the attacker: nobody:nogroup, no
#                       supplementary groups (setpriv), under `timeout 60`
#   hostile MODE ARGS   $HOSTILE (hostile.c) as the attacker
#   sec_record OUT.rip  builds tests/e2e/serve/serve_prog.c with rheaper-cc
#                       and records one run into OUT.rip (root's, 0600)
#   hwm PID, rss PID    VmHWM, VmRSS of PID in KiB
#   cpu_ticks PID       utime + stime of PID in clock ticks
# The checks are tests/lib/check.sh's (expect, bad, checks_done).
set -u
. "$SRC/../../lib/check.sh"
. "$SRC/../../lib/require.sh"

sec_setup() {
    if [ "$(id -u)" != 0 ]; then
        echo "SKIP: the security tests play root against nobody: run them as root"
        exit 77
    fi
    require_tool setpriv util-linux
    require_tool curl curl
    require_tool timeout coreutils
    [ -z "${HOSTILE:-}" ] || [ -x "$HOSTILE" ] || fail "no hostile program at $HOSTILE"
    rm -rf "$W"
    mkdir -p "$W"
    chmod 0755 "$W"
    T=$W/tmp
    mkdir -m 1777 "$T"
    BODY=$T/body
    umask 022
}

AS() {
    timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}

hostile() {
    AS "${HOSTILE:?HOSTILE is not set}" "$@"
}

sec_record() {
    out=$1
    if [ ! -x "$W/prog" ]; then
        "$BIN/rheaper-cc" -O1 -pthread -o "$W/prog" "$SRC/../../e2e/serve/serve_prog.c" ||
            fail "rheaper-cc failed"
    fi
    rm -rf "$W/rec"
    mkdir -p "$W/rec"
    (cd "$W/rec" && RHEAPER_ENABLE=1 timeout 60 ../prog >/dev/null) || fail "serve_prog failed"
    mv "$W"/rec/rip-* "$out"
    rm -rf "$W/rec"
}

hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# le WHAT GOT MAX: a counted check that GOT <= MAX (integers)
le() {
    if [ "$2" -le "$3" ] 2>/dev/null; then
        ok "$1: $2 <= $3"
    else
        bad "$1: got '$2', want at most $3"
    fi
}
