/* webui_prog.c: a small server simulation the web UI's browser test records.
 *
 * Three worker threads each handle REQUESTS requests. A request allocates
 * its buffer and frees it (temporary), computes a checksum of its payload
 * (checksum_payload: the CPU-bound function), stores a 4 KiB answer in a
 * shared cache that keeps at most CACHE_MAX bytes (the oldest entry is freed
 * when full), and calls record_metrics, which leaks one 64-byte block every
 * LEAK_EVERY requests of its thread. Everything else is freed before exit.
 *
 * usage: webui_prog          the first run: the leak, an 8 MiB cache
 *        webui_prog fixed    the second run: no leak, the cache doubled
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 3
#define REQUESTS 6000
#define LEAK_EVERY 200
#define ENTRY 4096

static size_t cache_max = 8u << 20;
static int leak = 1;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static char **cache;
static size_t cache_n, cache_cap, cache_head;

/* Stores a copy of the answer; frees the oldest entry when full. */
__attribute__((noinline)) static void cache_store(const char *answer)
{
    char *e = malloc(ENTRY);
    memcpy(e, answer, ENTRY);
    pthread_mutex_lock(&cache_lock);
    if (cache_n < cache_cap) {
        cache[(cache_head + cache_n++) % cache_cap] = e;
    } else {
        free(cache[cache_head]);
        cache[cache_head] = e;
        cache_head = (cache_head + 1) % cache_cap;
    }
    pthread_mutex_unlock(&cache_lock);
}

/* The CPU-bound part of a request. */
__attribute__((noinline)) static unsigned checksum_payload(const unsigned char *p, size_t n)
{
    unsigned h = 2166136261u;
    for (int round = 0; round < 24; round++)
        for (size_t i = 0; i < n; i++)
            h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Keeps a metric of the request: the bug leaks it every LEAK_EVERY calls. */
__attribute__((noinline)) static void record_metrics(unsigned long *calls, unsigned sum)
{
    unsigned *m = malloc(64);
    m[0] = sum;
    if (++*calls % LEAK_EVERY == 0 && leak)
        __asm__ volatile("" : : "r"(m) : "memory"); /* lost: never freed */
    else
        free(m);
}

__attribute__((noinline)) static unsigned handle_request(unsigned long *calls, int i)
{
    unsigned char *buf = malloc(ENTRY);
    memset(buf, i & 0xff, ENTRY);
    unsigned sum = checksum_payload(buf, ENTRY);
    cache_store((const char *)buf);
    record_metrics(calls, sum);
    free(buf);
    return sum;
}

static void *worker(void *arg)
{
    unsigned long calls = 0;
    unsigned acc = 0;
    for (int i = 0; i < REQUESTS; i++)
        acc += handle_request(&calls, i);
    *(unsigned *)arg = acc;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "fixed")) {
        leak = 0;
        cache_max *= 2;
    }
    cache_cap = cache_max / ENTRY;
    cache = calloc(cache_cap, sizeof *cache);
    pthread_t t[THREADS];
    unsigned out[THREADS];
    for (int k = 0; k < THREADS; k++)
        pthread_create(&t[k], NULL, worker, &out[k]);
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    for (size_t k = 0; k < cache_n; k++)
        free(cache[(cache_head + k) % cache_cap]);
    free(cache);
    return out[0] == 1234567 ? 3 : 0;
}
