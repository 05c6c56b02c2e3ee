/* test_shared.c: threads beyond max_trackers go through the shared path.
 *
 * With max_trackers = 2 and 8 threads alive at once, 2 threads get slots and 6
 * write through the locked SHARED stream, switching thread with SETTHREAD. No
 * event may be lost: each thread's allocations and frees must all be present,
 * attributed to the right thread, in its order.
 */
#include <pthread.h>
#include <sys/syscall.h>

#include "rt_test.h"

#define NT 8
#define K 3000

static uint32_t tids[NT];
static pthread_barrier_t bar;

static uintptr_t addr_of(int t, int j)
{
    return ((uintptr_t)(t + 1) << 32) + (uintptr_t)j * 64;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    tids[t] = (uint32_t)syscall(SYS_gettid);
    pthread_barrier_wait(&bar);
    for (int j = 0; j < K; j++) {
        tr_alloc(1, addr_of(t, j), (size_t)j + 1);
        tr_free(addr_of(t, j));
    }
    pthread_barrier_wait(&bar); /* nobody exits (and frees its slot) early */
    return NULL;
}

int main(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "shared");
    CHECK_EQ(tr_enable(dir, 0, 2, 1024), RHEAPER_OK);
    pthread_barrier_init(&bar, NULL, NT);
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    char path[512];
    snprintf(path, sizeof path, "%s", rheaper_profile_path());
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);

    struct tr_file f;
    CHECK_EQ(tr_read(path, &f), 0);
    if (f.err[0])
        fprintf(stderr, "reader: %s\n", f.err);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.nev, NT * 2 * K);
    CHECK_EQ(f.tr_events, NT * 2 * K);
    CHECK_EQ(f.tr_lost, 0);
    CHECK(f.nsettid >= 6);

    int pos[NT] = {0}, bad = 0, in_shared = 0, slots_seen = 0;
    uint32_t slot_mask = 0;
    uint64_t shared_last = 0;
    for (int i = 0; i < f.nev; i++) {
        struct tr_event *e = &f.ev[i];
        if (f.chunks[e->chunk].h.type == RIP_CHUNK_SHARED) {
            in_shared++;
            if (e->time < shared_last)
                bad++;
            shared_last = e->time;
        } else if (e->slot < 32) {
            slot_mask |= 1u << e->slot;
        }
        int t = -1;
        for (int k = 0; k < NT; k++)
            if (tids[k] == e->tid)
                t = k;
        if (t < 0) {
            bad++;
            continue;
        }
        int j = pos[t]++;
        if (e->op != (j % 2 ? RIP_OP_FREE : RIP_OP_ALLOC) || e->addr != addr_of(t, j / 2))
            bad++;
        if (e->op == RIP_OP_ALLOC && e->size != (uint64_t)(j / 2) + 1)
            bad++;
    }
    for (uint32_t m = slot_mask; m; m &= m - 1)
        slots_seen++;
    for (int t = 0; t < NT; t++)
        CHECK_EQ(pos[t], 2 * K);
    CHECK_EQ(bad, 0);
    CHECK_EQ(slots_seen, 2);
    CHECK_EQ(in_shared, (NT - 2) * 2 * K);
    for (int i = 0; i < f.nchunks; i++)
        if (f.chunks[i].h.type == RIP_CHUNK_SHARED)
            CHECK_EQ(f.chunks[i].h.slot, RIP_SLOT_SHARED);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
