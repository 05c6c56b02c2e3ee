#!/bin/sh
# fuzz_seeds.sh: writes real rip files, made by the real runtime in programs
# built with rheaper-cc, as the seed corpus of the rip fuzzer (convert-fuzz):
# a clean profile, one cut by SIGKILL (threads, unsealed chunks), a forked
# child's, one with many small chunks and module maps from dlopen/dlclose.
#
#   fuzz_seeds.sh BIN_DIR HELPER_DIR OUT_DIR
set -eu
bin=$1 helpers=$2 out=$3
rm -rf "$out" && mkdir -p "$out/run"
cd "$out/run"
export RH_EXPECT_FILE=/dev/null
run() { env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$out/run" "$@" > /dev/null 2>&1 || true; }
run "$helpers/rel_files" named seed
run "$helpers/rel_crash" sigkill
run "$helpers/rel_faults" nofile-fork
run env RHEAPER_BUFFER_SIZE=64 "$helpers/rel_life" dlclose "$helpers/rel_lib.so"
n=0
for r in rip-*; do
    [ -f "$r" ] || continue
    "$bin/rheaper-convert" --quiet "$r" "$r.db" 2> /dev/null || { echo "FAIL: seed $r does not convert"; exit 1; }
    # libFuzzer reads at most -max_len bytes of each: keep the small ones
    if [ "$(wc -c < "$r")" -le 65536 ]; then cp "$r" "$out/seed-$r"; n=$((n + 1)); fi
done
rm -rf "$out/run"
[ "$n" -ge 2 ] || { echo "FAIL: only $n seeds of at most 64 KiB"; exit 1; }
echo "$n seeds in $out"
