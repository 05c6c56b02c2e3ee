/* rh_export_html.c: the report, one self-contained HTML page of the scope
 * (`rheaper report DB -o report.html`).
 *
 * The page holds the summary of `sel` (the filtered allocations), the timeline
 * and the flamegraph (the SVGs of rh_export_svg.c, inlined), the top call sites by
 * bytes and the leaks grouped by call site, each with its full stack in a
 * <details> element. Everything is in the one file: no external script, style,
 * font or image, and a Content-Security-Policy meta tag whose default is 'none'
 * forbids every fetch. Scripts and the style sheet are allowed by their SHA-256
 * hashes only (no 'unsafe-inline'), so the page runs exactly the code written
 * here: the SVGs' own scripts (found in their text, which never holds '<' or
 * '&') and a last one that records the drawn sizes of the charts in the
 * <body>'s data attributes (data-timeline, data-flamegraph, data-flame-nodes)
 * for tests and for anyone checking the page rendered. No style attributes are
 * written, since the policy would block them.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rh_export.h"
#include "rh_names.h"

#define RH_HTML_TOP 20   /* rows of the top-sites table */
#define RH_HTML_LEAKS 20 /* rows of the leak table */
#define RH_HTML_MAX_SCRIPTS 8

/* ---- SHA-256 (FIPS 180-4) and base64, for the policy's hashes ---------- */

struct rh_sha256 {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
};

static const uint32_t rh_sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rh_ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void rh_sha_block(struct rh_sha256 *c, const unsigned char *p)
{
    uint32_t w[64], a[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rh_ror(w[i - 15], 7) ^ rh_ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rh_ror(w[i - 2], 17) ^ rh_ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(a, c->h, sizeof a);
    for (int i = 0; i < 64; i++) {
        uint32_t s1 = rh_ror(a[4], 6) ^ rh_ror(a[4], 11) ^ rh_ror(a[4], 25);
        uint32_t ch = (a[4] & a[5]) ^ (~a[4] & a[6]);
        uint32_t t1 = a[7] + s1 + ch + rh_sha_k[i] + w[i];
        uint32_t s0 = rh_ror(a[0], 2) ^ rh_ror(a[0], 13) ^ rh_ror(a[0], 22);
        uint32_t mj = (a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]);
        memmove(a + 1, a, 7 * sizeof a[0]);
        a[4] += t1;
        a[0] = t1 + s0 + mj;
    }
    for (int i = 0; i < 8; i++)
        c->h[i] += a[i];
}

static void rh_sha_init(struct rh_sha256 *c)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->len = 0;
    c->nbuf = 0;
}

static void rh_sha_update(struct rh_sha256 *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    c->len += n;
    while (n) {
        size_t k = 64 - c->nbuf < n ? 64 - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, k);
        c->nbuf += k;
        p += k;
        n -= k;
        if (c->nbuf == 64) {
            rh_sha_block(c, c->buf);
            c->nbuf = 0;
        }
    }
}

static void rh_sha_final(struct rh_sha256 *c, unsigned char out[32])
{
    uint64_t bits = c->len * 8;
    unsigned char pad = 0x80, zero = 0, lenb[8];
    rh_sha_update(c, &pad, 1);
    while (c->nbuf != 56)
        rh_sha_update(c, &zero, 1);
    for (int i = 0; i < 8; i++)
        lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
    rh_sha_update(c, lenb, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (unsigned char)(c->h[i] >> (24 - 8 * j));
}

/* Writes "'sha256-BASE64'" of the n bytes at s into out (at least 56 bytes). */
static void rh_csp_hash(const char *s, size_t n, char *out)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char d[33] = {0};
    struct rh_sha256 c;
    rh_sha_init(&c);
    rh_sha_update(&c, s, n);
    rh_sha_final(&c, d);
    char *o = out + sprintf(out, "'sha256-");
    for (int i = 0; i < 33; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = i + 1 < 32 ? b64[v >> 6 & 63] : '=';
        *o++ = i + 2 < 32 ? b64[v & 63] : '=';
    }
    strcpy(o, "'");
}

/* ---- HTML text ------------------------------------------------------------ */

static const char rh_html_style[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;"
    "background:#f6f5f4;color:#241f31}"
    "header{background:#1c1c28;color:#fff;padding:14px 24px}"
    "header h1{margin:0;font-size:20px}header p{margin:4px 0 0;color:#c0bfbc;font-size:13px}"
    "main{padding:12px 24px;max-width:1260px}"
    "section{background:#fff;border:1px solid #deddda;border-radius:6px;margin:14px 0;"
    "padding:10px 16px}"
    "h2{font-size:16px;margin:4px 0 10px}"
    "svg{max-width:100%;height:auto;display:block}"
    "table{border-collapse:collapse;font-size:13px;width:100%}"
    "th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eee;vertical-align:top}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "table.kv{width:auto}table.kv th{font-weight:normal;color:#5e5c64}"
    "details summary{cursor:pointer}details ol{margin:4px 0;padding-left:22px;color:#3d3846}"
    "code{font-size:12px}.muted{color:#77767b}";

/* Records the drawn size of both charts and the number of visible flamegraph
 * frames in <body data-*> attributes. */
static const char rh_html_script[] =
    "(function () {\n"
    "  function size(sel) {\n"
    "    var e = document.querySelector(sel);\n"
    "    if (!e) return '0x0';\n"
    "    var r = e.getBoundingClientRect();\n"
    "    return Math.round(r.width) + 'x' + Math.round(r.height);\n"
    "  }\n"
    "  var drawn = 0;\n"
    "  Array.prototype.forEach.call(document.querySelectorAll('svg.rh-flamegraph g.fg-n rect'),\n"
    "    function (r) { if (r.getBoundingClientRect().width > 0) drawn++; });\n"
    "  var areas = 0;\n"
    "  Array.prototype.forEach.call(document.querySelectorAll('svg.rh-timeline polygon.tl-s'),\n"
    "    function (p) { var b = p.getBBox(); if (b.width * b.height > 0) areas++; });\n"
    "  document.body.setAttribute('data-timeline', size('svg.rh-timeline'));\n"
    "  document.body.setAttribute('data-flamegraph', size('svg.rh-flamegraph'));\n"
    "  document.body.setAttribute('data-flame-nodes', String(drawn));\n"
    "  document.body.setAttribute('data-timeline-areas', String(areas));\n"
    "})();\n";

/* ---- sections ------------------------------------------------------------ */

/* "1.72 MiB (1800448 B)": rh_human_bytes() plus the exact count. */
static const char *rh_hbytes_exact(int64_t b, char *buf, size_t n)
{
    char h[32];
    rh_human_bytes(b, h, sizeof h);
    if (b > -1024 && b < 1024)
        snprintf(buf, n, "%s", h);
    else
        snprintf(buf, n, "%s (%" PRId64 " B)", h, b);
    return buf;
}

static void rh_kv(FILE *out, const char *k, const char *v)
{
    fputs("<tr><th>", out);
    rh_markup_put(out, k);
    fputs("</th><td class=\"n\">", out);
    rh_markup_put(out, v);
    fputs("</td></tr>\n", out);
}

/* The summary table from rh_summary_compute. */
static void rh_html_summary(FILE *out, const struct rh_summary *s)
{
    char v[256], b[96];
    fputs("<section id=\"summary\"><h2>Summary</h2><table class=\"kv\">\n", out);
    rh_kv(out, "program", s->program);
    snprintf(v, sizeof v, "%" PRId64, s->pid);
    rh_kv(out, "pid", v);
    snprintf(v, sizeof v, "%.3f s", (double)s->duration_ns / 1e9);
    rh_kv(out, "duration", v);
    snprintf(v, sizeof v, "%" PRId64, s->events);
    rh_kv(out, "events", v);
    snprintf(v, sizeof v, "%" PRId64 " blocks, %s", s->alloc_blocks,
             rh_hbytes_exact(s->alloc_bytes, b, sizeof b));
    rh_kv(out, "allocated", v);
    snprintf(v, sizeof v, "%" PRId64 " blocks, %s", s->freed_blocks,
             rh_hbytes_exact(s->freed_bytes, b, sizeof b));
    rh_kv(out, "freed", v);
    snprintf(v, sizeof v, "%s at %.4f s", rh_hbytes_exact(s->peak_bytes, b, sizeof b),
             (double)s->peak_time_ns / 1e9);
    rh_kv(out, "peak live heap", v);
    snprintf(v, sizeof v, "%" PRId64 " blocks, %s", s->leaked_blocks,
             rh_hbytes_exact(s->leaked_bytes, b, sizeof b));
    rh_kv(out, "leaked", v);
    snprintf(v, sizeof v, "%" PRId64 " blocks", s->temporary_blocks);
    rh_kv(out, "temporary", v);
    rh_kv(out, "profile", s->clean ? "complete" : "incomplete (see meta)");
    fputs("</table></section>\n", out);
}

/* Writes a function's name as code: its short form (rh_name_short: templates
 * and parameters elided), with the full name as the element's title (shown
 * on hover) when they differ. */
static void rh_html_name(FILE *out, const char *sym)
{
    char sn[1024];
    sym = sym ? sym : "??";
    if (!rh_name_shortens(sym)) {
        fputs("<code>", out);
        rh_markup_put(out, sym);
    } else {
        fputs("<code title=\"", out);
        rh_markup_put(out, sym);
        fputs("\">", out);
        rh_name_short(sym, sn, sizeof sn);
        rh_markup_put(out, sn);
    }
    fputs("</code>", out);
}

/* The memory the heap does not explain (rh_query_memory.c), with the top churn
 * sites beside it; nothing when the profile has no memory samples. Returns 0
 * or -1 after a message. */
static int rh_html_memory(sqlite3 *db, FILE *out, const struct rh_summary *s)
{
    struct rh_memfig m;
    if (rh_memory_figures(db, &m))
        return -1;
    if (!m.samples)
        return 0;
    char line[256], a[32], b[32];
    fputs(
        "<section id=\"memory\"><h2>Memory not explained by the heap</h2>\n<table class=\"kv\">\n",
        out);
    snprintf(line, sizeof line, "%.4f s", m.peak.t / 1e9);
    rh_kv(out, "RSS peak at", line);
    rh_kv(out, "at the RSS peak", rh_memory_line(&m, &m.peak, line, sizeof line));
    rh_kv(out, "at the end", rh_memory_line(&m, &m.end, line, sizeof line));
    if (m.peak.has_alloc && m.end.has_alloc) {
        snprintf(line, sizeof line, "%s at the RSS peak, %s at the end (%s)",
                 rh_human_bytes(m.peak.a_free, a, sizeof a),
                 rh_human_bytes(m.end.a_free, b, sizeof b), m.allocator);
        rh_kv(out, "allocator's bytes not in use", line);
    }
    fputs("</table>\n<h3>Top churn sites: bytes allocated and freed per second</h3>\n"
          "<table class=\"sites\"><tr><th>function</th><th>location</th><th>bytes/s</th>"
          "<th>blocks/s</th><th>short-lived blocks</th></tr>\n",
          out);
    if (rh_make_sites(db, 0))
        return -1;
    sqlite3_stmt *c = rh_churn_stmt(db, 5, s->duration_ns, NULL);
    if (!c)
        return -1;
    while (sqlite3_step(c) == SQLITE_ROW) {
        fputs("<tr><td>", out);
        rh_html_name(out, (const char *)sqlite3_column_text(c, 0));
        fputs("</td><td>", out);
        rh_markup_put(out, (const char *)sqlite3_column_text(c, 1));
        fprintf(
            out,
            "</td><td class=\"n\">%s</td><td class=\"n\">%.1f</td><td class=\"n\">%lld</td></tr>\n",
            rh_human_bytes(sqlite3_column_int64(c, 2), a, sizeof a), sqlite3_column_double(c, 3),
            (long long)sqlite3_column_int64(c, 6));
    }
    sqlite3_finalize(c);
    fputs("</table></section>\n", out);
    return 0;
}

/* Writes one frame: its function as code (rh_html_name), then " file:line"
 * when the file is known. */
static void rh_html_frame(FILE *out, const char *sym, const char *file, int line)
{
    rh_html_name(out, sym);
    if (file) {
        fputs(" <span class=\"muted\">", out);
        rh_markup_put(out, file);
        fprintf(out, ":%d</span>", line);
    }
}

/* Writes the frames of stack bt as a numbered list, frame 0 first. */
static int rh_html_stack(sqlite3 *db, sqlite3_stmt *fr, int64_t bt, FILE *out)
{
    sqlite3_bind_int64(fr, 1, bt);
    fputs("<ol start=\"0\">", out);
    int s;
    while ((s = sqlite3_step(fr)) == SQLITE_ROW) {
        const char *sym = (const char *)sqlite3_column_text(fr, 0);
        const char *file = (const char *)sqlite3_column_text(fr, 1);
        fputs("<li>", out);
        rh_html_frame(out, sym, file, sqlite3_column_int(fr, 2));
        if (sqlite3_column_int(fr, 3))
            fputs(" <span class=\"muted\">(inlined)</span>", out);
        fputs("</li>", out);
    }
    sqlite3_reset(fr);
    fputs("</ol>", out);
    return s == SQLITE_DONE ? 0 : rh_sql_fail(db, "report");
}

/* One row of a call-site table: the site (rh_query.h's definition), the
 * stack shown when it is opened, and its figures. */
struct rh_html_row {
    int64_t bt;
    const char *function, *location;
    struct rh_cell v[5];
};

/* A table of call sites: each row's site, then its n figures under heads
 * (integers as they are, reals with three decimals). Returns 0 or -1. */
static int rh_html_sites(sqlite3 *db, FILE *out, const char *id, const char *title,
                         const struct rh_html_row *rows, size_t nrows, const char *const *heads,
                         int n)
{
    sqlite3_stmt *fr;
    if (sqlite3_prepare_v2(db,
                           "SELECT sym, file, line, inlined FROM backtraces WHERE id = ?"
                           " ORDER BY frame_no",
                           -1, &fr, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "report");
    fprintf(out,
            "<section id=\"%s\"><h2>%s</h2><table><thead><tr><th>call site (frame 0;"
            " click for the stack)</th>",
            id, title);
    for (int i = 0; i < n; i++)
        fprintf(out, "<th class=\"n\">%s</th>", heads[i]);
    fputs("</tr></thead><tbody>\n", out);
    for (size_t r = 0; r < nrows; r++) {
        fputs("<tr><td><details><summary><code>", out);
        rh_markup_put(out, rows[r].function);
        fputs("</code> <span class=\"muted\">", out);
        rh_markup_put(out, rows[r].location);
        fputs("</span></summary>", out);
        if (rh_html_stack(db, fr, rows[r].bt, out) != 0) {
            sqlite3_finalize(fr);
            return -1;
        }
        fputs("</details></td>", out);
        for (int i = 0; i < n; i++) {
            if (rows[r].v[i].type == RH_CELL_REAL)
                fprintf(out, "<td class=\"n\">%.3f</td>", rows[r].v[i].d);
            else
                fprintf(out, "<td class=\"n\">%" PRId64 "</td>", rows[r].v[i].i);
        }
        fputs("</tr>\n", out);
    }
    sqlite3_finalize(fr);
    if (nrows == 0)
        fprintf(out, "<tr><td colspan=\"%d\" class=\"muted\">none</td></tr>\n", n + 1);
    fputs("</tbody></table></section>\n", out);
    return 0;
}

static void rh_hv_int(struct rh_cell *c, int64_t v)
{
    c->type = RH_CELL_INT;
    c->i = v;
}

static void rh_hv_real(struct rh_cell *c, double v)
{
    c->type = RH_CELL_REAL;
    c->d = v;
}

/* The top CPU sites, as `rheaper top cpu` ranks them (rh_cpu_sites_get,
 * after TEMP TABLE site). Returns 0 or -1. */
static int rh_html_cpu_sites(sqlite3 *db, FILE *out)
{
    static const char *const heads[] = {"samples", "percent"};
    struct rh_cpu_site *sites = NULL;
    size_t n = 0;
    if (rh_cpu_sites_get(db, RH_HTML_TOP, 0, &sites, &n))
        return -1;
    struct rh_html_row rows[RH_HTML_TOP];
    for (size_t i = 0; i < n && i < RH_HTML_TOP; i++) {
        rows[i].bt = sites[i].bt;
        rows[i].function = sites[i].function;
        rows[i].location = sites[i].location;
        rh_hv_int(&rows[i].v[0], sites[i].samples);
        rh_hv_real(&rows[i].v[1], sites[i].percent);
    }
    int rc = rh_html_sites(db, out, "cpu-top", "Top CPU sites by samples", rows,
                           n < RH_HTML_TOP ? n : RH_HTML_TOP, heads, 2);
    rh_cpu_sites_free(sites, n);
    return rc;
}

/* The top call sites by bytes (as `rheaper top`) and the leaks by call site
 * (as `rheaper leaks`), after rh_leak_sites. Returns 0 or -1. */
static int rh_html_top_leaks(sqlite3 *db, FILE *out)
{
    static const char *const top_heads[] = {"stacks", "allocations", "bytes", "leaked blocks",
                                            "leaked bytes"};
    static const char *const leak_heads[] = {"score", "leaked blocks", "leaked bytes", "first (s)",
                                             "last (s)"};
    struct rh_site_query q = {.by = RH_SITES_BYTES, .limit = RH_HTML_TOP, .positive = 1, .heaviest = 1};
    struct rh_site_row *sites = NULL;
    struct rh_leak_row *leaks = NULL;
    size_t ns = 0, nl = 0;
    struct rh_html_row rows[RH_HTML_TOP > RH_HTML_LEAKS ? RH_HTML_TOP : RH_HTML_LEAKS];
    int rc = -1;
    if (rh_sites_get(db, &q, &sites, &ns) || rh_leaks_get(db, RH_HTML_LEAKS, 0, &leaks, &nl))
        goto out;
    for (size_t i = 0; i < ns; i++) {
        /* the stack shown is the site's with the most bytes */
        rows[i].bt = sites[i].bt_heaviest;
        rows[i].function = sites[i].function;
        rows[i].location = sites[i].location;
        rh_hv_int(&rows[i].v[0], sites[i].stacks);
        rh_hv_int(&rows[i].v[1], sites[i].count);
        rh_hv_int(&rows[i].v[2], sites[i].bytes);
        rh_hv_int(&rows[i].v[3], sites[i].leaked_blocks);
        rh_hv_int(&rows[i].v[4], sites[i].leaked_bytes);
    }
    if (rh_html_sites(db, out, "top", "Top call sites by allocated bytes", rows, ns, top_heads,
                      5))
        goto out;
    for (size_t i = 0; i < nl; i++) {
        rows[i].bt = leaks[i].bt;
        rows[i].function = leaks[i].function;
        rows[i].location = leaks[i].location;
        rh_hv_real(&rows[i].v[0], rh_round(leaks[i].score, 3));
        rh_hv_int(&rows[i].v[1], leaks[i].blocks);
        rh_hv_int(&rows[i].v[2], leaks[i].bytes);
        rh_hv_real(&rows[i].v[3], rh_round((double)leaks[i].first / 1e9, 3));
        rh_hv_real(&rows[i].v[4], rh_round((double)leaks[i].last / 1e9, 3));
    }
    if (rh_html_sites(db, out, "leaks", "Leaks by call site (never freed)", rows, nl, leak_heads,
                      5))
        goto out;
    rc = 0;
out:
    rh_sites_free(sites, ns);
    rh_leaks_free(leaks, nl);
    return rc;
}

/* ---- assembling the page ---------------------------------------------------- */

/* Collects the text of every <script> element of buf into the policy's list
 * of hashes. The SVG writers keep '<' and '&' out of script text, so the text
 * between the tags is exactly what the browser hashes. Returns the new count,
 * or -1 when a script is unterminated or the list is full. */
static int rh_collect_scripts(const char *buf, char hashes[][64], int n)
{
    const char *p = buf;
    while ((p = strstr(p, "<script")) != NULL) {
        const char *b = strchr(p, '>');
        const char *e = b ? strstr(b, "</script>") : NULL;
        if (!e || n >= RH_HTML_MAX_SCRIPTS)
            return -1;
        rh_csp_hash(b + 1, (size_t)(e - b - 1), hashes[n++]);
        p = e + 9;
    }
    return n;
}

/* Renders one SVG into a malloc'd string (embedded form). Returns NULL after a
 * message. */
static char *rh_render(sqlite3 *db, int which)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        fprintf(stderr, "rheaper: report: out of memory\n");
        return NULL;
    }
    /* which: 0 timeline, 1 flamegraph of bytes, 2 of CPU samples */
    int rc = which ? rh_svg_flamegraph(db, which == 2 ? RH_FLAME_CPU : RH_FLAME_ALL, m, 1)
                   : rh_svg_timeline(db, m, 1);
    if (fclose(m) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The page's title: the program's name, the last piece of the executable's
 * path (meta.program), or of the command line's first word when the path was
 * not recorded. Never a piece of the arguments. */
static void rh_report_title(sqlite3 *db, const struct rh_summary *s, char *buf, size_t n)
{
    buf[0] = 0;
    if (!rh_meta_text(db, "program", buf, n))
        buf[0] = 0;
    if (!buf[0]) {
        snprintf(buf, n, "%s", s->program);
        buf[strcspn(buf, " ")] = 0;
    }
    const char *base = strrchr(buf, '/');
    if (base && base[1])
        memmove(buf, base + 1, strlen(base + 1) + 1);
    if (!buf[0])
        snprintf(buf, n, "unknown program");
}

int rh_report_write(sqlite3 *db, FILE *out, void *ctx)
{
    const char *dbpath = ctx;
    struct rh_summary s;
    if (rh_summary_compute(db, &s) != 0)
        return -1;
    char *timeline = rh_render(db, 0);
    char *flame = timeline ? rh_render(db, 1) : NULL;
    if (!flame) {
        free(timeline);
        return -1;
    }
    /* the call sites (TEMP TABLE site) and their leak scores, for every
     * table of sites below */
    if (rh_leak_sites(db, RH_LEAK_BUCKETS, s.duration_ns)) {
        free(timeline);
        free(flame);
        return -1;
    }
    /* A CPU section when the profile has CPU samples */
    int64_t cpu_hz = rh_cpu_hz(db), cpu_n = rh_cpu_total(db);
    char *cpuflame = NULL;
    if (cpu_hz && !(cpuflame = rh_render(db, 2))) {
        free(timeline);
        free(flame);
        return -1;
    }
    char hashes[RH_HTML_MAX_SCRIPTS][64], style_hash[64];
    int nh = rh_collect_scripts(timeline, hashes, 0);
    nh = nh < 0 ? -1 : rh_collect_scripts(flame, hashes, nh);
    if (cpuflame)
        nh = nh < 0 ? -1 : rh_collect_scripts(cpuflame, hashes, nh);
    if (nh < 0 || nh >= RH_HTML_MAX_SCRIPTS) {
        fprintf(stderr, "rheaper: report: internal error: unexpected script in a chart\n");
        free(timeline);
        free(flame);
        free(cpuflame);
        return -1;
    }
    rh_csp_hash(rh_html_script, strlen(rh_html_script), hashes[nh++]);
    rh_csp_hash(rh_html_style, strlen(rh_html_style), style_hash);

    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n", out);
    fputs("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src",
          out);
    for (int i = 0; i < nh; i++)
        fprintf(out, " %s", hashes[i]);
    fprintf(out, "; style-src %s; img-src data:; base-uri 'none'; form-action 'none'\">\n",
            style_hash);
    fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>rheaper"
          " report: ",
          out);
    char prog[1024];
    rh_report_title(db, &s, prog, sizeof prog);
    rh_markup_put(out, prog);
    fprintf(out, "</title>\n<style>%s</style>\n</head><body>\n<header><h1>rheaper report: ",
            rh_html_style);
    rh_markup_put(out, prog);
    fputs("</h1><p>", out);
    rh_markup_put(out, dbpath);
    fputs("</p></header>\n<main>\n", out);
    rh_html_summary(out, &s);
    fputs("<section id=\"timeline\"><h2>Live heap over time</h2>\n", out);
    fputs(timeline, out);
    fputs("</section>\n", out);
    if (rh_html_memory(db, out, &s)) {
        free(timeline);
        free(flame);
        free(cpuflame);
        return -1;
    }
    fputs("<section id=\"flamegraph\"><h2>Flamegraph of all allocated bytes</h2>\n", out);
    fputs(flame, out);
    fputs("</section>\n", out);
    free(timeline);
    free(flame);
    if (cpuflame) {
        fprintf(out,
                "<section id=\"cpu\"><h2>CPU</h2><p>%" PRId64 " samples at %" PRId64
                " Hz of each thread's CPU time (%.3f s of CPU), %" PRId64 " dropped</p>\n",
                cpu_n, cpu_hz, (double)cpu_n / (double)cpu_hz, rh_cpu_dropped(db));
        fputs(cpuflame, out);
        fputs("</section>\n", out);
        free(cpuflame);
        if (rh_html_cpu_sites(db, out))
            return -1;
    }
    if (rh_html_top_leaks(db, out))
        return -1;
    time_t now = time(NULL);
    char when[64] = "";
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
    fprintf(out,
            "<p class=\"muted\">Written by rheaper report on %s. Self-contained: this page"
            " loads nothing from anywhere.</p>\n</main>\n",
            when);
    fprintf(out, "<script>%s</script>\n</body></html>\n", rh_html_script);
    return ferror(out) ? -1 : 0;
}
