/* rel_files.c: the helper of the file-safety and privilege cases.
 *
 *   rel_files named NAME   names its threads NAME (quotes, SQL) and allocates
 *   rel_files ids          prints "ruid euid rgid egid" and allocates
 *
 * run.sh plants symlinks and old profiles, runs copies of this program under
 * hostile names, or setuid/setgid, and checks what was (not) written.
 */
#include "rel.h"

#include <pthread.h>
#include <sys/prctl.h>

static void *volatile sink;

NOINLINE static void *files_alloc(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}

static const char *thread_name;

static void *named_thread(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, thread_name, 0, 0, 0);
    for (int i = 0; i < 7; i++)
        sink = files_alloc(1112);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "named") && argc > 2) {
        thread_name = argv[2];
        pthread_t th;
        if (pthread_create(&th, NULL, named_thread, NULL) != 0)
            return 3;
        pthread_join(th, NULL);
        for (int i = 0; i < 5; i++)
            sink = files_alloc(1111);
        return 0;
    }
    if (!strcmp(m, "ids")) {
        char line[128];
        int n = snprintf(line, sizeof line, "%d %d %d %d\n", (int)getuid(), (int)geteuid(),
                         (int)getgid(), (int)getegid());
        if (write(1, line, (size_t)n) != n)
            return 3;
        for (int i = 0; i < 5; i++)
            free(files_alloc(1113));
        return 0;
    }
    rel_say("usage: rel_files named NAME | ids");
    return 2;
}
