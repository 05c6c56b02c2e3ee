#!/bin/sh
# install_test.sh: `cmake --install` puts the man pages under share/man, where
# `man` finds each of them by name (rheaper-c++(1) included, as rheaper-cc(1)),
# and they render without a warning.
#
# usage: install_test.sh BUILD_DIR WORK_DIR
set -u
build=$1 work=$2
if ! command -v man >/dev/null 2>&1; then
    echo "man is not installed: apt-get install man-db groff-base"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
rm -rf "$work"
mkdir -p "$work"
if ! cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1; then
    echo "FAIL: cmake --install failed:"; tail -n 20 "$work/install.log"; exit 1
fi
fail=0 n=0
for p in 1:rheaper 1:rheaper-cc 1:rheaper-c++ 1:rheaper-convert 7:rheaper; do
    sec=${p%%:*} name=${p#*:}
    f=$work/prefix/share/man/man$sec/$name.$sec
    if [ ! -s "$f" ]; then
        echo "FAIL: $f not installed"; fail=1; continue
    fi
    found=$(man -M "$work/prefix/share/man" -w "$sec" "$name" 2>/dev/null)
    want=$f
    # rheaper-c++.1 is a .so link, which man follows to rheaper-cc.1
    [ "$name" = rheaper-c++ ] && want=$work/prefix/share/man/man1/rheaper-cc.1
    if [ "$found" != "$want" ]; then
        echo "FAIL: man -w $sec $name found '$found', not $want"; fail=1; continue
    fi
    (cd "$work" && LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -M "$work/prefix/share/man" "$sec" "$name" \
        > "$work/$name.$sec.txt" 2> "$work/$name.$sec.err")
    if [ -s "$work/$name.$sec.err" ] || ! grep -q '^NAME$' "$work/$name.$sec.txt"; then
        echo "FAIL: man $sec $name from the installed tree:"; cat "$work/$name.$sec.err"; fail=1; continue
    fi
    n=$((n + 1))
done
echo "$n of 5 man pages installed, found by man and rendered without a warning"
exit "$fail"
