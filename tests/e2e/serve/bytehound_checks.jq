# bytehound_checks.jq: the checks of bytehound's client calls against
# `rheaper serve` (bytehound_test.sh fetches, this judges).
#
#   jq -n -r --argjson page PAGE_SIZE --slurpfile list F ... -f bytehound_checks.jq
#
# Each --slurpfile holds one answer: list (/list), allocs
# (/data/last/allocations), size (size_min=size_max=123456), foobar1
# (function_regex=^foobar_1$), seven (^seven$, count=3, skip=5,
# sort_by=timestamp), top (sort_by=size, order=dsc, count=1), leak2
# (lifetime=only_leaked, ^foobar_2$), leakgrow (only_leaked, ^grow), groups
# (/data/last/allocation_groups), maps (/data/last/maps?with_regions=true&
# with_usage_history=true) and one (maps?id= of the 5-page map; empty when
# there is none). Every answer is read with the field types bytehound's
# protocol declares (server-core's protocol.rs: a u64 must be a non-negative
# integer, a bool a bool, Option<T> may be null), and the values are checked
# against the plan of bytehound_prog.c. The fields rheaper cannot know are
# null, as docs/rest-api.md lists them ($documented_null); any other null where
# bytehound has no Option is a failure. jq keeps numbers as doubles, so "an
# integer" here is a number equal to its floor; the test's shell checks the
# raw text for fractions where bytehound wants an integer.
#
# Prints "FAIL: ..." per failed check, then "N checks, N failed".

# bytehound's types: "u64" (non-negative integer), "u32", "f32" (number),
# "str", "bool", an object (a struct; "$s" names it for $documented_null),
# ["list", T], "?T" and {"?": T} for Option<T>.
def TIMEVAL: {"secs": "u64", "fract_nsecs": "u32"};
def FRAME: {"$s": "frame", "address": "u64", "address_s": "str", "count": "u64",
            "library": "?str", "function": "?str", "raw_function": "?str",
            "source": "?str", "line": "?u32", "column": "?u32", "is_inline": "bool"};
def DEALLOCATION: {"timestamp": TIMEVAL, "thread": "u32"};
def ALLOCATION: {"$s": "allocation", "address": "u64", "address_s": "str",
                 "timestamp": TIMEVAL, "timestamp_relative": TIMEVAL,
                 "timestamp_relative_p": "f32", "thread": "u32", "size": "u64",
                 "backtrace_id": "u32", "deallocation": {"?": DEALLOCATION},
                 "backtrace": ["list", FRAME], "is_mmaped": "bool",
                 "in_main_arena": "bool", "extra_space": "u32", "chain_length": "u32",
                 "position_in_chain": "u32", "chain_lifetime": {"?": TIMEVAL},
                 "chain_deallocation": {"?": DEALLOCATION}, "id": "u64"};
def GROUP_DATA: {"size": "u64", "min_size": "u64", "max_size": "u64",
                 "min_timestamp": TIMEVAL, "min_timestamp_relative": TIMEVAL,
                 "min_timestamp_relative_p": "f32", "max_timestamp": TIMEVAL,
                 "max_timestamp_relative": TIMEVAL, "max_timestamp_relative_p": "f32",
                 "interval": TIMEVAL, "leaked_count": "u64", "allocated_count": "u64"};
def GROUP: {"all": GROUP_DATA, "only_matched": GROUP_DATA, "backtrace_id": "u32",
            "backtrace": ["list", FRAME]};
def MAP_SOURCE: {"timestamp": TIMEVAL, "timestamp_relative": TIMEVAL,
                 "timestamp_relative_p": "f32", "thread": "u32", "backtrace_id": "u32",
                 "backtrace": ["list", FRAME]};
def REGION: {"$s": "region", "address": "u64", "address_s": "str", "timestamp": TIMEVAL,
             "timestamp_relative": TIMEVAL, "timestamp_relative_p": "f32", "size": "u64",
             "deallocation": {"?": {"timestamp": TIMEVAL, "sources": ["list", {
                 "address": "u64", "length": "u64", "source": MAP_SOURCE}]}},
             "is_readable": "bool", "is_writable": "bool", "is_executable": "bool",
             "is_shared": "bool", "file_offset": "u64", "inode": "u64", "major": "u32",
             "minor": "u32", "name": "str"};
def MAP: {"$s": "map", "id": "u64", "address": "u64", "address_s": "str",
          "timestamp": TIMEVAL, "timestamp_relative": TIMEVAL,
          "timestamp_relative_p": "f32", "size": "u64", "source": {"?": MAP_SOURCE},
          "deallocation": {"?": {"timestamp": TIMEVAL, "source": {"?": MAP_SOURCE}}},
          "is_readable": "bool", "is_writable": "bool", "is_executable": "bool",
          "is_shared": "bool", "name": "str", "peak_rss": "u64",
          "regions": ["list", REGION], "usage_history": ["list", {}]};
def METADATA: {"id": "str", "executable": "str", "architecture": "str",
               "final_allocated": "u64", "final_allocated_count": "u64",
               "runtime": TIMEVAL, "unique_backtrace_count": "u64",
               "maximum_backtrace_depth": "u32", "timestamp": TIMEVAL};

# Where bytehound has a value rheaper does not record, the answer is null
# (docs/rest-api.md, "Fields that are null"): glibc's internals of a block,
# per-frame counts and columns, and per-map RSS and file identity.
def documented_null: ["frame.count", "allocation.is_mmaped", "allocation.in_main_arena",
                      "allocation.extra_space", "map.peak_rss", "region.inode",
                      "region.major", "region.minor"];

# A result: n checks made, f the failures' messages. add_r sums a list of them.
def res($n; $f): {n: $n, f: $f};
def add_r: reduce .[] as $r ({n: 0, f: []}; .n += $r.n | .f += $r.f);

# check(what; got; want): one check, failed unless got equals want.
def check($what; $got; $want):
  res(1; if $got == $want then [] else ["\($what): got \($got|tojson), want \($want|tojson)"] end);

def is_int: type == "number" and . == floor;
def scalar_ok($t):
  if $t == "u64" then is_int and . >= 0
  elif $t == "u32" then is_int and . >= 0 and . < 4294967296
  elif $t == "f32" then type == "number"
  elif $t == "str" then type == "string"
  elif $t == "bool" then type == "boolean"
  else error("unknown type \($t)") end;

# conforms(where; typ; field): checks . against bytehound's type typ, field is
# "struct.name" (or null); one check for this value and one per value inside.
def conforms($where; $typ; $field):
  . as $v
  | if ($typ|type) == "object" and ($typ|has("?")) then
      if $v == null then res(1; []) else [res(1; []), conforms($where; $typ["?"]; null)] | add_r end
    elif ($typ|type) == "string" and ($typ|startswith("?")) then
      if $v == null then res(1; []) else [res(1; []), conforms($where; $typ[1:]; null)] | add_r end
    elif $v == null then
      res(1; if (documented_null | index([$field])) != null then []
             else ["\($where): null where bytehound has a value"] end)
    elif ($typ|type) == "array" then
      if ($v|type) != "array" then res(1; ["\($where): not a list"])
      else [res(1; []), ($v | to_entries[] | .key as $i | .value
                         | conforms("\($where)[\($i)]"; $typ[1]; null))] | add_r end
    elif ($typ|type) == "object" then
      if ($v|type) != "object" then res(1; ["\($where): not an object"])
      else ($typ["$s"] // "") as $name
        | [res(1; []), ($typ | to_entries[] | select(.key != "$s") | .key as $k | .value as $t
             | if ($v|has($k)) | not then res(0; ["\($where): no field \($k)"])
               else $v[$k] | conforms("\($where).\($k)"; $t; "\($name).\($k)") end)]
        | add_r end
    else
      res(1; if ($v|scalar_ok($typ)) then [] else ["\($where): \($v|tojson) is not a \($typ)"] end)
    end;

# fns: bytehound's assert_allocation_backtrace, the functions innermost first.
def fns: [.[] | .raw_function // ""] | reverse;

# hex16: "%016X" of a non-negative integer.
def hex: if . < 16 then "0123456789ABCDEF"[.:. + 1]
         else ((. / 16 | floor) | hex) + ((. % 16) as $d | "0123456789ABCDEF"[$d:$d + 1]) end;
def hex16: hex as $h | ([range(16 - ($h|length)) | "0"] | join("")) + $h;

def ns: .secs * 1000000000 + .fract_nsecs;
def sizes: [.allocations[].size];

$list[0] as $lst | $allocs[0] as $resp | $resp.allocations as $all
| [$all[] | select(.size == 123456)] as $big
| [$all[] | select(.size == 64)] as $b64
| [$all[] | select((.backtrace | fns[:2]) == ["calloc", "zeroed"])] as $calloc
| [$all[] | select((.backtrace | fns | length) > 1 and (.backtrace | fns[1]) == "grow")]
  as $chain_unsorted | ($chain_unsorted | sort_by(.id)) as $chain
| $groups[0] as $grp
| $maps[0] as $mp
| [$mp.maps[] | select(.size == 5 * $page)] as $rw
| [$mp.maps[] | select(.size == 3 * $page)] as $ro
| [
  # /list, as analyze() polls it: the profile and its executable
  ($lst | conforms("/list"; ["list", METADATA]; null)),
  check("/list: one profile"; $lst | length; 1),
  check("/list: executable"; $lst[0].executable | split("/") | last; "bytehound_prog"),

  # /data/last/allocations: every block of the program's plan
  ($all | conforms("allocations"; ["list", ALLOCATION]; null)),
  check("allocations: total_count is the list's length"; $resp.total_count; $all | length),
  ($all[] | res(1; (if (.address | is_int) and .address_s == (.address | hex16) then [] else
                      ["allocation \(.id): address_s \(.address_s) is not bytehound's 16 hex digits"]
                    end)
                   + (if (.timestamp_relative_p | type) == "number"
                         and .timestamp_relative_p >= 0 and .timestamp_relative_p <= 1 then [] else
                      ["allocation \(.id): timestamp_relative_p \(.timestamp_relative_p) is not a fraction of the run"]
                    end))),

  check("one block of 123456 bytes"; $big | length; 1),
  (if ($big | length) > 0 then $big[0] as $a0 |
    check("123456: backtrace, innermost first, as bytehound's";
          $a0.backtrace | fns[:5]; ["malloc", "foobar_0", "foobar_1", "foobar_2", "main"]),
    check("123456: never freed"; $a0.deallocation; null),
    check("123456: its own chain"; [$a0.chain_length, $a0.position_in_chain]; [1, 0]),
    check("123456: the call site is foobar_0";
          $a0.backtrace[$a0.callsite // 0].function; "foobar_0")
   else empty end),
  check("seven blocks of 64 bytes"; $b64 | length; 7),
  ($b64[] |
    check("64: malloc from seven"; .backtrace | fns[:3]; ["malloc", "seven", "main"]),
    check("64: freed by its own thread";
          (.deallocation | if . then .thread else . end); .thread)),
  # calloc(10, 100) and malloc(1000) share the size: tell them by the caller
  check("one calloc from zeroed"; $calloc | length; 1),
  (if ($calloc | length) > 0 then
    check("calloc: 1000 bytes, freed"; [$calloc[0].size, $calloc[0].deallocation != null];
          [1000, true])
   else empty end),
  check("grow: malloc, realloc, realloc"; [$chain[] | [(.backtrace | fns[0]), .size]];
        [["malloc", 1000], ["realloc", 2000], ["realloc", 3000]]),
  check("grow: one chain of three"; [$chain[] | [.chain_length, .position_in_chain]];
        [[3, 0], [3, 1], [3, 2]]),
  (if ($chain | length) == 3 then $chain[2].deallocation as $last_free |
    check("grow: the first two end where the chain's last is freed";
          [$chain[:2][] | .chain_deallocation]; [$last_free, $last_free]),
    check("grow: the last has no chain_deallocation of its own"; $chain[2].chain_deallocation; null),
    ($chain[0].chain_lifetime as $life |
     if $life and $last_free then
       check("grow: chain_lifetime is first allocation to last free";
             $life | ns; ($last_free.timestamp | ns) - ($chain[0].timestamp | ns))
     else empty end)
   else empty end),

  # grow_many in two threads at once: two chains of 50 whose reallocs interleave
  (50 as $steps | (100, 5000) as $base
   | ([$all[] | select((.backtrace | fns[:2] | index(["grow_many"])) != null
                       and .size >= $base + 16 and .size <= $base + 16 * $steps)]
      | sort_by(.size)) as $mine
   | check("grow_many(\($base)): the sizes"; [$mine[].size];
           [range(1; $steps + 1) | $base + 16 * .]),
     check("grow_many(\($base)): one chain of \($steps), in size order";
           [$mine[] | [.chain_length, .position_in_chain]]; [range($steps) | [$steps, .]]),
     check("grow_many(\($base)): one thread"; [$mine[].thread] | unique | length; 1)),

  # the web UI's filters, sorting and paging, with bytehound's parameter names
  check("size_min=size_max=123456: total_count"; $size[0].total_count; 1),
  check("function_regex=^foobar_1$: the 123456 block"; $foobar1[0] | sizes; [123456]),
  check("seven: count=3 skip=5 pages the 7";
        [$seven[0].total_count, ($seven[0].allocations | length)]; [7, 2]),
  check("sort_by=size order=dsc count=1"; $top[0] | sizes; [123456]),
  check("only_leaked through foobar_2: the 123456 block"; $leak2[0] | sizes; [123456]),
  check("only_leaked through grow*: none (all freed)"; $leakgrow[0].total_count; 0),

  # /data/last/allocation_groups: one group per stack
  ($grp.allocations | conforms("allocation_groups"; ["list", GROUP]; null)),
  ([$grp.allocations[] | select((.backtrace | fns[:2]) == ["malloc", "seven"])] as $g64 |
   check("one group for seven"; $g64 | length; 1),
   (if ($g64 | length) > 0 then
     check("seven's group: count, size, leaked";
           [$g64[0].all.allocated_count, $g64[0].all.size, $g64[0].all.leaked_count]; [7, 448, 0])
    else empty end)),
  (if ($big | length) > 0 then
    check("the 123456 block's group";
          [$grp.allocations[] | select(.backtrace_id == $big[0].backtrace_id)
           | [.all.allocated_count, .all.leaked_count]]; [[1, 1]])
   else empty end),

  # /data/last/maps, as analyze() asks for them
  ($mp.maps | conforms("maps"; ["list", MAP]; null)),
  check("maps: total_count"; $mp.total_count; $mp.maps | length),
  check("one 5-page map and one 3-page map"; [$rw | length, ($ro | length)]; [1, 1]),
  (if ($rw | length) > 0 then $rw[0] as $m |
    check("rw map: r w x shared"; [$m.is_readable, $m.is_writable, $m.is_executable, $m.is_shared];
          [true, true, false, false]),
    check("rw map: mmap from map_rw"; $m.source.backtrace | fns[:3]; ["mmap", "map_rw", "main"]),
    check("rw map: unmapped by unmap_it";
          ($m.deallocation | if . then .source.backtrace | fns[:3] else . end);
          ["munmap", "unmap_it", "main"]),
    check("rw map: one region, the whole map"; [$m.regions[] | [.address, .size]];
          [[$m.address, $m.size]]),
    (if ($m.regions | length) > 0 and $m.regions[0].deallocation then
      check("rw map: its region's unmapping";
            [$m.regions[0].deallocation.sources[] | [.address, .length]]; [[$m.address, $m.size]])
     else empty end),
    check("rw map: no usage samples"; $m.usage_history; []),
    check("maps?id=: that map alone"; [$one[0].maps[]? | .id]; [$m.id]),
    check("maps without with_regions: no regions"; $one[0].maps[0] | has("regions"); false)
   else empty end),
  (if ($ro | length) > 0 then $ro[0] as $m |
    check("ro map: r w x shared"; [$m.is_readable, $m.is_writable, $m.is_executable, $m.is_shared];
          [true, false, false, true]),
    check("ro map: never unmapped"; $m.deallocation; null)
   else empty end)
  ]
| add_r
| (.f[] | "FAIL: " + .), "\(.n) checks, \(.f | length) failed"
