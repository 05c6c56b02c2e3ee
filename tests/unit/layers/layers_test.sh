#!/bin/sh
# layers_test.sh SRC BUILD: the layering of the sources has no cycle.
#
#   1. the include graph between directories (runtime/, wrap/, cc-wrapper/,
#      convert/ and its sub-folders): "A B" when a file of A includes a
#      header of B;
#   2. the call graph between the converter's and the readers' directories,
#      from the object files of the rheaper* targets under BUILD/convert:
#      "A B" when an object of A uses a symbol an object of B defines;
#   3. the call graph between the files of the query library (convert/query).
#
# Each graph goes through tsort(1), which names the files of a loop; the
# edges of the loop are printed with the symbols or headers behind them.
# Prints "FAIL: ..." and exits 1 on a cycle.
set -u
. "$(dirname "$0")/../../lib/require.sh"
require_tool nm binutils
require_tool tsort coreutils
SRC=$(cd "$1" && pwd) BUILD=$(cd "$2" && pwd)
W=$BUILD/tests/unit/layers
mkdir -p "$W"
fails=0

# check NAME EDGES: FAIL when the edges ("A B WHY" lines) form a loop
check() {
    awk '{ print $1, $2 }' "$2" | sort -u >"$W/$1.pairs"
    if ! tsort "$W/$1.pairs" >/dev/null 2>"$W/$1.loop"; then
        echo "FAIL: $1: a cycle:"
        sed -n 's/^tsort: //p' "$W/$1.loop" | grep -v 'input contains a loop' | sed 's/^/  /'
        # the edges between the members of the loop, and why
        sed -n 's/^tsort: //p' "$W/$1.loop" | grep -v 'input contains a loop' | sort -u >"$W/$1.members"
        awk 'NR == FNR { m[$1] = 1; next } ($1 in m) && ($2 in m)' "$W/$1.members" "$2" |
            sort -u | sed 's/^/  edge: /'
        fails=$((fails + 1))
    else
        echo "ok: $1: $(wc -l <"$W/$1.pairs") edges, no cycle"
    fi
}

# 1. includes between directories
cd "$SRC" || exit 1
files=$(find runtime wrap cc-wrapper convert -name '*.[ch]' 2>/dev/null | sort)
for f in $files; do
    case $f in */*) ;; *) continue ;; esac
    echo "$(dirname "$f") $(basename "$f")"
done >"$W/where"
: >"$W/includes"
for f in $files; do
    d=$(dirname "$f")
    sed -n 's/^#[ ]*include[ ]*"\([^"]*\)".*/\1/p' "$f" | while read -r h; do
        b=$(basename "$h")
        hd=$(awk -v b="$b" -v d="$d" '$2 == b { if ($1 == d) { print d; found = 1; exit } c = $1 }
            END { if (!found && c != "") print c }' "$W/where")
        [ -n "$hd" ] && [ "$hd" != "$d" ] && echo "$d $hd $f includes $h"
    done >>"$W/includes"
done
check includes-between-directories "$W/includes"

# symbols: "OBJ-DIR-OR-FILE D|U SYMBOL" from object files, keyed by $1 (dir or file)
syms() { # KEY OBJECT: KEY's defined and undefined symbols
    nm "$2" 2>/dev/null | awk -v k="$1" '$1 == "U" { print k, "U", $2 } NF == 3 && $2 ~ /^[TDBRC]$/ { print k, "D", $3 }'
}
# calls SYMS: "A B uses SYMBOL" when A uses a symbol B defines (A != B)
calls() {
    awk '$2 == "D" { def[$3] = $1 } $2 == "U" { u[++n] = $1 " " $3 }
        END { for (i = 1; i <= n; i++) { split(u[i], p, " ")
            if ((p[2] in def) && def[p[2]] != p[1]) print p[1], def[p[2]], "uses", p[2] } }' "$1"
}

# 2. calls between the converter's and the readers' directories
cd "$BUILD" || exit 1
objs=$(find convert -path '*/CMakeFiles/rheaper*.dir/*' -name '*.o' | sort)
[ -n "$objs" ] || { echo "FAIL: no object files of the rheaper targets under $BUILD/convert"; exit 1; }
for o in $objs; do syms "${o%%/CMakeFiles/*}" "$o"; done >"$W/dirsyms"
calls "$W/dirsyms" >"$W/dircalls"
check calls-between-directories "$W/dircalls"

# 3. calls between the files of the query library
qobjs=$(find convert/query -path '*/CMakeFiles/rheaper_query.dir/*' -name '*.o' | sort)
[ -n "$qobjs" ] || { echo "FAIL: no object files of rheaper_query"; exit 1; }
for o in $qobjs; do syms "$(basename "$o" .o)" "$o"; done >"$W/qsyms"
calls "$W/qsyms" >"$W/qcalls"
check calls-between-query-files "$W/qcalls"

[ "$fails" = 0 ] || exit 1
echo "ok: layers"
