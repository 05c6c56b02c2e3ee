/* stream_stall.c: a relay that holds a stream back (tests/integration/stream, queue-full).
 *
 *   stream_stall TARGET_PORT FLAG
 *
 * Listens on 127.0.0.1 (an ephemeral port, printed as "port N"), with a small
 * receive buffer, and accepts one connection. It reads nothing until the file
 * FLAG exists, so the program's sender blocks and its queue fills; then it
 * connects to 127.0.0.1:TARGET_PORT (the collector) and relays both ways until
 * both sides have closed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in loopback(int port)
{
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* Copies what is readable on from to to. Returns 0 at EOF or error. */
static int relay(int from, int to)
{
    char buf[65536];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0)
        return 0;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w <= 0)
            return 0;
        off += w;
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = loopback(0);
    socklen_t al = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al)) {
        perror("stream_stall");
        return 1;
    }
    printf("port %d\n", ntohs(a.sin_port));
    fflush(stdout);
    int c = accept(l, NULL, NULL);
    if (c < 0)
        return 1;
    while (access(argv[2], F_OK) != 0)
        usleep(10000);
    int t = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in ta = loopback(atoi(argv[1]));
    if (connect(t, (struct sockaddr *)&ta, sizeof ta)) {
        perror("stream_stall: connect");
        return 1;
    }
    int c_open = 1, t_open = 1;
    while (c_open || t_open) {
        struct pollfd p[2] = {{c_open ? c : -1, POLLIN, 0}, {t_open ? t : -1, POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            return 1;
        if (p[0].revents && !relay(c, t)) {
            c_open = 0;
            shutdown(t, SHUT_WR); /* the program's half-close, passed on */
        }
        if (p[1].revents && !relay(t, c)) {
            t_open = 0;
            shutdown(c, SHUT_WR); /* the collector's ack is through */
        }
    }
    printf("relayed\n");
    return 0;
}
