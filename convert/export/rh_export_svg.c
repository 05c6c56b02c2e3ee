/* rh_export_svg.c: the SVG flamegraph and timeline, and folded stacks.
 *
 * Both work on the TEMP table `sel` (the allocations that pass the shared
 * filters). The flamegraph merges every stack of `sel` into a tree of frames
 * from the outermost frame (the root, drawn at the bottom) down to frame 0,
 * weighted by all allocated bytes, by leaked bytes or by the bytes live at the
 * peak. It is written either as folded text ("main;f;g 1234", what
 * flamegraph.pl, inferno and speedscope read) or as one self-contained SVG whose
 * small script zooms on click and shows details on hover. The timeline replays
 * the allocations and frees of `sel` in time order, keeps the live bytes of the
 * top call sites (by frame 0's function, file and line, ranked by their bytes
 * live at the peak) plus "other", samples them into columns that keep each
 * column's maximum, and draws them stacked. The sampled figures are also
 * written into the SVG (data-t / data-v attributes) for the hover readout and
 * for tests; the drawn maximum is the peak of `sel`.
 *
 * The scripts avoid the characters '<' and '&' so that their text is the same
 * in XML (standalone SVG) and inside HTML (rh_export_html.c hashes them for the
 * page's Content-Security-Policy). No style attributes are written for the same
 * reason: presentation attributes only.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_export.h"
#include "rh_schema.h"
#include "rh_names.h"

#define RH_FG_WIDTH 1200
/* Between a short name and the full one in a hover title: U+2014. */
#define RH_SVG_DASH "\xe2\x80\x94"
#define RH_FG_ROW 17
/* Frame labels (rh_fg_label and the zoom script): pixels per character of
 * the 12 px font, and the frame's padding. */
#define RH_FG_CHAR_PX 7
#define RH_FG_PAD_PX 6
#define RH_STR2(x) #x
#define RH_STR(x) RH_STR2(x)
#define RH_TL_WIDTH 1200
#define RH_TL_HEIGHT 420
#define RH_TL_COLUMNS 600
#define RH_TL_SERIES 8 /* top call sites drawn; the rest is "other" */

/* ---- the peak of `sel` -------------------------------------------------- */

/* The peak of the scope (rh_filter_apply computed it): the highest live
 * byte count and the first time it was reached. Returns 0 or -1. */
static int rh_peak_find(sqlite3 *db, int64_t *peak, int64_t *t)
{
    struct rh_scope sc;
    if (rh_scope_get(db, &sc))
        return -1;
    *peak = sc.peak_bytes;
    *t = sc.peak_time;
    return 0;
}

/* ---- the frame tree ------------------------------------------------------ */

/* One node of the merged stacks: a frame name under its parent. Children are
 * a singly linked list, sorted by name before output. */
struct rh_fnode {
    int32_t name;   /* index into the tree's name table */
    int32_t parent; /* -1 for the root */
    int32_t child, next;
    int32_t depth;
    int64_t w, self;  /* weight of the subtree, weight ending here */
    int64_t n, nself; /* allocations likewise */
};

/* The tree plus a hash of (parent, name) -> node and a hash of interned names. */
struct rh_ftree {
    struct rh_fnode *v;
    int32_t len, cap;
    int32_t *slot; /* open addressing over nodes; -1 empty */
    uint32_t nslot;
    char **names;
    int32_t nnames, capnames;
    int32_t *nslots; /* name hash; -1 empty */
    uint32_t nnslot;
    int32_t maxdepth;
};

static uint64_t rh_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static uint64_t rh_hash_pair(int32_t a, int32_t b)
{
    uint64_t h = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* Interns a name; returns its index or -1 when out of memory. */
static int32_t rh_ftree_name(struct rh_ftree *t, const char *s)
{
    if ((uint32_t)t->nnames * 2 >= t->nnslot) {
        uint32_t n = t->nnslot ? t->nnslot * 2 : 1024;
        int32_t *ns = malloc(n * sizeof *ns);
        if (!ns)
            return -1;
        memset(ns, 0xff, n * sizeof *ns);
        for (int32_t i = 0; i < t->nnames; i++) {
            uint32_t h = (uint32_t)rh_hash_str(t->names[i]) & (n - 1);
            while (ns[h] >= 0)
                h = (h + 1) & (n - 1);
            ns[h] = i;
        }
        free(t->nslots);
        t->nslots = ns;
        t->nnslot = n;
    }
    uint32_t h = (uint32_t)rh_hash_str(s) & (t->nnslot - 1);
    while (t->nslots[h] >= 0) {
        if (strcmp(t->names[t->nslots[h]], s) == 0)
            return t->nslots[h];
        h = (h + 1) & (t->nnslot - 1);
    }
    if (t->nnames == t->capnames) {
        int32_t c = t->capnames ? t->capnames * 2 : 256;
        char **nn = realloc(t->names, (size_t)c * sizeof *nn);
        if (!nn)
            return -1;
        t->names = nn;
        t->capnames = c;
    }
    char *d = strdup(s);
    if (!d)
        return -1;
    t->names[t->nnames] = d;
    t->nslots[h] = t->nnames;
    return t->nnames++;
}

/* Returns the child of parent named name, creating it; -1 when out of memory. */
static int32_t rh_ftree_child(struct rh_ftree *t, int32_t parent, int32_t name)
{
    if ((uint32_t)t->len * 2 >= t->nslot) {
        uint32_t n = t->nslot ? t->nslot * 2 : 1024;
        int32_t *ns = malloc(n * sizeof *ns);
        if (!ns)
            return -1;
        memset(ns, 0xff, n * sizeof *ns);
        for (int32_t i = 0; i < t->len; i++) {
            uint32_t h = (uint32_t)rh_hash_pair(t->v[i].parent, t->v[i].name) & (n - 1);
            while (ns[h] >= 0)
                h = (h + 1) & (n - 1);
            ns[h] = i;
        }
        free(t->slot);
        t->slot = ns;
        t->nslot = n;
    }
    uint32_t h = (uint32_t)rh_hash_pair(parent, name) & (t->nslot - 1);
    while (t->slot[h] >= 0) {
        struct rh_fnode *x = &t->v[t->slot[h]];
        if (x->parent == parent && x->name == name)
            return t->slot[h];
        h = (h + 1) & (t->nslot - 1);
    }
    if (t->len == t->cap) {
        int32_t c = t->cap ? t->cap * 2 : 1024;
        struct rh_fnode *nv = realloc(t->v, (size_t)c * sizeof *nv);
        if (!nv)
            return -1;
        t->v = nv;
        t->cap = c;
    }
    int32_t id = t->len++;
    struct rh_fnode *x = &t->v[id];
    memset(x, 0, sizeof *x);
    x->name = name;
    x->parent = parent;
    x->child = -1;
    x->next = -1;
    x->depth = parent >= 0 ? t->v[parent].depth + 1 : 0;
    if (x->depth > t->maxdepth)
        t->maxdepth = x->depth;
    if (parent >= 0) {
        x->next = t->v[parent].child;
        t->v[parent].child = id;
    }
    t->slot[h] = id;
    return id;
}

static void rh_ftree_free(struct rh_ftree *t)
{
    for (int32_t i = 0; i < t->nnames; i++)
        free(t->names[i]);
    free(t->names);
    free(t->nslots);
    free(t->slot);
    free(t->v);
    memset(t, 0, sizeof *t);
}

/* The display name of a frame: its function, else module+address, else "??".
 * A ';' (the folded format's separator) becomes ':'. */
static void rh_frame_name(char *buf, size_t n, const char *sym, const char *module, int64_t addr,
                          int has_addr)
{
    if (sym && *sym) {
        snprintf(buf, n, "%s", sym);
    } else if (module && *module) {
        const char *b = strrchr(module, '/');
        snprintf(buf, n, "%s+0x%" PRIx64, b ? b + 1 : module, (uint64_t)addr);
    } else if (has_addr) {
        snprintf(buf, n, "0x%" PRIx64, (uint64_t)addr);
    } else {
        snprintf(buf, n, "??");
    }
    for (char *p = buf; *p; p++)
        if (*p == ';' || *p == '\n' || *p == '\r')
            *p = ':';
}

static struct rh_ftree *rh_sort_tree; /* for the qsort comparator only */

static int rh_cmp_child(const void *a, const void *b)
{
    const struct rh_fnode *x = &rh_sort_tree->v[*(const int32_t *)a];
    const struct rh_fnode *y = &rh_sort_tree->v[*(const int32_t *)b];
    return strcmp(rh_sort_tree->names[x->name], rh_sort_tree->names[y->name]);
}

/* Sorts every child list by name, so output does not depend on row order.
 * Returns 0 or -1 when out of memory. */
static int rh_ftree_sort(struct rh_ftree *t)
{
    int32_t *tmp = malloc((size_t)(t->len ? t->len : 1) * sizeof *tmp);
    if (!tmp)
        return -1;
    rh_sort_tree = t;
    for (int32_t i = 0; i < t->len; i++) {
        int32_t k = 0;
        for (int32_t c = t->v[i].child; c >= 0; c = t->v[c].next)
            tmp[k++] = c;
        if (k < 2)
            continue;
        qsort(tmp, (size_t)k, sizeof *tmp, rh_cmp_child);
        t->v[i].child = tmp[0];
        for (int32_t j = 0; j < k; j++)
            t->v[tmp[j]].next = j + 1 < k ? tmp[j + 1] : -1;
    }
    free(tmp);
    return 0;
}

/* Builds the tree of `sel` under weight w. Node 0 is the root ("all"); every
 * stack adds its weight to each node of its path, outermost frame first.
 * Returns 0, or -1 after a message. */
static int rh_ftree_build(sqlite3 *db, enum rh_flame_weight w, struct rh_ftree *t)
{
    static const char *const sql[] = {
        [RH_FLAME_ALL] = "SELECT bt, bytes, count FROM temp.sstat ORDER BY bt",
        [RH_FLAME_LEAKED] = "SELECT bt, leaked_bytes, leaked_blocks FROM temp.sstat"
                            " WHERE leaked_blocks > 0 ORDER BY bt",
        [RH_FLAME_PEAK] = "SELECT bt, peak_bytes, peak_blocks FROM temp.sstat"
                          " WHERE peak_blocks > 0 ORDER BY bt",
        [RH_FLAME_CPU] = "SELECT bt, samples, samples FROM temp.cpustat ORDER BY bt",
        [RH_FLAME_FREED] = "SELECT bt, bytes, count FROM temp.sstat ORDER BY bt",
    };
    memset(t, 0, sizeof *t);
    int32_t root_name = rh_ftree_name(t, "all");
    if (root_name < 0 || rh_ftree_child(t, -1, root_name) != 0) {
        fprintf(stderr, "rheaper: flamegraph: out of memory\n");
        return -1;
    }
    sqlite3_stmt *st = NULL, *fr = NULL;
    if (sqlite3_prepare_v2(db, sql[w], -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT sym, module, address FROM backtraces WHERE id = ?1"
                           " AND frame_no >= coalesce((SELECT frame FROM temp.cs WHERE bt = ?1),"
                           " 0) ORDER BY frame_no DESC",
                           -1, &fr, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "flamegraph");
        sqlite3_finalize(st);
        return -1;
    }
    int rc;
    char name[1024];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t weight = sqlite3_column_int64(st, 1), count = sqlite3_column_int64(st, 2);
        int32_t node = 0;
        int nframes = 0;
        t->v[0].w += weight;
        t->v[0].n += count;
        sqlite3_bind_int64(fr, 1, sqlite3_column_int64(st, 0));
        int frc;
        while ((frc = sqlite3_step(fr)) == SQLITE_ROW) {
            rh_frame_name(name, sizeof name, (const char *)sqlite3_column_text(fr, 0),
                          (const char *)sqlite3_column_text(fr, 1), sqlite3_column_int64(fr, 2),
                          sqlite3_column_type(fr, 2) != SQLITE_NULL);
            int32_t nm = rh_ftree_name(t, name);
            node = nm < 0 ? -1 : rh_ftree_child(t, node, nm);
            if (node < 0)
                break;
            t->v[node].w += weight;
            t->v[node].n += count;
            nframes++;
        }
        sqlite3_reset(fr);
        if (node >= 0 && frc != SQLITE_DONE && frc != SQLITE_ROW) {
            rc = frc;
            break;
        }
        if (node >= 0 && nframes == 0) {
            int32_t nm = rh_ftree_name(t, "[no stack]");
            node = nm < 0 ? -1 : rh_ftree_child(t, 0, nm);
            if (node >= 0) {
                t->v[node].w += weight;
                t->v[node].n += count;
            }
        }
        if (node < 0) {
            fprintf(stderr, "rheaper: flamegraph: out of memory\n");
            sqlite3_finalize(st);
            sqlite3_finalize(fr);
            return -1;
        }
        t->v[node].self += weight;
        t->v[node].nself += count;
    }
    if (rc != SQLITE_DONE) {
        rh_sql_fail(db, "flamegraph");
        sqlite3_finalize(st);
        sqlite3_finalize(fr);
        return -1;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(fr);
    if (rh_ftree_sort(t) != 0) {
        fprintf(stderr, "rheaper: flamegraph: out of memory\n");
        return -1;
    }
    return 0;
}

/* ---- folded stacks -------------------------------------------------------- */

/* Prints "a;b;c W" for node and its subtree: one line for every node with
 * weight ending in it. path holds the names of node's ancestors below the root
 * ("all", which is not part of the paths); depth is their number. */
static void rh_folded_walk(const struct rh_ftree *t, int32_t node, const char **path, int depth,
                           FILE *out)
{
    for (; node >= 0; node = t->v[node].next) {
        const struct rh_fnode *x = &t->v[node];
        path[depth] = t->names[x->name];
        if (x->self > 0) {
            for (int i = 0; i <= depth; i++) {
                if (i)
                    fputc(';', out);
                fputs(path[i], out);
            }
            fprintf(out, " %" PRId64 "\n", x->self);
        }
        rh_folded_walk(t, x->child, path, depth + 1, out);
    }
}

int rh_folded(sqlite3 *db, enum rh_flame_weight w, FILE *out)
{
    struct rh_ftree t;
    if (rh_ftree_build(db, w, &t) != 0) {
        rh_ftree_free(&t);
        return -1;
    }
    const char **path = malloc((size_t)(t.maxdepth + 2) * sizeof *path);
    if (!path) {
        rh_ftree_free(&t);
        fprintf(stderr, "rheaper: flamegraph: out of memory\n");
        return -1;
    }
    rh_folded_walk(&t, t.v[0].child, path, 0, out);
    free(path);
    rh_ftree_free(&t);
    return ferror(out) ? -1 : 0;
}

/* ---- the flamegraph SVG -------------------------------------------------- */

/* Zoom on click, details on hover, reset. No '<' or '&' in this text (see the
 * file comment). `svg` is the script's own <svg>, so two charts share a page. */
static const char rh_fg_script[] =
    "(function () {\n"
    "  var svg = document.currentScript.ownerSVGElement;\n"
    "  var W = +svg.getAttribute('data-width');\n"
    "  var nodes = Array.prototype.slice.call(svg.querySelectorAll('g.fg-n'));\n"
    "  var details = svg.querySelector('.fg-details');\n"
    "  var reset = svg.querySelector('.fg-reset');\n"
    "  var orig = details.textContent;\n"
    /* the rule of rh_fg_label(), for frames re-laid out by a zoom */
    "  function label(g, px) {\n"
    "    var name = g.getAttribute('data-n');\n"
    "    var fit = Math.floor((px - " RH_STR(RH_FG_PAD_PX) ") / " RH_STR(RH_FG_CHAR_PX) ");\n"
    "    if (3 > fit) return '';\n"
    "    return name.length > fit ? name.slice(0, fit - 2) + '..' : name;\n"
    "  }\n"
    "  function layout(zx, zw, zd) {\n"
    "    nodes.forEach(function (g) {\n"
    "      var x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w');\n"
    "      var d = +g.getAttribute('data-d');\n"
    "      var outside = zx >= x + w - 1e-12 || x >= zx + zw - 1e-12;\n"
    "      if (outside) { g.setAttribute('display', 'none'); return; }\n"
    "      g.removeAttribute('display');\n"
    "      var l = Math.max(x, zx), r = Math.min(x + w, zx + zw);\n"
    "      var px = (l - zx) / zw * W, pw = (r - l) / zw * W;\n"
    "      var rect = g.querySelector('rect'), text = g.querySelector('text');\n"
    "      rect.setAttribute('x', (10 + px).toFixed(2));\n"
    "      rect.setAttribute('width', Math.max(pw - 0.5, 0.1).toFixed(2));\n"
    "      g.setAttribute('opacity', zd > d ? '0.55' : '1');\n"
    "      text.setAttribute('x', (13 + px).toFixed(2));\n"
    "      text.textContent = label(g, pw);\n"
    "    });\n"
    "    reset.setAttribute('display', zw >= 1 ? 'none' : 'inline');\n"
    "  }\n"
    "  nodes.forEach(function (g) {\n"
    "    g.addEventListener('click', function () {\n"
    "      layout(+g.getAttribute('data-x'), +g.getAttribute('data-w'),\n"
    "             +g.getAttribute('data-d'));\n"
    "    });\n"
    "    g.addEventListener('mouseover', function () {\n"
    "      details.textContent = g.querySelector('title').textContent;\n"
    "    });\n"
    "    g.addEventListener('mouseout', function () { details.textContent = orig; });\n"
    "  });\n"
    "  reset.addEventListener('click', function () { layout(0, 1, 0); });\n"
    "  layout(0, 1, 0);\n"
    "})();\n";

const char *rh_fg_label(const char *name, double px, char *buf, size_t n)
{
    double fitd = (px - RH_FG_PAD_PX) / RH_FG_CHAR_PX;
    long fit = fitd > 0 ? (long)fitd : 0;
    buf[0] = 0;
    if (fit < 3 || n < 4)
        return buf;
    /* characters are UTF-8 code points: a continuation byte starts none */
    long chars = 0;
    for (const char *p = name; *p; p++)
        chars += ((unsigned char)*p & 0xc0) != 0x80;
    long keep = chars > fit ? fit - 2 : chars;
    size_t i = 0;
    for (long c = 0; name[i]; i++) {
        if (((unsigned char)name[i] & 0xc0) != 0x80 && c++ == keep)
            break;
    }
    if (i + 3 > n) /* the buffer is short: fewer characters, whole ones */
        for (i = n - 3; i > 0 && ((unsigned char)name[i] & 0xc0) == 0x80; i--)
            ;
    memcpy(buf, name, i);
    if (keep < chars)
        memcpy(buf + i, "..", 2), i += 2;
    buf[i] = 0;
    return buf;
}

/* A warm colour from the name, the same for the same function everywhere. */
static void rh_fg_color(const char *name, char *buf, size_t n)
{
    uint64_t h = rh_hash_str(name);
    unsigned r = 205 + (unsigned)(h % 50), g = 80 + (unsigned)((h >> 8) % 130),
             b = (unsigned)((h >> 16) % 55);
    snprintf(buf, n, "rgb(%u,%u,%u)", r, g, b);
}

static const char *const rh_weight_title[] = {
    [RH_FLAME_ALL] = "all allocated bytes",
    [RH_FLAME_LEAKED] = "leaked bytes",
    [RH_FLAME_PEAK] = "bytes live at the peak",
    [RH_FLAME_CPU] = "CPU samples",
    [RH_FLAME_FREED] = "bytes of freed blocks",
};

/* Writes the SVG's opening tag (with the XML prolog unless embedded). */
static void rh_svg_open(FILE *out, int embedded, const char *cls, int w, int h)
{
    if (!embedded)
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", out);
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"%s\""
            " width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-width=\"%d\""
            " font-family=\"Verdana, sans-serif\" font-size=\"12\">\n",
            cls, w, h, w, h, w - 20);
}

/* Writes the script element. The text has no markup characters, so it needs no
 * CDATA section and reads the same in XML and in HTML. */
static void rh_svg_script(FILE *out, const char *js)
{
    fputs("<script type=\"text/javascript\">", out);
    fputs(js, out);
    fputs("</script>\n", out);
}

int rh_svg_flamegraph(sqlite3 *db, enum rh_flame_weight w, FILE *out, int embedded)
{
    struct rh_ftree t;
    if (rh_ftree_build(db, w, &t) != 0) {
        rh_ftree_free(&t);
        return -1;
    }
    const int width = RH_FG_WIDTH + 20;
    const int rows = t.maxdepth + 1;
    const int height = rows * RH_FG_ROW + 70;
    const int64_t total = t.v[0].w;
    char hb[64], color[32], label[1024];
    rh_svg_open(out, embedded, "rh-flamegraph", width, height);
    fputs("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fdfaf3\"/>\n", out);
    if (w == RH_FLAME_CPU)
        fprintf(out,
                "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">Flamegraph:"
                " %s (%" PRId64 " samples)</text>\n",
                width / 2, rh_weight_title[w], total);
    else
        fprintf(out,
                "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">Flamegraph: %s"
                " (%s in %" PRId64 " allocations)</text>\n",
                width / 2, rh_weight_title[w], rh_human_bytes(total, hb, sizeof hb), t.v[0].n);
    fputs("<text class=\"fg-reset\" x=\"10\" y=\"22\" fill=\"#1a5fb4\" cursor=\"pointer\""
          " display=\"none\">Reset zoom</text>\n",
          out);
    fprintf(out,
            "<text class=\"fg-details\" x=\"10\" y=\"%d\">Click a frame to zoom, hover for"
            " details</text>\n",
            height - 10);

    /* Depth-first layout: x offset of each node as a fraction of the root. */
    double *x = malloc((size_t)(t.len ? t.len : 1) * sizeof *x);
    if (!x) {
        rh_ftree_free(&t);
        fprintf(stderr, "rheaper: flamegraph: out of memory\n");
        return -1;
    }
    x[0] = 0;
    for (int32_t i = 0; i < t.len; i++) {
        /* parents precede children in creation order, so x[i] is known */
        double off = x[i];
        for (int32_t c = t.v[i].child; c >= 0; c = t.v[c].next) {
            x[c] = off;
            off += total > 0 ? (double)t.v[c].w / (double)total : 0;
        }
    }
    /* Nodes below a millionth of the total would never be seen even zoomed. */
    for (int32_t i = 0; i < t.len && total > 0; i++) {
        const struct rh_fnode *nd = &t.v[i];
        if (nd->w * 1000000 < total)
            continue;
        const char *full = t.names[nd->name];
        /* frames are merged by their full name and drawn by the short one
         * (rh_name_short); the full one ends the hover title */
        char name[1024];
        rh_name_short(full, name, sizeof name);
        double fw = (double)nd->w / (double)total;
        int y = height - 40 - (nd->depth + 1) * RH_FG_ROW;
        rh_fg_color(name, color, sizeof color);
        fprintf(out,
                "<g class=\"fg-n\" cursor=\"pointer\" data-x=\"%.9f\" data-w=\"%.9f\""
                " data-d=\"%d\" data-n=\"",
                x[i], fw, nd->depth);
        rh_markup_put(out, name);
        fputs("\"><title>", out);
        rh_markup_put(out, name);
        if (w == RH_FLAME_CPU)
            fprintf(out, " (%" PRId64 " samples, %.2f%%)", nd->w, 100.0 * fw);
        else
            fprintf(out, " (%" PRId64 " bytes, %.2f%%, %" PRId64 " allocations)", nd->w, 100.0 * fw,
                    nd->n);
        if (strcmp(name, full)) {
            fputs(" " RH_SVG_DASH " ", out);
            rh_markup_put(out, full);
        }
        fputs("</title>", out);
        fprintf(out,
                "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>",
                10 + x[i] * RH_FG_WIDTH, y, fw * RH_FG_WIDTH > 0.6 ? fw * RH_FG_WIDTH - 0.5 : 0.1,
                RH_FG_ROW - 1, color);
        /* the label as text, trimmed to the frame, so the SVG reads without
         * its script (image viewers, rsvg-convert, documents) */
        fprintf(out, "<text x=\"%.2f\" y=\"%d\">", 13 + x[i] * RH_FG_WIDTH, y + RH_FG_ROW - 5);
        rh_markup_put(out, rh_fg_label(name, fw * RH_FG_WIDTH, label, sizeof label));
        fputs("</text></g>\n", out);
    }
    free(x);
    if (total == 0)
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">(no allocations)</text>\n",
                width / 2, height / 2);
    rh_svg_script(out, rh_fg_script);
    fputs("</svg>\n", out);
    rh_ftree_free(&t);
    return ferror(out) ? -1 : 0;
}

/* ---- the timeline ---------------------------------------------------------- */

/* A series' label "function (file:line)" with the function's short form
 * (rh_name_short) into buf; the place, a last parenthesis holding no other
 * and ending in :LINE, stays as it is. Returns buf. */
static const char *rh_tl_short(const char *label, char *buf, size_t n)
{
    size_t len = strlen(label), cut = len;
    if (len > 4 && label[len - 1] == ')') {
        const char *open = strrchr(label, '(');
        const char *colon = open ? strrchr(open, ':') : NULL;
        if (open && open > label && open[-1] == ' ' && colon &&
            strspn(colon + 1, "0123456789") == (size_t)(label + len - 1 - colon - 1))
            cut = (size_t)(open - 1 - label);
    }
    char *fn = strndup(label, cut); /* the whole name, however long */
    size_t k = rh_name_short(fn ? fn : "??", buf, n);
    free(fn);
    snprintf(buf + k, n - k, "%s", label + cut);
    return buf;
}

/* Hover readout: a vertical rule and the values of the column under the mouse
 * in the legend. No '<' or '&' (see the file comment). */
static const char rh_tl_script[] =
    "(function () {\n"
    "  var svg = document.currentScript.ownerSVGElement;\n"
    "  var plot = svg.querySelector('.tl-plot');\n"
    "  var rule = svg.querySelector('.tl-rule');\n"
    "  var info = svg.querySelector('.tl-info');\n"
    "  var ts = svg.querySelector('.tl-data').getAttribute('data-t').split(' ').map(Number);\n"
    "  var series = Array.prototype.slice.call(svg.querySelectorAll('.tl-s'));\n"
    "  var vals = series.map(function (s) {\n"
    "    return s.getAttribute('data-v').split(' ').map(Number);\n"
    "  });\n"
    "  var x0 = +plot.getAttribute('x'), pw = +plot.getAttribute('width');\n"
    "  var orig = info.textContent;\n"
    "  function fmt(b) {\n"
    "    var u = ['B', 'KiB', 'MiB', 'GiB'], i = 0;\n"
    "    while (b >= 1024 ? 3 > i : false) { b /= 1024; i++; }\n"
    "    return (i ? b.toFixed(2) : b) + ' ' + u[i];\n"
    "  }\n"
    "  plot.addEventListener('mousemove', function (ev) {\n"
    "    var pt = svg.createSVGPoint();\n"
    "    pt.x = ev.clientX; pt.y = ev.clientY;\n"
    "    var p = pt.matrixTransform(svg.getScreenCTM().inverse());\n"
    "    var i = Math.round((p.x - x0) / pw * (ts.length - 1));\n"
    "    i = Math.max(0, Math.min(ts.length - 1, i));\n"
    "    var total = 0;\n"
    "    series.forEach(function (s, k) {\n"
    "      total += vals[k][i];\n"
    "      s.parentNode.querySelector('.tl-lv').textContent = fmt(vals[k][i]);\n"
    "    });\n"
    "    var x = x0 + i / (ts.length - 1) * pw;\n"
    "    rule.setAttribute('x1', x); rule.setAttribute('x2', x);\n"
    "    rule.setAttribute('display', 'inline');\n"
    "    info.textContent = (ts[i] / 1e9).toFixed(4) + ' s: ' + fmt(total) + ' live';\n"
    "  });\n"
    "  plot.addEventListener('mouseleave', function () {\n"
    "    rule.setAttribute('display', 'none'); info.textContent = orig;\n"
    "  });\n"
    "})();\n";

static const char *const rh_tl_colors[RH_TL_SERIES + 1] = {
    "#e66101", "#1f78b4", "#33a02c", "#e31a1c", "#6a3d9a",
    "#b15928", "#fdbf6f", "#a6cee3", "#bdbdbd",
};

/* A call site of the timeline: the label of frame 0 (whole: it is matched
 * with every stack's, and shortened only for display) and its bytes at the
 * peak. */
struct rh_tl_site {
    char *label; /* malloc'd (rh_tl_sites_free) */
    int64_t at_peak;
    int64_t site; /* its number in TEMP TABLE site */
};

/* The series of every stack id, in a dense array: ids below
 * RH_INHERIT_STACK_BASE index it directly, the ids of stacks inherited from
 * a fork's parent (RH_INHERIT_STACK_BASE up) follow them from nlow. */
struct rh_tl_map {
    uint8_t *s; /* series per slot: index into sites, RH_TL_SERIES for "other" */
    int64_t n;  /* slots */
    int64_t nlow; /* slots of ids below RH_INHERIT_STACK_BASE */
};

/* The slot of stack id bt in m, or -1 when bt has none. */
static int64_t rh_tl_slot(const struct rh_tl_map *m, int64_t bt)
{
    int64_t k = rh_stack_slot(bt, m->nlow);
    return bt >= 0 && k >= 0 && k < m->n ? k : -1;
}

static void rh_tl_sites_free(struct rh_tl_site *sites, int n)
{
    for (int k = 0; k < n; k++)
        free(sites[k].label);
}

/* Reads the top call sites at the peak time pt into sites (at most
 * RH_TL_SERIES) and maps every stack id of `sel` to its series (index into
 * sites, or RH_TL_SERIES for "other") in map (rh_tl_slot). Returns the number
 * of sites, or -1 after a message. */
static int rh_tl_sites(sqlite3 *db, int64_t pt, struct rh_tl_site *sites, struct rh_tl_map *map)
{
    (void)pt;
    /* the call sites of the scope (rh_query.h), the most held at the peak first */
    struct rh_site_query q = {.by = RH_SITES_PEAK, .limit = RH_TL_SERIES};
    struct rh_site_row *rows = NULL;
    size_t nrows = 0;
    if (rh_make_sites(db, 0) || rh_sites_get(db, &q, &rows, &nrows))
        return -1;
    int n = 0, rc;
    for (size_t r = 0; r < nrows && n < RH_TL_SERIES; r++, n++) {
        size_t len = strlen(rows[r].function) + strlen(rows[r].location) + 4;
        sites[n].label = malloc(len);
        if (!sites[n].label) {
            rh_sites_free(rows, nrows);
            fprintf(stderr, "rheaper: timeline: out of memory\n");
            return -1; /* the caller frees the labels made so far */
        }
        snprintf(sites[n].label, len, "%s (%s)", rows[r].function, rows[r].location);
        sites[n].at_peak = rows[r].peak_bytes;
        sites[n].site = rows[r].site;
    }
    rh_sites_free(rows, nrows);
    sqlite3_stmt *st;

    if (rh_site_slots(db, "timeline", &map->nlow, &map->n))
        return -1;
    map->s = malloc((size_t)(map->n > 0 ? map->n : 1));
    if (!map->s) {
        fprintf(stderr, "rheaper: timeline: out of memory\n");
        return -1;
    }
    memset(map->s, RH_TL_SERIES, (size_t)(map->n > 0 ? map->n : 1));
    if (sqlite3_prepare_v2(db, "SELECT bt, site FROM temp.site", -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "timeline");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t bt = sqlite3_column_int64(st, 0), site = sqlite3_column_int64(st, 1);
        int64_t slot = rh_tl_slot(map, bt);
        for (int k = 0; k < n && slot >= 0; k++)
            if (site == sites[k].site)
                map->s[slot] = (uint8_t)k;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? n : rh_sql_fail(db, "timeline");
}

/* The sampled chart: RH_TL_COLUMNS + 1 columns; column 0 is time 0 (nothing
 * live), column c covers ((c-1)/C, c/C] of the span and holds the state at the
 * highest total reached in it, or the state carried from before when nothing
 * happened in it. */
struct rh_tl_data {
    int64_t t[RH_TL_COLUMNS + 1];
    int64_t v[RH_TL_SERIES + 1][RH_TL_COLUMNS + 1];
    int64_t span, max_total;
};

/* Column of time t: ceil(t * C / span), within 1..C. */
static int rh_tl_col(const struct rh_tl_data *d, int64_t t)
{
    int c = t <= 0 || d->span <= 0 ? 1
                                   : (int)(((__int128)t * RH_TL_COLUMNS + d->span - 1) / d->span);
    return c < 1 ? 1 : c > RH_TL_COLUMNS ? RH_TL_COLUMNS : c;
}

/* Replays `sel` into d. The events of one time form a group (frees first);
 * a column keeps the state at the end of the group that first reached its
 * highest total, as the converter's timeline does. Returns 0 or -1 after a
 * message. */
static int rh_tl_replay(sqlite3 *db, const struct rh_tl_map *map, struct rh_tl_data *d)
{
    static const char full[] =
        "SELECT t, d, bt FROM (SELECT alloc_after AS t, 1 AS k, size AS d, bt FROM sel"
        " UNION ALL SELECT dealloc_after, 0, -size, bt FROM sel WHERE dealloc_after IS NOT NULL)"
        " ORDER BY t, k";
    /* a sampled profile: estimated bytes, as the converter's timeline */
    static const char sampled[] =
        "SELECT t, d, bt FROM (SELECT alloc_after AS t, 1 AS k,"
        " " RH_W_ROW_B " AS d, bt FROM sel UNION ALL"
        " SELECT dealloc_after, 0, -" RH_W_ROW_B ", bt FROM sel"
        " WHERE dealloc_after IS NOT NULL) ORDER BY t, k";
    const char *sql = rh_sample_notice(db) ? sampled : full;
    int64_t live[RH_TL_SERIES + 1] = {0}, total = 0, best = -1, gt = 0;
    int col = 0, have = 0; /* column of the current group */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "timeline");
    int rc;
    for (;;) {
        rc = sqlite3_step(st);
        int row = rc == SQLITE_ROW;
        int64_t t = row ? sqlite3_column_int64(st, 0) : 0;
        if (have && (!row || t != gt) && total > best) {
            /* the end of a group */
            best = total;
            for (int j = 0; j <= RH_TL_SERIES; j++)
                d->v[j][col] = live[j];
            if (total > d->max_total)
                d->max_total = total;
        }
        if (!row)
            break;
        if (!have || t != gt) {
            int c = rh_tl_col(d, t);
            if (c != col) {
                /* columns between the last group's and this one hold the end state */
                for (int k = col + 1; k < c; k++)
                    for (int j = 0; j <= RH_TL_SERIES; j++)
                        d->v[j][k] = live[j];
                col = c;
                best = -1;
            }
            gt = t;
            have = 1;
        }
        int64_t delta = sqlite3_column_int64(st, 1), bt = sqlite3_column_int64(st, 2);
        int64_t slot = rh_tl_slot(map, bt);
        int s = slot >= 0 ? map->s[slot] : RH_TL_SERIES;
        live[s] += delta;
        total += delta;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rh_sql_fail(db, "timeline");
    for (int k = col + 1; k <= RH_TL_COLUMNS; k++)
        for (int j = 0; j <= RH_TL_SERIES; j++)
            d->v[j][k] = live[j];
    for (int k = 0; k <= RH_TL_COLUMNS; k++)
        d->t[k] = (int64_t)((__int128)d->span * k / RH_TL_COLUMNS);
    return 0;
}

/* Fills d from the scope's timeline (TEMP stl and stls: the converter's
 * tables timeline and timeline_stacks, or the filtered pass's) instead of
 * replaying rows: the same columns over the same span. Returns 1
 * when done, 0 when the profile has no stored timeline for this span, -1
 * after a message. */
static int rh_tl_stored(sqlite3 *db, const struct rh_tl_map *map, struct rh_tl_data *d)
{
    struct rh_scope sc;
    if (rh_scope_get(db, &sc) || !sc.timeline || sc.span != d->span)
        return 0;
    int64_t *cur = calloc((size_t)(map->n > 0 ? map->n : 1), sizeof *cur);
    if (!cur) {
        fprintf(stderr, "rheaper: timeline: out of memory\n");
        return -1;
    }
    sqlite3_stmt *tc = NULL, *tp = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT col, max_bytes, active FROM temp.stl ORDER BY col", -1, &tc,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT col, bt, at_max, at_end FROM temp.stls ORDER BY col",
                           -1, &tp, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "timeline");
        goto out;
    }
    int64_t end[RH_TL_SERIES + 1] = {0};
    int prc = sqlite3_step(tp);
    while (sqlite3_step(tc) == SQLITE_ROW) {
        int c = sqlite3_column_int(tc, 0);
        if (c < 1 || c > RH_TL_COLUMNS)
            continue;
        int64_t mx = sqlite3_column_int64(tc, 1);
        int active = sqlite3_column_int(tc, 2);
        int64_t atmax[RH_TL_SERIES + 1];
        memcpy(atmax, end, sizeof atmax);
        while (prc == SQLITE_ROW && sqlite3_column_int(tp, 0) <= c) {
            int64_t bt = sqlite3_column_int64(tp, 1);
            int64_t am = sqlite3_column_int64(tp, 2), ae = sqlite3_column_int64(tp, 3);
            int64_t slot = rh_tl_slot(map, bt);
            if (slot >= 0) {
                int s = map->s[slot];
                atmax[s] += am - cur[slot];
                end[s] += ae - cur[slot];
                cur[slot] = ae;
            }
            prc = sqlite3_step(tp);
        }
        for (int j = 0; j <= RH_TL_SERIES; j++)
            d->v[j][c] = active ? atmax[j] : end[j];
        if (mx > d->max_total)
            d->max_total = mx;
    }
    for (int k = 0; k <= RH_TL_COLUMNS; k++)
        d->t[k] = (int64_t)((__int128)d->span * k / RH_TL_COLUMNS);
    rc = 1;
out:
    sqlite3_finalize(tc);
    sqlite3_finalize(tp);
    free(cur);
    return rc;
}

/* A round axis step near range/5: 1, 2 or 5 times a power of ten, in units
 * of unit (1 for seconds, a power of 1024 for bytes so labels stay round). */
static double rh_nice_step(double range, double unit)
{
    double raw = range / unit / 5, p = 1;
    if (raw <= 0)
        return unit;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw)
        p /= 10;
    double m = raw / p;
    return (m < 2 ? 2 * p : m < 5 ? 5 * p : 10 * p) * unit;
}

int rh_svg_timeline(sqlite3 *db, FILE *out, int embedded)
{
    int64_t peak, pt, span = 0;
    if (rh_peak_find(db, &peak, &pt) != 0)
        return -1;
    /* The span: the run, or the last event of the rows when later (an
     * unfiltered scope's events all lie within the run). */
    struct rh_scope sc;
    if (rh_scope_get(db, &sc))
        return -1;
    span = sc.span;
    if (span <= 0)
        span = 1;

    struct rh_tl_site sites[RH_TL_SERIES];
    memset(sites, 0, sizeof sites); /* labels NULL: a failed read frees what it made */
    struct rh_tl_map map = {0};
    int nsites = rh_tl_sites(db, pt, sites, &map);
    if (nsites < 0) {
        rh_tl_sites_free(sites, RH_TL_SERIES);
        free(map.s);
        return -1;
    }
    struct rh_tl_data *d = calloc(1, sizeof *d);
    if (!d) {
        rh_tl_sites_free(sites, nsites);
        free(map.s);
        fprintf(stderr, "rheaper: timeline: out of memory\n");
        return -1;
    }
    d->span = span;
    int rc = sc.timeline ? rh_tl_stored(db, &map, d) : 0;
    if (rc == 0)
        rc = rh_tl_replay(db, &map, d);
    else if (rc == 1)
        rc = 0;
    free(map.s);
    if (rc != 0) {
        rh_tl_sites_free(sites, nsites);
        free(d);
        return -1;
    }

    /* the process's RSS beside the heap, when the recording sampled it */
    int64_t rss[RH_TL_COLUMNS + 1], rss_max = 0;
    int nrss = rh_memory_columns(db, span, RH_TL_COLUMNS, rss);
    if (nrss < 0) {
        rh_tl_sites_free(sites, nsites);
        free(d);
        return -1;
    }
    for (int c = 0; c <= RH_TL_COLUMNS; c++)
        if (rss[c] > rss_max)
            rss_max = rss[c];
    const int W = RH_TL_WIDTH + 20, legend_h = 20 * (nsites + 1 + (nrss > 0)) + 20;
    const int H = RH_TL_HEIGHT + legend_h;
    const double px0 = 90, py0 = 40, pw = W - 120, ph = RH_TL_HEIGHT - 90;
    const double ymax = (d->max_total > rss_max ? d->max_total : rss_max) > 0
                            ? (double)(d->max_total > rss_max ? d->max_total : rss_max) * 1.05
                            : 1;
    char hb[64], hb2[64];
    rh_svg_open(out, embedded, "rh-timeline", W, H);
    fputs("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", out);
    fprintf(out,
            "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">Live heap over time"
            " (peak %s at %.4f s)</text>\n",
            W / 2, rh_human_bytes(peak, hb, sizeof hb), (double)pt / 1e9);

    /* axes and grid */
    double yunit = 1;
    while (ymax / yunit >= 1024 && yunit < 1e15)
        yunit *= 1024;
    double ystep = rh_nice_step(ymax, yunit);
    if (yunit == 1 && ystep < 1)
        ystep = 1;
    fputs("<g class=\"tl-axes\" stroke=\"#dddddd\">\n", out);
    for (double y = 0; y <= ymax; y += ystep) {
        double yy = py0 + ph - y / ymax * ph;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\""
                " y=\"%.1f\" text-anchor=\"end\" stroke=\"none\" fill=\"#333\">%s</text>\n",
                px0, yy, px0 + pw, yy, px0 - 6, yy + 4, rh_human_bytes((int64_t)y, hb, sizeof hb));
    }
    double secs = (double)span / 1e9, xstep = rh_nice_step(secs, 1);
    for (double x = 0; x <= secs * 1.0000001; x += xstep) {
        double xx = px0 + x / secs * pw;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\""
                " y=\"%.1f\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">%g s</text>\n",
                xx, py0, xx, py0 + ph, xx, py0 + ph + 16, x);
    }
    fputs("</g>\n", out);

    /* the data, then stacked areas: series k sits on the sum of series before it */
    fputs("<g class=\"tl-data\" data-t=\"", out);
    for (int c = 0; c <= RH_TL_COLUMNS; c++)
        fprintf(out, c ? " %" PRId64 : "%" PRId64, d->t[c]);
    fputs("\">\n", out);
    int64_t base[RH_TL_COLUMNS + 1] = {0};
    for (int s = 0; s <= RH_TL_SERIES; s++) {
        if (s >= nsites && s < RH_TL_SERIES)
            continue;
        if (s == RH_TL_SERIES) { /* "other" only when some site is in it */
            int any = 0;
            for (int c = 0; c <= RH_TL_COLUMNS && !any; c++)
                any = d->v[s][c] != 0;
            if (!any && nsites > 0)
                continue;
        }
        const char *full = s < RH_TL_SERIES ? sites[s].label : "other";
        /* the short form is at most 2 bytes longer per bracket pair */
        size_t lsz = 2 * strlen(full) + 16;
        char *label = malloc(lsz);
        if (!label) {
            fprintf(stderr, "rheaper: timeline: out of memory\n");
            break;
        }
        rh_tl_short(full, label, lsz);
        fprintf(out, "<g><polygon class=\"tl-s\" fill=\"%s\" fill-opacity=\"0.85\" data-v=\"",
                rh_tl_colors[s]);
        for (int c = 0; c <= RH_TL_COLUMNS; c++)
            fprintf(out, c ? " %" PRId64 : "%" PRId64, d->v[s][c]);
        fputs("\" points=\"", out);
        for (int c = 0; c <= RH_TL_COLUMNS; c++)
            fprintf(out, "%.1f,%.1f ", px0 + pw * c / RH_TL_COLUMNS,
                    py0 + ph - (double)(base[c] + d->v[s][c]) / ymax * ph);
        for (int c = RH_TL_COLUMNS; c >= 0; c--)
            fprintf(out, "%.1f,%.1f ", px0 + pw * c / RH_TL_COLUMNS,
                    py0 + ph - (double)base[c] / ymax * ph);
        fputs("\"><title>", out);
        rh_markup_put(out, label);
        if (strcmp(label, full)) {
            fputs(" " RH_SVG_DASH " ", out);
            rh_markup_put(out, full);
        }
        fputs("</title></polygon>", out);
        /* legend entry */
        int ly = RH_TL_HEIGHT + 10 + 20 * (s < RH_TL_SERIES ? s : nsites);
        int64_t atp = d->v[s][0];
        for (int c = 0; c <= RH_TL_COLUMNS; c++)
            if (d->v[s][c] > atp)
                atp = d->v[s][c];
        fprintf(out,
                "<rect x=\"%.0f\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                "<text class=\"tl-lv\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\">max %s</text>"
                "<text x=\"%.0f\" y=\"%d\">",
                px0, ly, rh_tl_colors[s], px0 + 110, ly + 12, rh_human_bytes(atp, hb2, sizeof hb2),
                px0 + 120, ly + 12);
        rh_markup_put(out, label);
        free(label);
        fputs("</text></g>\n", out);
        for (int c = 0; c <= RH_TL_COLUMNS; c++)
            base[c] += d->v[s][c];
    }
    fputs("</g>\n", out);
    if (nrss > 0) { /* RSS as a line over the heap: the gap is what the heap does not explain */
        fputs("<g class=\"tl-rss\"><polyline fill=\"none\" stroke=\"#000000\""
              " stroke-width=\"1.5\" data-rss=\"",
              out);
        for (int c = 0; c <= RH_TL_COLUMNS; c++)
            fprintf(out, c ? " %" PRId64 : "%" PRId64, rss[c]);
        fputs("\" points=\"", out);
        for (int c = 0; c <= RH_TL_COLUMNS; c++)
            if (rss[c] >= 0)
                fprintf(out, "%.1f,%.1f ", px0 + pw * c / RH_TL_COLUMNS,
                        py0 + ph - (double)rss[c] / ymax * ph);
        fputs("\"><title>RSS</title></polyline>", out);
        struct rh_memfig mf;
        char line[256] = "";
        if (rh_memory_figures(db, &mf) == 0 && mf.samples)
            rh_memory_line(&mf, &mf.peak, line, sizeof line);
        int ly = RH_TL_HEIGHT + 10 + 20 * (nsites + 1);
        fprintf(out,
                "<line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"#000000\""
                " stroke-width=\"2\"/><text class=\"tl-lv\" x=\"%.0f\" y=\"%d\""
                " text-anchor=\"end\">max %s</text><text x=\"%.0f\" y=\"%d\">RSS"
                " (at its peak: ",
                px0, ly + 7, px0 + 14, ly + 7, px0 + 110, ly + 12,
                rh_human_bytes(rss_max, hb2, sizeof hb2), px0 + 120, ly + 12);
        rh_markup_put(out, line);
        fputs(")</text></g>\n", out);
    }
    double peak_x = px0 + (double)pt / (double)span * pw;
    fprintf(out,
            "<line class=\"tl-peak\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\""
            " stroke=\"#c01c28\" stroke-dasharray=\"4 3\"/>\n",
            peak_x, py0, peak_x, py0 + ph);
    fprintf(out,
            "<line class=\"tl-rule\" x1=\"0\" y1=\"%.1f\" x2=\"0\" y2=\"%.1f\" stroke=\"#000\""
            " display=\"none\"/>\n",
            py0, py0 + ph);
    fprintf(out,
            "<rect class=\"tl-plot\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\""
            " fill=\"#000000\" fill-opacity=\"0\" stroke=\"#888\"/>\n",
            px0, py0, pw, ph);
    fprintf(out,
            "<text class=\"tl-info\" x=\"%.1f\" y=\"%.1f\">Hover for the live bytes at a"
            " time; legend: each site's highest value</text>\n",
            px0, py0 + ph + 40);
    rh_svg_script(out, rh_tl_script);
    fputs("</svg>\n", out);
    rh_tl_sites_free(sites, nsites);
    free(d);
    return ferror(out) ? -1 : 0;
}
