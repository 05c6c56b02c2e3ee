/* rep_threads.c: exact per-thread and per-stack figures for the in-process
 * reports (tests/integration/inproc/run.sh).
 *
 *   worker_a: 100 blocks of 1000 bytes from site_a, frees 40 of them;
 *   worker_b (after worker_a is done): 50 blocks of 2000 bytes from site_b,
 *             frees 10 of worker_a's remaining blocks and 5 of its own.
 * Both threads stay alive (waiting) while main writes the reports, so their
 * names can be read. Usage: rep_threads OUTDIR [signal]
 *   writes OUTDIR/threads.csv, threads.txt, sites.csv (filter "site_"),
 *   sites_min.csv (at least 60000 bytes in use), sites_a.txt (function "site_a");
 *   with "signal" it raises SIGUSR1 instead and allocates once more, so that
 *   RHEAPER_REPORT_SIGNAL=USR1 writes the report file.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rheaper.h>

static void *a_blocks[100];
static void *b_blocks[50];
static sem_t a_done, b_done, release;
static void *volatile sink;

static __attribute__((noinline)) void *site_a(void)
{
    void *p = malloc(1000);
    memset(p, 1, 1000);
    return p;
}

static __attribute__((noinline)) void *site_b(void)
{
    void *p = malloc(2000);
    memset(p, 2, 2000);
    return p;
}

static void *worker_a(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker_a");
    for (int i = 0; i < 100; i++)
        a_blocks[i] = site_a();
    for (int i = 0; i < 40; i++)
        free(a_blocks[i]);
    sem_post(&a_done);
    sem_wait(&release);
    return NULL;
}

static void *worker_b(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker_b");
    for (int i = 0; i < 50; i++)
        b_blocks[i] = site_b();
    for (int i = 40; i < 50; i++)
        free(a_blocks[i]); /* worker_a's: freed by another thread */
    for (int i = 0; i < 5; i++)
        free(b_blocks[i]);
    sem_post(&b_done);
    sem_wait(&release);
    return NULL;
}

static int out(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    pthread_t ta, tb;
    sem_init(&a_done, 0, 0);
    sem_init(&b_done, 0, 0);
    sem_init(&release, 0, 0);
    if (pthread_create(&ta, NULL, worker_a, NULL))
        return 1;
    sem_wait(&a_done);
    if (pthread_create(&tb, NULL, worker_b, NULL))
        return 1;
    sem_wait(&b_done);
    int rc = 0;
    if (argc > 2 && !strcmp(argv[2], "signal")) {
        raise(SIGUSR1);
        sink = malloc(8); /* the next hooked call writes the report */
        free(sink);
    } else {
        int fd = out(argv[1], "threads.csv");
        rc |= rheaper_thread_report(fd, RHEAPER_REPORT_CSV);
        close(fd);
        fd = out(argv[1], "threads.txt");
        rc |= rheaper_thread_report(fd, RHEAPER_REPORT_TEXT);
        close(fd);
        struct rheaper_report_filter f = {0, "site_", 0};
        fd = out(argv[1], "sites.csv");
        rc |= rheaper_callsite_report(fd, RHEAPER_REPORT_CSV, &f);
        close(fd);
        struct rheaper_report_filter m = {60000, NULL, 0};
        fd = out(argv[1], "sites_min.csv");
        rc |= rheaper_callsite_report(fd, RHEAPER_REPORT_CSV, &m);
        close(fd);
        struct rheaper_report_filter a = {0, "site_a", 0};
        fd = out(argv[1], "sites_a.txt");
        rc |= rheaper_callsite_report(fd, RHEAPER_REPORT_TEXT, &a);
        close(fd);
    }
    sem_post(&release);
    sem_post(&release);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("reports rc %d\n", rc);
    return rc != 0;
}
