/* rep_http.c: the example (docs/environment.md) of serving rheaper's in-process reports
 * over HTTP (tests/integration/inproc/run.sh fetches them with curl over 127.0.0.1).
 *
 *   rep_http PORTFILE
 *
 * Fills a cache with 30 blocks of 4096 bytes (cache_fill, kept), listens on
 * 127.0.0.1 on a free port (written to PORTFILE), and answers one request at a
 * time:
 *   GET /heap/threads                 the thread report (text)
 *   GET /heap/callsites?min=N&fn=S    the call-site report (CSV), stacks with at
 *                                     least N bytes in use and a function
 *                                     containing S
 *   GET /quit                         exits
 * The reports are written straight to the client's socket: the runtime
 * allocates nothing through malloc and uses no stdio for them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rheaper.h>

static void *cache[30];

static __attribute__((noinline)) void cache_fill(void)
{
    for (int i = 0; i < 30; i++) {
        cache[i] = malloc(4096);
        memset(cache[i], i, 4096);
    }
}

/* The value of ?key= or &key= in the request line (copied into out). */
static void query(const char *req, const char *key, char *out, size_t len)
{
    out[0] = 0;
    const char *q = strchr(req, '?'), *end = q ? strchr(q, ' ') : NULL;
    size_t kl = strlen(key);
    for (const char *p = q; p && (!end || p < end); p = strchr(p + 1, '&')) {
        if (!strncmp(p + 1, key, kl) && p[1 + kl] == '=') {
            size_t n = strcspn(p + 2 + kl, "& \r\n");
            if (n >= len)
                n = len - 1;
            memcpy(out, p + 2 + kl, n);
            out[n] = 0;
            return;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    cache_fill();
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 8) ||
        getsockname(s, (struct sockaddr *)&a, &al))
        return 1;
    FILE *pf = fopen(argv[1], "w");
    if (!pf)
        return 1;
    fprintf(pf, "%d\n", ntohs(a.sin_port));
    fclose(pf);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0)
            continue;
        char req[2048];
        ssize_t n = read(c, req, sizeof req - 1);
        req[n > 0 ? n : 0] = 0;
        const char *ok = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n";
        if (!strncmp(req, "GET /heap/threads", 17)) {
            write(c, ok, strlen(ok));
            rheaper_thread_report(c, RHEAPER_REPORT_TEXT);
        } else if (!strncmp(req, "GET /heap/callsites", 19)) {
            char min[32], fn[128];
            query(req, "min", min, sizeof min);
            query(req, "fn", fn, sizeof fn);
            struct rheaper_report_filter f = {strtoull(min, NULL, 10), fn, 0};
            write(c, ok, strlen(ok));
            rheaper_callsite_report(c, RHEAPER_REPORT_CSV, &f);
        } else if (!strncmp(req, "GET /quit", 9)) {
            write(c, ok, strlen(ok));
            close(c);
            break;
        } else {
            const char *nf = "HTTP/1.0 404 Not Found\r\n\r\n";
            write(c, nf, strlen(nf));
        }
        close(c);
    }
    close(s);
    return 0;
}
