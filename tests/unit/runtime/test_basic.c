/* test_basic.c: one thread, every record type, checked field by field.
 *
 * Enables tracking through the API, records allocations, frees, reallocs and a
 * failure with addresses and sizes the test chooses, disables, and reads the
 * rip file back: header fields and checksum, module map, chunk checksums,
 * thread name, every event's op, size and address, stack ids and frames (frame 0
 * is the return address into the function that called the fake shim), time
 * order, and the trailer's counts.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "rt_test.h"

#define BASE ((uintptr_t)0x7f1200100000ull)

struct frames {
    void *f0, *f1;
};

__attribute__((noinline)) static struct frames site_a(uintptr_t p, size_t n)
{
    struct frames r;
    r.f0 = tr_alloc(1, p, n);
    r.f1 = __builtin_return_address(0);
    __asm__ __volatile__("");
    return r;
}

int main(void)
{
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "basic");
    CHECK_EQ(rheaper_profile_path()[0], 0);
    CHECK_EQ(rheaper_is_enabled(), 0);
    prctl(PR_SET_NAME, "rt-basic", 0, 0, 0);

    CHECK_EQ(tr_enable(dir, 0, 0, 0), RHEAPER_OK);
    CHECK_EQ(rheaper_is_enabled(), 1);
    CHECK_EQ(tr_enable(dir, 0, 0, 0), RHEAPER_ERR_ALREADY);
    char expect[512];
    snprintf(expect, sizeof expect, "%s/rip-%d", dir, (int)getpid());
    CHECK(strcmp(rheaper_profile_path(), expect) == 0);

    struct frames fa[100];
    for (int i = 0; i < 100; i++)
        fa[i] = site_a(BASE + (uintptr_t)i * 32, (size_t)i * 8 + 1);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL); /* a time delta too big for byte 0 */
    void *f_cal = tr_alloc(2, BASE + 5000 * 16 + 3, 7);
    for (int i = 0; i < 100; i++)
        tr_free(BASE + (uintptr_t)i * 32);
    uintptr_t r1 = BASE + 100 * 32 + 64;
    void *f_re1 = tr_realloc(3, r1, r1, 50);
    void *f_re2 = tr_realloc(3, r1, BASE - 4096, 4000);
    void *f_fail = tr_fail(1, (size_t)1 << 40);
    tr_free(0); /* not recorded */

    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    CHECK_EQ(rheaper_is_enabled(), 0);
    CHECK_EQ(rheaper_disable(), RHEAPER_ERR_NOT_ENABLED);
    CHECK(strcmp(rheaper_profile_path(), expect) == 0);
    tr_free(BASE); /* off: not recorded */

    struct stat st;
    CHECK_EQ(stat(expect, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0600);

    struct tr_file f;
    CHECK_EQ(tr_read(expect, &f), 0);
    if (f.err[0])
        fprintf(stderr, "reader: %s\n", f.err);
    CHECK_EQ(f.err[0], 0);

    /* header */
    CHECK(memcmp(f.hdr.magic, RIP_MAGIC, 8) == 0);
    CHECK_EQ(f.hdr.version, RIP_VERSION);
    CHECK_EQ(f.hdr.header_size, RIP_HEADER_SIZE);
    CHECK_EQ(f.hdr.pid, getpid());
    CHECK_EQ(f.hdr.ppid, getppid());
    CHECK(f.hdr_crc_ok);
    CHECK_EQ(f.hdr.max_stack_depth, 64);
    CHECK(f.hdr.clock_kind == RIP_CLOCK_TSC || f.hdr.clock_kind == RIP_CLOCK_MONO);
    CHECK_EQ(f.hdr.tick_shift, f.hdr.clock_kind == RIP_CLOCK_TSC ? 4 : 0);
    CHECK(f.hdr.ticks_per_sec > 1000000);
    CHECK_EQ(f.hdr.chunk_size, 32768 * 8 + 4096); /* 32768 events * 8 + header, rounded */
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    CHECK_EQ(f.hdr.exe_len, strlen(exe));
    CHECK(strcmp((char *)f.data + RIP_HDR_EXE_OFF, exe) == 0);
    CHECK(f.hdr.cmd_len >= strlen("test_basic"));
    CHECK(strstr((char *)f.data + RIP_HDR_CMD_OFF, "unit-runtime-basic") != NULL ||
          strstr((char *)f.data + RIP_HDR_CMD_OFF, "basic") != NULL);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    CHECK(f.hdr.start_realtime_ns <= now_ns && now_ns - f.hdr.start_realtime_ns < 60e9);

    /* modules */
    CHECK(f.nmodules_chunks >= 1);
    CHECK(f.exe_in_modules);
    CHECK((uintptr_t)fa[0].f0 >= f.exe_range_lo && (uintptr_t)fa[0].f0 < f.exe_range_hi);

    /* chunks: all sealed with a good crc; one EVENTS chunk named rt-basic */
    int nevchunks = 0;
    for (int i = 0; i < f.nchunks; i++) {
        CHECK_EQ(f.chunks[i].crc_ok, 1);
        if (f.chunks[i].h.type == RIP_CHUNK_EVENTS) {
            nevchunks++;
            CHECK(strcmp(f.chunks[i].name, "rt-basic") == 0);
            CHECK_EQ(f.chunks[i].h.tid, syscall(SYS_gettid));
            CHECK_EQ(f.chunks[i].h.seq, 0);
        }
    }
    CHECK_EQ(nevchunks, 1);

    /* events */
    CHECK_EQ(f.nev, 204);
    CHECK(f.has_trailer);
    CHECK_EQ(f.tr_events, 204);
    CHECK_EQ(f.tr_stacks, 5);
    CHECK_EQ(f.tr_lost, 0);
    CHECK_EQ(f.tr_open, 0);
    CHECK_EQ(f.nst, 5);
    if (f.nev == 204) {
        uint32_t sid = f.ev[0].stack;
        const struct tr_stack *s = tr_stack_by_id(&f, sid);
        CHECK(s != NULL);
        if (s) {
            CHECK_EQ(s->kind, 1);
            CHECK(s->n >= 2);
            CHECK_EQ(s->cut, 0);
            CHECK(s->frames[0] == (uintptr_t)fa[0].f0);
            CHECK(s->frames[1] == (uintptr_t)fa[0].f1);
        }
        for (int i = 0; i < 100; i++) {
            CHECK_EQ(f.ev[i].op, RIP_OP_ALLOC);
            CHECK(f.ev[i].addr == BASE + (uintptr_t)i * 32);
            CHECK_EQ(f.ev[i].size, i * 8 + 1);
            CHECK_EQ(f.ev[i].stack, sid);
        }
        struct tr_event *e = &f.ev[100];
        CHECK_EQ(e->op, RIP_OP_ALLOC);
        CHECK(e->addr == BASE + 5000 * 16 + 3);
        CHECK_EQ(e->size, 7);
        s = tr_stack_by_id(&f, e->stack);
        CHECK(s && s->kind == 2 && s->frames[0] == (uintptr_t)f_cal);
        CHECK(e->stack != sid);
        for (int i = 0; i < 100; i++) {
            CHECK_EQ(f.ev[101 + i].op, RIP_OP_FREE);
            CHECK(f.ev[101 + i].addr == BASE + (uintptr_t)i * 32);
        }
        e = &f.ev[201];
        CHECK_EQ(e->op, RIP_OP_REALLOC);
        CHECK(e->addr == r1 && e->addr2 == r1);
        CHECK_EQ(e->size, 50);
        CHECK(e->time2 >= e->time);
        s = tr_stack_by_id(&f, e->stack);
        CHECK(s && s->kind == 3 && s->frames[0] == (uintptr_t)f_re1);
        e = &f.ev[202];
        CHECK_EQ(e->op, RIP_OP_REALLOC);
        CHECK(e->addr == r1 && e->addr2 == BASE - 4096);
        CHECK_EQ(e->size, 4000);
        s = tr_stack_by_id(&f, e->stack);
        CHECK(s && s->kind == 3 && s->frames[0] == (uintptr_t)f_re2);
        e = &f.ev[203];
        CHECK_EQ(e->op, RIP_OP_FAIL);
        CHECK(e->size == (uint64_t)1 << 40);
        s = tr_stack_by_id(&f, e->stack);
        CHECK(s && s->kind == 1 && s->frames[0] == (uintptr_t)f_fail);
        /* times never go back; the 1 ms pause shows */
        int mono = 1;
        for (int i = 1; i < f.nev; i++)
            if (f.ev[i].time < f.ev[i - 1].time)
                mono = 0;
        CHECK(mono);
        double tick_ns = 1e9 / (double)f.hdr.ticks_per_sec * (1u << f.hdr.tick_shift);
        CHECK((f.ev[100].time - f.ev[99].time) * tick_ns >= 0.9e6);
        CHECK(f.ev[0].time >= (f.hdr.start_tick >> f.hdr.tick_shift));
    }
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
