#!/bin/sh
# layers_test.sh SRC BUILD: the layering of the sources has no cycle.
#
#   1. the include graph between directories (runtime/, wrap/, cc-wrapper/,
#      convert/ and its sub-folders): "A B" when a file of A includes a
#      header of B;
#   2. the call graph between the converter's and the readers' directories,
#      from the object files of the rheaper* targets under BUILD/convert:
#      "A B" when an object of A uses a symbol an object of B defines;
#   3. the call graph between the files of the query library (convert/query);
#   4. the runtime's layers: each object file of librheaper_rt ranked by the
#      layer runtime_layers.txt gives its source (system, base, core,
#      session); FAIL on a file the table does not rank, on any call from a
#      lower layer to a higher one (with the symbols), on `syscall(` in a
#      runtime source outside the system layer, and on a loop between the
#      runtime's files (strongly connected, printed with its edges) larger
#      than RT_MAX_LOOP files: the few files of the recording core that
#      call each other (docs/design.md, "Runtime") are the most allowed.
#      RH_LAYERS_RT_OBJS names another directory of the runtime's objects
#      (a build of another tree, with SRC that tree's sources).
#
# Each graph goes through tsort(1), which names the files of a loop; the
# edges of the loop are printed with the symbols or headers behind them.
# Prints "FAIL: ..." and exits 1 on a cycle.
set -u
. "$(dirname "$0")/../../lib/require.sh"
require_tool nm binutils
require_tool tsort coreutils
SRC=$(cd "$1" && pwd) BUILD=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
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

# 4. the runtime's layers
RT_MAX_LOOP=3
TABLE=$HERE/runtime_layers.txt
rtdir=${RH_LAYERS_RT_OBJS:-$BUILD/runtime/CMakeFiles/rheaper_rt.dir}
robjs=$(find "$rtdir" -name '*.o' 2>/dev/null | sort)
[ -n "$robjs" ] || { echo "FAIL: no object files of rheaper_rt in $rtdir"; exit 1; }
for o in $robjs; do syms "$(basename "$o" .o)" "$o"; done >"$W/rtsyms"
# every object defines something: one nm could not read would hide its calls
for o in $robjs; do
    f=$(basename "$o" .o)
    awk -v f="$f" '$1 == f && $2 == "D" { found = 1 } END { exit !found }' "$W/rtsyms" ||
        { echo "FAIL: runtime-layers: no symbol read from $o (nm failed?)"; fails=$((fails + 1)); }
done
calls "$W/rtsyms" >"$W/rtcalls"
[ -s "$W/rtcalls" ] || { echo "FAIL: runtime-layers: no call between the runtime's files was read"; fails=$((fails + 1)); }
awk '!/^#/ && NF == 2 { print $1, $2 }' "$TABLE" >"$W/rtrank"
# a file the table does not rank
for o in $robjs; do
    f=$(basename "$o" .o)
    awk -v f="$f" '$1 == f { found = 1 } END { exit !found }' "$W/rtrank" ||
        { echo "FAIL: runtime-layers: $f is in no layer of $TABLE"; fails=$((fails + 1)); }
done
# calls from a lower layer to a higher one
awk 'BEGIN { r["system"] = 0; r["base"] = 1; r["core"] = 2; r["session"] = 3 }
    NR == FNR { rank[$1] = r[$2]; layer[$1] = $2; next }
    ($1 in rank) && ($2 in rank) && rank[$1] < rank[$2] {
        print $1 " (" layer[$1] ") calls " $2 " (" layer[$2] "): " $4 }' "$W/rtrank" "$W/rtcalls" |
    sort >"$W/rtup"
if [ -s "$W/rtup" ]; then
    echo "FAIL: runtime-layers: $(awk '{ print $1, $4 }' "$W/rtup" | sort -u | wc -l) pairs of files call from a lower layer to a higher one:"
    awk '{ k = $1 " " $2 " " $3 " " $4 " " $5; s[k] = s[k] " " $6; if (!(k in o)) { o[k] = ++n; ks[n] = k } }
        END { for (i = 1; i <= n; i++) print "  " ks[i] s[ks[i]] }' "$W/rtup"
    fails=$((fails + 1))
else
    echo "ok: runtime-layers: $(wc -l <"$W/rtcalls") uses of another file's symbol between $(echo "$robjs" | wc -l) files, none upward"
fi
# syscall outside the system layer: each source with its comments removed by
# the compiler's preprocessor (nothing else expanded), so a call split over
# lines, after `*p =`, or behind a macro's name is found too
cd "$SRC/runtime" || exit 1
for f in *.c *.h; do
    l=$(awk -v f="$f" '$1 == f { print $2 }' "$W/rtrank")
    [ "$l" = system ] && continue
    ${CC:-cc} -x c -fpreprocessed -dD -E -P "$f" 2>/dev/null |
        grep -v '^[ ]*#[ ]*include' | grep -n '\<syscall\>' | sed "s|^|  runtime/$f (comments removed) line |"
done >"$W/rtsyscall"
if [ -s "$W/rtsyscall" ]; then
    echo "FAIL: runtime-layers: syscall( outside the system layer ($(wc -l <"$W/rtsyscall") lines):"
    cat "$W/rtsyscall"
    fails=$((fails + 1))
else
    echo "ok: runtime-layers: syscall( only in the system layer"
fi
cd "$BUILD" || exit 1
# loops: the strongly connected sets of files (Tarjan), each printed with the
# layer of its files
awk '{ print $1, $2 }' "$W/rtcalls" | sort -u >"$W/rtpairs"
awk 'function visit(v,   i, w) {
        idx[v] = low[v] = ++cnt; st[++sp] = v; on[v] = 1
        for (i = 1; i <= deg[v]; i++) {
            w = adj[v, i]
            if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
            else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
        }
        if (low[v] == idx[v]) {
            comp = ""; k = 0
            do { w = st[sp--]; on[w] = 0; comp = comp " " w; k++ } while (w != v)
            if (k > 1) print k comp
        }
    }
    { adj[$1, ++deg[$1]] = $2; node[$1] = 1; node[$2] = 1 }
    END { for (v in node) if (!(v in idx)) visit(v) }' "$W/rtpairs" | sort -rn >"$W/rtloops"
big=$(awk -v m="$RT_MAX_LOOP" '$1 > m' "$W/rtloops")
if [ -n "$big" ]; then
    echo "$big" | while read -r n members; do
        echo "FAIL: runtime-layers: a loop of $n files (more than $RT_MAX_LOOP):"
        echo "  $members"
        echo "$members" | tr ' ' '\n' >"$W/rtmembers"
        awk 'NR == FNR { m[$1] = 1; next } ($1 in m) && ($2 in m) { e[$1 " -> " $2] = e[$1 " -> " $2] " " $4 }
            END { for (k in e) print "  edge: " k ":" e[k] }' "$W/rtmembers" "$W/rtcalls" | sort
    done
    fails=$((fails + 1))
else
    echo "ok: runtime-layers: no loop of more than $RT_MAX_LOOP files"
fi
awk -v m="$RT_MAX_LOOP" '$1 <= m { $1 = ""; print "  loop left:" $0 }' "$W/rtloops"

[ "$fails" = 0 ] || exit 1
echo "ok: layers"
