#!/bin/sh
# help_test.sh: `rheaper --help` and the SYNOPSIS of rheaper(1) list the same
# commands with the same synopsis lines, both ways; `rheaper COMMAND --help`
# prints that command's lines; `rheaper-convert --help`'s usage line is the
# first line of rheaper-convert(1)'s SYNOPSIS.
#
# A synopsis line of the help is a line indented by two spaces whose first
# character is a lower-case letter, up to the first run of two spaces (where
# the description column starts), with "rheaper " taken off its front. A
# synopsis line of the man page is a line of its SYNOPSIS section, rendered by
# `man -l` on a wide terminal, with the program's name taken off its front.
# Runs of spaces count as one.
#
# usage: help_test.sh BIN_DIR MAN_DIR
set -u
bin=$1 mandir=$2
work=${TMPDIR:-/tmp}/help_test.$$
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if ! command -v man >/dev/null 2>&1; then
    echo "man is not installed: apt-get install man-db groff-base"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi

# man_synopsis PAGE PROGRAM: the page's synopsis lines without PROGRAM.
man_synopsis() {
    f=$mandir/man${1##*.}/$1
    [ -s "$f" ] || { bad "$f was not built (apt-get install pandoc, then rebuild)"; return; }
    LC_ALL=C MANWIDTH=1000 MAN_KEEP_FORMATTING= man -l "$f" 2>/dev/null | awk -v prog="$2" '
        /^SYNOPSIS$/ { on = 1; next }
        /^[^ ]/ { on = 0 }
        on && NF {
            sub(/^ +/, ""); gsub(/ +/, " ")
            if (index($0, prog " ") == 1) print substr($0, length(prog) + 2)
            else print "NOT A SYNOPSIS LINE: " $0
        }'
}

# help_synopsis: the synopsis lines of `rheaper --help` (stdin).
help_synopsis() {
    awk '
        /^  [a-z]/ {
            s = substr($0, 3)
            i = index(s, "  "); if (i) s = substr(s, 1, i - 1)
            gsub(/ +/, " ", s); sub(/ $/, "", s)
            sub(/^rheaper /, "", s)
            print s
        }'
}

"$bin/rheaper" --help > "$work/help" || bad "rheaper --help exited with $?"
help_synopsis < "$work/help" | sort > "$work/help.syn"
man_synopsis rheaper.1 rheaper | sort > "$work/man.syn"
n_help=$(wc -l < "$work/help.syn") n_man=$(wc -l < "$work/man.syn")
[ "$n_help" -ge 20 ] || bad "only $n_help synopsis lines found in rheaper --help"
comm -23 "$work/help.syn" "$work/man.syn" | while IFS= read -r l; do
    echo "FAIL: in rheaper --help, not in rheaper(1)'s SYNOPSIS (docs/man/rheaper.1.md): $l"
done | tee "$work/only-help"
comm -13 "$work/help.syn" "$work/man.syn" | while IFS= read -r l; do
    echo "FAIL: in rheaper(1)'s SYNOPSIS, not in rheaper --help (convert/cli/rh_cli_main.c): $l"
done | tee "$work/only-man"
[ -s "$work/only-help" ] && fail=1
[ -s "$work/only-man" ] && fail=1

# Every command of the help answers `rheaper COMMAND --help` with its lines.
cmds=$(awk '{ print $1 }' "$work/help.syn" | grep -v '^-' | grep -v '^COMMAND$' | sort -u)
ncmd=0
for c in $cmds; do
    ncmd=$((ncmd + 1))
    if ! "$bin/rheaper" "$c" --help > "$work/cmd" 2>&1; then
        bad "rheaper $c --help exited with non-zero status: $(head -n 1 "$work/cmd")"
        continue
    fi
    help_synopsis < "$work/cmd" | sort > "$work/cmd.syn"
    grep "^$c\( \|$\)" "$work/help.syn" > "$work/want.syn"
    if ! cmp -s "$work/cmd.syn" "$work/want.syn"; then
        bad "rheaper $c --help does not print the lines rheaper --help has for $c:"
        diff "$work/want.syn" "$work/cmd.syn"
    fi
done
"$bin/rheaper" no-such-command --help > /dev/null 2>&1
[ $? -eq 2 ] || bad "rheaper no-such-command --help should be a usage error (2)"

# rheaper-convert: its usage line against the first synopsis line of its page.
"$bin/rheaper-convert" --help > "$work/chelp" || bad "rheaper-convert --help exited with $?"
want=$(awk '/^usage: rheaper-convert / { sub(/^usage: rheaper-convert /, ""); s = $0; on = 1; next }
    on && /^          / { s = s " " $0; next } { on = 0 } END { print s }' "$work/chelp" | tr -s ' ' | sed 's/^ //')
got=$(man_synopsis rheaper-convert.1 rheaper-convert | head -n 1)
[ -n "$want" ] && [ "$want" = "$got" ] ||
    bad "rheaper-convert --help says '$want', rheaper-convert(1) says '$got'"

echo "$n_help synopsis lines in rheaper --help, $n_man in rheaper(1); $ncmd commands answer COMMAND --help"
exit "$fail"
