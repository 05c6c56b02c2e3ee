#!/bin/sh
# test_weak.sh: librheaper_weak.a holds one member per table function, each
# defining exactly one weak, default-visibility __wrap_ symbol, so a shared
# library pulls in only the fallbacks it references.
# Usage: test_weak.sh NM LIBRHEAPER_WEAK_A FN_COUNT
# Exit status: the number of failed checks.
nm=$1
lib=$2
count=$3
fails=0
pass=0
check() { # check DESCRIPTION EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); else echo "FAIL $1: expected $2, got $3"; fails=$((fails + 1)); fi
}
out=$("$nm" -A "$lib") || { echo "FAIL nm $lib"; exit 1; }
check "weak __wrap_ definitions" "$count" "$(printf '%s\n' "$out" | grep -c ' W __wrap_')"
check "strong __wrap_ definitions" 0 "$(printf '%s\n' "$out" | grep -c ' T __wrap_')"
check "members with a __wrap_" "$count" "$(printf '%s\n' "$out" | grep ' W __wrap_' | cut -d: -f2 | sort -u | wc -l)"
check "__wrap_malloc's member needs only malloc" "__real_malloc" \
    "$(printf '%s\n' "$out" | grep "$(printf '%s\n' "$out" | grep ' W __wrap_malloc$' | cut -d: -f1-2):" | grep ' U ' | awk '{print $NF}' | tr '\n' ' ' | sed 's/ $//')"
echo "$pass passed, $fails failed"
exit $fails
