/* rh_export_pprof.c: the scope as Google's pprof format (profile.proto),
 * gzipped, for go tool pprof, Grafana Pyroscope, Parca and the other readers
 * of that format: `rheaper export --pprof OUT.pb.gz PROFILE [filters]` and
 * the server's /data/ID/pprof write it.
 *
 * The messages come from convert/export/pprof/profile.proto through protobuf-c
 * (generated at build time); zlib writes the gzip stream. What goes in:
 *   heap samples  alloc_objects/count, alloc_space/bytes (the allocations of
 *                 the scope), inuse_objects/count, inuse_space/bytes (blocks
 *                 of the scope still live at the end of the selected range:
 *                 --to, else the end of the run; or at the heap's peak with
 *                 --at peak); default sample type inuse_space; period_type
 *                 space/bytes, period 1 (every allocation is recorded), or
 *                 for a sampled profile (meta sample_mode, the
 *                 allocations' weight) the sampling mean, with the weighted
 *                 estimates sum(weight) and sum(size * weight) as values;
 *   CPU samples   samples/count and cpu/nanoseconds (samples * one sampling
 *                 interval); period_type cpu/nanoseconds, period one interval
 *                 when the file holds the CPU only;
 * one Sample per stack of the scope (the shared filters; the stack starts at
 * its call site, as every rheaper command shows it), both kinds in one file
 * unless --heap or --cpu picks one; with CPU samples, a comment says how many
 * sampling periods the runtime dropped. Mappings carry each module's file,
 * build id and executable range, the program's first (pprof's main binary); Functions their names and files; Locations one
 * address each, with one Line per inlined function (the callee first, the
 * caller last) and line numbers, so pprof shows source lines without the
 * binary. Mapping, Function and Location ids run 1..N in order of first use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "profile.pb-c.h"
#include "rh_export.h"
#include "rip_format.h" /* RIP_SAMPLE_* */

typedef Perftools__Profiles__Profile rh_pb_profile;
typedef Perftools__Profiles__ValueType rh_pb_vt;
typedef Perftools__Profiles__Sample rh_pb_sample;
typedef Perftools__Profiles__Mapping rh_pb_mapping;
typedef Perftools__Profiles__Location rh_pb_location;
typedef Perftools__Profiles__Line rh_pb_line;
typedef Perftools__Profiles__Function rh_pb_function;

/* ---- a small interning table: key string -> id (1..n) -------------------- */

struct rh_intern {
    char **keys;
    uint64_t *ids;
    size_t cap, n;
};

static uint64_t rh_hash_s(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The id of key, or 0 when absent; *slot is where it is or would go. */
static uint64_t rh_intern_find(const struct rh_intern *t, const char *key, size_t *slot)
{
    size_t mask = t->cap - 1;
    for (size_t i = rh_hash_s(key) & mask;; i = (i + 1) & mask) {
        if (!t->keys[i]) {
            *slot = i;
            return 0;
        }
        if (!strcmp(t->keys[i], key)) {
            *slot = i;
            return t->ids[i];
        }
    }
}

/* Inserts key with id (absent). Returns 0 or -1 on out of memory. */
static int rh_intern_add(struct rh_intern *t, const char *key, uint64_t id)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        char **k = calloc(ncap, sizeof *k);
        uint64_t *v = calloc(ncap, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return -1;
        }
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->keys[i])
                continue;
            size_t j = rh_hash_s(t->keys[i]) & (ncap - 1);
            while (k[j])
                j = (j + 1) & (ncap - 1);
            k[j] = t->keys[i];
            v[j] = t->ids[i];
        }
        free(t->keys);
        free(t->ids);
        t->keys = k;
        t->ids = v;
        t->cap = ncap;
    }
    size_t slot;
    rh_intern_find(t, key, &slot);
    if (!(t->keys[slot] = strdup(key)))
        return -1;
    t->ids[slot] = id;
    t->n++;
    return 0;
}

static void rh_intern_free(struct rh_intern *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->keys[i]);
    free(t->keys);
    free(t->ids);
}

/* ---- the profile being built ---------------------------------------------- */

struct rh_pp {
    sqlite3 *db;
    int oom;
    struct rh_intern strs, funcs, locs, maps;
    char **str;
    size_t nstr, capstr;
    rh_pb_function **fn;
    size_t nfn, capfn;
    rh_pb_location **loc;
    size_t nloc, caploc;
    rh_pb_mapping **map;
    size_t nmap, capmap;
    rh_pb_sample **smp;
    size_t nsmp, capsmp;
    int nvalues; /* values per sample */
};

/* Appends p to the pointer array *arr (n, cap). Returns 0 or -1. */
static int rh_pp_push(void *arr, size_t *n, size_t *cap, void *p)
{
    void ***a = arr;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        void **na = realloc(*a, nc * sizeof *na);
        if (!na)
            return -1;
        *a = na;
        *cap = nc;
    }
    (*a)[(*n)++] = p;
    return 0;
}

/* The string table index of s (NULL: ""). */
static int64_t rh_pp_str(struct rh_pp *pp, const char *s)
{
    if (!s)
        s = "";
    if (!pp->strs.cap && rh_intern_add(&pp->strs, "", 0) == 0) {
        char *e = strdup("");
        if (!e || rh_pp_push(&pp->str, &pp->nstr, &pp->capstr, e))
            pp->oom = 1;
    }
    size_t slot;
    uint64_t id = pp->strs.cap ? rh_intern_find(&pp->strs, s, &slot) : 0;
    if (id || !*s)
        return (int64_t)id;
    char *c = strdup(s);
    if (!c || rh_pp_push(&pp->str, &pp->nstr, &pp->capstr, c) ||
        rh_intern_add(&pp->strs, s, pp->nstr - 1)) {
        pp->oom = 1;
        return 0;
    }
    return (int64_t)(pp->nstr - 1);
}

/* The Function id of (name, file). */
static uint64_t rh_pp_function(struct rh_pp *pp, const char *name, const char *file)
{
    char key[8192];
    snprintf(key, sizeof key, "%s\x1f%s", name ? name : "", file ? file : "");
    size_t slot;
    uint64_t id = pp->funcs.cap ? rh_intern_find(&pp->funcs, key, &slot) : 0;
    if (id)
        return id;
    rh_pb_function *f = malloc(sizeof *f);
    if (!f) {
        pp->oom = 1;
        return 0;
    }
    perftools__profiles__function__init(f);
    f->id = pp->nfn + 1;
    f->name = rh_pp_str(pp, name ? name : "??");
    f->system_name = f->name;
    f->filename = rh_pp_str(pp, file);
    if (rh_pp_push(&pp->fn, &pp->nfn, &pp->capfn, f) || rh_intern_add(&pp->funcs, key, f->id)) {
        pp->oom = 1;
        return 0;
    }
    return f->id;
}

/* The Mapping id of module path (0: no module). */
static uint64_t rh_pp_mapping(struct rh_pp *pp, const char *path)
{
    if (!path)
        return 0;
    size_t slot;
    uint64_t id = pp->maps.cap ? rh_intern_find(&pp->maps, path, &slot) : 0;
    if (id)
        return id;
    rh_pb_mapping *m = malloc(sizeof *m);
    if (!m) {
        pp->oom = 1;
        return 0;
    }
    perftools__profiles__mapping__init(m);
    m->id = pp->nmap + 1;
    m->filename = rh_pp_str(pp, path);
    m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames = 1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(pp->db,
                           "SELECT build_id, text_start, text_end, base FROM modules WHERE path = ?1"
                           " ORDER BY id LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            m->build_id = rh_pp_str(pp, (const char *)sqlite3_column_text(st, 0));
            m->memory_start = (uint64_t)sqlite3_column_int64(st, 1);
            m->memory_limit = (uint64_t)sqlite3_column_int64(st, 2);
        }
    }
    sqlite3_finalize(st);
    if (rh_pp_push(&pp->map, &pp->nmap, &pp->capmap, m) || rh_intern_add(&pp->maps, path, m->id)) {
        pp->oom = 1;
        return 0;
    }
    return m->id;
}

/* One frame row of backtraces (the columns of rh_pp_stack's query). */
struct rh_pp_row {
    const char *sym, *file, *module;
    int64_t line, address;
    int inlined;
};

/* The Location id of one address: rows[0, n) are its frames, the inlined
 * callees first and the function that holds the address last. */
static uint64_t rh_pp_location(struct rh_pp *pp, const struct rh_pp_row *rows, size_t n)
{
    const struct rh_pp_row *last = &rows[n - 1];
    char key[1024];
    snprintf(key, sizeof key, "%s\x1f%llx\x1f%zu", last->module ? last->module : "",
             (unsigned long long)last->address, n);
    size_t slot;
    uint64_t id = pp->locs.cap ? rh_intern_find(&pp->locs, key, &slot) : 0;
    if (id)
        return id;
    rh_pb_location *l = malloc(sizeof *l);
    rh_pb_line **lines = calloc(n, sizeof *lines);
    if (!l || !lines) {
        free(l);
        free(lines);
        pp->oom = 1;
        return 0;
    }
    perftools__profiles__location__init(l);
    l->id = pp->nloc + 1;
    l->mapping_id = rh_pp_mapping(pp, last->module);
    /* backtraces.address is relative to the module's load base */
    int64_t base = 0;
    if (last->module) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(pp->db, "SELECT base FROM modules WHERE path = ?1 ORDER BY id LIMIT 1",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, last->module, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW)
                base = sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
    }
    l->address = (uint64_t)(base + last->address);
    l->line = lines;
    l->n_line = n;
    for (size_t i = 0; i < n; i++) {
        lines[i] = malloc(sizeof *lines[i]);
        if (!lines[i]) {
            pp->oom = 1;
            continue;
        }
        perftools__profiles__line__init(lines[i]);
        lines[i]->function_id = rh_pp_function(pp, rows[i].sym, rows[i].file);
        lines[i]->line = rows[i].line;
    }
    if (rh_pp_push(&pp->loc, &pp->nloc, &pp->caploc, l) || rh_intern_add(&pp->locs, key, l->id)) {
        pp->oom = 1;
        return 0;
    }
    return l->id;
}

/* Adds one Sample: stack bt from its call-site frame on, with values v. */
static int rh_pp_stack(struct rh_pp *pp, sqlite3_stmt *fr, int64_t bt, const int64_t *v)
{
    int any = 0;
    for (int i = 0; i < pp->nvalues; i++)
        any |= v[i] != 0;
    if (!any)
        return 0;
    uint64_t *ids = NULL;
    size_t nids = 0, capids = 0;
    struct rh_pp_row rows[256];
    char *strs[256][3];
    size_t nrows = 0;
    sqlite3_bind_int64(fr, 1, bt);
    int rc;
    while ((rc = sqlite3_step(fr)) == SQLITE_ROW) {
        if (nrows < 256) {
            struct rh_pp_row *r = &rows[nrows];
            for (int k = 0; k < 3; k++) {
                const char *s = (const char *)sqlite3_column_text(fr, k);
                strs[nrows][k] = s ? strdup(s) : NULL;
            }
            r->sym = strs[nrows][0];
            r->file = strs[nrows][1];
            r->module = strs[nrows][2];
            r->line = sqlite3_column_int64(fr, 3);
            r->address = sqlite3_column_int64(fr, 4);
            r->inlined = sqlite3_column_int(fr, 5);
            nrows++;
        }
        /* a row that is not inlined ends the frames of one address */
        if (!sqlite3_column_int(fr, 5) || nrows == 256) {
            uint64_t id = rh_pp_location(pp, rows, nrows);
            if (id && nids == capids) {
                capids = capids ? capids * 2 : 32;
                uint64_t *n = realloc(ids, capids * sizeof *n);
                if (!n)
                    pp->oom = 1;
                else
                    ids = n;
            }
            if (id && nids < capids)
                ids[nids++] = id;
            for (size_t i = 0; i < nrows; i++)
                for (int k = 0; k < 3; k++)
                    free(strs[i][k]);
            nrows = 0;
        }
    }
    for (size_t i = 0; i < nrows; i++)
        for (int k = 0; k < 3; k++)
            free(strs[i][k]);
    sqlite3_reset(fr);
    if (rc != SQLITE_DONE) {
        free(ids);
        return rh_sql_fail(pp->db, "export --pprof");
    }
    rh_pb_sample *s = malloc(sizeof *s);
    int64_t *vals = malloc((size_t)pp->nvalues * sizeof *vals);
    if (!s || !vals) {
        free(s);
        free(vals);
        free(ids);
        pp->oom = 1;
        return 0;
    }
    perftools__profiles__sample__init(s);
    memcpy(vals, v, (size_t)pp->nvalues * sizeof *vals);
    s->value = vals;
    s->n_value = (size_t)pp->nvalues;
    s->location_id = ids;
    s->n_location_id = nids;
    if (rh_pp_push(&pp->smp, &pp->nsmp, &pp->capsmp, s))
        pp->oom = 1;
    return 0;
}

/* ---- the writer ------------------------------------------------------------- */

static void rh_pp_free(struct rh_pp *pp)
{
    for (size_t i = 0; i < pp->nstr; i++)
        free(pp->str[i]);
    free(pp->str);
    for (size_t i = 0; i < pp->nfn; i++)
        free(pp->fn[i]);
    free(pp->fn);
    for (size_t i = 0; i < pp->nloc; i++) {
        for (size_t k = 0; k < pp->loc[i]->n_line; k++)
            free(pp->loc[i]->line[k]);
        free(pp->loc[i]->line);
        free(pp->loc[i]);
    }
    free(pp->loc);
    for (size_t i = 0; i < pp->nmap; i++)
        free(pp->map[i]);
    free(pp->map);
    for (size_t i = 0; i < pp->nsmp; i++) {
        free(pp->smp[i]->value);
        free(pp->smp[i]->location_id);
        free(pp->smp[i]);
    }
    free(pp->smp);
    rh_intern_free(&pp->strs);
    rh_intern_free(&pp->funcs);
    rh_intern_free(&pp->locs);
    rh_intern_free(&pp->maps);
}

/* Writes buf[0, len) gzipped to out. Returns 0 or -1 after a message. */
static int rh_pp_gzip(const uint8_t *buf, size_t len, FILE *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        fprintf(stderr, "rheaper: export --pprof: zlib cannot start\n");
        return -1;
    }
    uint8_t chunk[65536];
    z.next_in = (Bytef *)buf;
    z.avail_in = (uInt)len;
    int zr;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        zr = deflate(&z, Z_FINISH);
        size_t got = sizeof chunk - z.avail_out;
        if (got && fwrite(chunk, 1, got, out) != got) {
            deflateEnd(&z);
            return -1; /* rh_file_cmd_run reports the failed write */
        }
    } while (zr == Z_OK);
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        fprintf(stderr, "rheaper: export --pprof: zlib failed (%d)\n", zr);
        return -1;
    }
    return 0;
}

int rh_pprof_write(sqlite3 *db, FILE *out, void *ctx)
{
    const struct rh_pprof_opts *o = ctx;
    struct rh_pp pp;
    memset(&pp, 0, sizeof pp);
    pp.db = db;
    int rc = -1;
    int64_t hz = rh_cpu_hz(db);
    int cpu = o->cpu && (hz > 0 || rh_cpu_total(db) > 0);
    int heap = o->heap;
    if (o->cpu && !o->heap && !cpu) {
        fprintf(stderr, "rheaper: export --pprof --cpu: the profile has no CPU samples\n");
        return -1;
    }
    int64_t interval = hz > 0 ? (int64_t)llround(1e9 / (double)hz) : 0;
    /* the value columns: heap 4, then CPU 2 */
    pp.nvalues = (heap ? 4 : 0) + (cpu ? 2 : 0);
    rh_pb_vt vt[6], pt;
    rh_pb_vt *vtp[6];
    static const char *const names[6][2] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"},
                                            {"inuse_objects", "count"}, {"inuse_space", "bytes"},
                                            {"samples", "count"},       {"cpu", "nanoseconds"}};
    int k = 0;
    rh_pp_str(&pp, "");
    for (int i = heap ? 0 : 4; i < (cpu ? 6 : 4); i++, k++) {
        perftools__profiles__value_type__init(&vt[k]);
        vt[k].type = rh_pp_str(&pp, names[i][0]);
        vt[k].unit = rh_pp_str(&pp, names[i][1]);
        vtp[k] = &vt[k];
    }
    /* Mapping 1 is the program: pprof takes the first mapping as the main
     * binary (its file name and build id head every report) */
    {
        sqlite3_stmt *pm = NULL;
        char prog[4096];
        if (sqlite3_prepare_v2(db,
                               "SELECT path FROM modules WHERE path = ?1 UNION ALL SELECT path FROM"
                               " (SELECT path FROM modules ORDER BY id LIMIT 1)",
                               -1, &pm, NULL) == SQLITE_OK &&
            sqlite3_bind_text(pm, 1, rh_meta_text(db, "program", prog, sizeof prog), -1,
                              SQLITE_TRANSIENT) == SQLITE_OK &&
            sqlite3_step(pm) == SQLITE_ROW)
            rh_pp_mapping(&pp, (const char *)sqlite3_column_text(pm, 0));
        sqlite3_finalize(pm);
    }
    sqlite3_stmt *fr = NULL, *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT sym, file, module, coalesce(line, 0), coalesce(address, 0),"
                           " inlined FROM backtraces WHERE id = ?1 AND frame_no >="
                           " coalesce((SELECT frame FROM temp.cs WHERE bt = ?1), 0)"
                           " ORDER BY frame_no",
                           -1, &fr, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "export --pprof");
        goto out;
    }
    /* A sampled profile (meta sample_mode, allocations.weight):
     * weighted estimates, and the sampling mean as the period. */
    int sampled = 0;
    double mean = 1;
    if (heap) {
        double rate;
        int64_t bytes;
        int mode = rh_sample_params(db, &rate, &bytes);
        sampled = mode != 0;
        if (mode == RIP_SAMPLE_BYTES || mode == RIP_SAMPLE_BYTES_BIG)
            mean = (double)bytes;
        else if (mode == RIP_SAMPLE_RATE)
            mean = 1.0 / rate;
        sqlite3_stmt *w = NULL;
        if (sampled && sqlite3_prepare_v2(db, "SELECT weight FROM allocations LIMIT 0", -1, &w,
                                          NULL) != SQLITE_OK) {
            fprintf(stderr, "rheaper: export --pprof: the profile says it is sampled but its"
                            " allocations have no weight column\n");
            sqlite3_finalize(w);
            goto out;
        }
        sqlite3_finalize(w);
    }
    if (heap) {
        /* per stack: the scope's figures, already the estimates on a sampled
         * profile, and the heap in use at the peak, at --to or at the end */
        if (!(st = rh_stack_heap_stmt(db, o->at_peak, o->to_ns)))
            goto out;
        int64_t v[6] = {0};
        int r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW && !pp.oom) {
            for (int i = 0; i < 4; i++)
                v[i] = sqlite3_column_int64(st, 1 + i);
            if (rh_pp_stack(&pp, fr, sqlite3_column_int64(st, 0), v))
                goto out;
        }
        if (r != SQLITE_DONE && !pp.oom) {
            rh_sql_fail(db, "export --pprof");
            goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (cpu) {
        if (sqlite3_prepare_v2(db, "SELECT bt, samples FROM temp.cpustat", -1, &st, NULL) !=
            SQLITE_OK) {
            rh_sql_fail(db, "export --pprof");
            goto out;
        }
        int64_t v[6] = {0};
        int base = heap ? 4 : 0, r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW && !pp.oom) {
            v[base] = sqlite3_column_int64(st, 1);
            v[base + 1] = v[base] * interval;
            if (rh_pp_stack(&pp, fr, sqlite3_column_int64(st, 0), v))
                goto out;
        }
        if (r != SQLITE_DONE && !pp.oom) {
            rh_sql_fail(db, "export --pprof");
            goto out;
        }
    }
    rh_pb_profile p;
    perftools__profiles__profile__init(&p);
    p.sample_type = vtp;
    p.n_sample_type = (size_t)k;
    perftools__profiles__value_type__init(&pt);
    if (heap) {
        pt.type = rh_pp_str(&pp, "space");
        pt.unit = rh_pp_str(&pp, "bytes");
        p.period = sampled ? llround(mean) : 1; /* the sampling mean; 1: every block */
        p.default_sample_type = rh_pp_str(&pp, "inuse_space");
    } else {
        pt.type = rh_pp_str(&pp, "cpu");
        pt.unit = rh_pp_str(&pp, "nanoseconds");
        p.period = interval;
        p.default_sample_type = rh_pp_str(&pp, "cpu");
    }
    p.period_type = &pt;
    /* The profile's comments (`go tool pprof -comments`): the CPU samples the
     * runtime could not write, which are in no value, and the memory beside
     * the heap. */
    int64_t cm[4];
    size_t ncm = 0;
    char note[160];
    if (cpu) {
        snprintf(note, sizeof note,
                 "rheaper: %lld CPU samples at %lld Hz, %lld sampling periods dropped",
                 (long long)rh_cpu_total(db), (long long)hz, (long long)rh_cpu_dropped(db));
        cm[ncm++] = rh_pp_str(&pp, note);
    }
    p.duration_nanos = rh_meta_int(db, "duration_ns", 0);
    /* the memory beside the heap (rh_query_memory.c) */
    struct rh_memfig mf;
    if (heap && rh_memory_figures(db, &mf) == 0 && mf.samples) {
        const struct rh_mem_point *pts[2] = {&mf.peak, &mf.end};
        for (int i = 0; i < 2; i++) {
            char c[512], af[64] = "";
            if (pts[i]->has_alloc)
                snprintf(af, sizeof af, " alloc_free=%lld", (long long)pts[i]->a_free);
            snprintf(c, sizeof c,
                     "rheaper memory %s: time_ns=%lld rss=%lld heap=%lld heap_share=%.4f"
                     " unexplained=%lld%s",
                     i ? "at the end" : "at the RSS peak", (long long)pts[i]->t,
                     (long long)pts[i]->rss, (long long)pts[i]->heap, pts[i]->share,
                     (long long)pts[i]->unexplained, af);
            cm[ncm++] = rh_pp_str(&pp, c);
        }
        sqlite3_stmt *ch =
            rh_make_sites(db, 0) ? NULL : rh_churn_stmt(db, 1, p.duration_nanos, NULL);
        if (ch && sqlite3_step(ch) == SQLITE_ROW) {
            char c[512];
            snprintf(
                c, sizeof c, "rheaper top churn: %s (%s) bytes_per_s=%lld short_lived=%lld",
                (const char *)sqlite3_column_text(ch, 0), (const char *)sqlite3_column_text(ch, 1),
                (long long)sqlite3_column_int64(ch, 2), (long long)sqlite3_column_int64(ch, 6));
            cm[ncm++] = rh_pp_str(&pp, c);
        }
        sqlite3_finalize(ch);
    }
    if (ncm) {
        p.comment = cm;
        p.n_comment = ncm;
    }
    if (pp.oom) {
        fprintf(stderr, "rheaper: export --pprof: out of memory\n");
        goto out;
    }
    p.sample = pp.smp;
    p.n_sample = pp.nsmp;
    p.mapping = pp.map;
    p.n_mapping = pp.nmap;
    p.location = pp.loc;
    p.n_location = pp.nloc;
    p.function = pp.fn;
    p.n_function = pp.nfn;
    p.string_table = pp.str;
    p.n_string_table = pp.nstr;
    size_t len = perftools__profiles__profile__get_packed_size(&p);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        fprintf(stderr, "rheaper: export --pprof: out of memory\n");
        goto out;
    }
    perftools__profiles__profile__pack(&p, buf);
    rc = rh_pp_gzip(buf, len, out);
    free(buf);
out:
    sqlite3_finalize(st);
    sqlite3_finalize(fr);
    rh_pp_free(&pp);
    return rc;
}
