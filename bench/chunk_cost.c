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
 *
 * Then where a chunk's time goes, for what prefaulting would save: each chunk
 * timed in two parts, getting it (open, fstat, fallocate, mmap, close,
 * madvise) and filling it (one write per page: the page faults a recording
 * thread takes today while it writes events), in four designs, interleaved:
 *   file:            the runtime today (reopen + MADV_RANDOM);
 *   file, populated: the same plus MADV_POPULATE_WRITE (RHEAPER_POPULATE=1):
 *                    the faults move into the getting part, in one call;
 *   anonymous:       MAP_PRIVATE | MAP_ANONYMOUS memory (a streamed chunk);
 *   anon, populated: the same with MAP_POPULATE.
 * A chunk made ready by another thread before it is needed takes both parts
 * off the recording thread; populating on the recording thread itself saves
 * only the difference of the totals. Thread CPU time (the faults' system time
 * included), medians over the rounds.
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

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* n chunks of size sz in design d (0 file, 1 file populated, 2 anonymous,
 * 3 anonymous populated): thread-CPU ns per chunk spent getting each chunk in
 * *get and filling it in *fill. */
static void run_split(const char *path, int d, unsigned n, size_t sz, uint64_t *get, uint64_t *fill)
{
    struct stat st0;
    if (d < 2) {
        int fd =
            (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || fstat(fd, &st0) != 0) {
            perror(path);
            exit(1);
        }
        syscall(SYS_close, fd);
    }
    uint64_t off = 4096, tg = 0, tf = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t t0 = cpu_ns();
        char *m;
        if (d < 2) {
            int f = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
            struct stat st;
            if (f < 0 || fstat(f, &st) != 0 || st.st_ino != st0.st_ino) {
                fprintf(stderr, "reopen failed\n");
                exit(1);
            }
            if (syscall(SYS_fallocate, f, 0, (off_t)off, (off_t)sz) != 0) {
                perror("fallocate");
                exit(1);
            }
            m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, f, (off_t)off);
            syscall(SYS_close, f);
            if (m == MAP_FAILED) {
                perror("mmap");
                exit(1);
            }
            madvise(m, sz, MADV_RANDOM);
            if (d == 1)
                madvise(m, sz, MADV_POPULATE_WRITE);
        } else {
            m = mmap(NULL, sz, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (d == 3 ? MAP_POPULATE : 0), -1,
                     0);
            if (m == MAP_FAILED) {
                perror("mmap");
                exit(1);
            }
        }
        uint64_t t1 = cpu_ns();
        for (size_t b = 0; b < sz; b += 4096)
            m[b] = 1;
        uint64_t t2 = cpu_ns();
        munmap(m, sz);
        tg += t1 - t0;
        tf += t2 - t1;
        off += sz;
    }
    if (d < 2)
        unlink(path);
    *get = tg / n;
    *fill = tf / n;
}

/* The second table: get and fill per chunk size and design. */
static void split_table(const char *path, unsigned n)
{
    static const char *const dn[4] = {"file (today)", "file, populated", "anonymous",
                                      "anon, populated"};
    printf("\n| chunk size | design | get (ns) | fill (ns) | total (ns) | fill per 4 KiB page (ns) "
           "|\n");
    printf("|---|---|--:|--:|--:|--:|\n");
    for (size_t sz = 16384; sz <= 262144; sz *= 4) {
        uint64_t g[4][ROUNDS], f[4][ROUNDS];
        for (int r = 0; r < ROUNDS; r++)
            for (int d = 0; d < 4; d++)
                run_split(path, d, n, sz, &g[d][r], &f[d][r]);
        for (int d = 0; d < 4; d++) {
            uint64_t t[ROUNDS];
            for (int r = 0; r < ROUNDS; r++)
                t[r] = g[d][r] + f[d][r];
            qsort(g[d], ROUNDS, sizeof g[d][0], cmp_u64);
            qsort(f[d], ROUNDS, sizeof f[d][0], cmp_u64);
            qsort(t, ROUNDS, sizeof t[0], cmp_u64);
            printf("| %zu KiB | %s | %llu | %llu | %llu | %.0f |\n", sz / 1024, dn[d],
                   (unsigned long long)g[d][ROUNDS / 2], (unsigned long long)f[d][ROUNDS / 2],
                   (unsigned long long)t[ROUNDS / 2],
                   (double)f[d][ROUNDS / 2] / (double)(sz / 4096));
        }
    }
    printf("\nthread-CPU ns per chunk (medians of %d interleaved rounds of %u chunks)\n", ROUNDS,
           n);
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
    split_table(path, n);
    return 0;
}
