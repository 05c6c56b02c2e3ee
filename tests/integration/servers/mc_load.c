/* mc_load.c: a small memcached client for tests/integration/servers/memcached.sh,
 * built with the system compiler (it is not the program under test).
 *
 *   mc_load PORT fill N SIZE [MB GO] N sets of keys k0..k(N-1), SIZE-byte
 *                                    values; with MB and GO, the same N sets
 *                                    first (memcached's buffers grow to this
 *                                    connection's use), then it waits until
 *                                    the file GO exists and sends
 *                                    `cache_memlimit MB` before the sets
 *   mc_load PORT load SECONDS CONNS KEYS SIZE
 *                                    CONNS persistent connections, each set
 *                                    then get of a key in k0..k(KEYS-1), in
 *                                    turn, for SECONDS; prints "ops N hits H"
 *   mc_load PORT conns K             K connections open at once, a "version"
 *                                    on each, then all closed; "opened K"
 *   mc_load PORT cmd LINE            sends LINE, prints the one-line reply
 *   mc_load PORT stat NAME           prints the value of `stats` line NAME
 *
 * The ASCII protocol over 127.0.0.1, blocking sockets, one thread. Exits 1
 * with a line on stderr on any unexpected reply.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;

static int conn_open(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("mc_load: connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror("mc_load: write");
            exit(1);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads until the reply ends with end (a terminator such as "\r\n" or
 * "END\r\n") into buf; returns its length. */
static size_t read_until(int fd, char *buf, size_t size, const char *end)
{
    size_t len = 0, el = strlen(end);
    for (;;) {
        ssize_t r = read(fd, buf + len, size - 1 - len);
        if (r <= 0) {
            fprintf(stderr, "mc_load: connection closed after %zu bytes\n", len);
            exit(1);
        }
        len += (size_t)r;
        buf[len] = '\0';
        if (len >= el && !memcmp(buf + len - el, end, el))
            return len;
        if (len + 1 >= size) {
            fprintf(stderr, "mc_load: reply too long\n");
            exit(1);
        }
    }
}

static char *value;
static char reply[1 << 20];

static void do_set(int fd, long key, int size)
{
    char hdr[96];
    int n = snprintf(hdr, sizeof hdr, "set k%ld 0 0 %d\r\n", key, size);
    send_all(fd, hdr, (size_t)n);
    send_all(fd, value, (size_t)size + 2);
    read_until(fd, reply, sizeof reply, "\r\n");
    if (strcmp(reply, "STORED\r\n")) {
        fprintf(stderr, "mc_load: set k%ld: %s", key, reply);
        exit(1);
    }
}

/* Returns 1 on a hit. */
static int do_get(int fd, long key)
{
    char hdr[64];
    int n = snprintf(hdr, sizeof hdr, "get k%ld\r\n", key);
    send_all(fd, hdr, (size_t)n);
    read_until(fd, reply, sizeof reply, "END\r\n");
    return !strncmp(reply, "VALUE ", 6);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: mc_load PORT fill|load|conns|stat ...\n");
        return 2;
    }
    port = atoi(argv[1]);
    const char *cmd = argv[2];
    value = malloc(1 << 20);
    memset(value, 'v', 1 << 20);
    if (!strcmp(cmd, "fill") && (argc == 5 || argc == 7)) {
        long n = atol(argv[3]);
        int size = atoi(argv[4]);
        memcpy(value + size, "\r\n", 2);
        int fd = conn_open();
        if (argc == 7) {
            for (long i = 0; i < n; i++)
                do_set(fd, i, size);
            printf("connected\n");
            fflush(stdout);
            while (access(argv[6], F_OK) != 0)
                usleep(10000);
            char line[64];
            int len = snprintf(line, sizeof line, "cache_memlimit %d\r\n", atoi(argv[5]));
            send_all(fd, line, (size_t)len);
            read_until(fd, reply, sizeof reply, "\r\n");
            if (strcmp(reply, "OK\r\n")) {
                fprintf(stderr, "mc_load: cache_memlimit: %s", reply);
                return 1;
            }
        }
        for (long i = 0; i < n; i++)
            do_set(fd, i, size);
        close(fd);
        printf("filled %ld\n", n);
        return 0;
    }
    if (!strcmp(cmd, "load") && argc == 7) {
        double secs = atof(argv[3]);
        int nc = atoi(argv[4]);
        long keys = atol(argv[5]);
        int size = atoi(argv[6]);
        memcpy(value + size, "\r\n", 2);
        int *fds = calloc((size_t)nc, sizeof *fds);
        for (int i = 0; i < nc; i++)
            fds[i] = conn_open();
        long ops = 0, hits = 0;
        unsigned long x = 88172645463325252ul;
        double end = now() + secs;
        while (now() < end) {
            for (int i = 0; i < nc; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                long k = (long)(x % (unsigned long)keys);
                do_set(fds[i], k, size);
                hits += do_get(fds[i], (long)((x >> 20) % (unsigned long)keys));
                ops += 2;
            }
        }
        for (int i = 0; i < nc; i++)
            close(fds[i]);
        printf("ops %ld hits %ld\n", ops, hits);
        return 0;
    }
    if (!strcmp(cmd, "conns") && argc == 4) {
        int k = atoi(argv[3]);
        if (k < 1)
            return 2;
        int *fds = calloc((size_t)k, sizeof *fds);
        for (int i = 0; i < k; i++) {
            fds[i] = conn_open();
            send_all(fds[i], "version\r\n", 9);
            read_until(fds[i], reply, sizeof reply, "\r\n");
            if (strncmp(reply, "VERSION ", 8)) {
                fprintf(stderr, "mc_load: version: %s", reply);
                return 1;
            }
        }
        for (int i = 0; i < k; i++)
            close(fds[i]);
        printf("opened %d\n", k);
        return 0;
    }
    if (!strcmp(cmd, "cmd") && argc == 4) {
        int fd = conn_open();
        send_all(fd, argv[3], strlen(argv[3]));
        send_all(fd, "\r\n", 2);
        read_until(fd, reply, sizeof reply, "\r\n");
        close(fd);
        fputs(reply, stdout);
        return 0;
    }
    if (!strcmp(cmd, "stat") && argc == 4) {
        int fd = conn_open();
        send_all(fd, "stats\r\n", 7);
        read_until(fd, reply, sizeof reply, "END\r\n");
        close(fd);
        char want[128];
        snprintf(want, sizeof want, "STAT %s ", argv[3]);
        char *p = strstr(reply, want);
        if (!p) {
            fprintf(stderr, "mc_load: no stat %s\n", argv[3]);
            return 1;
        }
        p += strlen(want);
        printf("%.*s\n", (int)strcspn(p, "\r\n"), p);
        return 0;
    }
    fprintf(stderr, "mc_load: bad arguments\n");
    return 2;
}
