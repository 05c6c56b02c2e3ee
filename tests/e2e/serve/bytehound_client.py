#!/usr/bin/env python3
"""bytehound_client.py: bytehound's own client calls against `rheaper serve`.

    bytehound_client.py BASE_URL PAGE_SIZE

Makes the REST calls bytehound's client makes (its integration tests' analyze():
/list until the profile is there, /data/last/allocations,
/data/last/allocation_groups, /data/last/maps?with_regions=true&
with_usage_history=true; and the web UI's filters, sorting, paging and one map
by id), reads every answer with the field types bytehound's protocol declares
(server-core's protocol.rs: a u64 must be a non-negative integer, a bool a
bool, Option<T> may be null), and checks the values against the plan of
bytehound_prog.c. The fields rheaper cannot know are null, as docs/rest-api.md
lists them (DOCUMENTED_NULL); any other null where bytehound has no Option is a
failure. Prints one line per failed check and a summary; exits 1 on a failure.
"""
import json
import sys
import urllib.request

BASE = sys.argv[1]
PAGE = int(sys.argv[2])
FAILS = []
CHECKS = [0]


def check(what, got, want):
    CHECKS[0] += 1
    if got != want:
        FAILS.append(f"{what}: got {got!r}, want {want!r}")


def get(path):
    with urllib.request.urlopen(BASE + path, timeout=60) as r:
        check(f"{path}: content type", r.headers.get("Content-Type"), "application/json")
        return json.loads(r.read().decode())


# bytehound's types: "u64" (non-negative int), "u32", "f32" (number), "str",
# "bool", a dict (a struct), ["list", T], and "?T" for Option<T>.
TIMEVAL = {"secs": "u64", "fract_nsecs": "u32"}
FRAME = {"address": "u64", "address_s": "str", "count": "u64", "library": "?str",
         "function": "?str", "raw_function": "?str", "source": "?str", "line": "?u32",
         "column": "?u32", "is_inline": "bool"}
DEALLOCATION = {"timestamp": TIMEVAL, "thread": "u32"}
ALLOCATION = {"address": "u64", "address_s": "str", "timestamp": TIMEVAL,
              "timestamp_relative": TIMEVAL, "timestamp_relative_p": "f32", "thread": "u32",
              "size": "u64", "backtrace_id": "u32", "deallocation": ("?", DEALLOCATION),
              "backtrace": ["list", FRAME], "is_mmaped": "bool", "in_main_arena": "bool",
              "extra_space": "u32", "chain_length": "u32", "position_in_chain": "u32",
              "chain_lifetime": ("?", TIMEVAL), "chain_deallocation": ("?", DEALLOCATION),
              "id": "u64"}
GROUP_DATA = {"size": "u64", "min_size": "u64", "max_size": "u64",
              "min_timestamp": TIMEVAL, "min_timestamp_relative": TIMEVAL,
              "min_timestamp_relative_p": "f32", "max_timestamp": TIMEVAL,
              "max_timestamp_relative": TIMEVAL, "max_timestamp_relative_p": "f32",
              "interval": TIMEVAL, "leaked_count": "u64", "allocated_count": "u64"}
GROUP = {"all": GROUP_DATA, "only_matched": GROUP_DATA, "backtrace_id": "u32",
         "backtrace": ["list", FRAME]}
MAP_SOURCE = {"timestamp": TIMEVAL, "timestamp_relative": TIMEVAL,
              "timestamp_relative_p": "f32", "thread": "u32", "backtrace_id": "u32",
              "backtrace": ["list", FRAME]}
REGION = {"address": "u64", "address_s": "str", "timestamp": TIMEVAL,
          "timestamp_relative": TIMEVAL, "timestamp_relative_p": "f32", "size": "u64",
          "deallocation": ("?", {"timestamp": TIMEVAL, "sources": ["list", {
              "address": "u64", "length": "u64", "source": MAP_SOURCE}]}),
          "is_readable": "bool", "is_writable": "bool", "is_executable": "bool",
          "is_shared": "bool", "file_offset": "u64", "inode": "u64", "major": "u32",
          "minor": "u32", "name": "str"}
MAP = {"id": "u64", "address": "u64", "address_s": "str", "timestamp": TIMEVAL,
       "timestamp_relative": TIMEVAL, "timestamp_relative_p": "f32", "size": "u64",
       "source": ("?", MAP_SOURCE),
       "deallocation": ("?", {"timestamp": TIMEVAL, "source": ("?", MAP_SOURCE)}),
       "is_readable": "bool", "is_writable": "bool", "is_executable": "bool",
       "is_shared": "bool", "name": "str", "peak_rss": "u64",
       "regions": ["list", REGION], "usage_history": ["list", {}]}
METADATA = {"id": "str", "executable": "str", "architecture": "str",
            "final_allocated": "u64", "final_allocated_count": "u64", "runtime": TIMEVAL,
            "unique_backtrace_count": "u64", "maximum_backtrace_depth": "u32",
            "timestamp": TIMEVAL}

# Where bytehound has a value rheaper does not record, the answer is null
# (docs/rest-api.md, "Fields that are null"): glibc's internals of a block,
# per-frame counts and columns, and per-map RSS and file identity.
DOCUMENTED_NULL = {"frame.count", "allocation.is_mmaped", "allocation.in_main_arena",
                   "allocation.extra_space", "map.peak_rss", "region.inode",
                   "region.major", "region.minor"}
NAMES = {id(FRAME): "frame", id(ALLOCATION): "allocation", id(MAP): "map",
         id(REGION): "region"}


def conforms(where, value, typ, field=None):
    """Checks value against bytehound's type typ; field is 'struct.name'."""
    CHECKS[0] += 1
    if isinstance(typ, tuple):  # ("?", T): Option<T>
        if value is not None:
            conforms(where, value, typ[1])
        return
    if isinstance(typ, str) and typ.startswith("?"):
        if value is not None:
            conforms(where, value, typ[1:])
        return
    if value is None:
        if field not in DOCUMENTED_NULL:
            FAILS.append(f"{where}: null where bytehound has a value")
        return
    if isinstance(typ, list):
        if not isinstance(value, list):
            FAILS.append(f"{where}: not a list")
            return
        for i, v in enumerate(value):
            conforms(f"{where}[{i}]", v, typ[1])
        return
    if isinstance(typ, dict):
        if not isinstance(value, dict):
            FAILS.append(f"{where}: not an object")
            return
        name = NAMES.get(id(typ), "")
        for k, t in typ.items():
            if k not in value:
                FAILS.append(f"{where}: no field {k}")
                continue
            conforms(f"{where}.{k}", value[k], t, f"{name}.{k}")
        return
    ok = {"u64": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
          "u32": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32,
          "f32": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "str": lambda v: isinstance(v, str),
          "bool": lambda v: isinstance(v, bool)}[typ](value)
    if not ok:
        FAILS.append(f"{where}: {value!r} is not a {typ}")


def fns(backtrace):
    """bytehound's assert_allocation_backtrace: the functions, innermost first."""
    return [f["raw_function"] or "" for f in reversed(backtrace)]


# /list, as analyze() polls it: the profile and its executable
lst = get("/list")
conforms("/list", lst, ["list", METADATA])
check("/list: one profile", len(lst), 1)
check("/list: executable", lst[0]["executable"].split("/")[-1], "bytehound_prog")

# /data/last/allocations: every block of the program's plan
resp = get("/data/last/allocations")
conforms("allocations", resp["allocations"], ["list", ALLOCATION])
allocs = resp["allocations"]
check("allocations: total_count is the list's length", resp["total_count"], len(allocs))
by_size = {}
for a in allocs:
    by_size.setdefault(a["size"], []).append(a)
    CHECKS[0] += 1
    if a["address_s"] != "%016X" % a["address"]:
        FAILS.append(f"allocation {a['id']}: address_s {a['address_s']} is not "
                     "bytehound's 16 hex digits")
    if not 0 <= a["timestamp_relative_p"] <= 1:
        FAILS.append(f"allocation {a['id']}: timestamp_relative_p "
                     f"{a['timestamp_relative_p']} is not a fraction of the run")

big = by_size.get(123456, [])
check("one block of 123456 bytes", len(big), 1)
if big:
    a0 = big[0]
    check("123456: backtrace, innermost first, as bytehound's",
          fns(a0["backtrace"])[:5], ["malloc", "foobar_0", "foobar_1", "foobar_2", "main"])
    check("123456: never freed", a0["deallocation"], None)
    check("123456: its own chain", (a0.get("chain_length"), a0.get("position_in_chain")), (1, 0))
    check("123456: the call site is foobar_0",
          a0["backtrace"][a0.get("callsite", 0)]["function"], "foobar_0")
check("seven blocks of 64 bytes", len(by_size.get(64, [])), 7)
for a in by_size.get(64, []):
    check("64: malloc from seven", fns(a["backtrace"])[:3], ["malloc", "seven", "main"])
    check("64: freed by its own thread",
          a["deallocation"] and a["deallocation"]["thread"], a["thread"])
# calloc(10, 100) and malloc(1000) share the size: tell them by the caller
calloc_blocks = [a for a in allocs if fns(a["backtrace"])[:2] == ["calloc", "zeroed"]]
check("one calloc from zeroed", len(calloc_blocks), 1)
if calloc_blocks:
    check("calloc: 1000 bytes, freed", (calloc_blocks[0]["size"],
                                        calloc_blocks[0]["deallocation"] is not None),
          (1000, True))
chain = sorted((a for a in allocs if len(fns(a["backtrace"])) > 1
                and fns(a["backtrace"])[1] == "grow"), key=lambda a: a["id"])
check("grow: malloc, realloc, realloc",
      [(fns(a["backtrace"])[0], a["size"]) for a in chain],
      [("malloc", 1000), ("realloc", 2000), ("realloc", 3000)])
check("grow: one chain of three", [(a.get("chain_length"), a.get("position_in_chain")) for a in chain],
      [(3, 0), (3, 1), (3, 2)])
if len(chain) == 3:
    end = chain[2]["deallocation"]
    check("grow: the first two end where the chain's last is freed",
          [a.get("chain_deallocation") for a in chain[:2]], [end, end])
    check("grow: the last has no chain_deallocation of its own",
          chain[2].get("chain_deallocation"), None)
    life = chain[0].get("chain_lifetime")
    if life and end:
        ns = lambda tv: tv["secs"] * 10**9 + tv["fract_nsecs"]
        check("grow: chain_lifetime is first allocation to last free",
              ns(life), ns(end["timestamp"]) - ns(chain[0]["timestamp"]))

# grow_many in two threads at once: two chains of 50 whose reallocs interleave
STEPS = 50
for base in (100, 5000):
    mine = sorted((a for a in allocs if "grow_many" in fns(a["backtrace"])[:2]
                   and base + 16 <= a["size"] <= base + 16 * STEPS), key=lambda a: a["size"])
    check(f"grow_many({base}): the sizes", [a["size"] for a in mine],
          [base + 16 * k for k in range(1, STEPS + 1)])
    check(f"grow_many({base}): one chain of {STEPS}, in size order",
          [(a.get("chain_length"), a.get("position_in_chain")) for a in mine],
          [(STEPS, k) for k in range(STEPS)])
    check(f"grow_many({base}): one thread", len({a["thread"] for a in mine}), 1)

# the web UI's filters, sorting and paging, with bytehound's parameter names
r = get("/data/last/allocations?size_min=123456&size_max=123456")
check("size_min=size_max=123456: total_count", r["total_count"], 1)
r = get("/data/last/allocations?function_regex=%5Efoobar_1%24")
check("function_regex=^foobar_1$: the 123456 block",
      [a["size"] for a in r["allocations"]], [123456])
r = get("/data/last/allocations?function_regex=%5Eseven%24&count=3&skip=5&sort_by=timestamp")
check("seven: count=3 skip=5 pages the 7", (r["total_count"], len(r["allocations"])), (7, 2))
r = get("/data/last/allocations?sort_by=size&order=dsc&count=1")
check("sort_by=size order=dsc count=1", [a["size"] for a in r["allocations"]], [123456])
r = get("/data/last/allocations?lifetime=only_leaked&function_regex=%5Efoobar_2%24")
check("only_leaked through foobar_2: the 123456 block", [a["size"] for a in r["allocations"]],
      [123456])
r = get("/data/last/allocations?lifetime=only_leaked&function_regex=%5Egrow")
check("only_leaked through grow*: none (all freed)", r["total_count"], 0)

# /data/last/allocation_groups: one group per stack
groups = get("/data/last/allocation_groups")
conforms("allocation_groups", groups["allocations"], ["list", GROUP])
g64 = [g for g in groups["allocations"] if fns(g["backtrace"])[:2] == ["malloc", "seven"]]
check("one group for seven", len(g64), 1)
if g64:
    check("seven's group: count, size, leaked",
          (g64[0]["all"]["allocated_count"], g64[0]["all"]["size"],
           g64[0]["all"]["leaked_count"]), (7, 448, 0))
if big:
    gb = [g for g in groups["allocations"] if g["backtrace_id"] == big[0]["backtrace_id"]]
    check("the 123456 block's group", [(g["all"]["allocated_count"], g["all"]["leaked_count"])
                                       for g in gb], [(1, 1)])

# /data/last/maps, as analyze() asks for them
maps = get("/data/last/maps?with_regions=true&with_usage_history=true")
conforms("maps", maps["maps"], ["list", MAP])
check("maps: total_count", maps["total_count"], len(maps["maps"]))
rw = [m for m in maps["maps"] if m["size"] == 5 * PAGE]
ro = [m for m in maps["maps"] if m["size"] == 3 * PAGE]
check("one 5-page map and one 3-page map", (len(rw), len(ro)), (1, 1))
if rw:
    m = rw[0]
    check("rw map: r w x shared", (m["is_readable"], m["is_writable"], m["is_executable"],
                                    m["is_shared"]), (True, True, False, False))
    check("rw map: mmap from map_rw", fns(m["source"]["backtrace"])[:3],
          ["mmap", "map_rw", "main"])
    d = m["deallocation"]
    check("rw map: unmapped by unmap_it", d and fns(d["source"]["backtrace"])[:3],
          ["munmap", "unmap_it", "main"])
    check("rw map: one region, the whole map",
          [(g["address"], g["size"]) for g in m["regions"]], [(m["address"], m["size"])])
    if m["regions"] and m["regions"][0]["deallocation"]:
        check("rw map: its region's unmapping", [(s["address"], s["length"]) for s in
                                                 m["regions"][0]["deallocation"]["sources"]],
              [(m["address"], m["size"])])
    check("rw map: no usage samples", m["usage_history"], [])
    one = get(f"/data/last/maps?id={m['id']}")
    check("maps?id=: that map alone", [x["id"] for x in one["maps"]], [m["id"]])
    check("maps without with_regions: no regions", "regions" in one["maps"][0], False)
if ro:
    m = ro[0]
    check("ro map: r w x shared", (m["is_readable"], m["is_writable"], m["is_executable"],
                                    m["is_shared"]), (True, False, False, True))
    check("ro map: never unmapped", m["deallocation"], None)

for f in FAILS:
    print("FAIL: " + f)
print(f"{CHECKS[0]} checks, {len(FAILS)} failed")
sys.exit(1 if FAILS else 0)
