#!/bin/sh
# answers_test.sh: no reader of a profile groups rows by itself.
#
#   answers_test.sh SOURCE_DIR
#
# The rule: per call site, per stack, per kind, per thread or per anything,
# a figure summed over rows is an answer, and every answer is computed in
# the query library (convert/query/), where one definition of a call site
# lives (rh_query.h: rh_make_sites, rh_sites_get). The converter's
# aggregate writers (convert/*.c) write the stored aggregates the library
# reads; they are not scanned. The programs and writers (convert/cli/,
# convert/live/, convert/serve/, convert/export/, convert/push/ and any
# other folder under convert/ but query/) only present what the library
# returns: SQL text in them that holds GROUP BY (any letter case, across
# string literals the compiler joins, comments ignored) fails the test
# unless the allowlist below names it with its reason. Before scanning, the
# scanner runs on a planted file to show it finds a GROUP BY split over two
# literals and skips comments and names. The same scan holds the meta table
# to its accessors: SQL that reads `meta` there fails too (rh_meta_int,
# rh_meta_text, rh_meta_dup and rh_profile_info are the one way in).
set -eu
src=${1:?usage: answers_test.sh SOURCE_DIR}
CASE=answers RH_DUMP=
. "$src/tests/lib/check.sh"

# file:pattern<TAB>reason. The pattern is a Perl regex matched against the
# joined SQL text.
ALLOW=$(cat <<'EOF'
convert/push/rh_push_db.c:FROM modules GROUP BY path	ClickHouse's table of modules: the newest build id per path of the rows pushed, not a figure rheaper shows
convert/push/rh_push_db.c:FROM allocations GROUP BY profile, bt	a view defined in ClickHouse over the rows pushed, for people who query ClickHouse; rheaper prints nothing from it
convert/push/rh_push_db.c:GROUP BY profile, sym, file, line	the same ClickHouse view, per function and line
EOF
)

# scan FILE...: prints "FILE:LINE: SQL" for every run of adjacent string
# literals (the compiler joins them) whose text holds GROUP BY.
scan() {
    perl -e '
        for my $f (@ARGV) {
            open(my $fh, "<", $f) or die "$f: $!";
            local $/; my $t = <$fh>; close $fh;
            # comments out, keeping lines
            $t =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'"'"'(?:\\.|[^'"'"'\\\n])*'"'"')}
                   { my $m = $1; $m =~ m{^/} ? do { (my $k = $m) =~ s/[^\n]/ /g; $k } : $m }gse;
            # runs of literals separated by blanks only
            while ($t =~ m{((?:"(?:\\.|[^"\\\n])*"\s*)+)}g) {
                my ($run, $at) = ($1, $-[1]);
                my $sql = join("", $run =~ m{"((?:\\.|[^"\\\n])*)"}g);
                next unless $sql =~ /$ENV{RH_SQL_RE}/i;
                my $line = 1 + (substr($t, 0, $at) =~ tr/\n//);
                $sql =~ s/\s+/ /g;
                print "$f:$line: $sql\n";
            }
        }' "$@"
}

allowed() {
    hit=$1
    file=${hit%%:*}
    sql=${hit#*: }
    printf '%s\n' "$ALLOW" | while IFS='	' read -r key reason; do
        [ -n "$key" ] || continue
        kf=${key%%:*} kp=${key#*:}
        [ "$kf" = "$file" ] || continue
        printf '%s\n' "$sql" | perl -ne "exit(/$kp/ ? 0 : 1)" && { echo yes; break; }
    done | grep -q yes
}

# 1. the scanner finds what it must and nothing else
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/planted.c" <<'EOF'
/* SELECT site, sum(bytes) FROM t GROUP BY site, in a comment */
static int group_by = 1; // GROUP BY in a line comment
static const char *a = "SELECT sum(n) FROM sstat";
static const char *b = "SELECT s.site, sum(a.bytes) FROM sstat a JOIN site s ON s.bt = a.bt GROUP"
                       " BY s.site";
static const char *c = "select bt, count(*) from sel group by bt";
static const char *d = "a \" GROUP BY \" quoted";
EOF
export RH_SQL_RE='\bGROUP\s+BY\b'
got=$(scan "$tmp/planted.c" | sed 's/.*planted.c:\([0-9]*\):.*/\1/' | tr '\n' ' ')
eq "lines the scanner flags in the planted file" "$got" "4 6 7 "
cat > "$tmp/meta.c" <<'EOF'
/* SELECT value FROM meta WHERE key = 'program' */
static const char *a = "SELECT value FROM"
                       " meta WHERE key = ?1";
static const char *b = "SELECT metadata FROM metas";
EOF
RH_SQL_RE='\bFROM\s+(main\.)?meta\b'
got=$(scan "$tmp/meta.c" | sed 's/.*meta.c:\([0-9]*\):.*/\1/' | tr '\n' ' ')
eq "lines the meta scan flags in the planted file" "$got" "2 "
RH_SQL_RE='\bGROUP\s+BY\b'

# 2. the tree: every folder under convert/ but the query library
cd "$src"
files=$(ls convert/*/*.c convert/*/*.h 2>/dev/null | grep -v '^convert/query/' || true)
[ -n "$files" ] || fail "no reader sources under convert/*/"
hits=$(scan $files)
n_all=0 n_bad=0
if [ -n "$hits" ]; then
    while IFS= read -r h; do
        n_all=$((n_all + 1))
        if ! allowed "$h"; then
            n_bad=$((n_bad + 1))
            echo "grouped outside the query library: $h"
        fi
    done <<EOF
$hits
EOF
fi
echo "scanned $(echo "$files" | wc -l) files: $n_all GROUP BY, $((n_all - n_bad)) in the allowlist"
[ "$n_bad" = 0 ] || fail "$n_bad GROUP BY outside convert/query/: ask the query library (rh_sites_get, rh_leaks_get, ...) and present its rows"
ok "no reader groups rows outside the query library"

# 3. meta through the library's accessors only
RH_SQL_RE='\bFROM\s+(main\.)?meta\b'
meta=$(scan $files)
[ -z "$meta" ] || fail "meta read outside the query library (use rh_meta_int, rh_meta_text, rh_meta_dup): $meta"
ok "no reader reads meta but through the query library"
