/* rh_export_heaptrack.c: the heaptrack export, `rheaper export heaptrack DB -o FILE`.
 *
 * Writes the allocations of `sel` in heaptrack's interpreted text format (file
 * format version 3, what heaptrack_interpret produces and heaptrack_print and
 * heaptrack_gui read), so heaptrack's tools can browse a rheaper profile. The
 * facts of the format used here, one record per line, numbers in lower-case
 * hex:
 *
 *   v HEAPTRACK_VERSION FILE_VERSION   first line
 *   X COMMAND LINE                     the debuggee
 *   s LENGTH TEXT                      a string; strings are numbered from 1
 *   i IP MODULE [FUNCTION FILE LINE]   an instruction pointer (numbered from 1);
 *                                      MODULE, FUNCTION, FILE are string numbers
 *   t IP PARENT                        a trace node (numbered from 1, 0 = root):
 *                                      traces run from the outermost frame down
 *   a SIZE TRACE                       an allocation info (numbered from 0)
 *   + INFO / - INFO                    an allocation / deallocation of that info
 *   c MILLISECONDS                     time since start
 *
 * heaptrack counts one call per '+', tracks the live sum for its peak, calls
 * what is never matched by a '-' leaked, and takes a '-' right after a '+' of
 * the same info as a temporary allocation. Its analyzer clears "the last '+'"
 * to info 0 at every '-', so a '-' of info 0 right after another '-' would
 * count as temporary too: info 0 is therefore a placeholder no event uses.
 * Each frame row of rheaper (inlined frames included) becomes its own
 * instruction pointer, so heaptrack shows the same stacks as rheaper. The
 * tables are numbered in TEMP tables of SQLite, then written in dependency
 * order; events come in time order, which is the converter's merged (recorded)
 * order because it gives every event a distinct time, so heaptrack finds the
 * same temporary allocations as allocations.temporary. heaptrack decides
 * compression by the file name (.gz, .zst); rheaper writes plain text and
 * refuses those names.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_export.h"

/* The heaptrack release whose format this matches (1.4.0) and its file version. */
#define RH_HT_VERSION 0x10400
#define RH_HT_FILE_VERSION 3

/* The numbering. ht_frame: every frame of every stack of `sel` with the string
 * numbers of its module, function and file and its ip number. ht_trace: the
 * trie of (parent, ip), filled by rh_ht_traces(). ht_info: (size, trace). */
static const char rh_ht_schema[] =
    "DROP TABLE IF EXISTS temp.ht_str; DROP TABLE IF EXISTS temp.ht_ip;"
    "DROP TABLE IF EXISTS temp.ht_frame; DROP TABLE IF EXISTS temp.ht_trace;"
    "DROP TABLE IF EXISTS temp.ht_bt; DROP TABLE IF EXISTS temp.ht_info;"
    "CREATE TEMP TABLE ht_str(id INTEGER PRIMARY KEY, s TEXT UNIQUE NOT NULL);"
    "INSERT OR IGNORE INTO ht_str(s) SELECT coalesce(b.module, '[unknown]') FROM backtraces b"
    " WHERE b.id IN (SELECT DISTINCT bt FROM sel) ORDER BY b.id, b.frame_no;"
    "INSERT OR IGNORE INTO ht_str(s) SELECT s FROM (SELECT b.id AS i, b.frame_no AS f,"
    " b.sym AS s FROM backtraces b WHERE b.id IN (SELECT DISTINCT bt FROM sel)"
    " UNION ALL SELECT b.id, b.frame_no, b.file FROM backtraces b"
    " WHERE b.id IN (SELECT DISTINCT bt FROM sel)) WHERE s IS NOT NULL ORDER BY i, f;"
    "CREATE TEMP TABLE ht_ip(id INTEGER PRIMARY KEY, address INTEGER, module INTEGER,"
    " sym INTEGER, file INTEGER, line INTEGER,"
    " UNIQUE(address, module, sym, file, line));"
    "CREATE TEMP TABLE ht_frame(bt INTEGER, frame_no INTEGER, ip INTEGER,"
    " PRIMARY KEY(bt, frame_no)) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO ht_ip(address, module, sym, file, line)"
    " SELECT coalesce(b.address, 0), m.id, coalesce(s.id, 0), coalesce(f.id, 0),"
    " coalesce(b.line, 0) FROM backtraces b"
    " JOIN ht_str m ON m.s = coalesce(b.module, '[unknown]')"
    " LEFT JOIN ht_str s ON s.s = b.sym LEFT JOIN ht_str f ON f.s = b.file"
    " WHERE b.id IN (SELECT DISTINCT bt FROM sel) ORDER BY b.id, b.frame_no DESC;"
    "INSERT INTO ht_frame SELECT b.id, b.frame_no, i.id FROM backtraces b"
    " JOIN ht_str m ON m.s = coalesce(b.module, '[unknown]')"
    " LEFT JOIN ht_str s ON s.s = b.sym LEFT JOIN ht_str f ON f.s = b.file"
    " JOIN ht_ip i ON i.address = coalesce(b.address, 0) AND i.module = m.id"
    " AND i.sym = coalesce(s.id, 0) AND i.file = coalesce(f.id, 0)"
    " AND i.line = coalesce(b.line, 0)"
    " WHERE b.id IN (SELECT DISTINCT bt FROM sel);"
    "CREATE TEMP TABLE ht_trace(id INTEGER PRIMARY KEY, ip INTEGER, parent INTEGER,"
    " UNIQUE(parent, ip));"
    "CREATE TEMP TABLE ht_bt(bt INTEGER PRIMARY KEY, trace INTEGER);";

/* Fills ht_trace and ht_bt: for each stack of `sel`, walks its ips from the
 * outermost frame, finding or adding each (parent, ip) node. Returns 0 or -1. */
static int rh_ht_traces(sqlite3 *db)
{
    sqlite3_stmt *bts = NULL, *fr = NULL, *ins = NULL, *get = NULL, *put = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT DISTINCT bt FROM sel ORDER BY bt", -1, &bts, NULL) ||
        sqlite3_prepare_v2(db, "SELECT ip FROM ht_frame WHERE bt = ? ORDER BY frame_no DESC", -1,
                           &fr, NULL) ||
        sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO ht_trace(ip, parent) VALUES(?1, ?2)", -1,
                           &ins, NULL) ||
        sqlite3_prepare_v2(db, "SELECT id FROM ht_trace WHERE parent = ?2 AND ip = ?1", -1, &get,
                           NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO ht_bt(bt, trace) VALUES(?, ?)", -1, &put, NULL)) {
        rh_sql_fail(db, "export heaptrack");
        goto out;
    }
    int s;
    while ((s = sqlite3_step(bts)) == SQLITE_ROW) {
        int64_t bt = sqlite3_column_int64(bts, 0), node = 0;
        sqlite3_bind_int64(fr, 1, bt);
        while ((s = sqlite3_step(fr)) == SQLITE_ROW) {
            int64_t ip = sqlite3_column_int64(fr, 0);
            sqlite3_bind_int64(ins, 1, ip);
            sqlite3_bind_int64(ins, 2, node);
            sqlite3_bind_int64(get, 1, ip);
            sqlite3_bind_int64(get, 2, node);
            if (sqlite3_step(ins) != SQLITE_DONE || sqlite3_step(get) != SQLITE_ROW) {
                rh_sql_fail(db, "export heaptrack");
                goto out;
            }
            node = sqlite3_column_int64(get, 0);
            sqlite3_reset(ins);
            sqlite3_reset(get);
        }
        sqlite3_reset(fr);
        if (s != SQLITE_DONE) {
            rh_sql_fail(db, "export heaptrack");
            goto out;
        }
        /* a stack without frames hangs at the root: heaptrack's trace 0 */
        sqlite3_bind_int64(put, 1, bt);
        sqlite3_bind_int64(put, 2, node);
        if (sqlite3_step(put) != SQLITE_DONE) {
            rh_sql_fail(db, "export heaptrack");
            goto out;
        }
        sqlite3_reset(put);
    }
    if (s != SQLITE_DONE) {
        rh_sql_fail(db, "export heaptrack");
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(bts);
    sqlite3_finalize(fr);
    sqlite3_finalize(ins);
    sqlite3_finalize(get);
    sqlite3_finalize(put);
    return rc;
}

/* Writes each row of sql through the line printer `emit`. Returns 0 or -1. */
static int rh_ht_rows(sqlite3 *db, const char *sql, FILE *out,
                      void (*emit)(sqlite3_stmt *st, FILE *out))
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "export heaptrack");
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
        emit(st, out);
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? 0 : rh_sql_fail(db, "export heaptrack");
}

/* "s LENGTH TEXT": the length counts bytes; a newline would end the record
 * early, so it is written as a space. */
static void rh_ht_emit_str(sqlite3_stmt *st, FILE *out)
{
    const char *s = (const char *)sqlite3_column_text(st, 0);
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    fprintf(out, "s %zx ", n);
    for (size_t i = 0; i < n; i++)
        fputc(s[i] == '\n' || s[i] == '\r' ? ' ' : s[i], out);
    fputc('\n', out);
}

static void rh_ht_emit_ip(sqlite3_stmt *st, FILE *out)
{
    int64_t sym = sqlite3_column_int64(st, 2), file = sqlite3_column_int64(st, 3);
    fprintf(out, "i %" PRIx64 " %" PRIx64, (uint64_t)sqlite3_column_int64(st, 0),
            (uint64_t)sqlite3_column_int64(st, 1));
    if (sym || file)
        fprintf(out, " %" PRIx64 " %" PRIx64 " %" PRIx64, (uint64_t)sym, (uint64_t)file,
                (uint64_t)sqlite3_column_int64(st, 4));
    fputc('\n', out);
}

static void rh_ht_emit_trace(sqlite3_stmt *st, FILE *out)
{
    fprintf(out, "t %" PRIx64 " %" PRIx64 "\n", (uint64_t)sqlite3_column_int64(st, 0),
            (uint64_t)sqlite3_column_int64(st, 1));
}

static void rh_ht_emit_info(sqlite3_stmt *st, FILE *out)
{
    fprintf(out, "a %" PRIx64 " %" PRIx64 "\n", (uint64_t)sqlite3_column_int64(st, 0),
            (uint64_t)sqlite3_column_int64(st, 1));
}

/* Writes the whole file for `sel` to out (rh_file_cmd_run's writer; ctx
 * unused). Returns 0 or -1 after a message. */
int rh_heaptrack_write(sqlite3 *db, FILE *out, void *ctx)
{
    (void)ctx;
    if (rh_sql_exec(db, rh_ht_schema) || rh_ht_traces(db) ||
        rh_sql_exec(db, "CREATE TEMP TABLE ht_info(id INTEGER PRIMARY KEY, size INTEGER,"
                       " trace INTEGER, UNIQUE(size, trace));"
                       /* the placeholder info 0: size 0 at the root, never used */
                       "INSERT INTO ht_info(id, size, trace) VALUES(1, -1, 0);"
                       "INSERT OR IGNORE INTO ht_info(size, trace) SELECT s.size, b.trace"
                       " FROM sel s JOIN ht_bt b ON b.bt = s.bt ORDER BY s.alloc_after, s.id;"))
        return -1;

    /* header: versions and the command line (meta.args, arguments NUL- or
     * space-separated) */
    fprintf(out, "v %x %x\n", RH_HT_VERSION, RH_HT_FILE_VERSION);
    size_t n = 0;
    char *a = rh_meta_dup(db, "command_line", &n);
    if (!a)
        a = rh_meta_dup(db, "args", &n);
    if (!a)
        a = rh_meta_dup(db, "program", &n);
    int64_t duration = rh_meta_int(db, "duration_ns", 0);
    fputs("X ", out);
    if (a)
        for (size_t i = 0; i < n; i++)
            fputc(a[i] == 0 || a[i] == '\n' || a[i] == '\r' ? ' ' : a[i], out);
    else
        fputc('?', out);
    free(a);
    fputc('\n', out);

    if (rh_ht_rows(db, "SELECT s FROM ht_str ORDER BY id", out, rh_ht_emit_str) ||
        rh_ht_rows(db, "SELECT address, module, sym, file, line FROM ht_ip ORDER BY id", out,
                   rh_ht_emit_ip) ||
        rh_ht_rows(db, "SELECT ip, parent FROM ht_trace ORDER BY id", out, rh_ht_emit_trace) ||
        rh_ht_rows(db, "SELECT max(size, 0), trace FROM ht_info ORDER BY id", out, rh_ht_emit_info))
        return -1;

    /* the events in recorded order (distinct times; at equal times, only in a
     * database of another converter, frees first), with a timestamp line
     * whenever the millisecond changes */
    static const char ev[] =
        "WITH x AS (SELECT s.id, s.alloc_after, s.dealloc_after, i.id - 1 AS info FROM sel s"
        " JOIN ht_bt b ON b.bt = s.bt JOIN ht_info i ON i.size = s.size AND i.trace = b.trace)"
        " SELECT t, k, info FROM (SELECT alloc_after AS t, 1 AS k, id, info FROM x"
        " UNION ALL SELECT dealloc_after, 0, id, info FROM x WHERE dealloc_after IS NOT NULL)"
        " ORDER BY t, k, id";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, ev, -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "export heaptrack");
    int64_t ms = 0;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(st, 0) / 1000000;
        if (t > ms) {
            ms = t;
            fprintf(out, "c %" PRIx64 "\n", (uint64_t)ms);
        }
        fprintf(out, "%c %" PRIx64 "\n", sqlite3_column_int(st, 1) ? '+' : '-',
                (uint64_t)sqlite3_column_int64(st, 2));
    }
    sqlite3_finalize(st);
    if (s != SQLITE_DONE)
        return rh_sql_fail(db, "export heaptrack");
    if (duration / 1000000 > ms)
        ms = duration / 1000000;
    fprintf(out, "c %" PRIx64 "\n", (uint64_t)(ms + 1));
    return ferror(out) ? -1 : 0;
}
