#!/bin/sh
# rawopen_test.sh: no raw open in the code that opens paths in directories
# other users can write, outside the one helper of each side.
#
#   rawopen_test.sh SOURCE_DIR
#
# The runtime opens every path through rh_open_safe (runtime/rh_open.c:
# O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, checked on the descriptor), the tools
# through rh_safe_open (convert/rh_safefile.c). A call of open(, openat(,
# open64(, fopen(, freopen(, creat(, syscall(SYS_open...) or rh_sys_open( in
# the files below, outside comments and strings, fails the test unless the
# allowlist names it with its reason. Covered: runtime/ (every file) and
# every file of the tools (convert/ and its programs' folders). Before scanning, the scanner is run on a planted file
# to show that it finds a raw open and skips comments and strings.
set -eu
src=${1:?usage: rawopen_test.sh SOURCE_DIR}
CASE=rawopen RH_DUMP=
. "$src/tests/lib/check.sh"

SCAN="runtime/*.c runtime/*.h convert/*.c convert/*.h convert/*/*.c convert/*/*.h"

# file:line-text-pattern<TAB>reason. The pattern is a Perl regex matched
# against the code of the line (comments and strings blanked).
ALLOW=$(cat <<'EOF'
runtime/rh_open.c:static int rh_sys_open	the helper's own raw open (the one place the runtime calls openat)
runtime/rh_open.c:syscall\(SYS_openat	the helper's own raw open
runtime/rh_open.c:int fd = rh_sys_open\(path	rh_open_safe calling the raw open it checks
convert/rh_safefile.c:int fd = open\(path, flags \| O_NOFOLLOW \| O_NONBLOCK	the tools' helper's own open
convert/rh_rip.c:int fd = open\(path, O_RDONLY \| O_CLOEXEC \| O_NONBLOCK	the rip named on the command line: a symlink to it is followed on purpose; O_NONBLOCK and the regular-file check below it keep a FIFO from blocking
convert/serve/rh_serve_main.c:int fd = open\(path, O_RDONLY \| O_NONBLOCK	a profile named on the command line: symlinks followed on purpose, O_NONBLOCK and a regular-file check
convert/cli/rh_cli_out.c:fopen\(outpath,	the output file the user named with -o, written as asked
convert/rh_db_tmp.c:int dfd = open\(dir, O_RDONLY \| O_DIRECTORY	the output's directory, opened once so the sweep looks every name up in it by descriptor
convert/rh_db_tmp.c:int fd = openat\(dfd, e->d_name, O_RDONLY \| O_NOFOLLOW \| O_NONBLOCK	a temp name in that directory, checked by rh_safe_check_fd before use
EOF
)

# scan FILE...: prints FILE:LINE: CODE for every raw open in code.
scan() {
    perl -e '
        my @pat = (qr/(?<![\w.>])(?:open|openat|open64|openat2|fopen|fopen64|freopen|creat|creat64)\s*\(/,
                   qr/\bSYS_open(?:at2?)?\b/, qr/\brh_sys_open\s*\(/);
        for my $f (@ARGV) {
            open(my $fh, "<", $f) or die "$f: $!";
            local $/; my $t = <$fh>; close $fh;
            # blank comments, strings and character constants, keeping lines
            $t =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'"'"'(?:\\.|[^'"'"'\\\n])*'"'"')}
                   { my $m = $1; (my $k = $m) =~ s/[^\n]/ /g;
                     $m =~ /^"/ ? "\"" . substr($k, 2) . "\"" : $k }gse;
            my $n = 0;
            for my $l (split /\n/, $t, -1) {
                $n++;
                for my $p (@pat) {
                    if ($l =~ $p) { (my $c = $l) =~ s/^\s+//; print "$f:$n: $c\n"; last }
                }
            }
        }' "$@"
}

# allowed "FILE:LINE: CODE": 0 when the allowlist names it
allowed() {
    hit=$1
    file=${hit%%:*}
    code=${hit#*: }
    printf '%s\n' "$ALLOW" | while IFS='	' read -r key reason; do
        [ -n "$key" ] || continue
        kf=${key%%:*} kp=${key#*:}
        [ "$kf" = "$file" ] || continue
        printf '%s\n' "$code" | perl -ne "exit(/$kp/ ? 0 : 1)" && { echo yes; break; }
    done | grep -q yes
}

# 1. the scanner finds what it must and nothing else
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/planted.c" <<'EOF'
/* open(path) in a comment is not a call */
static const char *s = "fopen(x) in a string is not a call";
int a(void) { return open("/x", 0); }
int b(void) { return (int)syscall(SYS_openat, -100, "/x", 0); }
int c(void) { return rh_open_safe("/x", 0, 0, 0, 0, 0) + sqlite3_open("x", 0) + rh_prof.open; }
FILE *d(void) { return fopen ("x", "r"); }
EOF
got=$(scan "$tmp/planted.c" | sed 's/.*planted.c:\([0-9]*\):.*/\1/' | tr '\n' ' ')
eq "lines the scanner flags in the planted file" "$got" "3 4 6 "

# 2. the tree
cd "$src"
hits=$(scan $SCAN)
n_all=0 n_bad=0
bad_list=
if [ -n "$hits" ]; then
    while IFS= read -r h; do
        n_all=$((n_all + 1))
        if ! allowed "$h"; then
            n_bad=$((n_bad + 1))
            echo "raw open: $h"
        fi
    done <<EOF
$hits
EOF
fi
files=$(ls $SCAN | wc -l)
echo "scanned $files files: $n_all raw opens, $((n_all - n_bad)) in the allowlist"
[ "$n_bad" = 0 ] || fail "$n_bad raw open(s) outside the helpers: use rh_open_safe (runtime) or rh_safe_open (tools)"
ok "no raw open outside the helpers"
