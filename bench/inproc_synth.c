/* inproc_synth.c: the synthetic malloc/free loop of bench/wl_synth.c as one
 * function, for the in-process benchmark (bench/inproc.c, bench/inproc.sh).
 *
 * Compiled once; the script makes three copies of the object whose malloc and
 * free go to glibc directly, to bench/floor.c's recorder and to rheaper's
 * wraps, each with the entry point renamed, so one process holds three loops
 * of identical machine code.
 */
#include <stdint.h>
#include <stdlib.h>

#define RING 64

/* pairs malloc+free pairs of mixed sizes (8 bytes to 4 KiB, xorshift) over a
 * ring of 64 live blocks, as wl_synth's thread does; every block is written
 * through a volatile pointer so the compiler keeps each pair. Frees the ring
 * at the end. Returns a checksum of the sizes, the same for every copy. */
long long inproc_synth_run(long pairs)
{
    uint64_t x = 0x9e3779b97f4a7c15ull ^ 1u;
    void *ring[RING] = {0};
    long long sum = 0;
    for (long i = 0; i < pairs; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned slot = (unsigned)(x & (RING - 1));
        size_t size = (x >> 8) & 3 ? 8 + ((x >> 16) & 120) : 8 + ((x >> 16) & 4088);
        free(ring[slot]);
        char *p = malloc(size);
        if (!p)
            abort();
        *(volatile char *)p = (char)i;
        ring[slot] = p;
        sum += (long long)size;
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    return sum;
}
