#!/bin/sh
# test_gen_errors.sh: gen_wrap.py rejects malformed tables with one line naming
# the table and line, and accepts a minimal good one.
# Usage: test_gen_errors.sh PYTHON GEN_WRAP_PY
# Exit status: the number of failed checks.
py=$1
gen=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/rh-gen-errors.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
pass=0

# expect_error NAME PATTERN: the table in $dir/NAME.txt must fail with a message
# matching PATTERN (grep -E) that names the file.
expect_error() {
    if "$py" "$gen" --table "$dir/$1.txt" --out "$dir/out-$1" 2>"$dir/$1.err"; then
        echo "FAIL $1: accepted"; fails=$((fails + 1)); return
    fi
    if ! grep -Eq "$1\.txt:[0-9]+: .*$2" "$dir/$1.err"; then
        echo "FAIL $1: message: $(cat "$dir/$1.err")"; fails=$((fails + 1)); return
    fi
    pass=$((pass + 1))
}

printf 'kind 1 malloc\nkind 1 calloc\nfn malloc | malloc | void * | size_t |\n' >"$dir/dupnum.txt"
expect_error dupnum "kind number 1 already used on line 1"
printf 'kind 1 malloc\nkind 2 malloc\nfn malloc | malloc | void * | size_t |\n' >"$dir/dupname.txt"
expect_error dupname "kind name 'malloc' already used"
printf 'kind 1 malloc\nfn malloc | mallo | void * | size_t |\n' >"$dir/unknown.txt"
expect_error unknown "unknown kind 'mallo'"
printf 'kind 1 malloc\nfn malloc | malloc | void * | size_t |\nfn malloc | malloc | void * | size_t |\n' >"$dir/dupfn.txt"
expect_error dupfn "'malloc' already listed on line 2"
printf 'kind 22 asprintf\nfn asprintf | asprintf | int | char **, const char *, ... |\n' >"$dir/novafwd.txt"
expect_error novafwd "needs a VA-FORWARD"
printf 'kind 1 malloc\nfn malloc | malloc | void * | size_t |\nfn execv | - | int | const char *, char *const * |\nfn execl | - | int | const char *, const char *, ... | argv execvp\n' >"$dir/badargv.txt"
expect_error badargv "VA-FORWARD 'argv execvp' must be argv or argv\+envp"
printf 'kind 1 malloc\nfn malloc | malloc | void * | size_t |\nfn execve | - | int | const char *, char *const *, char *const * |\nfn execle | - | int | const char *, const char *, ... | argv execve\n' >"$dir/badenvp.txt"
expect_error badenvp "VA-FORWARD 'argv execve'"
printf 'kind 1 malloc\nfn malloc | malloc | void * | size_t | | static\n' >"$dir/badflag.txt"
expect_error badflag "unknown flag 'static'"
printf 'kind 1 malloc\nfn 9malloc | malloc | void * | size_t |\n' >"$dir/badsym.txt"
expect_error badsym "bad symbol"

# A good table: outputs appear, and regenerating leaves unchanged files alone.
printf '# ok\nkind 1 malloc\nkind 11 new[]\nfn malloc | malloc | void * | size_t |\nfn _Znam | new[] | void * | size_t |\n' >"$dir/good.txt"
if "$py" "$gen" --table "$dir/good.txt" --out "$dir/good" &&
    [ "$("$py" "$gen" --table "$dir/good.txt" --count)" = 2 ] &&
    grep -q 'RH_KIND_NEW_ARRAY = 11' "$dir/good/rh_wrap_gen.h" &&
    [ "$(wc -l <"$dir/good/rheaper_wrap.flags")" -eq 4 ] &&
    [ "$(cat "$dir/good/rheaper_wrap_cxx.flags")" = "-Wl,-u,_Znam" ] &&
    [ -f "$dir/good/rh_weak_001.c" ] && [ ! -f "$dir/good/rh_weak_002.c" ]; then
    pass=$((pass + 1))
else
    echo "FAIL good table"; fails=$((fails + 1))
fi
touch -d '2001-01-01' "$dir/good/rh_wrap_gen.h"
"$py" "$gen" --table "$dir/good.txt" --out "$dir/good"
if [ "$(date -r "$dir/good/rh_wrap_gen.h" +%Y)" = 2001 ]; then
    pass=$((pass + 1))
else
    echo "FAIL unchanged output was rewritten"; fails=$((fails + 1))
fi
echo "$pass passed, $fails failed"
exit $fails
