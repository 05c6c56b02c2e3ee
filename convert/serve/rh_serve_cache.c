/* rh_serve_cache.c: a bounded cache of `rheaper serve`'s answers.
 *
 * The served databases are opened read-only and do not change while the
 * server runs, so the same question always gets the same answer: a dashboard
 * or eight clients asking the same thing need not compute it again. The key
 * is the request normalized: its path (the profile id is in it) and its
 * parameters sorted by name, then value. Only 200 answers are kept (an error,
 * a 503 past the time budget, is asked again). The cache holds at most
 * RH_CACHE_ENTRIES answers and RH_CACHE_BYTES bytes; the least recently used
 * goes first. One mutex guards it, held only to find, copy or insert one
 * entry, never while a query runs, so concurrent requests do not wait on each
 * other's queries. Two requests that miss at once both compute (no waiting
 * on a third); the second insert replaces nothing and is dropped.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rh_serve.h"

#define RH_CACHE_ENTRIES 256
#define RH_CACHE_BYTES (64u << 20)
#define RH_CACHE_MAX_ONE (16u << 20) /* a larger answer is not kept */

struct rh_cache_entry {
    char *key; /* NULL: free slot */
    char *body;
    size_t len;
    const char *type; /* static strings only */
    uint64_t used;    /* the tick of its last use */
};

static struct rh_cache_entry rh_cache[RH_CACHE_ENTRIES];
static size_t rh_cache_bytes;
static uint64_t rh_cache_tick;
static pthread_mutex_t rh_cache_mu = PTHREAD_MUTEX_INITIALIZER;

static int rh_pair_cmp(const void *a, const void *b)
{
    const char *const *x = a, *const *y = b;
    int c = strcmp(x[0], y[0]);
    return c ? c : strcmp(x[1] ? x[1] : "", y[1] ? y[1] : "");
}

char *rh_cache_key(const char *path, const struct rh_params *p)
{
    const char *pairs[RH_MAX_PARAMS][2];
    size_t len = strlen(path) + 2;
    for (int i = 0; i < p->n; i++) {
        pairs[i][0] = p->k[i];
        pairs[i][1] = p->v[i] ? p->v[i] : "";
        len += strlen(pairs[i][0]) + strlen(pairs[i][1]) + 2;
    }
    qsort(pairs, (size_t)p->n, sizeof pairs[0], rh_pair_cmp);
    char *k = malloc(len), *w = k;
    if (!k)
        return NULL;
    /* decoded names and values may hold & and =: separate them by \n and
     * \t, which a URL parameter of the API never needs */
    w = stpcpy(w, path);
    for (int i = 0; i < p->n; i++) {
        *w++ = '\n';
        w = stpcpy(w, pairs[i][0]);
        *w++ = '\t';
        w = stpcpy(w, pairs[i][1]);
    }
    *w = 0;
    return k;
}

static struct rh_cache_entry *rh_cache_find(const char *key)
{
    for (int i = 0; i < RH_CACHE_ENTRIES; i++)
        if (rh_cache[i].key && !strcmp(rh_cache[i].key, key))
            return &rh_cache[i];
    return NULL;
}

int rh_cache_get(const char *key, struct rh_resp *r)
{
    int hit = 0;
    pthread_mutex_lock(&rh_cache_mu);
    struct rh_cache_entry *e = rh_cache_find(key);
    if (e && (r->body = malloc(e->len ? e->len : 1))) {
        memcpy(r->body, e->body, e->len);
        r->len = e->len;
        r->type = e->type;
        r->status = 200;
        e->used = ++rh_cache_tick;
        hit = 1;
    }
    pthread_mutex_unlock(&rh_cache_mu);
    return hit;
}

static void rh_cache_drop(struct rh_cache_entry *e)
{
    rh_cache_bytes -= e->len + strlen(e->key);
    free(e->key);
    free(e->body);
    memset(e, 0, sizeof *e);
}

void rh_cache_put(const char *key, const struct rh_resp *r)
{
    if (r->status != 200 || !r->body || r->len > RH_CACHE_MAX_ONE)
        return;
    size_t need = r->len + strlen(key);
    char *k = strdup(key), *b = malloc(r->len ? r->len : 1);
    if (!k || !b) {
        free(k);
        free(b);
        return;
    }
    memcpy(b, r->body, r->len);
    pthread_mutex_lock(&rh_cache_mu);
    if (rh_cache_find(key)) { /* another thread answered it meanwhile */
        pthread_mutex_unlock(&rh_cache_mu);
        free(k);
        free(b);
        return;
    }
    /* evict the least recently used until a slot and the bytes are free */
    for (;;) {
        struct rh_cache_entry *lru = NULL, *free_slot = NULL;
        for (int i = 0; i < RH_CACHE_ENTRIES; i++) {
            if (!rh_cache[i].key)
                free_slot = free_slot ? free_slot : &rh_cache[i];
            else if (!lru || rh_cache[i].used < lru->used)
                lru = &rh_cache[i];
        }
        if (free_slot && rh_cache_bytes + need <= RH_CACHE_BYTES) {
            *free_slot = (struct rh_cache_entry){k, b, r->len, r->type, ++rh_cache_tick};
            rh_cache_bytes += need;
            break;
        }
        if (!lru) { /* cannot happen: need <= RH_CACHE_BYTES */
            free(k);
            free(b);
            break;
        }
        rh_cache_drop(lru);
    }
    pthread_mutex_unlock(&rh_cache_mu);
}

void rh_cache_clear(void)
{
    pthread_mutex_lock(&rh_cache_mu);
    for (int i = 0; i < RH_CACHE_ENTRIES; i++)
        if (rh_cache[i].key)
            rh_cache_drop(&rh_cache[i]);
    pthread_mutex_unlock(&rh_cache_mu);
}
