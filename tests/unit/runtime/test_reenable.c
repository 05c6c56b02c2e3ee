/* test_reenable.c: disable, enable again, and a thread that lives across both.
 *
 * The first profile is closed while a second thread still has its chunk open:
 * the trailer counts that chunk as open and the thread's events so far. After
 * rheaper_enable() the thread notices the new file on its next event, seals its
 * old chunk and writes into rip-<pid>.1, whose stack ids start from 1 again. A
 * third enable gives rip-<pid>.2; nothing is overwritten.
 */
#include <pthread.h>
#include <sys/syscall.h>

#include "rt_test.h"

static pthread_barrier_t bar;
static uint32_t helper_tid;

static void *helper(void *arg)
{
    helper_tid = (uint32_t)syscall(SYS_gettid);
    tr_alloc(1, 0x7000, 11);
    tr_alloc(1, 0x7010, 12);
    pthread_barrier_wait(&bar); /* main disables and enables */
    pthread_barrier_wait(&bar);
    for (int i = 0; i < 4; i++)
        tr_free(0x7000 + (uintptr_t)i * 16);
    return NULL;
}

int main(void)
{
    char dir[256], p0[512], p1[512], p2[512];
    tr_mkdtemp(dir, sizeof dir, "reenable");
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t th;

    CHECK_EQ(tr_enable(dir, 0, 0, 0), RHEAPER_OK);
    snprintf(p0, sizeof p0, "%s", rheaper_profile_path());
    for (int i = 0; i < 3; i++)
        tr_alloc(2, 0x9000 + (uintptr_t)i * 16, 5);
    pthread_create(&th, NULL, helper, NULL);
    pthread_barrier_wait(&bar);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    CHECK_EQ(tr_enable(dir, 0, 0, 0), RHEAPER_OK);
    snprintf(p1, sizeof p1, "%s", rheaper_profile_path());
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    tr_alloc(2, 0x9100, 6);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    CHECK_EQ(tr_enable(dir, 0, 0, 0), RHEAPER_OK);
    snprintf(p2, sizeof p2, "%s", rheaper_profile_path());
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);

    char want[512];
    snprintf(want, sizeof want, "%s/rip-%d", dir, (int)getpid());
    CHECK(strcmp(p0, want) == 0);
    snprintf(want, sizeof want, "%s/rip-%d.1", dir, (int)getpid());
    CHECK(strcmp(p1, want) == 0);
    snprintf(want, sizeof want, "%s/rip-%d.2", dir, (int)getpid());
    CHECK(strcmp(p2, want) == 0);
    CHECK_EQ(tr_count_files(dir), 3);

    struct tr_file f;
    CHECK_EQ(tr_read(p0, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.nev, 5);
    CHECK(f.has_trailer);
    CHECK_EQ(f.tr_events, 5);
    CHECK_EQ(f.tr_open, 1);
    CHECK_EQ(tr_count(&f, RIP_OP_ALLOC, helper_tid), 2);
    for (int i = 0; i < f.nchunks; i++)
        CHECK_EQ(f.chunks[i].crc_ok, 1); /* the helper sealed its chunk when it moved on */
    tr_free_file(&f);

    CHECK_EQ(tr_read(p1, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.nev, 5);
    CHECK_EQ(f.tr_events, 5);
    CHECK_EQ(f.tr_open, 0);
    CHECK_EQ(tr_count(&f, RIP_OP_FREE, helper_tid), 4);
    CHECK_EQ(tr_count(&f, RIP_OP_ALLOC, 0), 1);
    CHECK_EQ(f.nst, 1);
    if (f.nst == 1)
        CHECK_EQ(f.st[0].id, 1);
    for (int i = 0; i < f.nev; i++)
        if (f.ev[i].op == RIP_OP_ALLOC)
            CHECK_EQ(f.ev[i].stack, 1);
    tr_free_file(&f);

    CHECK_EQ(tr_read(p2, &f), 0);
    CHECK_EQ(f.nev, 0);
    CHECK(f.has_trailer);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
