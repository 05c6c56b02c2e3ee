#!/bin/sh
# links_test.sh: every relative link in README.md, docs/*.md and docs/man/*.md
# points at a file or folder of the tree and, when it names an #anchor in a
# Markdown file, at a heading of that file. Anchors follow GitHub's rule: the
# heading's text in lower case, inline-code backticks dropped, every character
# but letters, digits, spaces, '-' and '_' removed, spaces turned into '-', and
# "-1", "-2", ... appended to repeats. Links inside code blocks and code spans
# are not links. Absolute URLs (scheme:) are not checked.
#
# usage: links_test.sh SOURCE_DIR
# Prints one line per broken link (file:line: target: why) and exits 1 if any.
set -eu
src=${1:?usage: links_test.sh SOURCE_DIR}
cd "$src"
export LC_ALL=C

# links FILE: prints "LINE TARGET" for every Markdown link of FILE.
links() {
    awk '
        /^[ \t]*(```|~~~)/ { fence = !fence; next }
        fence { next }
        {
            line = $0
            gsub(/`[^`]*`/, "", line)
            while (match(line, /\]\([^)[:space:]]+( "[^"]*")?\)/)) {
                t = substr(line, RSTART + 2, RLENGTH - 3)
                sub(/ ".*$/, "", t)
                print NR, t
                line = substr(line, RSTART + RLENGTH)
            }
        }' "$1"
}

# anchors FILE: prints the anchor of every heading of FILE, one a line.
anchors() {
    awk '
        /^[ \t]*(```|~~~)/ { fence = !fence; next }
        fence { next }
        /^#+[ \t]/ {
            h = $0
            sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#*[ \t]*$/, "", h)
            gsub(/`/, "", h)
            # links in a heading keep their text only
            while (match(h, /\[[^]]*\]\([^)]*\)/)) {
                txt = substr(h, RSTART + 1, RLENGTH)
                sub(/\]\(.*$/, "", txt)
                h = substr(h, 1, RSTART - 1) txt substr(h, RSTART + RLENGTH)
            }
            h = tolower(h)
            gsub(/[^a-z0-9 _-]/, "", h)
            gsub(/ /, "-", h)
            if (h in seen) { n = seen[h]++; print h "-" n } else { seen[h] = 1; print h }
        }' "$1"
}

checked=0 broken=0
for f in README.md docs/*.md docs/man/*.md; do
    [ -f "$f" ] || continue
    dir=$(dirname "$f")
    links "$f" > "${TMPDIR:-/tmp}/links.$$"
    while read -r line target; do
        case $target in
        *:*) case ${target%%#*} in *:*) continue ;; esac ;;  # scheme: an absolute URL
        esac
        checked=$((checked + 1))
        path=${target%%#*}
        anchor=
        case $target in *"#"*) anchor=${target#*#} ;; esac
        if [ -z "$path" ]; then
            dest=$f
        else
            dest=$dir/$path
        fi
        if [ ! -e "$dest" ]; then
            echo "$f:$line: $target: no such file or folder ($dest)"
            broken=$((broken + 1))
            continue
        fi
        if [ -n "$anchor" ]; then
            case $dest in
            *.md)
                if ! anchors "$dest" | grep -qxF -- "$anchor"; then
                    echo "$f:$line: $target: no heading with anchor #$anchor in $dest"
                    broken=$((broken + 1))
                fi
                ;;
            *)
                echo "$f:$line: $target: an anchor into a file that is not Markdown"
                broken=$((broken + 1))
                ;;
            esac
        fi
    done < "${TMPDIR:-/tmp}/links.$$"
    rm -f "${TMPDIR:-/tmp}/links.$$"
done
echo "$checked relative links checked, $broken broken"
[ "$checked" -gt 0 ] || { echo "FAIL: no link found: is $src a rheaper checkout?"; exit 1; }
[ "$broken" -eq 0 ]
