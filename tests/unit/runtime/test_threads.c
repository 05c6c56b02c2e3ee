/* test_threads.c: 8 threads, each with its own chunk stream.
 *
 * Each thread names itself, records K allocation/free pairs at addresses and
 * sizes derived from its index, and exits; a pthread key destructor of the test
 * frees one more block during thread exit, which must still land in the
 * thread's own chunk (the runtime's flush re-arms itself to the last round).
 * Small buffers force many chunks per thread. The file must hold every event in
 * each thread's order, sealed chunks with good checksums, consecutive chunk
 * numbers per slot, non-decreasing times per stream, and a trailer that agrees.
 */
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "rt_test.h"

#define NT 8
#define K 20000

static uint32_t tids[NT];
static pthread_key_t test_key;
static pthread_barrier_t bar;

static uintptr_t addr_of(int t, int j)
{
    return ((uintptr_t)(t + 1) << 32) + (uintptr_t)j * 48;
}

static void test_key_dtor(void *v)
{
    tr_free((uintptr_t)v);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "w%d", t);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    tids[t] = (uint32_t)syscall(SYS_gettid);
    pthread_barrier_wait(&bar);
    for (int j = 0; j < K; j++) {
        tr_alloc(1, addr_of(t, j), (size_t)(j % 1000) + 1);
        tr_free(addr_of(t, j));
    }
    pthread_setspecific(test_key, (void *)addr_of(t, K));
    return NULL;
}

int main(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "threads");
    CHECK_EQ(tr_enable(dir, 0, 0, 2048), RHEAPER_OK);
    pthread_key_create(&test_key, test_key_dtor);
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
    CHECK_EQ(f.nev, NT * (2 * K + 1));
    CHECK(f.has_trailer);
    CHECK_EQ(f.tr_events, NT * (2 * K + 1));
    CHECK_EQ(f.tr_open, 0);
    CHECK_EQ(f.tr_lost, 0);
    CHECK_EQ(f.nsettid, 0); /* nobody needed the shared path */

    int bad_seq = 0, bad_order = 0, bad_name = 0, unsealed = 0, nchunks = 0, shared_ev = 0;
    uint32_t next_seq[1024] = {0};
    uint64_t last_time[1024] = {0};
    for (int i = 0; i < f.nchunks; i++) {
        struct tr_chunk *c = &f.chunks[i];
        if (c->h.type != RIP_CHUNK_EVENTS)
            continue;
        nchunks++;
        if (c->crc_ok != 1)
            unsealed++;
        if (c->h.slot >= 1024 || c->h.seq != next_seq[c->h.slot]++)
            bad_seq++;
        int t = -1;
        for (int k = 0; k < NT; k++)
            if (tids[k] == c->h.tid)
                t = k;
        char want[16];
        snprintf(want, sizeof want, "w%d", t);
        if (t < 0 || strcmp(c->name, want) != 0)
            bad_name++;
    }
    int pos[NT] = {0};
    for (int i = 0; i < f.nev; i++) {
        struct tr_event *e = &f.ev[i];
        if (f.chunks[e->chunk].h.type != RIP_CHUNK_EVENTS)
            shared_ev++;
        if (e->slot < 1024) {
            if (e->time < last_time[e->slot])
                bad_order++;
            last_time[e->slot] = e->time;
        }
        int t = -1;
        for (int k = 0; k < NT; k++)
            if (tids[k] == e->tid)
                t = k;
        if (t < 0) {
            bad_order++;
            continue;
        }
        int j = pos[t]++;
        if (j == 2 * K) {
            if (e->op != RIP_OP_FREE || e->addr != addr_of(t, K))
                bad_order++;
        } else if (j % 2 == 0) {
            if (e->op != RIP_OP_ALLOC || e->addr != addr_of(t, j / 2) ||
                e->size != (uint64_t)(j / 2 % 1000) + 1)
                bad_order++;
        } else if (e->op != RIP_OP_FREE || e->addr != addr_of(t, j / 2)) {
            bad_order++;
        }
    }
    for (int t = 0; t < NT; t++)
        CHECK_EQ(pos[t], 2 * K + 1);
    CHECK(nchunks >= NT * 4); /* small buffers: several chunks per thread */
    CHECK_EQ(unsealed, 0);
    CHECK_EQ(bad_seq, 0);
    CHECK_EQ(bad_name, 0);
    CHECK_EQ(bad_order, 0);
    CHECK_EQ(shared_ev, 0);
    CHECK_EQ(f.hdr.chunk_size, 20480);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
