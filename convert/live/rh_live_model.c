/* rh_live_model.c: the model the terminal UI draws, and its JSON form.
 *
 * Both sources (a followed rip file, a saved database) fill the same struct
 * rh_lv_model; the UI and `rheaper live --once --json` only read it. The JSON
 * snapshot holds every figure the UI shows: totals, call sites sorted by live
 * bytes (then by name), threads, and the heap over time.
 */
#include <stdlib.h>
#include <string.h>

#include "rh_convert.h"
#include "rh_live.h"
#include "rh_query.h"

void rh_lv_model_clear(struct rh_lv_model *m)
{
    for (size_t i = 0; i < m->nsites; i++) {
        free(m->sites[i].label);
        free(m->sites[i].func);
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
}

struct rh_lv_site *rh_lv_site_add(struct rh_lv_model *m, const char *label, const char *func)
{
    if (rh_grow(&m->sites, &m->capsites, m->nsites + 1, sizeof *m->sites))
        return NULL;
    struct rh_lv_site *s = &m->sites[m->nsites];
    memset(s, 0, sizeof *s);
    s->label = strdup(label);
    s->func = strdup(func);
    if (!s->label || !s->func) {
        free(s->label);
        free(s->func);
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


static int rh_site_cmp(const void *a, const void *b)
{
    const struct rh_lv_site *x = *(const struct rh_lv_site *const *)a;
    const struct rh_lv_site *y = *(const struct rh_lv_site *const *)b;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes > y->live_bytes ? -1 : 1;
    return strcmp(x->label, y->label);
}

void rh_lv_model_json(const struct rh_lv_model *m, FILE *out)
{
    fprintf(out, "{\"source\": ");
    rh_json_string(out, m->source);
    fprintf(out, ", \"program\": ");
    rh_json_string(out, m->exe);
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
    const struct rh_lv_site **order = malloc((m->nsites ? m->nsites : 1) * sizeof *order);
    for (size_t i = 0; order && i < m->nsites; i++)
        order[i] = &m->sites[i];
    if (order)
        qsort(order, m->nsites, sizeof *order, rh_site_cmp);
    for (size_t i = 0; order && i < m->nsites; i++) {
        const struct rh_lv_site *s = order[i];
        fprintf(out, "%s\n  {\"site\": ", i ? "," : "");
        rh_json_string(out, s->label);
        fprintf(out, ", \"function\": ");
        rh_json_string(out, s->func);
        fprintf(out,
                ", \"live_bytes\": %lld, \"live_blocks\": %lld, \"alloc_bytes\": %lld,"
                " \"alloc_blocks\": %lld, \"freed_bytes\": %lld, \"freed_blocks\": %lld,"
                " \"cpu_samples\": %lld, \"trend\": [",
                (long long)s->live_bytes, (long long)s->live_blocks, (long long)s->alloc_bytes,
                (long long)s->alloc_blocks, (long long)s->freed_bytes, (long long)s->freed_blocks,
                (long long)s->cpu_samples);
        for (int k = RH_LV_TREND - s->ntrend; k < RH_LV_TREND; k++)
            fprintf(out, "%s%lld", k > RH_LV_TREND - s->ntrend ? ", " : "", (long long)s->trend[k]);
        fprintf(out, "]}");
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
