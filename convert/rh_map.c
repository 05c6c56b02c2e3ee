/* rh_map.c: the converter's small containers.
 *
 * A u64 -> u32 open-addressing hash map (stack ids and kernel tids to array
 * indexes) and the array-growth helper every growing table of the converter
 * uses. Nothing here prints; out-of-memory is returned to the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "rh_util.h"

#define RH_MAP_EMPTY UINT32_MAX

static inline size_t rh_map_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

uint32_t rh_map_get(const struct rh_map *m, uint64_t key)
{
    if (!m->cap)
        return RH_MAP_EMPTY;
    size_t mask = m->cap - 1;
    for (size_t i = rh_map_hash(key) & mask;; i = (i + 1) & mask) {
        if (m->vals[i] == RH_MAP_EMPTY)
            return RH_MAP_EMPTY;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

/* Places key/val into tables of capacity cap (which have room). */
static void rh_map_place(uint64_t *keys, uint32_t *vals, size_t cap, uint64_t key, uint32_t val)
{
    size_t mask = cap - 1;
    size_t i = rh_map_hash(key) & mask;
    while (vals[i] != RH_MAP_EMPTY && keys[i] != key)
        i = (i + 1) & mask;
    keys[i] = key;
    vals[i] = val;
}

int rh_map_put(struct rh_map *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 4 > m->cap * 3) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        uint64_t *keys = malloc(ncap * sizeof *keys);
        uint32_t *vals = malloc(ncap * sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return -1;
        }
        memset(vals, 0xff, ncap * sizeof *vals);
        for (size_t i = 0; i < m->cap; i++)
            if (m->vals[i] != RH_MAP_EMPTY)
                rh_map_place(keys, vals, ncap, m->keys[i], m->vals[i]);
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = ncap;
    }
    if (rh_map_get(m, key) == RH_MAP_EMPTY)
        m->n++;
    rh_map_place(m->keys, m->vals, m->cap, key, val);
    return 0;
}

void rh_map_free(struct rh_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

int rh_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    void **pp = arr;
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > (SIZE_MAX / 2) / elem)
            return -1;
        ncap *= 2;
    }
    void *p = realloc(*pp, ncap * elem);
    if (!p)
        return -1;
    *pp = p;
    *cap = ncap;
    return 0;
}
