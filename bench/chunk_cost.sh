#!/bin/sh
# chunk_cost.sh: the per-chunk cost of holding no fd
# (docs/benchmarks.md).
#
#   sh bench/chunk_cost.sh [DIR] [CHUNKS]
#
# Builds chunk_cost.c and runs it on a file in DIR (default: the current
# directory, which should be on the file system profiles go to): each chunk
# size the runtime uses, held fd against reopen-per-chunk, interleaved, medians
# of 7 rounds. Prints the load average beside the table.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_loadavg
dir=${1:-.}
chunks=${2:-2000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 -o "$tmp/chunk_cost" "$here/chunk_cost.c"
echo "load average before: $(rh_loadavg)"
"$tmp/chunk_cost" "$dir" "$chunks"
echo "load average after: $(rh_loadavg)"
