/* hostile.c: the attacker's clients of the tools' security tests
 * (tests/security/tools), and the two small helpers those tests need.
 *
 * Run as the unprivileged user (setpriv to nobody) against a server or a
 * collector on 127.0.0.1; it connects nowhere else. Every client mode prints
 * one line of figures and exits 0; the shell tests assert on them. Every wait
 * is bounded by the mode's HOLD or by a fixed timeout, and every socket is
 * closed before the program exits.
 *
 *   half PORT N HOLD        opens N connections that each send half an HTTP
 *                           request (giving up opening at HOLD/2 s), holds
 *                           them up to HOLD s; prints "opened N closed K
 *                           last S" (S: seconds until the server's last close)
 *   trickle PORT GAP HOLD   one connection that sends a request line and then
 *                           one header line every GAP s; prints "closed S"
 *                           (seconds until the server closed it, -1: never)
 *   kept PORT HOLD          one kept-alive connection: one whole request, its
 *                           answer read, then nothing; prints "answered CODE
 *                           closed S" (S: seconds from the answer to the
 *                           server's close, -1.0: never)
 *   idle PORT N HOLD        N connections that send nothing (a collector's
 *                           handshake), held up to HOLD s; prints
 *                           "opened N closed K last S"
 *   chunks PORT N CAP TPL   a valid rip stream hello and header (TPL: a rip
 *                           file whose first 4096 bytes are used), then N
 *                           chunk headers that declare CAP bytes of capacity
 *                           and carry nothing; prints "sent B"
 *   flood PORT MIB TPL      a valid hello and header, then chunks of 1 MiB
 *                           payload until MIB MiB were sent or the collector
 *                           closed; prints "sent B closed C"
 *   stall HOLD              listens on 127.0.0.1 (an ephemeral port, printed
 *                           alone on the first line), accepts connections and
 *                           never answers them, for HOLD s
 *   urlencode STRING        prints STRING percent-encoded, every byte but
 *                           A-Z a-z 0-9 - . _ ~ as %XX
 *   closefds CMD ARGS...    closes every descriptor above 2, then executes
 *                           CMD (a limit on open files is then exact)
 *
 * Timeouts: a connection of half/idle/trickle gets 1 s to be established
 * (a full backlog is the attack: what is open counts); kept, chunks and flood
 * get 10 s for the connection and for each send or receive.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rip_format.h"

#define RH_IO_TIMEOUT_MS 10000 /* kept, chunks, flood: per connect/send/receive */
#define RH_OPEN_TIMEOUT_MS 1000 /* half, idle, trickle: per connect */
#define RH_MAX_SOCKS 4096
#define RH_HEAD_MAX (1 << 20) /* kept: the most answer head it reads */

static const char rh_half_req[] = "GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\n";
static const char rh_whole_req[] = "GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/* Seconds on CLOCK_MONOTONIC. */
static double rh_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rh_die(const char *what)
{
    fprintf(stderr, "hostile: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Parses a decimal integer in [lo, hi]; exits 2 on anything else. */
static long rh_num(const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "hostile: bad number '%s' (want %ld..%ld)\n", s, lo, hi);
        exit(2);
    }
    return v;
}

/* Waits up to ms for events on fd. Returns >0 ready, 0 timed out, <0 error. */
static int rh_wait(int fd, short events, int ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int r;
    do
        r = poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    return r;
}

/* A non-blocking TCP connection to 127.0.0.1:port, established within ms.
 * Returns the socket (the caller closes it), or -1 with errno set (the socket
 * is closed then). */
static int rh_dial(int port, int ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        return fd;
    if (errno != EINPROGRESS)
        goto fail;
    int r = rh_wait(fd, POLLOUT, ms);
    if (r <= 0) {
        if (r == 0)
            errno = ETIMEDOUT;
        goto fail;
    }
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
        goto fail;
    if (err) {
        errno = err;
        goto fail;
    }
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* Sends all n bytes of p on the non-blocking fd within ms in all (a stalled
 * peer fails it with ETIMEDOUT). Returns 0, or -1 with errno set. Never raises
 * SIGPIPE. */
static int rh_send_all(int fd, const void *p, size_t n, int ms)
{
    const char *c = p;
    double deadline = rh_now() + ms / 1000.0;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w > 0) {
            c += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        int left = (int)((deadline - rh_now()) * 1000);
        if (left <= 0 || rh_wait(fd, POLLOUT, left) == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
    return 0;
}

/* Receives up to n bytes from the non-blocking fd, waiting at most ms for
 * them. Returns the count (0: the peer closed), or -1 with errno set
 * (ETIMEDOUT when nothing came). */
static ssize_t rh_recv(int fd, void *p, size_t n, int ms)
{
    for (;;) {
        ssize_t r = recv(fd, p, n, 0);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        int w = rh_wait(fd, POLLIN, ms);
        if (w == 0)
            errno = ETIMEDOUT;
        if (w <= 0)
            return -1;
    }
}

/* Waits until the peer closed every one of the n sockets or hold s passed,
 * reading and dropping whatever they send; a socket is closed (and set to -1)
 * once its peer closed it (end of stream or a reset). Returns how many the
 * peer closed; *last gets the seconds from the call to the last close (0 if
 * none). */
static int rh_wait_closed(int *socks, int n, double hold, double *last)
{
    static struct pollfd pf[RH_MAX_SOCKS];
    static int idx[RH_MAX_SOCKS];
    static char buf[65536];
    double t0 = rh_now();
    int closed = 0;
    *last = 0.0;
    while (closed < n && rh_now() - t0 < hold) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (socks[i] >= 0) {
                pf[m] = (struct pollfd){.fd = socks[i], .events = POLLIN};
                idx[m++] = i;
            }
        int r = poll(pf, (nfds_t)m, 200);
        if (r <= 0)
            continue;
        for (int j = 0; j < m; j++) {
            if (!pf[j].revents)
                continue;
            ssize_t got = recv(pf[j].fd, buf, sizeof buf, 0);
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                continue;
            if (got > 0)
                continue;
            close(pf[j].fd);
            socks[idx[j]] = -1;
            closed++;
            *last = rh_now() - t0;
        }
    }
    return closed;
}

static void rh_close_all(int *socks, int n)
{
    for (int i = 0; i < n; i++)
        if (socks[i] >= 0)
            close(socks[i]);
}

/* half and idle: opens up to n connections (stopping at hold/2 s), sends req
 * on each (NULL: nothing), then waits for the server to close them. A
 * connection that could not be opened or sent on is not counted. */
static int rh_crowd(int port, int n, int hold, const char *req)
{
    static int socks[RH_MAX_SOCKS];
    int k = 0;
    double t0 = rh_now();
    for (int i = 0; i < n; i++) {
        if (rh_now() - t0 > hold / 2.0)
            break; /* the backlog is full: what is open is the attack */
        int fd = rh_dial(port, RH_OPEN_TIMEOUT_MS);
        if (fd < 0)
            continue;
        if (req && send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
            close(fd);
            continue;
        }
        socks[k++] = fd;
    }
    double last;
    int closed = rh_wait_closed(socks, k, hold, &last);
    rh_close_all(socks, k);
    printf("opened %d closed %d last %.1f\n", k, closed, last);
    return 0;
}

/* trickle: a request line, then a header line every gap s until the server
 * closes or hold s passed. */
static int rh_trickle(int port, int gap, int hold)
{
    int fd = rh_dial(port, RH_OPEN_TIMEOUT_MS);
    if (fd < 0)
        rh_die("connect");
    static const char line[] = "GET /list HTTP/1.1\r\n";
    if (send(fd, line, sizeof line - 1, MSG_NOSIGNAL) < 0)
        rh_die("send");
    double t0 = rh_now();
    for (int i = 0; rh_now() - t0 < hold; i++) {
        double last;
        if (rh_wait_closed(&fd, 1, gap, &last)) {
            printf("closed %.1f\n", rh_now() - t0);
            return 0;
        }
        char h[64];
        int hl = snprintf(h, sizeof h, "X-Slow-%d: a\r\n", i);
        if (send(fd, h, (size_t)hl, MSG_NOSIGNAL) < 0) {
            printf("closed %.1f\n", rh_now() - t0);
            close(fd);
            return 0;
        }
    }
    close(fd);
    printf("closed -1\n");
    return 0;
}

/* kept: one whole request, its answer read (head and Content-Length bytes of
 * body), then silence until the server closes or hold s passed. */
static int rh_kept(int port, int hold)
{
    int fd = rh_dial(port, RH_IO_TIMEOUT_MS);
    if (fd < 0)
        rh_die("connect");
    if (rh_send_all(fd, rh_whole_req, sizeof rh_whole_req - 1, RH_IO_TIMEOUT_MS))
        rh_die("send");
    static char data[RH_HEAD_MAX + 1];
    size_t len = 0;
    char *end;
    for (;;) {
        data[len] = 0;
        if ((end = strstr(data, "\r\n\r\n")))
            break;
        if (len == RH_HEAD_MAX) {
            fprintf(stderr, "hostile: kept: no end of the answer's head in %d bytes\n",
                    RH_HEAD_MAX);
            exit(1);
        }
        ssize_t r = rh_recv(fd, data + len, RH_HEAD_MAX - len, RH_IO_TIMEOUT_MS);
        if (r == 0)
            errno = ECONNRESET;
        if (r <= 0)
            rh_die("kept: reading the answer's head");
        len += (size_t)r;
    }
    *end = 0;
    size_t body = len - (size_t)(end + 4 - data);
    long length = 0;
    for (char *l = data; l && *l;) {
        char *nl = strstr(l, "\r\n");
        if (nl)
            *nl = 0;
        if (strncasecmp(l, "content-length:", 15) == 0)
            length = strtol(l + 15, NULL, 10);
        l = nl ? nl + 2 : NULL;
    }
    char code[16] = "";
    sscanf(data, "%*s %15s", code);
    char buf[65536];
    while ((long)body < length) {
        ssize_t r = rh_recv(fd, buf, sizeof buf, RH_IO_TIMEOUT_MS);
        if (r == 0)
            errno = ECONNRESET;
        if (r <= 0)
            rh_die("kept: reading the answer's body");
        body += (size_t)r;
    }
    double t0 = rh_now(), last;
    int k = rh_wait_closed(&fd, 1, hold, &last);
    double t = k ? rh_now() - t0 : -1;
    if (fd >= 0)
        close(fd);
    printf("answered %s closed %.1f\n", code, t);
    return 0;
}

/* A connection to the collector with a hello (wire version 1) and the first
 * RIP_HEADER_SIZE bytes of the rip file tpl, a valid file header. Exits 1 if
 * either cannot be done. */
static int rh_stream_start(int port, const char *tpl)
{
    static uint8_t hdr[RIP_HEADER_SIZE];
    FILE *f = fopen(tpl, "rb");
    if (!f)
        rh_die(tpl);
    size_t n = fread(hdr, 1, sizeof hdr, f);
    fclose(f);
    int fd = rh_dial(port, RH_IO_TIMEOUT_MS);
    if (fd < 0)
        rh_die("connect");
    uint8_t hello[RIP_STREAM_HELLO_SIZE] = {0};
    uint32_t version = 1;
    memcpy(hello, RIP_STREAM_MAGIC, 8);
    memcpy(hello + 8, &version, 4);
    if (rh_send_all(fd, hello, sizeof hello, RH_IO_TIMEOUT_MS) ||
        rh_send_all(fd, hdr, n, RH_IO_TIMEOUT_MS))
        rh_die("send");
    return fd;
}

/* An events chunk header of thread 1: capacity cap, used, seq; its crc covers
 * the header alone (the payload is not included, as the attacker sends it). */
static struct rip_chunk_header rh_chunk_header(uint32_t cap, uint32_t used, uint32_t seq,
                                               int sealed)
{
    struct rip_chunk_header h;
    memset(&h, 0, sizeof h);
    h.magic = RIP_CHUNK_MAGIC;
    h.type = RIP_CHUNK_EVENTS;
    h.flags = sealed ? RIP_CHUNK_F_SEALED : 0;
    h.header_size = RIP_CHUNK_HDR_SIZE;
    h.capacity = cap;
    h.used = used;
    h.tid = 1;
    h.seq = seq;
    h.crc = rip_crc32c(0, &h, sizeof h);
    return h;
}

/* chunks: n sealed empty chunk headers declaring cap bytes each, then the
 * write side shut and the collector's close awaited (10 s at most). */
static int rh_chunks(int port, long n, uint32_t cap, const char *tpl)
{
    int fd = rh_stream_start(port, tpl);
    long sent = 0;
    for (long i = 0; i < n; i++) {
        struct rip_chunk_header h = rh_chunk_header(cap, 0, (uint32_t)i, 1);
        if (rh_send_all(fd, &h, sizeof h, RH_IO_TIMEOUT_MS))
            goto out;
        sent += (long)sizeof h;
    }
    shutdown(fd, SHUT_WR);
    char buf[4096];
    double deadline = rh_now() + RH_IO_TIMEOUT_MS / 1000.0;
    while (rh_now() < deadline && rh_recv(fd, buf, sizeof buf, RH_IO_TIMEOUT_MS) > 0)
        ;
out:
    close(fd);
    printf("sent %ld\n", sent);
    return 0;
}

/* flood: mib unsealed chunks of 1 MiB payload each, until all are sent or a
 * send fails (the collector closed or stopped reading for 10 s). */
static int rh_flood(int port, long mib, const char *tpl)
{
    int fd = rh_stream_start(port, tpl);
    size_t one = RIP_CHUNK_HDR_SIZE + (1u << 20);
    uint8_t *msg = calloc(1, one);
    if (!msg)
        rh_die("calloc");
    struct rip_chunk_header h = rh_chunk_header(1u << 20, 1u << 20, 0, 0);
    memcpy(msg, &h, sizeof h);
    long sent = 0;
    int closed = 0;
    for (long i = 0; i < mib; i++) {
        if (rh_send_all(fd, msg, one, RH_IO_TIMEOUT_MS)) {
            closed = 1;
            break;
        }
        sent += (long)one;
    }
    close(fd);
    free(msg);
    printf("sent %ld closed %d\n", sent, closed);
    return 0;
}

/* stall: a listener on 127.0.0.1 that accepts and never answers, for hold s;
 * the port goes to stdout first (flushed). Accepted connections stay open
 * until the end (as many as the descriptor limit allows). */
static int rh_stall(int hold)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 8) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        rh_die("stall: listen");
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    static int conns[RH_MAX_SOCKS];
    int n = 0;
    double t0 = rh_now();
    while (rh_now() - t0 < hold) {
        if (rh_wait(l, POLLIN, 1000) <= 0)
            continue;
        int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (c >= 0 && n < RH_MAX_SOCKS)
            conns[n++] = c; /* accepted, never answered */
        else if (c >= 0)
            close(c);
        else if (errno != EAGAIN && errno != EINTR)
            usleep(100000); /* out of descriptors: do not spin */
    }
    rh_close_all(conns, n);
    close(l);
    return 0;
}

/* urlencode: s with every byte outside the URL's unreserved set as %XX. */
static int rh_urlencode(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            putchar(*p);
        else
            printf("%%%02X", *p);
    }
    putchar('\n');
    return 0;
}

/* closefds: every descriptor above 2 closed, then argv executed (PATH
 * searched). Returns only on failure. */
static int rh_closefds(char **argv)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
        for (int fd = 3; fd < (1 << 16); fd++)
            close(fd);
    execvp(argv[0], argv);
    fprintf(stderr, "hostile: %s: %s\n", argv[0], strerror(errno));
    return 127;
}

static int rh_usage(void)
{
    fprintf(stderr, "usage: hostile half|idle PORT N HOLD | trickle PORT GAP HOLD |"
                    " kept PORT HOLD | chunks PORT N CAP TPL | flood PORT MIB TPL |"
                    " stall HOLD | urlencode STRING | closefds CMD ARGS...\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return rh_usage();
    const char *m = argv[1];
    if (!strcmp(m, "urlencode") && argc == 3)
        return rh_urlencode(argv[2]);
    if (!strcmp(m, "closefds"))
        return rh_closefds(argv + 2);
    if (!strcmp(m, "stall") && argc == 3)
        return rh_stall((int)rh_num(argv[2], 1, 3600));
    int port = (int)rh_num(argv[2], 1, 65535);
    if (!strcmp(m, "half") && argc == 5)
        return rh_crowd(port, (int)rh_num(argv[3], 0, RH_MAX_SOCKS),
                        (int)rh_num(argv[4], 1, 3600), rh_half_req);
    if (!strcmp(m, "idle") && argc == 5)
        return rh_crowd(port, (int)rh_num(argv[3], 0, RH_MAX_SOCKS),
                        (int)rh_num(argv[4], 1, 3600), NULL);
    if (!strcmp(m, "trickle") && argc == 5)
        return rh_trickle(port, (int)rh_num(argv[3], 1, 3600), (int)rh_num(argv[4], 1, 3600));
    if (!strcmp(m, "kept") && argc == 4)
        return rh_kept(port, (int)rh_num(argv[3], 1, 3600));
    if (!strcmp(m, "chunks") && argc == 6)
        return rh_chunks(port, rh_num(argv[3], 0, 1000000),
                         (uint32_t)rh_num(argv[4], 0, UINT32_MAX), argv[5]);
    if (!strcmp(m, "flood") && argc == 5)
        return rh_flood(port, rh_num(argv[3], 0, 1 << 16), argv[4]);
    return rh_usage();
}
