/* rh_serve_guard.c: what keeps `rheaper serve` safe to leave running.
 *
 * Two guards, both outside the endpoints:
 *
 * The Host check. A web page the user visits can make the browser send
 * requests to 127.0.0.1:8080 under a name the page's owner controls (DNS
 * rebinding: attacker.example first resolves to the attacker, then to
 * 127.0.0.1), and the browser then lets the page read the answers. Such a
 * request carries the attacker's name in its Host header, so the server
 * answers only a Host that names the listening address, `localhost`, a
 * loopback address, an address of this machine when it listens on all of
 * them, or a name the operator added with --allow-host; anything else,
 * a missing Host included, is a 403.
 *
 * The connection table. libmicrohttpd's pool threads poll their connections
 * (a slow client holds no thread), but its timeout is one of idleness, so a
 * client that sends one header line every few seconds stays forever, and its
 * connection limit lets a crowd of half requests refuse real clients. Every
 * connection is therefore listed here from accept to close with the time its
 * current request began (the accept, or the end of the previous request on a
 * kept-alive connection): a request whose head has not arrived within the
 * head timeout is cut (shutdown of its socket, which libmicrohttpd then
 * closes), checked four times a second by one watchdog thread; and when the
 * table is nearly full, a new connection cuts the oldest one still waiting
 * for its head, so a real client, which sends its head at once, always gets
 * in. shutdown() is only called under the table's lock on a connection the
 * table still lists; libmicrohttpd reports a close (which removes it) before
 * it closes the descriptor, so the descriptor is never one reused by another.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rh_serve.h"

/* ---- the Host check ------------------------------------------------------ */

static struct {
    struct in_addr listen;
    int wildcard;       /* listening on 0.0.0.0: every local address counts */
    const char **allow; /* --allow-host names */
    int nallow;
} rh_hosts;

void rh_guard_hosts(struct in_addr listen, const char **allow, int nallow)
{
    rh_hosts.listen = listen;
    rh_hosts.wildcard = listen.s_addr == htonl(INADDR_ANY);
    rh_hosts.allow = allow;
    rh_hosts.nallow = nallow;
}

/* 1 when a is an address of one of this machine's interfaces. */
static int rh_guard_local_addr(int family, const void *a)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return 0;
    int yes = 0;
    for (struct ifaddrs *i = ifs; i && !yes; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != family)
            continue;
        if (family == AF_INET)
            yes = !memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, 4);
        else
            yes = !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, a, 16);
    }
    freeifaddrs(ifs);
    return yes;
}

int rh_guard_host_ok(const char *host)
{
    if (!host || !*host)
        return 0;
    char h[256];
    size_t n = strlen(host);
    if (n >= sizeof h)
        return 0;
    /* strip the port: "[::1]:8080", "127.0.0.1:8080", "name:8080" */
    if (host[0] == '[') {
        const char *e = strchr(host, ']');
        if (!e || (e[1] && e[1] != ':'))
            return 0;
        n = (size_t)(e - host - 1);
        memcpy(h, host + 1, n);
    } else {
        const char *c = strchr(host, ':');
        if (c)
            n = (size_t)(c - host);
        memcpy(h, host, n);
    }
    h[n] = 0;
    if (n && h[n - 1] == '.') /* "localhost." is localhost */
        h[--n] = 0;
    if (!n)
        return 0;
    if (!strcasecmp(h, "localhost"))
        return 1;
    for (int i = 0; i < rh_hosts.nallow; i++)
        if (!strcasecmp(h, rh_hosts.allow[i]))
            return 1;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, h, &a4) == 1) {
        if ((ntohl(a4.s_addr) >> 24) == 127 || a4.s_addr == rh_hosts.listen.s_addr)
            return 1;
        return rh_hosts.wildcard && rh_guard_local_addr(AF_INET, &a4);
    }
    if (inet_pton(AF_INET6, h, &a6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127))
            return 1;
        return rh_hosts.wildcard && rh_guard_local_addr(AF_INET6, &a6);
    }
    return 0; /* a name nobody allowed: a rebinding page's */
}

/* ---- the connection table ------------------------------------------------- */

struct rh_gconn {
    struct MHD_Connection *c;
    int fd;
    int waiting;        /* 1: the current request's head has not arrived */
    struct timespec t0; /* when the current request began */
};

static struct {
    pthread_mutex_t lock;
    struct rh_gconn *v;
    unsigned n, cap, evict_at;
    unsigned head_s;
    unsigned cut_slow, cut_crowd; /* connections cut, for the stop line */
    pthread_t thread;
    int running, stop;
    pthread_cond_t wake;
} rh_tab = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static double rh_guard_age(const struct timespec *t0, const struct timespec *now)
{
    return (double)(now->tv_sec - t0->tv_sec) + (double)(now->tv_nsec - t0->tv_nsec) / 1e9;
}

/* Index of c in the table, or -1. Under the lock. */
static int rh_guard_find(struct MHD_Connection *c)
{
    for (unsigned i = 0; i < rh_tab.n; i++)
        if (rh_tab.v[i].c == c)
            return (int)i;
    return -1;
}

/* Cuts entry i (its socket is shut down; libmicrohttpd closes it). Under the
 * lock. The entry stays until libmicrohttpd reports the close. */
static void rh_guard_cut(unsigned i)
{
    shutdown(rh_tab.v[i].fd, SHUT_RDWR);
    rh_tab.v[i].waiting = 0; /* cut once */
}

static void *rh_guard_watch(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rh_tab.lock);
    while (!rh_tab.stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&rh_tab.wake, &rh_tab.lock, &until);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        for (unsigned i = 0; i < rh_tab.n; i++)
            if (rh_tab.v[i].waiting && rh_guard_age(&rh_tab.v[i].t0, &now) >= rh_tab.head_s) {
                rh_guard_cut(i);
                rh_tab.cut_slow++;
            }
    }
    pthread_mutex_unlock(&rh_tab.lock);
    return NULL;
}

int rh_guard_start(unsigned limit, unsigned head_s)
{
    rh_tab.cap = limit;
    rh_tab.v = calloc(limit, sizeof *rh_tab.v);
    if (!rh_tab.v)
        return -1;
    /* a margin below libmicrohttpd's own limit, so that it never refuses
     * while a half request can be cut instead */
    rh_tab.evict_at = limit > 32 ? limit - 16 : limit / 2;
    rh_tab.head_s = head_s;
    if (pthread_create(&rh_tab.thread, NULL, rh_guard_watch, NULL) != 0)
        return -1;
    rh_tab.running = 1;
    return 0;
}

void rh_guard_stop(void)
{
    if (rh_tab.running) {
        pthread_mutex_lock(&rh_tab.lock);
        rh_tab.stop = 1;
        pthread_cond_signal(&rh_tab.wake);
        pthread_mutex_unlock(&rh_tab.lock);
        pthread_join(rh_tab.thread, NULL);
        rh_tab.running = 0;
    }
    if (rh_tab.cut_slow || rh_tab.cut_crowd)
        fprintf(stderr,
                "rheaper: serve: cut %u connection%s whose request did not arrive within %u s"
                " and %u to make room for new ones\n",
                rh_tab.cut_slow, rh_tab.cut_slow == 1 ? "" : "s", rh_tab.head_s, rh_tab.cut_crowd);
    free(rh_tab.v);
    rh_tab.v = NULL;
    rh_tab.n = 0;
}

void rh_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)socket_context;
    pthread_mutex_lock(&rh_tab.lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        if (rh_tab.n >= rh_tab.evict_at) {
            /* nearly full: the oldest connection still waiting for its head
             * makes room */
            int old = -1;
            for (unsigned i = 0; i < rh_tab.n; i++)
                if (rh_tab.v[i].waiting &&
                    (old < 0 || rh_guard_age(&rh_tab.v[i].t0, &rh_tab.v[old].t0) < 0))
                    old = (int)i;
            if (old >= 0) {
                rh_guard_cut((unsigned)old);
                rh_tab.cut_crowd++;
            }
        }
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci && rh_tab.n < rh_tab.cap) {
            struct rh_gconn *g = &rh_tab.v[rh_tab.n++];
            g->c = c;
            g->fd = ci->connect_fd;
            g->waiting = 1;
            clock_gettime(CLOCK_MONOTONIC, &g->t0);
        }
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        int i = rh_guard_find(c);
        if (i >= 0)
            rh_tab.v[i] = rh_tab.v[--rh_tab.n];
    }
    pthread_mutex_unlock(&rh_tab.lock);
}

void rh_guard_head(struct MHD_Connection *c, int arrived)
{
    pthread_mutex_lock(&rh_tab.lock);
    int i = rh_guard_find(c);
    if (i >= 0) {
        rh_tab.v[i].waiting = !arrived;
        if (!arrived)
            clock_gettime(CLOCK_MONOTONIC, &rh_tab.v[i].t0);
    }
    pthread_mutex_unlock(&rh_tab.lock);
}
