/* example.c: the program the quick start profiles (sh cmake/quickstart.sh demo).
 *
 * A small log analyser with the allocation habits of real code, so that the
 * profile has something to say:
 *   - parse_line() mallocs one record per log line and strdup()s its message;
 *   - the record array grows with realloc() (a realloc chain);
 *   - intern() keeps service names in a hash table of strdup()ed strings that is
 *     never freed (a leak that looks like a cache);
 *   - two worker threads summarise half of the records each into calloc()ed
 *     histograms and malloc()ed report lines, freed in the other thread;
 *   - one report is forgotten on purpose (a real leak).
 * It prints what it allocated, so the numbers in the profile can be checked.
 * Build: rheaper-cc -O2 -pthread -o example example.c
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLINES 2000
#define NSERVICES 7
#define NBUCKETS 64

struct record {
    const char *service; /* interned, never freed */
    char *message;       /* strdup()ed, freed with the record */
    int status;
    int latency_ms;
};

struct intern_entry {
    struct intern_entry *next;
    char *name;
};

static struct intern_entry *intern_table[NBUCKETS];
static unsigned long n_interned;

/* What this program allocated, counted by the main thread (the workers' blocks
 * are added after they are joined), so the profile can be checked against it. */
static unsigned long made_blocks, made_bytes, kept_blocks, kept_bytes;

static void made(size_t bytes, int kept)
{
    made_blocks++;
    made_bytes += bytes;
    kept_blocks += kept != 0;
    kept_bytes += kept ? bytes : 0;
}

/* Returns the one shared copy of `name`, allocating it the first time. The
 * table lives until exit: these allocations show up as leaks. */
static const char *intern(const char *name)
{
    unsigned h = 5381;
    for (const char *p = name; *p; p++)
        h = h * 33 + (unsigned char)*p;
    struct intern_entry **slot = &intern_table[h % NBUCKETS];
    for (struct intern_entry *e = *slot; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return e->name;
    struct intern_entry *e = malloc(sizeof *e);
    if (!e)
        abort();
    e->name = strdup(name);
    if (!e->name)
        abort();
    made(sizeof *e, 1);
    made(strlen(name) + 1, 1);
    e->next = *slot;
    *slot = e;
    n_interned++;
    return e->name;
}

/* Parses "service status latency message..." into a new record, or NULL. */
static struct record *parse_line(const char *line)
{
    char service[32];
    int status, latency, used = 0;
    if (sscanf(line, "%31s %d %d %n", service, &status, &latency, &used) != 3)
        return NULL;
    struct record *r = malloc(sizeof *r);
    if (!r)
        abort();
    r->service = intern(service);
    r->message = strdup(line + used);
    if (!r->message)
        abort();
    made(sizeof *r, 0);
    made(strlen(r->message) + 1, 0);
    r->status = status;
    r->latency_ms = latency;
    return r;
}

struct work {
    struct record **records;
    size_t begin, end;
    char *report; /* produced by the worker, freed by main */
};

/* Summarises records [begin, end) into a latency histogram and a report line. */
static void *summarise(void *arg)
{
    struct work *w = arg;
    unsigned *histogram = calloc(100, sizeof *histogram);
    if (!histogram)
        abort();
    unsigned errors = 0;
    for (size_t i = w->begin; i < w->end; i++) {
        histogram[w->records[i]->latency_ms / 10 % 100]++;
        errors += w->records[i]->status >= 500;
    }
    unsigned peak = 0;
    for (int b = 0; b < 100; b++)
        if (histogram[b] > histogram[peak])
            peak = (unsigned)b;
    free(histogram);

    w->report = malloc(128);
    if (!w->report)
        abort();
    snprintf(w->report, 128, "records %zu-%zu: %u errors, most latencies in %u-%u ms", w->begin,
             w->end, errors, peak * 10, peak * 10 + 9);
    return NULL;
}

int main(void)
{
    static const char *services[NSERVICES] = {"auth",    "billing", "cart", "catalog",
                                              "gateway", "search",  "users"};
    struct record **records = NULL;
    size_t n = 0, cap = 0;
    unsigned long n_reallocs = 0;
    char line[160];

    for (int i = 0; i < NLINES; i++) {
        snprintf(line, sizeof line, "%s %d %d request %d took a while", services[i % NSERVICES],
                 i % 97 == 0 ? 503 : 200, (i * 37) % 900, i);
        struct record *r = parse_line(line);
        if (!r)
            continue;
        if (n == cap) { /* grow by half: a chain of reallocs of the same array */
            cap = cap ? cap + cap / 2 : 16;
            struct record **bigger = realloc(records, cap * sizeof *records);
            if (!bigger)
                abort();
            records = bigger;
            made(cap * sizeof *records, 0);
            n_reallocs++;
        }
        records[n++] = r;
    }

    struct work work[2] = {{records, 0, n / 2, NULL}, {records, n / 2, n, NULL}};
    pthread_t threads[2];
    for (int t = 0; t < 2; t++)
        if (pthread_create(&threads[t], NULL, summarise, &work[t]) != 0)
            abort();
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < 2; t++)
        printf("%s\n", work[t].report);
    free(work[0].report); /* work[1].report is forgotten: a real leak */
    for (int t = 0; t < 2; t++) {
        made(100 * sizeof(unsigned), 0); /* the histogram */
        made(128, t == 1);               /* the report */
    }

    for (size_t i = 0; i < n; i++) {
        free(records[i]->message);
        free(records[i]);
    }
    free(records);

    printf("example: %zu records (malloc + strdup each), %lu reallocs of the record array, "
           "%lu interned names kept (malloc + strdup each), 2 threads\n",
           n, n_reallocs, n_interned);
    printf("example: allocated %lu blocks, %lu bytes; never freed: %lu blocks, %lu bytes\n",
           made_blocks, made_bytes, kept_blocks, kept_bytes);
    return 0;
}
