/* test_sigkill.c: a SIGKILLed process's file still holds every event.
 *
 * The child enables tracking and records N allocations at known addresses,
 * tells the parent, and waits; the parent kills it with SIGKILL. Events live in
 * MAP_SHARED chunks, so the file must decode cleanly and hold all N, in order,
 * without a trailer, with the last chunk unsealed.
 */
#include <signal.h>
#include <sys/wait.h>

#include "rt_test.h"

#define N 5000

int main(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "sigkill");
    int pfd[2];
    if (pipe(pfd) != 0)
        return 2;
    pid_t c = fork();
    if (c == 0) {
        if (tr_enable(dir, 0, 0, 0) != RHEAPER_OK)
            _exit(3);
        for (int i = 0; i < N; i++)
            tr_alloc(1, 0x40000000 + (uintptr_t)i * 32, (size_t)i + 1);
        char b = 'k';
        if (write(pfd[1], &b, 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    char b = 0;
    CHECK_EQ(read(pfd[0], &b, 1), 1);
    kill(c, SIGKILL);
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

    char p[512];
    snprintf(p, sizeof p, "%s/rip-%d", dir, (int)c);
    struct tr_file f;
    CHECK_EQ(tr_read(p, &f), 0);
    if (f.err[0])
        fprintf(stderr, "reader: %s\n", f.err);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.has_trailer, 0);
    CHECK_EQ(f.nev, N);
    int bad = 0;
    for (int i = 0; i < f.nev && i < N; i++)
        if (f.ev[i].op != RIP_OP_ALLOC || f.ev[i].addr != 0x40000000 + (uintptr_t)i * 32 ||
            f.ev[i].size != (uint64_t)i + 1)
            bad++;
    CHECK_EQ(bad, 0);
    int sealed = 0, unsealed = 0, spares = 0;
    for (int i = 0; i < f.nchunks; i++) {
        if (f.chunks[i].h.type != RIP_CHUNK_EVENTS)
            continue;
        if (f.chunks[i].crc_ok == 0 && f.chunks[i].nevents == 0 && f.chunks[i].h.events == 0 &&
            f.chunks[i].name[0])
            spares++; /* the helper's next chunk: the thread's name, no event yet */
        else if (f.chunks[i].crc_ok == 1)
            sealed++;
        else if (f.chunks[i].crc_ok == 0)
            unsealed++;
    }
    CHECK(sealed >= 1); /* 5000 events overflow the first 16 KiB chunk */
    CHECK_EQ(unsealed, 1);
    CHECK(spares <= 1);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
