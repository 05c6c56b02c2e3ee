/* fork_prog.c: a fork child's profile for `rheaper serve` (fork_test.sh).
 *
 * The parent keeps 10 blocks of 100 bytes (parent_keep) and forks; the child
 * inherits them, allocates 30 blocks of 300 bytes in child_alloc, frees 10 of
 * them and exits; the parent waits for it. The child's profile holds its own
 * stacks and the ones it inherited, whose ids start at 2^40.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile keep[64];

NOINLINE static void parent_keep(void)
{
    for (int i = 0; i < 10; i++)
        keep[i] = malloc(100);
}

NOINLINE static void child_alloc(void)
{
    for (int i = 0; i < 30; i++)
        keep[10 + i] = malloc(300);
    for (int i = 0; i < 10; i++)
        free(keep[10 + i]);
}

int main(void)
{
    parent_keep();
    pid_t p = fork();
    if (p < 0)
        return 1;
    if (p == 0) {
        child_alloc();
        return 0;
    }
    int st = 0;
    if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    return 0;
}
