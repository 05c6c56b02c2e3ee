# regions.cli.sh: the commands on regions.c's profile (sourced by check_alloc.sh).
# top: the five first sites are the program's lines, none in the allocator.
"$bin/rheaper" top -n 5 --csv "$db" > top.csv 2> top.err
if [ "$(tail -n +2 top.csv | wc -l)" -eq 5 ] && ! grep -q 'regions.lib.c' top.csv &&
    grep -q "own blocks are left out" top.err; then pass=$((pass + 1))
else fail=$((fail + 1)); echo "FAIL: top shows the allocator's frames:"; cat top.csv top.err; fi
# --kind region-blocks shows the allocator's own blocks again
"$bin/rheaper" top --kind region-blocks --csv "$db" > own.csv 2>/dev/null
if grep -q 'regions.lib.c' own.csv; then pass=$((pass + 1))
else fail=$((fail + 1)); echo "FAIL: top --kind region-blocks:"; cat own.csv; fi
# leaks --by region: only CacheMemoryContext leaks, 7 chunks, 280 bytes
"$bin/rheaper" leaks --by region --csv "$db" > lr.csv 2>/dev/null
if [ "$(tail -n +2 lr.csv)" = "CacheMemoryContext,1,7,280,7,280" ]; then pass=$((pass + 1))
else fail=$((fail + 1)); echo "FAIL: leaks --by region:"; cat lr.csv; fi
# top --by region: six names (the two at one address apart), ExecutorState
# first (13 chunks, 11856 bytes)
"$bin/rheaper" top --by region --csv "$db" > tr.csv 2>/dev/null
if [ "$(tail -n +2 tr.csv | wc -l)" -eq 6 ] &&
    [ "$(sed -n 2p tr.csv)" = "ExecutorState,1,13,11856,0,0" ]; then pass=$((pass + 1))
else fail=$((fail + 1)); echo "FAIL: top --by region:"; cat tr.csv; fi
