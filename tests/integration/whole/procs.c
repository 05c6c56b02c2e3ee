/* procs.c: whole-process recording across threads and fork.
 *
 * Four threads each allocate through the uninstrumented libwhole.so and
 * directly; every block is a row of its own thread, with lib_alloc then the
 * thread function in its stack (through start_thread, whole). A forked child
 * allocates through the library too: its rows are in its own profile, the
 * parent's stay in the parent's, none doubled.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "expect.h"

void *lib_alloc(size_t n);

#define THREADS 4
#define PER_THREAD 40
#define CHILD_N 7

static int worker_line;

void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        worker_line = __LINE__ + 1;
        void *p = lib_alloc(333);
        free(p);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    int child_line = 0;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        for (int i = 0; i < CHILD_N; i++) {
            child_line = __LINE__ + 1;
            void *p = lib_alloc(444);
            free(p);
        }
        EXPECT(CHILD_N,
               "@rip-%d SELECT count(*) FROM allocations a WHERE size = 444 AND "
               "(SELECT sym || ':' || line FROM backtraces WHERE id = a.bt AND frame_no = 1) "
               "= 'main:%d'",
               (int)getpid(), child_line);
        EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size = 333", (int)getpid());
        exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;

    EXPECT(THREADS * PER_THREAD,
           "SELECT count(*) FROM allocations a JOIN stacks s ON s.id = a.bt WHERE size = 333 "
           "AND s.truncated = 0 AND alloc_thread != (SELECT min(alloc_thread) FROM allocations) "
           "AND (SELECT group_concat(sym, ',') FROM (SELECT sym FROM backtraces WHERE id = a.bt "
           "AND frame_no < 2 ORDER BY frame_no)) = 'lib_alloc,worker' "
           "AND (SELECT line FROM backtraces WHERE id = a.bt AND frame_no = 1) = %d",
           worker_line);
    EXPECT(THREADS, "SELECT count(DISTINCT alloc_thread) FROM allocations WHERE size = 333");
    EXPECT(0, "SELECT count(*) FROM allocations WHERE size = 444");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    return 0;
}
