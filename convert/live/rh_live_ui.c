/* rh_live_ui.c: the ncurses terminal UI of `rheaper live` and `rheaper view`.
 *
 * It draws a struct rh_lv_model (rh_live.h) in four views and only changes
 * it through the source's refresh callback: `1` CPU samples per function,
 * `2` heap call sites with a sparkline of their live bytes, `3` a chart of
 * the total live heap over time, `4` the threads. Keys (docs/commands.md):
 * j/k (and the arrows) move the selection, h/l pan the chart, +/- zoom it,
 * Tab cycles the views, m switches between the heap and the CPU view and c
 * (or Enter) opens the chart and returns to the view it came from (rsprof's
 * view-mode and chart keys), s cycles the sort, / filters call sites as
 * --function does (the sites of stacks in which some frame's function
 * matches a POSIX extended regex; the source refills the model; an empty one
 * clears it), p pauses the refresh, q quits. While following a program the
 * model is refreshed through a callback about twice a second; a resize
 * redraws at the new size; when the program ends the last state stays on
 * screen with a line saying so. Sparklines use block characters in a UTF-8
 * locale and ASCII otherwise. The heap view's columns adapt to the width
 * (rh_heap_layout): names are cut only after the other columns gave way.
 */
#define _GNU_SOURCE
#include <langinfo.h>
#include <locale.h>
#include <ncurses.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rh_query.h"
#include "rh_live.h"
#include "rh_names.h"
#include "rh_regex.h"

enum { RH_V_CPU = 1, RH_V_HEAP, RH_V_CHART, RH_V_THREADS };

struct rh_ui {
    struct rh_lv_model *m;
    int view;
    int back; /* the view `c` returns to from the chart */
    int sel[5], top[5], sort[5];
    struct rh_re *re;
    int have_re;
    char re_text[128];
    int paused;
    int filter_changed; /* the model must be refilled with the new filter */
    double zoom;        /* 1: the whole run */
    int64_t win_end;    /* chart window end (ns); -1: follow the end */
    int utf8;
    int full_names; /* `n`: names in full, not shortened (rh_name_short) */
    char msg[256];
};

static const char *const rh_heap_sorts[] = {"live bytes",  "peak bytes",  "allocated bytes",
                                            "allocations", "freed bytes", "call site"};
static const char *const rh_thread_sorts[] = {"live bytes", "allocated bytes", "freed bytes",
                                              "thread"};
static const char *const rh_cpu_sorts[] = {"samples", "function"};

static int rh_nsorts(int view)
{
    return view == RH_V_HEAP ? 6 : view == RH_V_THREADS ? 4 : view == RH_V_CPU ? 2 : 1;
}

static const char *rh_sort_name(int view, int k)
{
    return view == RH_V_HEAP      ? rh_heap_sorts[k]
           : view == RH_V_THREADS ? rh_thread_sorts[k]
           : view == RH_V_CPU     ? rh_cpu_sorts[k]
                                  : "";
}

static const char *rh_hb(int64_t b, char *buf, size_t n)
{
    return rh_human_bytes(b, buf, n);
}

/* ---- ordering ------------------------------------------------------------ */

static int rh_sort_key; /* qsort has no context argument */

static int rh_cmp64(int64_t a, int64_t b)
{
    return a > b ? -1 : a < b;
}

static int rh_thread_cmp(const void *pa, const void *pb)
{
    const struct rh_lv_thread *a = *(const struct rh_lv_thread *const *)pa;
    const struct rh_lv_thread *b = *(const struct rh_lv_thread *const *)pb;
    int c = 0;
    switch (rh_sort_key) {
    case 0:
        c = rh_cmp64(a->live_bytes, b->live_bytes);
        break;
    case 1:
        c = rh_cmp64(a->alloc_bytes, b->alloc_bytes);
        break;
    case 2:
        c = rh_cmp64(a->freed_bytes, b->freed_bytes);
        break;
    default:
        break;
    }
    return c ? c : (a->id > b->id) - (a->id < b->id);
}

/* The sites the view lists (heap: those that allocated; CPU: those with
 * samples; the source already applied the filter), in the view's sort
 * (rh_lv_sites_sorted). Returns a malloc'd array, *n its length. */
static const struct rh_lv_site **rh_sites(struct rh_ui *u, int cpu, size_t *n)
{
    static const enum rh_lv_sort heap[] = {RH_LV_BY_LIVE,  RH_LV_BY_PEAK,  RH_LV_BY_ALLOCATED,
                                           RH_LV_BY_COUNT, RH_LV_BY_FREED, RH_LV_BY_NAME};
    static const enum rh_lv_sort cpus[] = {RH_LV_BY_SAMPLES, RH_LV_BY_NAME};
    return rh_lv_sites_sorted(u->m, cpu, cpu ? cpus[u->sort[RH_V_CPU]] : heap[u->sort[RH_V_HEAP]],
                              n);
}

/* ---- drawing ---------------------------------------------------------------- */

static int rh_utf8; /* the terminal's locale is UTF-8 (u->utf8, for rh_put) */

/* The bytes of s that fill at most w columns: in a UTF-8 locale a
 * character (its lead byte and continuation bytes) is one column, else each
 * byte is. */
static int rh_fit(const char *s, int w)
{
    int i = 0, cols = 0;
    while (s[i]) {
        int k = 1;
        if (rh_utf8)
            while (((unsigned char)s[i + k] & 0xC0) == 0x80)
                k++;
        if (cols + 1 > w)
            break;
        cols++;
        i += k;
    }
    return i;
}

/* The columns s takes (rh_fit's count). */
static int rh_cols(const char *s)
{
    int cols = 0;
    for (; *s; s++)
        cols += !rh_utf8 || ((unsigned char)*s & 0xC0) != 0x80;
    return cols;
}

/* Writes s at (y, x), cut to at most w columns. */
static void rh_put(int y, int x, int w, const char *s)
{
    if (w <= 0 || y < 0 || y >= LINES)
        return;
    mvaddnstr(y, x, s, rh_fit(s, w));
}

/* The name a row shows for site s: its label with the function shortened
 * (templates and parameters elided, rh_name_short), or in full after `n`;
 * outside a UTF-8 locale the ellipsis is written "...". Returns buf. */
static const char *rh_shown(const struct rh_ui *u, const struct rh_lv_site *s, char *buf, size_t n)
{
    const char *l = u->full_names ? s->label : s->short_label;
    size_t k = 0;
    const size_t el = sizeof RH_NAME_ELLIPSIS - 1;
    while (*l && k + 4 < n) {
        if (!u->utf8 && !strncmp(l, RH_NAME_ELLIPSIS, el)) {
            memcpy(buf + k, "...", 3);
            k += 3;
            l += el;
        } else {
            buf[k++] = *l++;
        }
    }
    buf[k] = 0;
    return buf;
}

/* The selected row's detail above the footer: its full name and figures,
 * "NAME: FIGURES" on one line when that fits, else the name wrapped over up
 * to RH_DETAIL_MAX - 1 lines (cut with an ellipsis past them) and the figures
 * on a line of their own. */
enum { RH_DETAIL_MAX = 4 };
struct rh_detail {
    const char *name, *figures;
    int lines; /* the lines it takes, the last at LINES - 2 */
};

static void rh_detail_init(struct rh_detail *d, const char *name, const char *figures)
{
    int w = COLS - 1 > 10 ? COLS - 1 : 10;
    d->name = name;
    d->figures = figures;
    int one = rh_cols(name) + 2 + rh_cols(figures);
    if (one <= w) {
        d->lines = 1;
        return;
    }
    /* at most RH_DETAIL_MAX lines, and three rows of the table stay (its
     * header is line 3, the footer the last) */
    int most = LINES - 8 < RH_DETAIL_MAX ? LINES - 8 : RH_DETAIL_MAX;
    int k = (rh_cols(name) + w - 1) / w;
    d->lines = most < 2 ? 1 : (k < most - 1 ? k : most - 1) + 1;
}

static void rh_detail_draw(const struct rh_detail *d)
{
    int w = COLS - 1 > 10 ? COLS - 1 : 10, y = LINES - 1 - d->lines;
    char line[2048];
    if (d->lines == 1) {
        snprintf(line, sizeof line, "%s: %s", d->name, d->figures);
        rh_put(y, 1, w, line);
        return;
    }
    const char *t = d->name;
    for (int i = 0; i < d->lines - 1 && *t; i++) {
        int b = rh_fit(t, w);
        if (i == d->lines - 2 && t[b]) /* more than fits: cut */
            snprintf(line, sizeof line, "%.*s%s", rh_fit(t, rh_utf8 ? w - 1 : w - 3), t,
                     rh_utf8 ? RH_NAME_ELLIPSIS : "...");
        else
            snprintf(line, sizeof line, "%.*s", b, t);
        rh_put(y + i, 1, w, line);
        t += b;
    }
    rh_put(LINES - 2, 1, w, d->figures);
}

/* A sparkline of n values (oldest first) in w cells. */
static void rh_spark(struct rh_ui *u, int y, int x, int w, const int64_t *v, int n)
{
    static const char *const blocks[] = {" ",
                                         "\xe2\x96\x81",
                                         "\xe2\x96\x82",
                                         "\xe2\x96\x83",
                                         "\xe2\x96\x84",
                                         "\xe2\x96\x85",
                                         "\xe2\x96\x86",
                                         "\xe2\x96\x87",
                                         "\xe2\x96\x88"};
    static const char ascii[] = " ._-=+*#@";
    if (n <= 0 || w <= 0)
        return;
    int64_t mx = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > mx)
            mx = v[i];
    int cells = n < w ? n : w;
    for (int c = 0; c < cells; c++) {
        /* cell c covers values [a, b): their maximum */
        int a = (int)((int64_t)c * n / cells), b = (int)((int64_t)(c + 1) * n / cells);
        int64_t x0 = 0;
        for (int i = a; i < b; i++)
            if (v[i] > x0)
                x0 = v[i];
        int lv = mx > 0 ? (int)((x0 * 8 + mx - 1) / mx) : 0;
        if (lv > 8)
            lv = 8;
        if (u->utf8)
            mvaddstr(y, x + (w - cells) + c, blocks[lv]);
        else
            mvaddch(y, x + (w - cells) + c, (chtype)ascii[lv]);
    }
}

static void rh_draw_header(struct rh_ui *u)
{
    const struct rh_lv_model *m = u->m;
    char line[2048], a[32], b[32], c[32], d[32];
    attron(A_REVERSE);
    mvhline(0, 0, ' ', COLS);
    snprintf(line, sizeof line, " rheaper %s  pid %d  [%s]  %s%s%s", m->following ? "live" : "view",
             m->pid, m->state, m->title[0] ? m->title : m->exe, m->title[0] ? "  " : "",
             m->title[0] ? m->exe : "");
    rh_put(0, 0, COLS, line);
    attroff(A_REVERSE);
    snprintf(line, sizeof line,
             " live %s in %lld blocks   peak %s   allocated %s in %lld   freed %s in %lld   "
             "time %.1f s",
             rh_hb(m->live_bytes, a, sizeof a), (long long)m->live_blocks,
             rh_hb(m->peak_bytes, b, sizeof b), rh_hb(m->alloc_bytes, c, sizeof c),
             (long long)m->alloc_blocks, rh_hb(m->freed_bytes, d, sizeof d),
             (long long)m->freed_blocks, (double)m->duration_ns / 1e9);
    rh_put(1, 0, COLS, line);
    static const char *const names[] = {"", "1 CPU", "2 Heap", "3 Chart", "4 Threads"};
    int x = 1;
    for (int v = 1; v <= 4; v++) {
        if (v == u->view)
            attron(A_REVERSE | A_BOLD);
        rh_put(2, x, COLS - x, names[v]);
        if (v == u->view)
            attroff(A_REVERSE | A_BOLD);
        x += (int)strlen(names[v]) + 2;
    }
    line[0] = 0;
    if (rh_nsorts(u->view) > 1)
        snprintf(line, sizeof line, " sort: %s", rh_sort_name(u->view, u->sort[u->view]));
    if (u->have_re && (u->view == RH_V_HEAP || u->view == RH_V_CPU))
        snprintf(line + strlen(line), sizeof line - strlen(line), "  filter: /%s/", u->re_text);
    if (u->paused)
        snprintf(line + strlen(line), sizeof line - strlen(line), "  PAUSED");
    rh_put(2, x + 1, COLS - x - 1, line);
}

static void rh_draw_footer(struct rh_ui *u)
{
    const char *help = "j/k move  h/l pan  +/- zoom  Tab/1-4 view  m heap/CPU  c chart  s sort  "
                       "n names  / filter  p pause  q quit";
    char line[512];
    if (u->msg[0])
        snprintf(line, sizeof line, " %s", u->msg);
    else if (u->m->following && u->m->ended)
        snprintf(line, sizeof line, " The program has ended: its final state is shown.  q quits");
    else
        snprintf(line, sizeof line, " %s", help);
    attron(A_REVERSE);
    mvhline(LINES - 1, 0, ' ', COLS);
    rh_put(LINES - 1, 0, COLS, line);
    attroff(A_REVERSE);
}

/* Keeps the selection of the current view inside [0, n) and visible in h
 * rows. */
static void rh_clamp(struct rh_ui *u, size_t n, int h)
{
    int v = u->view;
    if (u->sel[v] >= (int)n)
        u->sel[v] = (int)n - 1;
    if (u->sel[v] < 0)
        u->sel[v] = 0;
    if (h < 1)
        h = 1;
    if (u->top[v] > u->sel[v])
        u->top[v] = u->sel[v];
    if (u->sel[v] >= u->top[v] + h)
        u->top[v] = u->sel[v] - h + 1;
    if (u->top[v] < 0)
        u->top[v] = 0;
}

/* The heap view's columns: six figures, the trend and the call site. */
static const struct {
    const char *name;
    int w;
} rh_heap_cols[] = {{"LIVE", 10},      {"BLOCKS", 8}, {"PEAK", 10},
                    {"ALLOCATED", 10}, {"COUNT", 8},  {"FREED", 10}};
enum { RH_NCOLS = 6, RH_TREND_MAX = 32, RH_TREND_MIN = 12 };

/* The figure column of each heap sort (rh_heap_sorts); -1: by name. */
static const int rh_sort_col[] = {0, 2, 3, 4, 5, -1};

/* Fits the heap view's columns to the terminal's width so that the call
 * sites' names (the widest of the n sites as shown, names[i]) get the room
 * first: the trend column goes when no site has a trend, narrows from
 * RH_TREND_MAX to RH_TREND_MIN, then FREED, COUNT, ALLOCATED, PEAK and BLOCKS
 * go, in that order, then the trend; LIVE and the column the view is sorted
 * by (sortcol, -1: none) stay. Only then are names cut. show[i]: figure
 * column i is drawn. Returns the trend's width (0: none). */
static int rh_heap_layout(const struct rh_lv_site **v, char *const *names, size_t n, int sortcol,
                          int show[RH_NCOLS])
{
    int need = 0, trend = 0;
    for (size_t i = 0; i < n; i++) {
        int l = rh_cols(names[i]);
        if (l > need)
            need = l;
        if (v[i]->ntrend > 0)
            trend = 1;
    }
    int tw = trend ? RH_TREND_MAX : 0;
    for (int i = 0; i < RH_NCOLS; i++)
        show[i] = 1;
    static const int drop[] = {5, 4, 3, 2, 1}; /* FREED, COUNT, ALLOCATED, PEAK, BLOCKS */
    enum { NDROP = sizeof drop / sizeof drop[0] };
    int ndrop = 0;
    for (;;) {
        int width = 1 + (tw ? tw + 2 : 0) + 2 + need;
        for (int i = 0; i < RH_NCOLS; i++)
            width += show[i] ? rh_heap_cols[i].w + 1 : 0;
        int over = width - COLS;
        if (over <= 0)
            break;
        while (ndrop < NDROP && drop[ndrop] == sortcol)
            ndrop++;
        if (tw > RH_TREND_MIN)
            tw = tw - over > RH_TREND_MIN ? tw - over : RH_TREND_MIN;
        else if (ndrop < NDROP)
            show[drop[ndrop++]] = 0;
        else if (tw)
            tw = 0;
        else
            break; /* names are cut */
    }
    return tw;
}

/* The names of the n sites of v as rows show them (rh_shown), as one
 * malloc'd array of malloc'd strings (NULL on out of memory). */
static char **rh_names_of(const struct rh_ui *u, const struct rh_lv_site **v, size_t n)
{
    char **names = calloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; names && i < n; i++) {
        char buf[2048];
        if (!(names[i] = strdup(rh_shown(u, v[i], buf, sizeof buf)))) {
            for (size_t j = 0; j < i; j++)
                free(names[j]);
            free(names);
            return NULL;
        }
    }
    return names;
}

static void rh_names_free(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

static void rh_draw_heap(struct rh_ui *u)
{
    size_t n;
    const struct rh_lv_site **v = rh_sites(u, 0, &n);
    char **names = v ? rh_names_of(u, v, n) : NULL;
    if (!names)
        n = 0;
    int show[RH_NCOLS];
    int tw = rh_heap_layout(v, names, n, rh_sort_col[u->sort[RH_V_HEAP]], show);
    char line[2048], a[32];
    size_t len = 0;
    attron(A_BOLD);
    len += (size_t)snprintf(line, sizeof line, " ");
    for (int i = 0; i < RH_NCOLS; i++)
        if (show[i])
            len += (size_t)snprintf(line + len, sizeof line - len, "%*s ", rh_heap_cols[i].w,
                                    rh_heap_cols[i].name);
    if (tw)
        snprintf(line + len, sizeof line - len, " %-*s  CALL SITE", tw, "TREND");
    else
        snprintf(line + len, sizeof line - len, " CALL SITE");
    rh_put(3, 0, COLS, line);
    attroff(A_BOLD);
    int y0 = 4;
    if (!n) {
        rh_put(y0, 1, COLS - 1,
               u->have_re ? "no call site matches the filter" : "no allocations yet");
        rh_names_free(names, n);
        free(v);
        return;
    }
    /* the detail of the selected site: its full name and figures */
    int sel =
        u->sel[RH_V_HEAP] < (int)n ? (u->sel[RH_V_HEAP] > 0 ? u->sel[RH_V_HEAP] : 0) : (int)n - 1;
    char figures[256];
    snprintf(figures, sizeof figures,
             "%lld blocks allocated, %lld freed, %lld live, %s at the peak",
             (long long)v[sel]->alloc_blocks, (long long)v[sel]->freed_blocks,
             (long long)v[sel]->live_blocks, rh_hb(v[sel]->peak_bytes, a, sizeof a));
    struct rh_detail detail;
    rh_detail_init(&detail, v[sel]->label, figures);
    int h = LINES - y0 - 1 - detail.lines;
    rh_clamp(u, n, h);
    for (int r = 0; r < h && u->top[RH_V_HEAP] + r < (int)n; r++) {
        const struct rh_lv_site *s = v[u->top[RH_V_HEAP] + r];
        int selected = u->top[RH_V_HEAP] + r == u->sel[RH_V_HEAP];
        if (selected)
            attron(A_REVERSE);
        mvhline(y0 + r, 0, ' ', COLS);
        const int64_t fig[RH_NCOLS] = {s->live_bytes,  s->live_blocks,  s->peak_bytes,
                                       s->alloc_bytes, s->alloc_blocks, s->freed_bytes};
        len = (size_t)snprintf(line, sizeof line, " ");
        for (int i = 0; i < RH_NCOLS; i++) {
            if (!show[i])
                continue;
            if (i == 1 || i == 4) /* block counts */
                len += (size_t)snprintf(line + len, sizeof line - len, "%*lld ", rh_heap_cols[i].w,
                                        (long long)fig[i]);
            else
                len += (size_t)snprintf(line + len, sizeof line - len, "%*s ", rh_heap_cols[i].w,
                                        rh_hb(fig[i], a, sizeof a));
        }
        rh_put(y0 + r, 0, COLS, line);
        int x = (int)len + 1;
        if (tw) {
            if (x + tw <= COLS)
                rh_spark(u, y0 + r, x, tw, s->trend + RH_LV_TREND - s->ntrend, s->ntrend);
            x += tw + 2;
        }
        rh_put(y0 + r, x, COLS - x, names[u->top[RH_V_HEAP] + r]);
        if (selected)
            attroff(A_REVERSE);
    }
    rh_detail_draw(&detail);
    rh_names_free(names, n);
    free(v);
}

static void rh_draw_cpu(struct rh_ui *u)
{
    if (!u->m->cpu_total) {
        rh_put(4, 1, COLS - 1, "no CPU samples in this profile");
        rh_put(5, 1, COLS - 1, "(record with RHEAPER_CPU_HZ=99 to sample the CPU beside the heap)");
        return;
    }
    size_t n;
    const struct rh_lv_site **v = rh_sites(u, 1, &n);
    int y0 = 4;
    char line[2048];
    attron(A_BOLD);
    snprintf(line, sizeof line, " %10s %7s  %s", "SAMPLES", "SHARE", "FUNCTION");
    rh_put(3, 0, COLS, line);
    attroff(A_BOLD);
    if (!v || !n) {
        rh_put(y0, 1, COLS - 1, "no function matches the filter");
        free(v);
        return;
    }
    int sel =
        u->sel[RH_V_CPU] < (int)n ? (u->sel[RH_V_CPU] > 0 ? u->sel[RH_V_CPU] : 0) : (int)n - 1;
    char figures[128];
    snprintf(figures, sizeof figures, "%lld samples, %.1f%%", (long long)v[sel]->cpu_samples,
             100.0 * (double)v[sel]->cpu_samples / (double)u->m->cpu_total);
    struct rh_detail detail;
    rh_detail_init(&detail, v[sel]->label, figures);
    int h = LINES - y0 - 1 - detail.lines;
    rh_clamp(u, n, h);
    for (int r = 0; r < h && u->top[RH_V_CPU] + r < (int)n; r++) {
        const struct rh_lv_site *s = v[u->top[RH_V_CPU] + r];
        int selected = u->top[RH_V_CPU] + r == u->sel[RH_V_CPU];
        if (selected)
            attron(A_REVERSE);
        mvhline(y0 + r, 0, ' ', COLS);
        char name[2048];
        snprintf(line, sizeof line, " %10lld %6.1f%%  %s", (long long)s->cpu_samples,
                 100.0 * (double)s->cpu_samples / (double)u->m->cpu_total,
                 rh_shown(u, s, name, sizeof name));
        rh_put(y0 + r, 0, COLS, line);
        if (selected)
            attroff(A_REVERSE);
    }
    rh_detail_draw(&detail);
    free(v);
}

static void rh_draw_threads(struct rh_ui *u)
{
    const struct rh_lv_model *m = u->m;
    const struct rh_lv_thread **v = malloc((m->nthreads ? m->nthreads : 1) * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < m->nthreads; i++)
        v[i] = &m->threads[i];
    rh_sort_key = u->sort[RH_V_THREADS];
    qsort(v, m->nthreads, sizeof *v, rh_thread_cmp);
    int y0 = 4, h = LINES - y0 - 2;
    char line[2048], a[32], b[32], c[32], d[32];
    attron(A_BOLD);
    snprintf(line, sizeof line, " %4s %8s %-16s %10s %8s %10s %8s %10s %10s %8s %8s", "ID", "TID",
             "NAME", "ALLOCATED", "COUNT", "FREED", "COUNT", "BY OTHERS", "LIVE", "BLOCKS", "CPU");
    rh_put(3, 0, COLS, line);
    attroff(A_BOLD);
    rh_clamp(u, m->nthreads, h);
    for (int r = 0; r < h && u->top[RH_V_THREADS] + r < (int)m->nthreads; r++) {
        const struct rh_lv_thread *t = v[u->top[RH_V_THREADS] + r];
        int selected = u->top[RH_V_THREADS] + r == u->sel[RH_V_THREADS];
        if (selected)
            attron(A_REVERSE);
        mvhline(y0 + r, 0, ' ', COLS);
        snprintf(line, sizeof line, " %4u %8u %-16s %10s %8lld %10s %8lld %10s %10s %8lld %8lld",
                 t->id, t->tid, t->name[0] ? t->name : "-", rh_hb(t->alloc_bytes, a, sizeof a),
                 (long long)t->alloc_blocks, rh_hb(t->freed_bytes, b, sizeof b),
                 (long long)t->freed_blocks, rh_hb(t->others_bytes, c, sizeof c),
                 rh_hb(t->live_bytes, d, sizeof d), (long long)t->live_blocks,
                 (long long)t->cpu_samples);
        rh_put(y0 + r, 0, COLS, line);
        if (selected)
            attroff(A_REVERSE);
    }
    free(v);
}

/* The chart's window [*a, *b] in ns, from zoom and pan. */
static void rh_window(struct rh_ui *u, int64_t *a, int64_t *b)
{
    const struct rh_lv_model *m = u->m;
    int64_t t0 = m->ntl ? m->tl[0].t : 0, t1 = m->ntl ? m->tl[m->ntl - 1].t : 0;
    if (t1 < m->duration_ns)
        t1 = m->duration_ns;
    if (t1 <= t0)
        t1 = t0 + 1;
    int64_t w = (int64_t)((double)(t1 - t0) / u->zoom);
    if (w < 1)
        w = 1;
    int64_t end = u->win_end < 0 ? t1 : u->win_end;
    if (end > t1)
        end = t1;
    if (end - w < t0)
        end = t0 + w;
    *a = end - w;
    *b = end;
}

/* Time t (ns) as an axis label precise enough for a window of w ns. */
static void rh_fmt_time(char *buf, size_t n, int64_t t, int64_t w)
{
    if (w >= 10000000000)
        snprintf(buf, n, "%.1f s", (double)t / 1e9);
    else if (w >= 100000000)
        snprintf(buf, n, "%.3f s", (double)t / 1e9);
    else
        snprintf(buf, n, "%.3f ms", (double)t / 1e6);
}

static void rh_draw_chart(struct rh_ui *u)
{
    const struct rh_lv_model *m = u->m;
    int lx = 11, y0 = 4, h = LINES - y0 - 4, w = COLS - lx - 2;
    if (h < 2 || w < 4) {
        rh_put(y0, 1, COLS - 1, "the terminal is too small for the chart");
        return;
    }
    if (!m->ntl) {
        rh_put(y0, 1, COLS - 1, "no events yet");
        return;
    }
    int64_t a, b;
    rh_window(u, &a, &b);
    int64_t *col = calloc((size_t)w, sizeof *col);
    if (!col)
        return;
    /* each column: the highest point inside it, else the value carried from
     * the last point before it (the heap stays as it was between events) */
    size_t i = 0;
    int64_t carry = 0, mx = 0;
    while (i < m->ntl && m->tl[i].t < a)
        carry = m->tl[i++].bytes;
    for (int c = 0; c < w; c++) {
        int64_t ce = a + (int64_t)((double)(b - a) * (c + 1) / w);
        int64_t v = -1;
        while (i < m->ntl && m->tl[i].t <= ce) {
            if (m->tl[i].bytes > v)
                v = m->tl[i].bytes;
            carry = m->tl[i++].bytes;
        }
        col[c] = v >= 0 ? v : carry;
        if (col[c] > mx)
            mx = col[c];
    }
    /* the process's RSS (memory samples), each column's highest, carried
     * between samples like the heap; -1 before the first */
    int64_t *rcol = m->nrss ? calloc((size_t)w, sizeof *rcol) : NULL;
    if (rcol) {
        size_t j = 0;
        int64_t rc = -1;
        while (j < m->nrss && m->rss[j].t < a)
            rc = m->rss[j++].bytes;
        for (int c = 0; c < w; c++) {
            int64_t ce = a + (int64_t)((double)(b - a) * (c + 1) / w), v = -1;
            while (j < m->nrss && m->rss[j].t <= ce) {
                if (m->rss[j].bytes > v)
                    v = m->rss[j].bytes;
                rc = m->rss[j++].bytes;
            }
            rcol[c] = v >= 0 ? v : rc;
            if (rcol[c] > mx)
                mx = rcol[c];
        }
    }
    char s[64], t[64];
    snprintf(s, sizeof s, "%s", rh_hb(mx, t, sizeof t));
    rh_put(y0, 0, lx - 1, s);
    rh_put(y0 + h - 1, 0, lx - 1, "0");
    for (int r = 0; r < h; r++)
        mvaddch(y0 + r, lx - 1, '|');
    for (int c = 0; c < w; c++) {
        int bar = mx > 0 ? (int)((col[c] * h + mx - 1) / mx) : 0;
        for (int r = 0; r < bar && r < h; r++)
            mvaddch(y0 + h - 1 - r, lx + c, '#');
        if (rcol && rcol[c] >= 0 && mx > 0) { /* RSS: a '-' at its level */
            int r = (int)((rcol[c] * h + mx - 1) / mx);
            if (r >= 1 && r <= h)
                mvaddch(y0 + h - r, lx + c, r > bar ? '-' : '=');
        }
    }
    mvhline(y0 + h, lx - 1, '-', w + 1);
    char l[64], rr[64], line[256];
    rh_fmt_time(l, sizeof l, a, b - a);
    rh_fmt_time(rr, sizeof rr, b, b - a);
    rh_put(y0 + h + 1, lx - 1, COLS - lx, l);
    rh_put(y0 + h + 1, COLS - (int)strlen(rr) - 1, (int)strlen(rr), rr);
    char rs[96] = "";
    if (m->nrss) { /* the last RSS sample and the share of it the heap explained then */
        char r1[32];
        int64_t last = m->rss[m->nrss - 1].bytes;
        snprintf(rs, sizeof rs, "   heap #, RSS - %s (heap %.0f%% of it)",
                 rh_hb(last, r1, sizeof r1),
                 last > 0 ? 100.0 * (double)m->rss_heap / (double)last : 0.0);
    }
    snprintf(line, sizeof line, " total live heap over time   zoom %gx   peak %s at %.2f s%s%s",
             u->zoom, rh_hb(m->peak_bytes, t, sizeof t), (double)m->peak_t / 1e9, rs,
             u->win_end < 0 && m->following ? "   (following the end)" : "");
    rh_put(3, 0, COLS, line);
    free(col);
    free(rcol);
}

static void rh_draw(struct rh_ui *u)
{
    erase();
    if (LINES < 8 || COLS < 30) {
        rh_put(0, 0, COLS, "rheaper: the terminal is too small");
        refresh();
        return;
    }
    rh_draw_header(u);
    switch (u->view) {
    case RH_V_CPU:
        rh_draw_cpu(u);
        break;
    case RH_V_HEAP:
        rh_draw_heap(u);
        break;
    case RH_V_CHART:
        rh_draw_chart(u);
        break;
    default:
        rh_draw_threads(u);
        break;
    }
    rh_draw_footer(u);
    refresh();
}

/* ---- keys -------------------------------------------------------------------- */

static void rh_prompt_filter(struct rh_ui *u)
{
    char buf[128] = "";
    attron(A_REVERSE);
    mvhline(LINES - 1, 0, ' ', COLS);
    rh_put(LINES - 1, 0, COLS, " function regex (empty clears): /");
    attroff(A_REVERSE);
    echo();
    curs_set(1);
    timeout(-1);
    getnstr(buf, sizeof buf - 1);
    noecho();
    curs_set(0);
    if (u->have_re) {
        rh_re_free(u->re);
        u->have_re = 0;
        u->filter_changed = 1;
    }
    u->re_text[0] = 0;
    u->msg[0] = 0;
    if (!buf[0])
        return;
    /* the one parser of filters (rh_query_params.c): the same bounds and the
     * same meaning as --function and the URL's function_regex */
    struct rh_qfilter qf;
    char why[200];
    rh_qfilter_init(&qf);
    if (rh_qfilter_param(&qf, "function_regex", buf, why, sizeof why) < 0) {
        snprintf(u->msg, sizeof u->msg, "bad filter: %.200s", why);
        return;
    }
    char e[128];
    u->re = rh_re_compile(buf, e, sizeof e);
    if (!u->re) {
        snprintf(u->msg, sizeof u->msg, "bad regex /%s/: %s", buf, e);
        return;
    }
    u->have_re = 1;
    u->filter_changed = 1;
    snprintf(u->re_text, sizeof u->re_text, "%s", buf);
    u->sel[RH_V_HEAP] = u->top[RH_V_HEAP] = u->sel[RH_V_CPU] = u->top[RH_V_CPU] = 0;
}

/* Pans the chart by `dir` quarter windows. */
static void rh_pan(struct rh_ui *u, int dir)
{
    int64_t a, b;
    rh_window(u, &a, &b);
    const struct rh_lv_model *m = u->m;
    int64_t t1 = m->ntl ? m->tl[m->ntl - 1].t : 0;
    if (t1 < m->duration_ns)
        t1 = m->duration_ns;
    int64_t end = b + dir * ((b - a) / 4 > 0 ? (b - a) / 4 : 1);
    u->win_end = end >= t1 ? -1 : end;
}

/* Handles key k. Returns 1 to quit. */
static int rh_key(struct rh_ui *u, int k)
{
    int v = u->view;
    u->msg[0] = 0;
    switch (k) {
    case 'q':
    case 'Q':
        return 1;
    case '1':
    case '2':
    case '3':
    case '4':
        u->view = k - '0';
        break;
    case '\t':
        u->view = u->view % 4 + 1;
        break;
    case 'm': /* the view mode: heap <-> CPU */
        u->view = u->view == RH_V_HEAP ? RH_V_CPU : RH_V_HEAP;
        break;
    case 'c': /* the chart, and back to the view it was opened from */
    case '\n':
    case KEY_ENTER:
        if (u->view == RH_V_CHART) {
            u->view = u->back ? u->back : RH_V_HEAP;
        } else {
            u->back = u->view;
            u->view = RH_V_CHART;
        }
        break;
    case KEY_BTAB:
        u->view = (u->view + 2) % 4 + 1;
        break;
    case 'j':
    case KEY_DOWN:
        u->sel[v]++;
        break;
    case 'k':
    case KEY_UP:
        u->sel[v]--;
        break;
    case KEY_NPAGE:
        u->sel[v] += LINES - 6;
        break;
    case KEY_PPAGE:
        u->sel[v] -= LINES - 6;
        break;
    case 'g':
    case KEY_HOME:
        u->sel[v] = 0;
        break;
    case 'h':
    case KEY_LEFT:
        rh_pan(u, -1);
        break;
    case 'l':
    case KEY_RIGHT:
        rh_pan(u, 1);
        break;
    case '+':
    case '=':
        if (u->zoom < 1e6)
            u->zoom *= 2;
        break;
    case '-':
    case '_':
        u->zoom = u->zoom > 1 ? u->zoom / 2 : 1;
        if (u->zoom == 1)
            u->win_end = -1;
        break;
    case 's':
        if (rh_nsorts(v) > 1)
            u->sort[v] = (u->sort[v] + 1) % rh_nsorts(v);
        break;
    case '/':
        rh_prompt_filter(u);
        break;
    case 'p':
        u->paused = !u->paused;
        break;
    case 'n': /* names: short (templates and parameters elided) or in full */
        u->full_names = !u->full_names;
        break;
    default:
        break;
    }
    if (u->sel[v] < 0)
        u->sel[v] = 0;
    return 0;
}

static double rh_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int rh_lv_ui_run(struct rh_lv_model *m, rh_lv_refresh_fn refresh_fn, void *ctx, int follow)
{
    struct rh_ui u;
    memset(&u, 0, sizeof u);
    u.m = m;
    u.view = RH_V_HEAP;
    u.zoom = 1;
    u.win_end = -1;
    setlocale(LC_ALL, "");
    u.utf8 = rh_utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    /* a finished profile opens by the bytes each site held at the peak (then
     * what it leaked): its live bytes at the end are mostly 0 */
    if (!m->following || m->ended)
        u.sort[RH_V_HEAP] = 1;
    if (!initscr()) {
        fprintf(stderr, "rheaper: cannot start the terminal UI (TERM=%s)\n",
                getenv("TERM") ? getenv("TERM") : "");
        return 1;
    }
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    int rc = 0;
    double next = 0;
    rh_draw(&u);
    for (;;) {
        timeout(100);
        int k = getch();
        if (k == 'q' || k == 'Q')
            break;
        if (k != ERR && k != KEY_RESIZE && rh_key(&u, k))
            break;
        double now = rh_now();
        const char *re = u.have_re ? u.re_text : NULL;
        int r = 0;
        if (refresh_fn && u.filter_changed) {
            u.filter_changed = 0;
            r = refresh_fn(ctx, m, re, 1);
        } else if (refresh_fn && follow && !u.paused && now >= next) {
            next = now + 0.5;
            r = refresh_fn(ctx, m, re, 0);
        }
        if (r < 0) {
            rc = 1;
            break;
        }
        rh_draw(&u);
    }
    endwin();
    if (u.have_re)
        rh_re_free(u.re);
    return rc;
}
