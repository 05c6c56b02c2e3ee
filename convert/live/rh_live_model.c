/* rh_live_model.c: the model the terminal UI draws, and its JSON form.
 *
 * Both sources (a followed rip file, a saved database) fill the same struct
 * rh_lv_model; the UI and `rheaper live --once` only read it. The JSON
 * snapshot holds every figure the UI shows: totals, call sites sorted by live
 * bytes (then by name), the CPU functions apart sorted by samples, threads,
 * and the heap over time; the text snapshot is the two tables with a header
 * each. One ordering (rh_lv_sites_sorted) serves both.
 */
#include <stdlib.h>
#include <string.h>

#include "rh_util.h"
#include "rh_live.h"
#include "rh_names.h"
#include "rh_safefile.h"
#include "rh_query.h"

void rh_lv_model_clear(struct rh_lv_model *m)
{
    for (size_t i = 0; i < m->nsites; i++) {
        free(m->sites[i].label);
        free(m->sites[i].func);
        free(m->sites[i].short_label);
    }
    free(m->sites);
    free(m->threads);
    free(m->tl);
    free(m->rss);
    m->sites = NULL;
    m->threads = NULL;
    m->tl = NULL;
    m->rss = NULL;
    m->nsites = m->capsites = m->nthreads = m->capthreads = m->ntl = m->captl = 0;
    m->nrss = m->caprss = 0;
    m->rss_heap = 0;
    m->title[0] = 0;
}

struct rh_lv_site *rh_lv_site_add(struct rh_lv_model *m, const char *label, const char *func)
{
    if (rh_grow(&m->sites, &m->capsites, m->nsites + 1, sizeof *m->sites))
        return NULL;
    struct rh_lv_site *s = &m->sites[m->nsites];
    memset(s, 0, sizeof *s);
    s->label = strdup(label);
    s->func = strdup(func);
    /* the short form: the function's (templates and parameters elided),
     * then the rest of the label (its place) as it is */
    size_t fl = strlen(func), ll = strlen(label);
    /* a label cut inside the function's name (a source's buffer) is a
     * prefix of it: the short form is the function's alone */
    int whole = !strncmp(label, func, fl), cut = !whole && !strncmp(func, label, ll);
    if ((whole || cut) && (s->short_label = malloc(2 * fl + ll + 8))) {
        /* "<x>" becomes "<…>": at most 2 bytes more per 3 of func */
        size_t k = rh_name_short(func, s->short_label, 2 * fl + 8);
        memcpy(s->short_label + k, whole ? label + fl : "", whole ? ll - fl + 1 : 1);
    } else {
        s->short_label = strdup(label);
    }
    if (!s->label || !s->func || !s->short_label) {
        free(s->label);
        free(s->func);
        free(s->short_label);
        return NULL;
    }
    m->nsites++;
    return s;
}

int rh_lv_point_add(struct rh_lv_model *m, int64_t t, int64_t bytes)
{
    if (m->ntl && t <= m->tl[m->ntl - 1].t) {
        if (bytes > m->tl[m->ntl - 1].bytes)
            m->tl[m->ntl - 1].bytes = bytes;
        return 0;
    }
    if (rh_grow(&m->tl, &m->captl, m->ntl + 1, sizeof *m->tl))
        return -1;
    m->tl[m->ntl].t = t;
    m->tl[m->ntl].bytes = bytes;
    m->ntl++;
    return 0;
}

int rh_lv_rss_add(struct rh_lv_model *m, int64_t t, int64_t bytes)
{
    if (rh_grow(&m->rss, &m->caprss, m->nrss + 1, sizeof *m->rss))
        return -1;
    m->rss[m->nrss].t = t;
    m->rss[m->nrss].bytes = bytes;
    m->nrss++;
    return 0;
}

static int rh_sort_by; /* qsort has no context argument: enum rh_lv_sort */

static int rh_cmp64(int64_t a, int64_t b)
{
    return a > b ? -1 : a < b;
}

static int rh_site_cmp(const void *pa, const void *pb)
{
    const struct rh_lv_site *a = *(const struct rh_lv_site *const *)pa;
    const struct rh_lv_site *b = *(const struct rh_lv_site *const *)pb;
    int c = 0;
    switch (rh_sort_by) {
    case RH_LV_BY_LIVE:
        c = rh_cmp64(a->live_bytes, b->live_bytes);
        break;
    case RH_LV_BY_PEAK: /* then the leaked: a site that stays after the peak */
        c = rh_cmp64(a->peak_bytes, b->peak_bytes);
        if (!c)
            c = rh_cmp64(a->live_bytes, b->live_bytes);
        break;
    case RH_LV_BY_ALLOCATED:
        c = rh_cmp64(a->alloc_bytes, b->alloc_bytes);
        break;
    case RH_LV_BY_COUNT:
        c = rh_cmp64(a->alloc_blocks, b->alloc_blocks);
        break;
    case RH_LV_BY_FREED:
        c = rh_cmp64(a->freed_bytes, b->freed_bytes);
        break;
    case RH_LV_BY_SAMPLES:
        c = rh_cmp64(a->cpu_samples, b->cpu_samples);
        break;
    default: /* RH_LV_BY_NAME */
        break;
    }
    return c ? c : strcmp(a->label, b->label);
}

const struct rh_lv_site **rh_lv_sites_sorted(const struct rh_lv_model *m, int cpu,
                                             enum rh_lv_sort by, size_t *n)
{
    const struct rh_lv_site **v = malloc((m->nsites ? m->nsites : 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < m->nsites; i++)
        if (cpu ? m->sites[i].cpu_samples > 0 : m->sites[i].alloc_blocks > 0)
            v[(*n)++] = &m->sites[i];
    rh_sort_by = by;
    qsort(v, *n, sizeof *v, rh_site_cmp);
    return v;
}

void rh_lv_model_json(const struct rh_lv_model *m, FILE *out)
{
    fprintf(out, "{\"source\": ");
    rh_json_string(out, m->source);
    fprintf(out, ", \"program\": ");
    rh_json_string(out, m->exe);
    fprintf(out, ", \"title\": ");
    rh_json_string(out, m->title);
    fprintf(out, ", \"pid\": %d, \"state\": ", m->pid);
    rh_json_string(out, m->state);
    fprintf(out,
            ", \"ended\": %s, \"duration_ns\": %lld, \"live_bytes\": %lld, \"live_blocks\": %lld,"
            " \"peak_bytes\": %lld, \"peak_time_ns\": %lld, \"alloc_blocks\": %lld,"
            " \"alloc_bytes\": %lld, \"freed_blocks\": %lld, \"freed_bytes\": %lld,"
            " \"unknown_frees\": %llu, \"events\": %llu, \"cpu_samples\": %lld,"
            " \"skipped_wrappers\": ",
            m->ended ? "true" : "false", (long long)m->duration_ns, (long long)m->live_bytes,
            (long long)m->live_blocks, (long long)m->peak_bytes, (long long)m->peak_t,
            (long long)m->alloc_blocks, (long long)m->alloc_bytes, (long long)m->freed_blocks,
            (long long)m->freed_bytes, (unsigned long long)m->unknown_frees,
            (unsigned long long)m->events, (long long)m->cpu_total);
    rh_json_string(out, m->skipped);
    fprintf(out, ",\n \"sites\": [");
    size_t n;
    const struct rh_lv_site **order = rh_lv_sites_sorted(m, 0, RH_LV_BY_LIVE, &n);
    for (size_t i = 0; order && i < n; i++) {
        const struct rh_lv_site *s = order[i];
        fprintf(out, "%s\n  {\"site\": ", i ? "," : "");
        rh_json_string(out, s->label);
        fprintf(out, ", \"function\": ");
        rh_json_string(out, s->func);
        fprintf(out,
                ", \"live_bytes\": %lld, \"live_blocks\": %lld, \"peak_bytes\": %lld,"
                " \"alloc_bytes\": %lld, \"alloc_blocks\": %lld, \"freed_bytes\": %lld,"
                " \"freed_blocks\": %lld, \"trend\": [",
                (long long)s->live_bytes, (long long)s->live_blocks, (long long)s->peak_bytes,
                (long long)s->alloc_bytes, (long long)s->alloc_blocks, (long long)s->freed_bytes,
                (long long)s->freed_blocks);
        for (int k = RH_LV_TREND - s->ntrend; k < RH_LV_TREND; k++)
            fprintf(out, "%s%lld", k > RH_LV_TREND - s->ntrend ? ", " : "", (long long)s->trend[k]);
        fprintf(out, "]}");
    }
    free(order);
    fprintf(out, "],\n \"cpu\": [");
    order = rh_lv_sites_sorted(m, 1, RH_LV_BY_SAMPLES, &n);
    for (size_t i = 0; order && i < n; i++) {
        fprintf(out, "%s\n  {\"function\": ", i ? "," : "");
        rh_json_string(out, order[i]->label);
        fprintf(out, ", \"samples\": %lld, \"share\": %.1f}", (long long)order[i]->cpu_samples,
                m->cpu_total > 0 ? 100.0 * (double)order[i]->cpu_samples / (double)m->cpu_total
                                 : 0.0);
    }
    free(order);
    fprintf(out, "],\n \"threads\": [");
    for (size_t i = 0; i < m->nthreads; i++) {
        const struct rh_lv_thread *t = &m->threads[i];
        fprintf(out, "%s\n  {\"thread\": %u, \"tid\": %u, \"name\": ", i ? "," : "", t->id, t->tid);
        rh_json_string(out, t->name);
        fprintf(out,
                ", \"alloc_blocks\": %lld, \"alloc_bytes\": %lld, \"freed_blocks\": %lld,"
                " \"freed_bytes\": %lld, \"freed_by_others_blocks\": %lld,"
                " \"freed_by_others_bytes\": %lld, \"live_blocks\": %lld, \"live_bytes\": %lld,"
                " \"cpu_samples\": %lld}",
                (long long)t->alloc_blocks, (long long)t->alloc_bytes, (long long)t->freed_blocks,
                (long long)t->freed_bytes, (long long)t->others_blocks, (long long)t->others_bytes,
                (long long)t->live_blocks, (long long)t->live_bytes, (long long)t->cpu_samples);
    }
    fprintf(out, "],\n \"timeline\": [");
    for (size_t i = 0; i < m->ntl; i++)
        fprintf(out, "%s[%lld, %lld]", i ? ", " : "", (long long)m->tl[i].t,
                (long long)m->tl[i].bytes);
    fprintf(out, "],\n \"rss\": [");
    for (size_t i = 0; i < m->nrss; i++)
        fprintf(out, "%s[%lld, %lld]", i ? ", " : "", (long long)m->rss[i].t,
                (long long)m->rss[i].bytes);
    fprintf(out, "]}\n");
}

void rh_lv_model_text(const struct rh_lv_model *m, FILE *out)
{
    char a[32], b[32], c[32], d[32];
    fprintf(out, "rheaper %s  pid %d  [%s]  %s%s%s  (%s)\n", m->following ? "live" : "view", m->pid,
            m->state, m->title[0] ? m->title : m->exe, m->title[0] ? "  " : "",
            m->title[0] ? m->exe : "", m->source);
    fprintf(out,
            "live %s in %lld blocks   peak %s at %.3f s   allocated %s in %lld   freed %s in %lld"
            "   time %.3f s\n",
            rh_human_bytes(m->live_bytes, a, sizeof a), (long long)m->live_blocks,
            rh_human_bytes(m->peak_bytes, b, sizeof b), (double)m->peak_t / 1e9,
            rh_human_bytes(m->alloc_bytes, c, sizeof c), (long long)m->alloc_blocks,
            rh_human_bytes(m->freed_bytes, d, sizeof d), (long long)m->freed_blocks,
            (double)m->duration_ns / 1e9);
    size_t n;
    const struct rh_lv_site **v = rh_lv_sites_sorted(m, 0, RH_LV_BY_LIVE, &n);
    fprintf(out, "\nheap: %zu call sites by live bytes (bytes and blocks)\n", v ? n : 0);
    fprintf(out, "%14s %10s %14s %10s %14s %10s  %s\n", "LIVE", "BLOCKS", "ALLOCATED", "COUNT",
            "FREED", "COUNT", "CALL SITE");
    for (size_t i = 0; v && i < n; i++)
        fprintf(out, "%14lld %10lld %14lld %10lld %14lld %10lld  %s\n", (long long)v[i]->live_bytes,
                (long long)v[i]->live_blocks, (long long)v[i]->alloc_bytes,
                (long long)v[i]->alloc_blocks, (long long)v[i]->freed_bytes,
                (long long)v[i]->freed_blocks, v[i]->label);
    free(v);
    v = rh_lv_sites_sorted(m, 1, RH_LV_BY_SAMPLES, &n);
    if (!m->cpu_total) {
        fprintf(out, "\ncpu: no CPU samples in this profile\n");
    } else {
        fprintf(out, "\ncpu: %lld samples, %zu functions by samples\n", (long long)m->cpu_total,
                v ? n : 0);
        fprintf(out, "%14s %7s  %s\n", "SAMPLES", "SHARE", "FUNCTION");
        for (size_t i = 0; v && i < n; i++)
            fprintf(out, "%14lld %6.1f%%  %s\n", (long long)v[i]->cpu_samples,
                    100.0 * (double)v[i]->cpu_samples / (double)m->cpu_total, v[i]->label);
    }
    free(v);
}

void rh_lv_proc_title(int pid, char *out, size_t n)
{
    char path[64], buf[256];
    out[0] = 0;
    if (pid <= 0 || n == 0)
        return;
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    ssize_t len = rh_safe_read_small(path, buf, sizeof buf, 0, 0, NULL, 0);
    size_t k = 0;
    for (ssize_t i = 0; i < len && k + 1 < n; i++)
        out[k++] = buf[i] == 0 ? ' ' : ((unsigned char)buf[i] < 32 || buf[i] == 127) ? '?' : buf[i];
    while (k && out[k - 1] == ' ')
        k--;
    out[k] = 0;
}
