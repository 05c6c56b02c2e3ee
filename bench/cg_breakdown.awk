# cg_breakdown.awk: splits a callgrind profile of a tracked run into the parts
# of rheaper's cost per event (bench/breakdown.sh, docs/benchmarks.md).
#
#   awk -f cg_breakdown.awk RANGES callgrind.out
#
# RANGES lists the runtime's and the shims' functions by source line, one per
# line: "BASENAME FIRST LAST NAME" (breakdown.sh writes it from the sources).
# The profile must come from `valgrind --tool=callgrind` with line positions
# (the default). Every instruction callgrind counted is charged to the source
# line it came from, inlined code included (callgrind names the header an
# inlined line belongs to with fi= / fe=), then to the function whose source
# lines hold it, then to a part:
#
#   guard    the state and reentrancy-guard checks, the shims themselves and
#            the fast path's dispatch (slot, epoch, room in the chunk)
#   clock    the time-stamp counter read (one instruction: its cost in ns is
#            measured apart, clock_cost.c)
#   walk     the stack walk: frame-pointer steps with their per-frame hash
#            step, the rule-cache test, CFI steps, the walk cache
#   lookup   the final hash mix and the stack-table probe
#   record   encoding the event record and committing it
#   chunk    chunk handling: room checks, opening, sealing and mapping chunks,
#            a thread's first event
#   stackdef new stacks: the STACK record (a second walk that encodes frames)
#   other    the rest of the runtime (start-up, exit, module snapshots)
#   program  everything else: the program, its allocator, libc
#
# With -v detail=1 it also prints, on stderr, the instructions of each
# function (or line outside a function) with its part.
# Prints one line per part: "PART INSTRUCTIONS", then "total INSTRUCTIONS".
function base(p,   n) { n = split(p, a, "/"); return a[n] }
function part(f) {
    if (f == "rh_now" || f == "rh_now_slow") return "clock"
    if (f ~ /^rh_stack_walk|^rh_ws_|^rh_unwind|^rh_uw_|^rh_arch_ret$|^rh_wc_|^rh_stack_bounds|^rh_walk_add$|^rh_arch_rec_next$/) return "walk"
    if (f ~ /^rh_walk_(step|fmix|final)$|^rh_stack_home_id$|^rh_stack_id|^rh_stack_lookup$/) return "lookup"
    if (f ~ /^rh_put_|^rh_event_done$|^rip_put_varint$|^rip_zigzag$|^rh_writer_commit$|^rh_writer_recalibrate$|^rh_calib_pair$|^rh_emit_|^rh_live_note/) return "record"
    if (f ~ /^rh_writer_|^rip_crc|^rh_event_room$|^rh_file_|^rh_thread_|^rh_sys_|^rh_ready$|^rh_prepare$|^rh_record_.*_slow$|^rh_spin_|^rh_gettid$|^rh_shared_/) return "chunk"
    if (f ~ /^rh_stack_define$|^rh_stack_encode|^rh_kind_announce$|^rh_report_stack$/) return "stackdef"
    if (f ~ /^__wrap_|_hooked$|_plain$|^rh_hook_|^rh_fast_|^rh_record_|^rh_alloc_done$|^rh_shim_|^rh_sample_alloc$|^rh_live_free_recorded$|^rh_live_maybe$|^rh_free_done$/) return "guard"
    return "other"
}
FNR == NR { fname[$1, $2] = $4; last[$1, $2] = $3; starts[$1] = starts[$1] " " $2; next }
/^fl=/ || /^fi=/ || /^fe=/ || /^cfi=/ || /^cfl=/ {
    key = substr($0, 1, index($0, "=") - 1)
    rest = substr($0, index($0, "=") + 1)
    if (rest ~ /^\([0-9]+\)/) {
        id = substr(rest, 1, index(rest, ")"))
        nm = substr(rest, length(id) + 1); sub(/^ /, "", nm)
        if (nm != "") files[id] = nm; else nm = files[id]
    } else nm = rest
    if (key == "fl") { curfl = nm; cur = nm }
    else if (key == "fi" || key == "fe") cur = nm
    next
}
/^fn=/ { cur = curfl; next }
/^calls=/ { skip = 1; next }
/^[0-9+*-]/ {
    pos = $1
    if (pos ~ /^\+/) line = line + substr(pos, 2)
    else if (pos ~ /^-/) line = line - substr(pos, 2)
    else if (pos != "*") line = pos + 0
    if (skip) { skip = 0; next }
    cost[cur, line] += $2
    next
}
END {
    for (k in cost) {
        split(k, kv, SUBSEP)
        b = base(kv[1]); ln = kv[2] + 0; p = "program"
        if (b in starts) {
            p = "other"
            n = split(starts[b], st, " ")
            for (i = 1; i <= n; i++)
                if (ln >= st[i] + 0 && ln <= last[b, st[i]] + 0) { p = part(fname[b, st[i]]); fn = fname[b, st[i]]; break }
            if (detail) byfn[b ":" (i <= n ? fn : ln) " " p] += cost[k]
        }
        sum[p] += cost[k]; total += cost[k]
    }
    if (detail) for (f in byfn) printf "%s %.0f\n", f, byfn[f] > "/dev/stderr"
    for (p in sum) printf "%s %.0f\n", p, sum[p]
    printf "total %.0f\n", total
}
