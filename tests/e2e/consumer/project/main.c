/* main.c: the consumer test's program. It profiles a known set of allocations
 * through the C API and prints what it made, for run_consumer.sh to compare
 * with the converted profile:
 *   - NBLOCKS mallocs of (i + 1) * 24 bytes, every even one freed;
 *   - rheaper_enable/rheaper_disable around them, so nothing else is recorded
 *     (printing happens after rheaper_disable).
 * Exit status: 0, or 1 when an API call failed (with the reason on stderr).
 */
#include <stdio.h>
#include <stdlib.h>

#include "rheaper.h"

#define NBLOCKS 100

/* Keeps the compiler from deleting malloc/free pairs it can see through. */
static void *volatile sink;

int main(void)
{
    static void *blocks[NBLOCKS];
    unsigned long bytes = 0, freed = 0;

    int rc = rheaper_enable(NULL);
    if (rc != RHEAPER_OK) {
        fprintf(stderr, "consumer: rheaper_enable: %s\n", rheaper_strerror(rc));
        return 1;
    }
    for (int i = 0; i < NBLOCKS; i++) {
        size_t n = (size_t)(i + 1) * 24;
        blocks[i] = malloc(n);
        if (!blocks[i])
            abort();
        sink = blocks[i];
        bytes += n;
    }
    for (int i = 0; i < NBLOCKS; i += 2) {
        free(blocks[i]);
        freed++;
    }
    rc = rheaper_disable();
    if (rc != RHEAPER_OK) {
        fprintf(stderr, "consumer: rheaper_disable: %s\n", rheaper_strerror(rc));
        return 1;
    }
    printf("consumer: blocks %d bytes %lu freed %lu\n", NBLOCKS, bytes, freed);
    printf("consumer: profile %s\n", rheaper_profile_path());
    return 0;
}
