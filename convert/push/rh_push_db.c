/* rh_push_db.c: one profile.db into ClickHouse tables.
 *
 * The tables keep the SQLite schema's names and columns, each with a
 * `profile` column first: `allocations` (the rows of the view of that name),
 * `backtraces`, `stacks`, and every other table the profile has that holds
 * recorded rows rather than aggregates of them (threads, modules, meta,
 * cpu_samples, mmaps, mallopts, stack_stats, and tables this code does not
 * know yet, such as memory samples), plus `profiles`, one row per profile.
 * A table whose columns are unknown here is pushed as it is: INTEGER columns
 * become Nullable(Int64), REAL ones Nullable(Float64), the rest
 * Nullable(String); a column named bt or stack_id carries a stack id.
 * Every table is a MergeTree partitioned by profile.
 *
 * Stack ids: the converter numbers stacks in the order it met them, so its
 * ids mean nothing on another host. Here each stack gets a 64-bit hash of
 * its kind, its truncation flag and, per physical frame (the backtraces rows
 * with inlined = 0), the module's build id (its path when it has none) and
 * the frame's offset in the module. Two hosts running the same build give
 * the same stack the same id whatever their load addresses, and the
 * converter's numbering does not enter; every column that names a stack
 * (allocations.bt, backtraces.id, stacks.id, cpu_samples.stack_id,
 * mmaps.stack_id, ...) is translated.
 *
 * All or nothing, once: the profile's id is a hash of what identifies the
 * recording (program, command line, pid, start time, duration, event
 * counts). A profile whose id `profiles` already has is not sent again.
 * Otherwise every table is loaded into a staging table of the same
 * structure, then `ALTER TABLE t REPLACE PARTITION <id> FROM staging` puts
 * each table's part into place (replacing what an interrupted earlier push
 * left), and the `profiles` row goes last the same way. A failure drops the
 * partitions already moved. Rows are sent as RowBinary, streamed straight
 * from SQLite.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rh_push.h"
#include "rh_query.h"

#ifndef RHEAPER_VERSION_STRING
#define RHEAPER_VERSION_STRING "0.0.0"
#endif

/* ---- hashing ------------------------------------------------------------------ */

/* FNV-1a over bytes, finished with splitmix64's mixer so every bit of the
 * input moves every bit of the id. */
#define RH_FNV_OFF 0xcbf29ce484222325ull
#define RH_FNV_PRIME 0x100000001b3ull

static uint64_t rh_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * RH_FNV_PRIME;
    return h;
}

/* Hashes a string with its length (so "ab","c" differs from "a","bc"); NULL
 * differs from "". */
static uint64_t rh_fnv_str(uint64_t h, const char *s)
{
    int64_t n = s ? (int64_t)strlen(s) : -1;
    h = rh_fnv(h, &n, sizeof n);
    return s ? rh_fnv(h, s, (size_t)n) : h;
}

static uint64_t rh_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x ? x : 1;
}

static uint64_t rh_sid_frame(uint64_t h, const char *mod, int64_t off)
{
    h = rh_fnv_str(h, mod);
    return rh_fnv(h, &off, sizeof off);
}

static uint64_t rh_sid_final(uint64_t frames, uint32_t n, const char *kind, int truncated)
{
    uint64_t h = rh_fnv_str(RH_FNV_OFF, "rheaper stack v1");
    h = rh_fnv_str(h, kind);
    int64_t t = truncated ? 1 : 0, nn = n;
    h = rh_fnv(h, &t, sizeof t);
    h = rh_fnv(h, &nn, sizeof nn);
    h = rh_fnv(h, &frames, sizeof frames);
    return rh_mix(h);
}

uint64_t rh_push_stack_id(const char *kind, int truncated, uint32_t n, const char *const *mods,
                          const int64_t *offs)
{
    uint64_t h = RH_FNV_OFF;
    for (uint32_t i = 0; i < n; i++)
        h = rh_sid_frame(h, mods[i], offs[i]);
    return rh_sid_final(h, n, kind, truncated);
}

/* ---- the stack map: the converter's stack id -> the stable one ------------------- */

struct rh_sentry {
    int64_t local;   /* INT64_MIN: empty */
    uint64_t frames; /* hash of the physical frames so far */
    uint32_t n;
    uint64_t stable;
    char *kind; /* NULL: undefined stack */
    size_t kind_len;
    int dup; /* another stack of the profile has the same stable id */
};

struct rh_smap {
    struct rh_sentry *e;
    size_t cap, n; /* cap: a power of 2 */
};

static uint64_t rh_smap_slot(const struct rh_smap *m, int64_t local)
{
    return rh_mix((uint64_t)local * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
}

static struct rh_sentry *rh_smap_find(const struct rh_smap *m, int64_t local)
{
    if (!m->cap)
        return NULL;
    for (uint64_t k = rh_smap_slot(m, local);; k = (k + 1) & (m->cap - 1)) {
        if (m->e[k].local == local)
            return &m->e[k];
        if (m->e[k].local == INT64_MIN)
            return NULL;
    }
}

/* Finds or adds local's entry. NULL: out of memory. */
static struct rh_sentry *rh_smap_get(struct rh_smap *m, int64_t local)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 1024;
        struct rh_sentry *e = malloc(cap * sizeof *e);
        if (!e)
            return NULL;
        for (size_t i = 0; i < cap; i++)
            e[i].local = INT64_MIN;
        struct rh_smap nm = {e, cap, m->n};
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].local != INT64_MIN) {
                uint64_t k = rh_smap_slot(&nm, m->e[i].local);
                while (e[k].local != INT64_MIN)
                    k = (k + 1) & (cap - 1);
                e[k] = m->e[i];
            }
        free(m->e);
        *m = nm;
    }
    uint64_t k = rh_smap_slot(m, local);
    while (m->e[k].local != INT64_MIN && m->e[k].local != local)
        k = (k + 1) & (m->cap - 1);
    if (m->e[k].local == INT64_MIN) {
        memset(&m->e[k], 0, sizeof m->e[k]);
        m->e[k].local = local;
        m->e[k].frames = RH_FNV_OFF;
        m->n++;
    }
    return &m->e[k];
}

static void rh_smap_free(struct rh_smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->e[i].local != INT64_MIN)
            free(m->e[i].kind);
    free(m->e);
    m->e = NULL;
    m->cap = m->n = 0;
}

/* ---- the push state ---------------------------------------------------------------- */

struct rh_push {
    sqlite3 *db;
    struct rh_ch *ch;
    const char *path;
    uint64_t profile;
    char pid[24]; /* the profile id as decimal text, for SQL */
    struct rh_smap smap;
    struct rh_sentry **dense; /* by the converter's id, 0..ndense-1; NULL: none */
    int64_t ndense;
    char *err;
    size_t errlen;
    /* tables moved into place so far, to drop again on failure */
    char moved[32][64];
    int nmoved;
    char staged[32][64];
    int nstaged;
};

static int rh_push_sqlerr(struct rh_push *p, const char *what)
{
    snprintf(p->err, p->errlen, "%s: %s: SQLite error (%s)", p->path, what, sqlite3_errmsg(p->db));
    return -1;
}

/* Builds the stack map: each physical frame of backtraces (with its
 * module's build id) and each stacks row's kind and truncation. */
static int rh_push_stacks_map(struct rh_push *p)
{
    sqlite3_stmt *st = NULL;
    const char *sql =
        "SELECT b.id, coalesce(m.build_id, b.module), b.address FROM backtraces b"
        " LEFT JOIN (SELECT path, max(build_id) AS build_id FROM modules GROUP BY path) m"
        " ON m.path = b.module WHERE b.inlined = 0 ORDER BY b.id, b.frame_no";
    if (sqlite3_prepare_v2(p->db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_push_sqlerr(p, "reading backtraces");
    int rc;
    struct rh_sentry *e = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (!e || e->local != id)
            e = rh_smap_get(&p->smap, id);
        if (!e) {
            sqlite3_finalize(st);
            snprintf(p->err, p->errlen, "out of memory");
            return -1;
        }
        const char *mod = (const char *)sqlite3_column_text(st, 1);
        if (sqlite3_column_type(st, 2) == SQLITE_NULL && !mod)
            continue; /* an undefined stack's placeholder row: no frame */
        e->frames = rh_sid_frame(e->frames, mod, sqlite3_column_int64(st, 2));
        e->n++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rh_push_sqlerr(p, "reading backtraces");
    if (sqlite3_prepare_v2(p->db, "SELECT id, kind, truncated FROM stacks", -1, &st, NULL) !=
        SQLITE_OK)
        return rh_push_sqlerr(p, "reading stacks");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        e = rh_smap_get(&p->smap, sqlite3_column_int64(st, 0));
        const char *kind = (const char *)sqlite3_column_text(st, 1);
        if (!e || (kind && !(e->kind = strdup(kind)))) {
            sqlite3_finalize(st);
            snprintf(p->err, p->errlen, "out of memory");
            return -1;
        }
        e->kind_len = kind ? strlen(kind) : 0;
        e->stable = rh_sid_final(e->frames, e->n, kind, sqlite3_column_int(st, 2));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rh_push_sqlerr(p, "reading stacks");
    /* a backtrace without a stacks row (not written by this converter) */
    for (size_t i = 0; i < p->smap.cap; i++)
        if (p->smap.e[i].local != INT64_MIN && !p->smap.e[i].stable)
            p->smap.e[i].stable = rh_sid_final(p->smap.e[i].frames, p->smap.e[i].n, NULL, 0);
    /* two stacks of one profile with one stable id (the same frames defined
     * twice): their rows say the same, so only the first is sent */
    struct rh_smap seen = {0};
    for (size_t i = 0; i < p->smap.cap; i++) {
        struct rh_sentry *x = &p->smap.e[i];
        if (x->local == INT64_MIN)
            continue;
        struct rh_sentry *s = rh_smap_get(&seen, (int64_t)x->stable);
        if (!s) {
            rh_smap_free(&seen);
            snprintf(p->err, p->errlen, "out of memory");
            return -1;
        }
        if (s->n == 0) {
            s->n = 1;
            s->frames = (uint64_t)x->local;
        } else if (s->frames != (uint64_t)x->local) {
            x->dup = 1;
        }
    }
    rh_smap_free(&seen);
    /* the converter numbers stacks from 1: a direct table for the row loop */
    int64_t max = 0;
    for (size_t i = 0; i < p->smap.cap; i++)
        if (p->smap.e[i].local != INT64_MIN && p->smap.e[i].local > max)
            max = p->smap.e[i].local;
    if (max < (1 << 24) && (p->dense = calloc((size_t)max + 1, sizeof *p->dense))) {
        p->ndense = max + 1;
        for (size_t i = 0; i < p->smap.cap; i++)
            if (p->smap.e[i].local >= 0 && p->smap.e[i].local != INT64_MIN)
                p->dense[p->smap.e[i].local] = &p->smap.e[i];
    }
    return 0;
}

/* The stable id of the converter's stack `local`; 0 for a stack the profile
 * does not describe. */
static const struct rh_sentry *rh_push_entry(const struct rh_push *p, int64_t local)
{
    if (local >= 0 && local < p->ndense)
        return p->dense[local];
    return rh_smap_find(&p->smap, local);
}

static uint64_t rh_push_stable(const struct rh_push *p, int64_t local)
{
    const struct rh_sentry *e = rh_push_entry(p, local);
    return e ? e->stable : 0;
}

/* ---- RowBinary -------------------------------------------------------------------- */

enum rh_ctype {
    CT_I8,
    CT_I16,
    CT_I32,
    CT_I64,
    CT_U8,
    CT_U16,
    CT_U32,
    CT_U64,
    CT_F32,
    CT_F64,
    CT_STR,
    CT_DATETIME
};

/* How one ClickHouse column gets its value from the SQLite row. */
struct rh_col {
    char name[64];
    char chtype[64]; /* the ClickHouse type wanted when the table is created */
    int src;         /* SQLite result column, -1: none (the column's default) */
    int stack;       /* 1: src is a stack id to translate */
    int kind_of;     /* 1: the kind of the stack in src (allocations.kind) */
    int nullable;    /* of the ClickHouse column as it exists */
    enum rh_ctype t;
};

/* Parses a ClickHouse type this code can write. Returns 0 or -1. */
static int rh_ctype_parse(const char *s, enum rh_ctype *t, int *nullable)
{
    char in[64];
    *nullable = 0;
    if (!strncmp(s, "Nullable(", 9)) {
        size_t n = strlen(s + 9);
        if (!n || n >= sizeof in || s[9 + n - 1] != ')')
            return -1;
        memcpy(in, s + 9, n - 1);
        in[n - 1] = 0;
        *nullable = 1;
        s = in;
    }
    static const struct {
        const char *n;
        enum rh_ctype t;
    } names[] = {{"Int8", CT_I8},     {"Int16", CT_I16},  {"Int32", CT_I32},
                 {"Int64", CT_I64},   {"UInt8", CT_U8},   {"UInt16", CT_U16},
                 {"UInt32", CT_U32},  {"UInt64", CT_U64}, {"Float32", CT_F32},
                 {"Float64", CT_F64}, {"String", CT_STR}, {"DateTime", CT_DATETIME}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].n)) {
            *t = names[i].t;
            return 0;
        }
    return -1;
}

static int rh_rb_varint(struct rh_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    int n = 0;
    do {
        tmp[n] = v & 0x7f;
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    return rh_buf_add(b, tmp, (size_t)n);
}

static int rh_rb_str(struct rh_buf *b, const char *s, size_t n)
{
    return rh_rb_varint(b, n) || rh_buf_add(b, s, n);
}

/* Writes an integer value as column type t (little-endian, truncated to the
 * width: x86-64 is little-endian). A fixed size per case, so each copy is a
 * move, not a call: this runs per value. */
static int rh_rb_int(struct rh_buf *b, enum rh_ctype t, int64_t v)
{
    if (b->n + 9 > b->cap && rh_buf_grow(b, 9))
        return -1;
    char *o = b->p + b->n;
    switch (t) {
    case CT_I8:
    case CT_U8:
        *o = (char)v;
        b->n += 1;
        return 0;
    case CT_I16:
    case CT_U16: {
        uint16_t x = (uint16_t)v;
        memcpy(o, &x, 2);
        b->n += 2;
        return 0;
    }
    case CT_I32:
    case CT_U32:
    case CT_DATETIME: {
        uint32_t x = (uint32_t)v;
        memcpy(o, &x, 4);
        b->n += 4;
        return 0;
    }
    case CT_I64:
    case CT_U64:
        memcpy(o, &v, 8);
        b->n += 8;
        return 0;
    case CT_F64: {
        double d = (double)v;
        memcpy(o, &d, 8);
        b->n += 8;
        return 0;
    }
    case CT_F32: {
        float f = (float)v;
        memcpy(o, &f, 4);
        b->n += 4;
        return 0;
    }
    case CT_STR:
    default: {
        char s[24];
        int n = snprintf(s, sizeof s, "%lld", (long long)v);
        return rh_rb_str(b, s, (size_t)n);
    }
    }
}

/* Encodes column c of the current row of st into b. Returns 0 or -1 (out of
 * memory). */
static int rh_rb_col(const struct rh_push *p, struct rh_buf *b, const struct rh_col *c,
                     sqlite3_stmt *st)
{
    /* the common case first: a plain integer column (NULL reads as 0) */
    if (!c->nullable && !c->stack && !c->kind_of && c->src >= 0 && c->t != CT_STR &&
        c->t != CT_F64 && c->t != CT_F32)
        return rh_rb_int(b, c->t, sqlite3_column_int64(st, c->src));
    int type = c->src >= 0 ? sqlite3_column_type(st, c->src) : SQLITE_NULL;
    if (c->kind_of) {
        const struct rh_sentry *e =
            type == SQLITE_NULL ? NULL : rh_push_entry(p, sqlite3_column_int64(st, c->src));
        const char *k = e && e->kind ? e->kind : "unknown";
        size_t kl = e && e->kind ? e->kind_len : 7;
        if (c->nullable && rh_buf_add(b, "\0", 1))
            return -1;
        return c->t == CT_STR ? rh_rb_str(b, k, kl) : rh_rb_int(b, c->t, 0);
    }
    if (c->nullable) {
        uint8_t isnull = type == SQLITE_NULL;
        if (rh_buf_add(b, &isnull, 1))
            return -1;
        if (isnull)
            return 0;
    }
    if (c->stack) {
        uint64_t v = type == SQLITE_NULL ? 0 : rh_push_stable(p, sqlite3_column_int64(st, c->src));
        return rh_rb_int(b, c->t, (int64_t)v);
    }
    switch (c->t) {
    case CT_STR:
        if (type == SQLITE_NULL)
            return rh_rb_str(b, "", 0);
        if (type == SQLITE_BLOB) {
            const void *v = sqlite3_column_blob(st, c->src);
            return rh_rb_str(b, v, (size_t)sqlite3_column_bytes(st, c->src));
        } else {
            const char *v = (const char *)sqlite3_column_text(st, c->src);
            return rh_rb_str(b, v ? v : "", (size_t)sqlite3_column_bytes(st, c->src));
        }
    case CT_F64: {
        double d = type == SQLITE_NULL ? 0 : sqlite3_column_double(st, c->src);
        return rh_buf_add(b, &d, 8);
    }
    case CT_F32: {
        float f = type == SQLITE_NULL ? 0 : (float)sqlite3_column_double(st, c->src);
        return rh_buf_add(b, &f, 4);
    }
    default:
        return rh_rb_int(b, c->t, type == SQLITE_NULL ? 0 : sqlite3_column_int64(st, c->src));
    }
}

/* The producer of one table's insert: rows of st, encoded, until done. */
struct rh_feed_state {
    struct rh_push *p;
    sqlite3_stmt *st;
    struct rh_col *cols;
    int ncols;
    struct rh_buf buf;
    size_t off; /* bytes of buf already handed to libcurl */
    int done, failed;
    int dedup_src; /* >= 0: the column with the converter's stack id; rows of
                    * a stack whose stable id another stack has are skipped */
    uint64_t rows;
};

static long rh_feed_fill(void *arg, char *out, size_t cap)
{
    struct rh_feed_state *f = arg;
    if (f->off == f->buf.n) {
        f->buf.n = f->off = 0;
        while (!f->done && f->buf.n < (1u << 20)) {
            int rc = sqlite3_step(f->st);
            if (rc == SQLITE_DONE) {
                f->done = 1;
                break;
            }
            if (rc != SQLITE_ROW) {
                rh_push_sqlerr(f->p, "reading rows");
                f->failed = 1;
                return -1;
            }
            if (f->dedup_src >= 0) {
                const struct rh_sentry *e =
                    rh_push_entry(f->p, sqlite3_column_int64(f->st, f->dedup_src));
                if (e && e->dup)
                    continue;
            }
            /* the profile column first: the same value on every row */
            if (rh_buf_add(&f->buf, &f->p->profile, 8)) {
                f->failed = 1;
                snprintf(f->p->err, f->p->errlen, "out of memory");
                return -1;
            }
            for (int i = 0; i < f->ncols; i++)
                if (rh_rb_col(f->p, &f->buf, &f->cols[i], f->st)) {
                    f->failed = 1;
                    snprintf(f->p->err, f->p->errlen, "out of memory");
                    return -1;
                }
            f->rows++;
        }
    }
    size_t n = f->buf.n - f->off;
    if (n > cap)
        n = cap;
    memcpy(out, f->buf.p + f->off, n);
    f->off += n;
    return (long)n;
}

/* ---- the tables -------------------------------------------------------------------- */

/* Tables of a profile.db that are not pushed: storage behind a view
 * (alloc_rows behind allocations), indexes of it, and aggregates a query
 * computes from the rows. */
static const char *const rh_push_skip[] = {
    "alloc_rows", "stack_rows",        "stack_sizes",  "timeline",        "timeline_stacks",
    "leak_curve", "skipped_functions", "thread_stats", "cpu_stack_stats", "cpu_thread_stats",
    NULL};

/* Column types of the tables this code knows; the rest follow the SQLite
 * declared type. "K" as the type: the kind of the row's bt (allocations). */
static const struct {
    const char *table, *col, *type;
} rh_push_types[] = {
    {"allocations", "id", "Int64"},
    {"allocations", "alloc_after", "Int64"},
    {"allocations", "dealloc_after", "Nullable(Int64)"},
    {"allocations", "bt", "UInt64"},
    {"allocations", "size", "Int64"},
    {"allocations", "addr", "Int64"},
    {"allocations", "alloc_thread", "UInt32"},
    {"allocations", "dealloc_thread", "Nullable(UInt32)"},
    {"allocations", "kind", "K"},
    {"allocations", "temporary", "UInt8"},
    {"allocations", "weight", "Float64"},
    {"backtraces", "id", "UInt64"},
    {"backtraces", "frame_no", "Int64"},
    {"backtraces", "line", "Nullable(Int64)"},
    {"backtraces", "address", "Nullable(Int64)"},
    {"backtraces", "inlined", "UInt8"},
    {"stacks", "id", "UInt64"},
    {"stacks", "depth", "Int64"},
    {"stacks", "truncated", "UInt8"},
    {"stacks", "callsite", "Int64"},
    {"stack_stats", "bt", "UInt64"},
    {"threads", "id", "Int64"},
    {"meta", "key", "String"},
    {"meta", "value", "Nullable(String)"},
};

/* The sort key after profile of a table this code knows; NULL: profile only. */
static const char *rh_push_order(const char *table)
{
    if (!strcmp(table, "allocations"))
        return "id";
    if (!strcmp(table, "backtraces"))
        return "id, frame_no";
    if (!strcmp(table, "stacks") || !strcmp(table, "stack_stats") || !strcmp(table, "threads"))
        return !strcmp(table, "stack_stats") ? "bt" : "id";
    return NULL;
}

static int rh_push_is_stack_col(const char *table, const char *col)
{
    if (!strcmp(col, "stack_id") || !strcmp(col, "bt"))
        return 1;
    return (!strcmp(table, "backtraces") || !strcmp(table, "stacks")) && !strcmp(col, "id");
}

/* The ClickHouse type for a column of table from its SQLite declared type. */
static void rh_push_coltype(const char *table, const char *col, const char *decl, char *out,
                            size_t outlen)
{
    for (size_t i = 0; i < sizeof rh_push_types / sizeof rh_push_types[0]; i++)
        if (!strcmp(rh_push_types[i].table, table) && !strcmp(rh_push_types[i].col, col)) {
            snprintf(out, outlen, "%s", rh_push_types[i].type);
            return;
        }
    char up[64];
    size_t n = 0;
    for (; decl && decl[n] && n + 1 < sizeof up; n++)
        up[n] = (char)toupper((unsigned char)decl[n]);
    up[n] = 0;
    if (rh_push_is_stack_col(table, col))
        snprintf(out, outlen, "Nullable(UInt64)");
    else if (strstr(up, "INT"))
        snprintf(out, outlen, "Nullable(Int64)");
    else if (strstr(up, "REAL") || strstr(up, "FLOA") || strstr(up, "DOUB"))
        snprintf(out, outlen, "Nullable(Float64)");
    else
        snprintf(out, outlen, "Nullable(String)");
}

static int rh_push_name_ok(const char *s)
{
    if (!*s || strlen(s) >= 48)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

/* The columns of table in the profile (PRAGMA table_info), with the types
 * wanted. Returns the count (>= 0) or -1 with err set. *cols is malloc'ed. */
static int rh_push_columns(struct rh_push *p, const char *table, struct rh_col **cols)
{
    char sql[128];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", table);
    if (sqlite3_prepare_v2(p->db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_push_sqlerr(p, table);
    int n = 0, cap = 0, rc;
    struct rh_col *c = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        const char *decl = (const char *)sqlite3_column_text(st, 2);
        if (!name || !rh_push_name_ok(name) || !strcmp(name, "profile"))
            continue; /* a name ClickHouse would need quoted: not pushed */
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            struct rh_col *nc = realloc(c, (size_t)cap * sizeof *c);
            if (!nc) {
                free(c);
                sqlite3_finalize(st);
                snprintf(p->err, p->errlen, "out of memory");
                return -1;
            }
            c = nc;
        }
        memset(&c[n], 0, sizeof c[n]);
        snprintf(c[n].name, sizeof c[n].name, "%s", name);
        rh_push_coltype(table, name, decl, c[n].chtype, sizeof c[n].chtype);
        c[n].stack = rh_push_is_stack_col(table, name);
        n++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(c);
        return rh_push_sqlerr(p, table);
    }
    /* allocations.kind is the stack's (the view would look it up per row) */
    for (int i = 0; i < n; i++)
        if (!strcmp(c[i].chtype, "K")) {
            snprintf(c[i].chtype, sizeof c[i].chtype, "String");
            c[i].kind_of = 1;
        }
    *cols = c;
    return n;
}

/* Creates table t on the server when missing, adds the columns it lacks,
 * and reads back each column's actual type into cols[].t/nullable. Returns
 * 0 or -1 with err set. */
static int rh_push_ch_table(struct rh_push *p, const char *t, struct rh_col *cols, int n)
{
    struct rh_buf sql = {0}, ans = {0};
    char tmp[256];
    int rc = -1;
    snprintf(tmp, sizeof tmp, "CREATE TABLE IF NOT EXISTS %s (profile UInt64", t);
    if (rh_buf_add(&sql, tmp, strlen(tmp)))
        goto oom;
    for (int i = 0; i < n; i++) {
        snprintf(tmp, sizeof tmp, ", `%s` %s", cols[i].name, cols[i].chtype);
        if (rh_buf_add(&sql, tmp, strlen(tmp)))
            goto oom;
    }
    const char *order = rh_push_order(t);
    snprintf(tmp, sizeof tmp, ") ENGINE = MergeTree PARTITION BY profile ORDER BY (profile%s%s)",
             order ? ", " : "", order ? order : "");
    if (rh_buf_add(&sql, tmp, strlen(tmp)))
        goto oom;
    if (rh_ch_query(p->ch, sql.p, NULL, p->err, p->errlen))
        goto out;
    snprintf(tmp, sizeof tmp,
             "SELECT name, type FROM system.columns WHERE database = '%s' AND table = '%s'"
             " FORMAT TabSeparated",
             rh_ch_database(p->ch), t);
    if (rh_ch_query(p->ch, tmp, &ans, p->err, p->errlen))
        goto out;
    for (int i = 0; i < n; i++) {
        const char *type = NULL;
        size_t nl = strlen(cols[i].name);
        for (char *line = ans.p; line && *line;) {
            char *next = strchr(line, '\n');
            if (!strncmp(line, cols[i].name, nl) && line[nl] == '\t') {
                type = line + nl + 1;
                if (next)
                    *next = 0;
                snprintf(tmp, sizeof tmp, "%s", type);
                if (next)
                    *next = '\n';
                type = tmp;
                break;
            }
            line = next ? next + 1 : NULL;
        }
        if (!type) {
            /* a column this profile has and the server's table lacks */
            char alter[256];
            snprintf(alter, sizeof alter, "ALTER TABLE %s ADD COLUMN `%s` %s", t, cols[i].name,
                     cols[i].chtype);
            if (rh_ch_query(p->ch, alter, NULL, p->err, p->errlen))
                goto out;
            type = cols[i].chtype;
        }
        if (rh_ctype_parse(type, &cols[i].t, &cols[i].nullable)) {
            snprintf(p->err, p->errlen, "%s: %s.%s has type %s, which rheaper cannot write",
                     rh_ch_url(p->ch), t, cols[i].name, type);
            goto out;
        }
    }
    rc = 0;
    goto out;
oom:
    snprintf(p->err, p->errlen, "out of memory");
out:
    rh_buf_free(&sql);
    rh_buf_free(&ans);
    return rc;
}

/* The staging table of t for this profile. */
static void rh_push_stage_name(const struct rh_push *p, const char *t, char *out, size_t n)
{
    snprintf(out, n, "rheaper_stage_%016llx_%s", (unsigned long long)p->profile, t);
}

/* Creates a fresh staging table for t (dropping one an earlier, interrupted
 * push of the same profile left). Returns 0 or -1. */
static int rh_push_stage(struct rh_push *p, const char *t)
{
    char st[128], sql[512];
    rh_push_stage_name(p, t, st, sizeof st);
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", st);
    if (rh_ch_query(p->ch, sql, NULL, p->err, p->errlen))
        return -1;
    snprintf(sql, sizeof sql, "CREATE TABLE %s AS %s", st, t);
    if (rh_ch_query(p->ch, sql, NULL, p->err, p->errlen))
        return -1;
    if (p->nstaged < (int)(sizeof p->staged / sizeof p->staged[0]))
        snprintf(p->staged[p->nstaged++], sizeof p->staged[0], "%s", t);
    return 0;
}

/* Sends table t of the profile (the SQLite table or view of that name) into
 * its staging table. rows: set to the rows sent. Returns 0 or -1. */
static int rh_push_table(struct rh_push *p, const char *t, uint64_t *rows)
{
    struct rh_col *cols = NULL;
    int n = rh_push_columns(p, t, &cols);
    if (n < 0)
        return -1;
    int rc = -1;
    struct rh_buf sel = {0}, ins = {0};
    struct rh_feed_state f = {0};
    char tmp[256], stage[128];
    if (n == 0) {
        rc = 0;
        goto out;
    }
    if (rh_push_ch_table(p, t, cols, n) || rh_push_stage(p, t))
        goto out;
    rh_push_stage_name(p, t, stage, sizeof stage);
    snprintf(tmp, sizeof tmp, "INSERT INTO %s (profile", stage);
    if (rh_buf_add(&sel, "SELECT ", 7) || rh_buf_add(&ins, tmp, strlen(tmp)))
        goto oom;
    /* the SQLite columns read; allocations.kind is not read but taken from
     * the stack of the row's bt */
    int nsrc = 0;
    for (int i = 0; i < n; i++) {
        snprintf(tmp, sizeof tmp, ", `%s`", cols[i].name);
        if (rh_buf_add(&ins, tmp, strlen(tmp)))
            goto oom;
        if (cols[i].kind_of)
            continue;
        snprintf(tmp, sizeof tmp, "%s\"%s\"", nsrc ? ", " : "", cols[i].name);
        if (rh_buf_add(&sel, tmp, strlen(tmp)))
            goto oom;
        cols[i].src = nsrc++;
    }
    for (int i = 0; i < n; i++)
        if (cols[i].kind_of) {
            cols[i].src = -1;
            for (int j = 0; j < n; j++)
                if (!strcmp(cols[j].name, "bt") && !cols[j].kind_of)
                    cols[i].src = cols[j].src;
        }
    /* stacks and backtraces: one stack per stable id */
    f.dedup_src = -1;
    if (!strcmp(t, "stacks") || !strcmp(t, "backtraces"))
        for (int i = 0; i < n; i++)
            if (!strcmp(cols[i].name, "id"))
                f.dedup_src = cols[i].src;
    snprintf(tmp, sizeof tmp, " FROM \"%s\"", t);
    if (rh_buf_add(&sel, tmp, strlen(tmp)) || rh_buf_add(&ins, ") FORMAT RowBinary", 18))
        goto oom;
    if (nsrc == 0) {
        rc = 0;
        goto out;
    }
    if (sqlite3_prepare_v2(p->db, sel.p, -1, &f.st, NULL) != SQLITE_OK) {
        rh_push_sqlerr(p, t);
        goto out;
    }
    f.p = p;
    f.cols = cols;
    f.ncols = n;
    char err[1024];
    if (rh_ch_insert(p->ch, ins.p, rh_feed_fill, &f, err, sizeof err)) {
        if (!f.failed)
            snprintf(p->err, p->errlen, "%s", err);
        goto out;
    }
    *rows = f.rows;
    rc = 0;
    goto out;
oom:
    snprintf(p->err, p->errlen, "out of memory");
out:
    sqlite3_finalize(f.st);
    rh_buf_free(&f.buf);
    rh_buf_free(&sel);
    rh_buf_free(&ins);
    free(cols);
    return rc;
}

/* ---- the profile's identity and its profiles row ------------------------------------ */

/* meta's value for key as text, or NULL (malloc'ed). */
static char *rh_push_meta(struct rh_push *p, const char *key)
{
    return rh_meta_dup(p->db, key, NULL);
}

static int64_t rh_push_meta_int(struct rh_push *p, const char *key)
{
    char *v = rh_push_meta(p, key);
    int64_t x = v ? strtoll(v, NULL, 10) : 0;
    free(v);
    return x;
}

/* The profile's id: what identifies the recording, hashed. The labels do not
 * enter: the same recording pushed with other labels is the same profile. */
static uint64_t rh_push_identity(struct rh_push *p)
{
    static const char *const keys[] = {"program",    "command_line", "pid",           "ppid",
                                       "start_time", "duration_ns",  "events",        "allocs",
                                       "frees",      "rows",         "streamed_from", NULL};
    uint64_t h = rh_fnv_str(RH_FNV_OFF, "rheaper profile v1");
    for (int i = 0; keys[i]; i++) {
        char *v = rh_push_meta(p, keys[i]);
        h = rh_fnv_str(rh_fnv_str(h, keys[i]), v);
        free(v);
    }
    return rh_mix(h);
}

/* Seconds since the epoch of an ISO time "YYYY-MM-DDTHH:MM:SS...Z"; 0 when
 * it is not one. */
static int64_t rh_push_epoch(const char *iso)
{
    struct tm tm = {0};
    if (!iso || !strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm))
        return 0;
    return (int64_t)timegm(&tm);
}

static const char rh_profiles_ddl[] =
    "CREATE TABLE IF NOT EXISTS profiles (profile UInt64, host String,"
    " labels Nested(key String, value String), program String, command_line String,"
    " build_ids Array(String), pid Int64, start_time String, start DateTime,"
    " duration_ns Int64, allocations Int64, sample_mode String, sample_rate Float64,"
    " sample_bytes Int64, clean UInt8, rheaper_version String, pushed_at DateTime,"
    " pushed_from String)"
    " ENGINE = MergeTree PARTITION BY profile ORDER BY profile";

/* The views, one statement a line, created in the push's database (names
 * unqualified: ClickHouse binds them to the database current at creation,
 * so docs/fleet.md creates the same views over the Distributed tables).
 * callsites and leaks are the SQLite profile's (callsites per profile and
 * stack, frame 0's function); sites groups per profile and call site past
 * allocator wrappers (stacks.callsite), the grouping fleet questions use;
 * profile_labels has one row per label. ClickHouse 18.16 joins one table
 * per SELECT, on USING columns of equal types, so joins nest. */
static const char rh_views_ddl[] =
    "CREATE VIEW IF NOT EXISTS callsites AS SELECT profile, bt, kind, count, total_size,"
    " avg_size, min_size, max_size, leaked_count, leaked_bytes, avg_lifetime, sym, file, line"
    " FROM (SELECT profile, bt, any(kind) AS kind, count() AS count, sum(size) AS total_size,"
    " avg(size) AS avg_size, min(size) AS min_size, max(size) AS max_size,"
    " sum(dealloc_after IS NULL) AS leaked_count,"
    " sum(if(dealloc_after IS NULL, size, 0)) AS leaked_bytes,"
    " avg(dealloc_after - alloc_after) AS avg_lifetime FROM allocations GROUP BY profile, bt)"
    " ANY LEFT JOIN (SELECT profile, id AS bt, sym, file, line FROM backtraces"
    " WHERE frame_no = 0) USING (profile, bt)\n"
    "CREATE VIEW IF NOT EXISTS leaks AS SELECT * FROM allocations WHERE dealloc_after IS NULL\n"
    "CREATE VIEW IF NOT EXISTS sites AS SELECT profile, sym, file, line, sum(count) AS count,"
    " sum(bytes) AS bytes, sum(leaked_count) AS leaked_count,"
    " sum(leaked_bytes) AS leaked_bytes, uniqExact(bt) AS stacks"
    " FROM (SELECT profile, bt, count, bytes, leaked_count, leaked_bytes, callsite"
    " FROM (SELECT profile, bt, count() AS count, sum(size) AS bytes,"
    " sum(dealloc_after IS NULL) AS leaked_count,"
    " sum(if(dealloc_after IS NULL, size, 0)) AS leaked_bytes"
    " FROM allocations GROUP BY profile, bt)"
    " ANY LEFT JOIN (SELECT profile, id AS bt, callsite FROM stacks) USING (profile, bt))"
    " ANY LEFT JOIN (SELECT profile, id AS bt, frame_no AS callsite, sym, file, line"
    " FROM backtraces) USING (profile, bt, callsite)"
    " GROUP BY profile, sym, file, line\n"
    "CREATE VIEW IF NOT EXISTS profile_labels AS SELECT profile, host, labels.key AS key,"
    " labels.value AS value FROM profiles ARRAY JOIN labels";

/* Sends the profiles row into its staging table. Returns 0 or -1. */
struct rh_one_row {
    struct rh_buf *b;
    size_t off;
};

static long rh_one_fill(void *arg, char *out, size_t cap)
{
    struct rh_one_row *r = arg;
    size_t n = r->b->n - r->off;
    if (n > cap)
        n = cap;
    memcpy(out, r->b->p + r->off, n);
    r->off += n;
    return (long)n;
}

static int rh_push_profile_row(struct rh_push *p, const struct rh_push_labels *labels,
                               uint64_t allocations)
{
    struct rh_buf b = {0};
    int rc = -1;
    char *program = rh_push_meta(p, "program"), *cmd = rh_push_meta(p, "command_line"),
         *start = rh_push_meta(p, "start_time"), *mode = rh_push_meta(p, "sample_mode"),
         *rate = rh_push_meta(p, "sample_rate"), *peer = rh_push_meta(p, "streamed_from");
    char here[256] = "", host[256] = "";
    gethostname(here, sizeof here - 1);
    for (int i = 0; i < labels->n; i++)
        if (!strcmp(labels->key[i], "host"))
            snprintf(host, sizeof host, "%s", labels->value[i]);
    if (!*host && peer) {
        /* a profile received by collect: the sender's address, without its port */
        snprintf(host, sizeof host, "%s", peer);
        char *colon = strrchr(host, ':');
        if (colon && host[0] != '[' && strchr(host, ':') == colon)
            *colon = 0;
        else if (host[0] == '[' && (colon = strstr(host, "]:")))
            colon[1] = 0;
    }
    if (!*host)
        snprintf(host, sizeof host, "%s", here);
    sqlite3_stmt *st = NULL;
    uint64_t nb = 0;
    struct rh_buf ids = {0};
    if (sqlite3_prepare_v2(p->db,
                           "SELECT DISTINCT build_id FROM modules WHERE build_id IS NOT NULL"
                           " ORDER BY build_id",
                           -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *v = (const char *)sqlite3_column_text(st, 0);
            if (rh_rb_str(&ids, v, strlen(v)))
                goto oom;
            nb++;
        }
    }
    sqlite3_finalize(st);
    int64_t pid = rh_push_meta_int(p, "pid"), dur = rh_push_meta_int(p, "duration_ns");
    int64_t sbytes = rh_push_meta_int(p, "sample_bytes"), clean = rh_push_meta_int(p, "clean");
    int64_t start_s = rh_push_epoch(start), now = (int64_t)time(NULL);
    double srate = rate ? strtod(rate, NULL) : 0;
    if (rh_buf_add(&b, &p->profile, 8) || rh_rb_str(&b, host, strlen(host)) ||
        rh_rb_varint(&b, (uint64_t)labels->n))
        goto oom;
    for (int i = 0; i < labels->n; i++)
        if (rh_rb_str(&b, labels->key[i], strlen(labels->key[i])))
            goto oom;
    if (rh_rb_varint(&b, (uint64_t)labels->n))
        goto oom;
    for (int i = 0; i < labels->n; i++)
        if (rh_rb_str(&b, labels->value[i], strlen(labels->value[i])))
            goto oom;
    const char *pr = program ? program : "", *cm = cmd ? cmd : "", *sm = mode ? mode : "",
               *sv = start ? start : "";
    uint8_t cl = clean ? 1 : 0;
    int64_t nalloc = (int64_t)allocations;
    if (rh_rb_str(&b, pr, strlen(pr)) || rh_rb_str(&b, cm, strlen(cm)) || rh_rb_varint(&b, nb) ||
        (ids.n && rh_buf_add(&b, ids.p, ids.n)) || rh_buf_add(&b, &pid, 8) ||
        rh_rb_str(&b, sv, strlen(sv)) || rh_rb_int(&b, CT_DATETIME, start_s) ||
        rh_buf_add(&b, &dur, 8) || rh_buf_add(&b, &nalloc, 8) || rh_rb_str(&b, sm, strlen(sm)) ||
        rh_buf_add(&b, &srate, 8) || rh_buf_add(&b, &sbytes, 8) || rh_buf_add(&b, &cl, 1) ||
        rh_rb_str(&b, RHEAPER_VERSION_STRING, strlen(RHEAPER_VERSION_STRING)) ||
        rh_rb_int(&b, CT_DATETIME, now) || rh_rb_str(&b, here, strlen(here)))
        goto oom;
    if (rh_push_stage(p, "profiles"))
        goto out;
    char stage[128], q[512], err[1024];
    rh_push_stage_name(p, "profiles", stage, sizeof stage);
    snprintf(q, sizeof q,
             "INSERT INTO %s (profile, host, labels.key, labels.value, program, command_line,"
             " build_ids, pid, start_time, start, duration_ns, allocations, sample_mode,"
             " sample_rate, sample_bytes, clean, rheaper_version, pushed_at, pushed_from)"
             " FORMAT RowBinary",
             stage);
    struct rh_one_row one = {&b, 0};
    if (rh_ch_insert(p->ch, q, rh_one_fill, &one, err, sizeof err)) {
        snprintf(p->err, p->errlen, "%s", err);
        goto out;
    }
    rc = 0;
    goto out;
oom:
    snprintf(p->err, p->errlen, "out of memory");
out:
    rh_buf_free(&b);
    rh_buf_free(&ids);
    free(program);
    free(cmd);
    free(start);
    free(mode);
    free(rate);
    free(peer);
    return rc;
}

/* ---- the push ---------------------------------------------------------------------- */

/* Moves the staged partition of t into place. Returns 0 or -1. */
static int rh_push_move(struct rh_push *p, const char *t)
{
    char st[128], sql[512];
    rh_push_stage_name(p, t, st, sizeof st);
    snprintf(sql, sizeof sql, "ALTER TABLE %s REPLACE PARTITION %s FROM %s", t, p->pid, st);
    if (rh_ch_query(p->ch, sql, NULL, p->err, p->errlen))
        return -1;
    if (p->nmoved < (int)(sizeof p->moved / sizeof p->moved[0]))
        snprintf(p->moved[p->nmoved++], sizeof p->moved[0], "%s", t);
    return 0;
}

/* Drops every staging table this push created (best effort). */
static void rh_push_unstage(struct rh_push *p)
{
    char err[256];
    for (int i = 0; i < p->nstaged; i++) {
        char st[128], sql[256];
        rh_push_stage_name(p, p->staged[i], st, sizeof st);
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", st);
        rh_ch_query(p->ch, sql, NULL, err, sizeof err);
    }
    p->nstaged = 0;
}

static double rh_push_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int rh_push_db(struct rh_ch *c, const char *db_path, const struct rh_push_labels *labels,
               struct rh_push_result *res, char *err, size_t errlen)
{
    double t0 = rh_push_now();
    struct rh_push p = {.ch = c, .path = db_path, .err = err, .errlen = errlen};
    memset(res, 0, sizeof *res);
    int rc = -1;
    char **tables = NULL;
    int ntables = 0;
    /* one thread uses the connection: no mutex per sqlite3_column_* call */
    if (sqlite3_open_v2(db_path, &p.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open (%s)", db_path,
                 p.db ? sqlite3_errmsg(p.db) : "out of memory");
        goto out;
    }
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(p.db,
                           "SELECT count(*) FROM sqlite_master WHERE name IN"
                           " ('meta', 'allocations', 'backtraces', 'stacks', 'modules')",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        ok = sqlite3_column_int(st, 0) == 5;
    sqlite3_finalize(st);
    if (!ok) {
        snprintf(err, errlen,
                 "%s: not a rheaper profile (no meta, allocations, backtraces, "
                 "stacks and modules)",
                 db_path);
        goto out;
    }
    p.profile = rh_push_identity(&p);
    snprintf(p.pid, sizeof p.pid, "%llu", (unsigned long long)p.profile);
    res->profile = p.profile;

    /* the schema every push needs, then: is the profile there already? */
    char sql[256];
    uint64_t have = 0;
    if (rh_ch_use_database(c, err, errlen) || rh_ch_query(c, rh_profiles_ddl, NULL, err, errlen))
        goto out;
    snprintf(sql, sizeof sql, "SELECT count() FROM profiles WHERE profile = %s", p.pid);
    if (rh_ch_query_u64(c, sql, &have, err, errlen))
        goto out;
    if (have) {
        res->already = 1;
        rc = 0;
        goto out;
    }
    if (rh_push_stacks_map(&p))
        goto out;

    /* the tables: allocations, backtraces, stacks first, then the others */
    if (sqlite3_prepare_v2(p.db,
                           "SELECT name FROM sqlite_master WHERE (type = 'table' AND name NOT"
                           " LIKE 'sqlite%') OR name = 'allocations'"
                           " ORDER BY name <> 'allocations', name <> 'backtraces',"
                           " name <> 'stacks', name",
                           -1, &st, NULL) != SQLITE_OK) {
        rh_push_sqlerr(&p, "listing tables");
        goto out;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int skip = !rh_push_name_ok(name) || !strcmp(name, "profiles") ||
                   !strncmp(name, "rheaper_stage_", 14);
        for (int i = 0; rh_push_skip[i] && !skip; i++)
            skip = !strcmp(name, rh_push_skip[i]);
        if (skip || ntables >= 30)
            continue;
        char **nt = realloc(tables, (size_t)(ntables + 1) * sizeof *tables);
        if (!nt || !(nt[ntables] = strdup(name))) {
            tables = nt ? nt : tables;
            sqlite3_finalize(st);
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        tables = nt;
        ntables++;
    }
    sqlite3_finalize(st);

    for (int i = 0; i < ntables; i++) {
        uint64_t rows = 0;
        double ta = rh_push_now();
        if (rh_push_table(&p, tables[i], &rows))
            goto fail;
        if (!strcmp(tables[i], "allocations")) {
            res->allocations = rows;
            res->alloc_seconds = rh_push_now() - ta;
        }
        res->rows += rows;
    }
    /* the views, one statement each */
    for (const char *v = rh_views_ddl; *v;) {
        const char *nl = strchr(v, '\n');
        size_t n = nl ? (size_t)(nl - v) : strlen(v);
        char *one = strndup(v, n);
        if (!one || rh_ch_query(c, one, NULL, err, errlen)) {
            if (!one)
                snprintf(err, errlen, "out of memory");
            free(one);
            goto fail;
        }
        free(one);
        v += n + (nl ? 1 : 0);
    }
    if (rh_push_profile_row(&p, labels, res->allocations))
        goto fail;
    /* into place: the data, then the profiles row */
    for (int i = 0; i < p.nstaged; i++)
        if (strcmp(p.staged[i], "profiles") && rh_push_move(&p, p.staged[i]))
            goto fail;
    if (rh_push_move(&p, "profiles"))
        goto fail;
    rh_push_unstage(&p);
    rc = 0;
    goto out;
fail:
    /* take back what was moved: no partial profile stays visible */
    for (int i = 0; i < p.nmoved; i++) {
        char drop[256], e2[256];
        snprintf(drop, sizeof drop, "ALTER TABLE %s DROP PARTITION %s", p.moved[i], p.pid);
        rh_ch_query(c, drop, NULL, e2, sizeof e2);
    }
    rh_push_unstage(&p);
out:
    for (int i = 0; i < ntables; i++)
        free(tables[i]);
    free(tables);
    rh_smap_free(&p.smap);
    free(p.dense);
    if (p.db)
        sqlite3_close(p.db);
    res->seconds = rh_push_now() - t0;
    return rc;
}
