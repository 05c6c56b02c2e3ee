/* chunk_cost.c: what the runtime pays per chunk for holding no fd.
 *
 *   chunk_cost DIR [CHUNKS]
 *
 * Maps CHUNKS chunks of each size the runtime uses (16 KiB doubling to
 * 256 KiB, its default largest) at the end of a file in DIR, writes every
 * page once (as a chunk is filled) and unmaps it, the way runtime/rh_file.c
 * and rh_thread.c do, in three designs, interleaved round by round:
 *   held:   one fd kept open; fallocate + mmap per chunk (the old runtime);
 *   reopen: open by path (O_NOFOLLOW|O_CLOEXEC) + fstat inode check +
 *           fallocate + mmap + close per chunk;
 *   reopen + MADV_RANDOM: the same with the chunk's mapping marked
 *           MADV_RANDOM (the runtime now). A fresh struct file has fresh
 *           readahead state, so without it the first fault of every chunk
 *           reads around (page cache for up to 128 KiB); harmless when the
 *           chunk is then filled, a waste (~200 us at 256 KiB) when it is not
 *           (a short-lived thread's chunk).
 * Prints the median ns per chunk of each over the rounds, and the difference
 * between the runtime's design and the held fd. Raw syscalls, as the runtime
 * makes them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 7

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Maps, touches and unmaps n chunks of size sz; reopen selects the design.
 * Returns ns per chunk. */
static uint64_t run(const char *path, int reopen, unsigned n, size_t sz)
{

    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600); /* as the runtime: no O_TRUNC (ext4 flushes a truncated file at close) */
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    struct stat st0;
    fstat(fd, &st0);
    if (reopen)
        syscall(SYS_close, fd);
    uint64_t off = 4096, t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        int f = fd;
        if (reopen) {
            f = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
            struct stat st;
            if (f < 0 || fstat(f, &st) != 0 || st.st_ino != st0.st_ino || st.st_dev != st0.st_dev) {
                fprintf(stderr, "reopen failed\n");
                exit(1);
            }
        }
        if (syscall(SYS_fallocate, f, 0, (off_t)off, (off_t)sz) != 0) {
            perror("fallocate");
            exit(1);
        }
        char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, f, (off_t)off);
        if (reopen)
            syscall(SYS_close, f);
        if (m == MAP_FAILED) {
            perror("mmap");
            exit(1);
        }
        if (reopen == 2)
            madvise(m, sz, MADV_RANDOM); /* no readaround at the first fault */
        for (size_t b = 0; b < sz; b += 4096)
            m[b] = 1; /* every page is written, as a chunk is filled */
        munmap(m, sz);
        off += sz;
    }
    uint64_t ns = (now_ns() - t0) / n;
    if (!reopen)
        syscall(SYS_close, fd);
    unlink(path);
    return ns;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: chunk_cost DIR [CHUNKS]\n");
        return 2;
    }
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 2000;
    char path[4096];
    snprintf(path, sizeof path, "%s/chunk_cost.%d", argv[1], (int)getpid());
    printf("| chunk size | held fd | reopen | reopen + MADV_RANDOM | last - held |\n");
    printf("|---|---|---|---|---|\n");
    for (size_t sz = 16384; sz <= 262144; sz *= 2) {
        uint64_t t[3][ROUNDS], med[3];
        for (int r = 0; r < ROUNDS; r++)
            for (int d = 0; d < 3; d++)
                t[d][r] = run(path, d, n, sz);
        for (int d = 0; d < 3; d++) {
            qsort(t[d], ROUNDS, sizeof t[d][0], cmp_u64);
            med[d] = t[d][ROUNDS / 2];
        }
        printf("| %zu KiB | %llu | %llu | %llu | %+lld |\n", sz / 1024,
               (unsigned long long)med[0], (unsigned long long)med[1],
               (unsigned long long)med[2], (long long)med[2] - (long long)med[0]);
    }
    printf("\nns per chunk (median)\n");
    printf("\nmedians of %d interleaved rounds of %u chunks each\n", ROUNDS, n);
    return 0;
}
