/* slow_client.c: a client that sends half a request and waits (slowloris).
 *
 * usage: slow_client PORT N SECONDS
 * Opens N connections to 127.0.0.1:PORT, sends on each the first line and one
 * header of a GET request but never the blank line that ends it, then waits
 * up to SECONDS for the server to close each one. Prints "closed K of N after
 * S s" and exits 0 when the server closed all of them (it must not wait for a
 * client forever), 1 otherwise. The test runs ordinary requests meanwhile.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int port = atoi(argv[1]), n = atoi(argv[2]), secs = atoi(argv[3]);
    if (n < 1 || n > 256)
        return 2;
    int fd[256];
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char half[] = "GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < n; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&sa, sizeof sa) != 0) {
            perror("slow_client: connect");
            return 1;
        }
        if (write(fd[i], half, sizeof half - 1) != (ssize_t)(sizeof half - 1)) {
            perror("slow_client: write");
            return 1;
        }
    }
    time_t start = time(NULL);
    int closed = 0;
    char buf[4096];
    while (closed < n && time(NULL) - start < secs) {
        struct pollfd p[256];
        for (int i = 0; i < n; i++) {
            p[i].fd = fd[i];
            p[i].events = POLLIN;
        }
        if (poll(p, (nfds_t)n, 500) < 0)
            break;
        for (int i = 0; i < n; i++)
            if (fd[i] >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t r = read(fd[i], buf, sizeof buf);
                if (r <= 0) {
                    close(fd[i]);
                    fd[i] = -1;
                    closed++;
                }
            }
    }
    printf("closed %d of %d after %ld s\n", closed, n, (long)(time(NULL) - start));
    return closed == n ? 0 : 1;
}
