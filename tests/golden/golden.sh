#!/bin/sh
# golden.sh: the golden test. Converts the committed profile golden.rip with the
# committed binary golden (found through --search) and compares a sorted dump
# of the database with golden.expected.
#
#   golden.sh BIN_DIR WORK_DIR                 run the test
#   golden.sh BIN_DIR WORK_DIR --regenerate    rebuild the binary, record a new
#                                              profile and rewrite golden.expected
#
# Only frames inside the golden binary are dumped: libc's frames depend on the
# machine's libc and its debug files, the program's do not.
set -eu
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"

if [ "${3:-}" = --regenerate ]; then
    rec=/tmp/rheaper-golden   # a neutral path: it is recorded in the profile
    rm -rf "$rec" && mkdir -p "$rec"
    RHEAPER_CC=gcc "$bin/rheaper-cc" -O1 -pthread "$here/golden.c" -o "$rec/golden"
    (cd "$rec" && RHEAPER_ENABLE=1 ./golden)
    cp "$rec/golden" "$here/golden"
    cp "$rec"/rip-* "$here/golden.rip"
fi

rm -f "$work/golden.db"
"$bin/rheaper-convert" --quiet --search "$here" "$here/golden.rip" "$work/golden.db"
sqlite3 "$work/golden.db" > "$work/golden.dump" <<'SQL'
.mode list
.separator |
SELECT 'allocation', alloc_after, dealloc_after, bt, size, addr, alloc_thread, dealloc_thread, kind
  FROM allocations ORDER BY alloc_after, addr;
SELECT 'frame', id, frame_no, replace(file, rtrim(file, replace(file, '/', '')), ''), line, sym, inlined, address
  FROM backtraces WHERE module LIKE '%/golden' ORDER BY id, frame_no;
SELECT 'stack', id, kind, depth, truncated FROM stacks ORDER BY id;
SELECT 'thread', id, name FROM threads ORDER BY id;
SELECT 'meta', key, value FROM meta WHERE key NOT IN ('rheaper_version') AND key NOT LIKE 'debug:%' ORDER BY key;
SELECT 'callsite', sym, line, count, total_size, leaked_count, leaked_bytes FROM callsites
  WHERE sym IS NOT NULL ORDER BY total_size DESC, sym;
SELECT 'hist', bt, class, blocks, bytes FROM stack_hist ORDER BY bt, class;
SELECT 'stack_thread', bt, thread, blocks, bytes, leaked_bytes FROM stack_threads ORDER BY bt, thread;
SQL

if [ "${3:-}" = --regenerate ]; then
    cp "$work/golden.dump" "$here/golden.expected"
    echo "golden.expected rewritten ($(wc -l < "$here/golden.expected") lines)"
fi
if diff -u "$here/golden.expected" "$work/golden.dump"; then
    echo "1 passed, 0 failed"
else
    echo "FAIL: the conversion of golden.rip differs from golden.expected"
    exit 1
fi
