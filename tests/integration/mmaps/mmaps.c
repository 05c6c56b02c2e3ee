/* mmaps.c: mmap, munmap, mremap and mallopt calls recorded exactly.
 *
 * The program makes known calls and states, through EXPECT lines
 * (tests/e2e/programs/expect.h), what the mmaps and mallopts tables must hold: one row
 * per call and no other (the runtime's own mappings are never rows), in the
 * order made, each with its length, new length, protection, flags, fd,
 * offset, address and result (0, or the errno of a failed call; mallopt's
 * own return value), a stack of its kind whose frame 0 is the calling
 * function at the calling line, and the thread that made it. A second thread
 * maps too; libwhole.so (mmaps.lib.c, no rheaper) maps through the
 * executable's interposed mmap, recorded in whole-process scope only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "expect.h"

#ifndef RH_MMAPS_NO_LIB
int lib_map(size_t n);
#endif

/* One call of main: its line, op and fields, and its address. */
struct call {
    int line;
    const char *op;
    long len, new_len, prot, flags, fd, off, result;
    unsigned long long addr, new_addr;
};
static struct call calls[16];
static int ncalls;

static struct call *add(int line, const char *op)
{
    struct call *c = &calls[ncalls++];
    c->line = line;
    c->op = op;
    c->new_len = c->prot = c->flags = c->fd = c->off = -1;
    return c;
}

static long thread_tid;
static int thread_line1, thread_line2;

static void *worker(void *arg)
{
    (void)arg;
    thread_tid = syscall(SYS_gettid);
    thread_line1 = __LINE__ + 1;
    char *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    p[0] = 1;
    thread_line2 = __LINE__ + 1;
    munmap(p, 65536);
    return p;
}

#define AT_MAIN(line) "stack_id IN (SELECT id FROM backtraces WHERE frame_no = 0 AND sym = 'main' AND line = %d)"

int main(void)
{
    const long pg = sysconf(_SC_PAGESIZE);
    struct call *c;

    c = add(__LINE__ + 1, "mmap");
    char *a = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return 2;
    a[0] = 1;
    c->len = 3 * pg, c->prot = PROT_READ | PROT_WRITE, c->flags = MAP_PRIVATE | MAP_ANONYMOUS;
    c->fd = -1, c->off = 0, c->result = 0, c->addr = (uintptr_t)a;

    c = add(__LINE__ + 1, "mremap");
    char *b = mremap(a, 3 * pg, 5 * pg, MREMAP_MAYMOVE);
    if (b == MAP_FAILED)
        return 3;
    c->len = 3 * pg, c->new_len = 5 * pg, c->flags = MREMAP_MAYMOVE, c->result = 0;
    c->addr = (uintptr_t)a, c->new_addr = (uintptr_t)b;

    c = add(__LINE__ + 1, "munmap");
    int r = munmap(b, 5 * pg);
    if (r != 0)
        return 4;
    c->len = 5 * pg, c->result = 0, c->addr = (uintptr_t)b;

    /* a second thread, joined before main goes on: its calls sit here */
    pthread_t th;
    if (pthread_create(&th, NULL, worker, NULL) != 0 || pthread_join(th, NULL) != 0)
        return 5;

    /* a file mapping at an offset */
    int fd = open("mmaps.dat", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, 2 * pg) != 0)
        return 6;
    c = add(__LINE__ + 1, "mmap");
    char *m = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, pg);
    if (m == MAP_FAILED)
        return 7;
    c->len = pg, c->prot = PROT_READ, c->flags = MAP_SHARED, c->fd = fd, c->off = pg;
    c->result = 0, c->addr = (uintptr_t)m;
    c = add(__LINE__ + 1, "munmap");
    munmap(m, pg);
    c->len = pg, c->result = 0, c->addr = (uintptr_t)m;
    close(fd);

    /* failures: errno is the result, the requested address the address */
    c = add(__LINE__ + 1, "mmap");
    void *f = mmap(NULL, pg, PROT_READ, MAP_PRIVATE, 12345, 0);
    if (f != MAP_FAILED || errno != EBADF)
        return 8;
    c->len = pg, c->prot = PROT_READ, c->flags = MAP_PRIVATE, c->fd = 12345, c->off = 0;
    c->result = EBADF, c->addr = 0;
    c = add(__LINE__ + 1, "munmap");
    if (munmap((void *)(uintptr_t)1, (size_t)pg) == 0 || errno != EINVAL)
        return 9;
    c->len = pg, c->result = EINVAL, c->addr = 1;

    /* mallopt: its own return value is the result */
    int mo_line[3], mo_param[3] = {M_MMAP_THRESHOLD, M_ARENA_MAX, M_TRIM_THRESHOLD};
    int mo_value[3] = {1 << 20, 2, 1 << 21}, mo_res[3];
    mo_line[0] = __LINE__ + 1;
    mo_res[0] = mallopt(mo_param[0], mo_value[0]);
    mo_line[1] = __LINE__ + 1;
    mo_res[1] = mallopt(mo_param[1], mo_value[1]);
    mo_line[2] = __LINE__ + 1;
    mo_res[2] = mallopt(mo_param[2], mo_value[2]);

    int lib = 0;
#ifndef RH_MMAPS_NO_LIB
    if (lib_map(8 * (size_t)pg) != 0)
        return 10;
    const char *scope = getenv("RHEAPER_SCOPE");
    lib = !(scope && !strcmp(scope, "program")); /* whole-process scope sees it */
#endif

    /* every call of main: one row, in order, with its fields */
    for (int i = 0; i < ncalls; i++) {
        c = &calls[i];
        EXPECT(1, "SELECT count(*) FROM mmaps WHERE " AT_MAIN(line), c->line);
        EXPECT(i + 1, "SELECT count(*) FROM mmaps WHERE id <= (SELECT id FROM mmaps WHERE " AT_MAIN(line)
               ") AND stack_id IN (SELECT id FROM backtraces WHERE frame_no = 0 AND sym = 'main')",
               c->line);
        EXPECT(1,
               "SELECT count(*) FROM mmaps WHERE " AT_MAIN(line) " AND op = '%s' AND length = %ld"
               " AND address = %llu AND result = %ld AND thread = 1"
               " AND coalesce(new_length, -1) = %ld AND coalesce(new_address, 0) = %llu"
               " AND coalesce(prot, -1) = %ld AND coalesce(flags, -1) = %ld"
               " AND coalesce(fd, -1) = %ld AND coalesce(offset, -1) = %ld"
               " AND (SELECT kind FROM stacks WHERE id = stack_id) = '%s'",
               c->line, c->op, c->len, c->addr, c->result, c->new_len, c->new_addr, c->prot,
               c->flags, c->fd, c->off, c->op);
    }
    for (int i = 0; i < 3; i++) {
        EXPECT(1,
               "SELECT count(*) FROM mallopts WHERE " AT_MAIN(line) " AND param = %d AND value = %d"
               " AND result = %d AND thread = 1 AND id = %d"
               " AND (SELECT kind FROM stacks WHERE id = stack_id) = 'mallopt'",
               mo_line[i], mo_param[i], mo_value[i], mo_res[i], i + 1);
    }
    EXPECT(3, "SELECT count(*) FROM mallopts");
    /* the thread's two calls, after main's munmap and before its file mapping */
    EXPECT(2, "SELECT count(*) FROM mmaps WHERE thread = (SELECT id FROM threads WHERE tid = %ld)"
              " AND length = 65536 AND stack_id IN (SELECT id FROM backtraces WHERE frame_no = 0"
              " AND sym = 'worker' AND line IN (%d, %d))",
       thread_tid, thread_line1, thread_line2);
    EXPECT(5, "SELECT max(id) FROM mmaps WHERE stack_id IN (SELECT id FROM backtraces WHERE"
              " frame_no = 0 AND sym = 'worker')");
    /* the library's two, through the interposed symbols */
    EXPECT(lib ? 2 : 0, "SELECT count(*) FROM mmaps WHERE length = %ld AND stack_id IN (SELECT id"
                        " FROM backtraces WHERE frame_no = 0 AND sym = 'lib_map')",
           8 * pg);
    /* nothing else: the runtime's own mappings are not rows */
    EXPECT(ncalls + 2 + 2 * lib, "SELECT count(*) FROM mmaps");
    EXPECT(0, "SELECT count(*) FROM mmaps a JOIN mmaps b ON b.id = a.id + 1 WHERE b.time < a.time");
    /* and none of it is an allocation */
    EXPECT(0, "SELECT count(*) FROM allocations WHERE kind IN ('mmap', 'munmap', 'mremap', 'mallopt')");
    return 0;
}
