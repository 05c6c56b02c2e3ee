/* test_manythreads.c: many short-lived threads.
 *
 * 2000 threads, at most 4 alive at a time, each record three events and exit.
 * Slots are reused (the slot numbers stay below the number of threads alive at
 * once plus the main thread), every event is present under its own thread id,
 * every chunk is sealed, and the unused tails of the 16 KiB first chunks are
 * given back, so the file uses far less disk than 2000 full chunks would.
 */
#include <pthread.h>
#include <sys/syscall.h>

#include "rt_test.h"

#define NT 2000
#define PAR 4

static uint32_t tids[NT];

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    tids[t] = (uint32_t)syscall(SYS_gettid);
    uintptr_t a = 0x100000000ull + (uintptr_t)t * 4096;
    tr_alloc(1, a, (size_t)t + 1);
    tr_alloc(1, a + 64, 64);
    tr_free(a);
    return NULL;
}

int main(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "manythreads");
    CHECK_EQ(tr_enable(dir, 0, 16, 0), RHEAPER_OK);
    tr_alloc(1, 0x10, 1); /* the main thread holds a slot too */
    for (int t = 0; t < NT; t += PAR) {
        pthread_t th[PAR];
        for (int k = 0; k < PAR; k++)
            pthread_create(&th[k], NULL, worker, (void *)(intptr_t)(t + k));
        for (int k = 0; k < PAR; k++)
            pthread_join(th[k], NULL);
    }
    char path[512];
    snprintf(path, sizeof path, "%s", rheaper_profile_path());
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);

    struct tr_file f;
    CHECK_EQ(tr_read(path, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.nev, NT * 3 + 1);
    CHECK_EQ(f.tr_events, NT * 3 + 1);
    CHECK_EQ(f.tr_lost, 0);
    CHECK_EQ(f.nsettid, 0);
    int maxslot = 0, unsealed = 0;
    for (int i = 0; i < f.nchunks; i++) {
        if (f.chunks[i].h.type != RIP_CHUNK_EVENTS)
            continue;
        if ((int)f.chunks[i].h.slot > maxslot)
            maxslot = (int)f.chunks[i].h.slot;
        if (f.chunks[i].crc_ok != 1)
            unsealed++;
    }
    CHECK(maxslot < 16);
    CHECK_EQ(unsealed, 0);
    /* per thread: its three events, in order, under its own tid */
    static int seen[NT];
    int bad = 0;
    for (int i = 0; i < f.nev; i++) {
        struct tr_event *e = &f.ev[i];
        if (e->addr < 0x100000000ull) {
            continue;
        }
        int t = (int)((e->addr - 0x100000000ull) / 4096);
        if (t >= NT || tids[t] != e->tid) {
            bad++;
            continue;
        }
        uintptr_t a = 0x100000000ull + (uintptr_t)t * 4096;
        int k = seen[t]++;
        if ((k == 0 && !(e->op == RIP_OP_ALLOC && e->addr == a && e->size == (uint64_t)t + 1)) ||
            (k == 1 && !(e->op == RIP_OP_ALLOC && e->addr == a + 64)) ||
            (k == 2 && !(e->op == RIP_OP_FREE && e->addr == a)) || k > 2)
            bad++;
    }
    CHECK_EQ(bad, 0);
    struct stat st;
    stat(path, &st);
    CHECK(st.st_size >= (off_t)NT * 16384);
    fprintf(stderr, "file size %lld, disk %lld\n", (long long)st.st_size,
            (long long)st.st_blocks * 512);
    CHECK((long long)st.st_blocks * 512 < (long long)st.st_size / 2);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
