/* rh_memory.c: the memory table, the process's memory beside the live heap.
 *
 * The runtime samples the process's memory every RHEAPER_RSS_MS while it
 * records, and once at the end (FORMAT.md "Memory samples"). The
 * stream decoder hands each EXT MEMSAMPLE record to the merge as an RH_EV_EXT
 * event, in time order with the allocations; the merge adds the live heap at
 * that moment (its own running sum over live blocks, each weighted as the
 * aggregates weigh it on a sampled profile) and passes it here. One row per
 * sample:
 *
 *   memory(id, time, thread, rss, rss_anon, rss_file, heap, heap_blocks,
 *          alloc_system, alloc_in_use, alloc_free, alloc_mmapped,
 *          alloc_releasable, final)
 *
 * time in ns since the recording started; rss, rss_anon (anonymous) and
 * rss_file (file-backed and shared memory) in bytes, NULL when the runtime
 * could not read them; heap the live heap's bytes as rheaper knows it; the
 * alloc_* figures are the allocator's own (meta memory_allocator says whose;
 * NULL when it offers none): glibc's mallinfo2 arena, uordblks, fordblks,
 * hblkhd and keepcost; jemalloc's stats.resident, stats.allocated,
 * resident - allocated, stats.mapped and stats.retained. final is 1 on the
 * recording's last sample. A damaged body is skipped and counted.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "rh_core.h"
#include "rh_db.h"

static const char rh_memory_schema[] =
    "CREATE TABLE memory(id INTEGER PRIMARY KEY, time INTEGER, thread INTEGER, rss INTEGER,"
    " rss_anon INTEGER, rss_file INTEGER, heap INTEGER, heap_blocks INTEGER,"
    " alloc_system INTEGER, alloc_in_use INTEGER, alloc_free INTEGER, alloc_mmapped INTEGER,"
    " alloc_releasable INTEGER, final INTEGER);";

int rh_memory_open(struct rh_memory *m, sqlite3 *db, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (sqlite3_exec(db, rh_memory_schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO memory VALUES(NULL,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                           (sqlite3_stmt **)&m->ins, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "memory: SQLite error (%s)", sqlite3_errmsg(db));
        rh_memory_close(m);
        return -1;
    }
    return 0;
}

void rh_memory_close(struct rh_memory *m)
{
    sqlite3_finalize(m->ins);
    m->ins = NULL;
}

/* Binds v as an integer; values past INT64_MAX (damage) as NULL. */
static void rh_mem_bind(sqlite3_stmt *s, int i, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX)
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_int64(s, i, (sqlite3_int64)v);
}

int rh_memory_decode(const uint8_t *body, uint32_t len, struct rh_memsample *ms)
{
    const uint8_t *p = body, *end = body + len;
    uint64_t v[10];
    memset(ms, 0, sizeof *ms);
    /* flags, interval, rss, anon, file; then five when flags name a source */
    for (int n = 0; n < 5; n++)
        if (!p || rip_get_varint(&p, end, &v[n]))
            return -1;
    unsigned src = (unsigned)(v[0] >> RIP_MEM_SRC_SHIFT) & RIP_MEM_SRC_MASK;
    if (src != RIP_MEM_SRC_NONE)
        for (int n = 5; n < 10; n++)
            if (rip_get_varint(&p, end, &v[n]))
                return -1;
    ms->has_rss = !(v[0] & RIP_MEM_F_NO_RSS);
    ms->final = (v[0] & RIP_MEM_F_FINAL) != 0;
    ms->source = (int)src;
    ms->interval_ms = v[1];
    ms->rss = v[2];
    ms->anon = v[3];
    ms->file = v[4];
    if (src != RIP_MEM_SRC_NONE)
        memcpy(ms->alloc, v + 5, sizeof ms->alloc);
    return 0;
}

int rh_memory_event(struct rh_memory *m, const struct rh_event *ev, int64_t t)
{
    struct rh_memsample ms;
    if (rh_memory_decode(ev->ext, ev->ext_len, &ms)) {
        m->damaged++;
        return 0;
    }
    sqlite3_stmt *s = m->ins;
    if (!s)
        return 0;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    sqlite3_bind_int64(s, 1, t);
    sqlite3_bind_int64(s, 2, ev->thread);
    if (ms.has_rss) {
        rh_mem_bind(s, 3, ms.rss);
        rh_mem_bind(s, 4, ms.anon);
        rh_mem_bind(s, 5, ms.file);
    }
    rh_mem_bind(s, 6, ev->size);
    rh_mem_bind(s, 7, ev->addr);
    if (ms.source != RIP_MEM_SRC_NONE) {
        for (int i = 0; i < 5; i++)
            rh_mem_bind(s, 8 + i, ms.alloc[i]);
        m->source = ms.source;
    }
    sqlite3_bind_int64(s, 13, ms.final);
    if (ms.interval_ms <= 0xffffffffu)
        m->interval_ms = (unsigned)ms.interval_ms;
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return -1;
    m->rows++;
    return 0;
}
