/* rh_cli_collect.c: `rheaper collect`, the receiving end of RHEAPER_STREAM
 *.
 *
 *     rheaper collect --listen ADDR:PORT --dir DIR [--any] [--max-clients N]
 *                     [--idle-timeout S] [--max-bytes N]
 *
 * One thread, one poll loop: any number of programs stream at once, each
 * connection written to its own ordinary rip file in DIR (rip-<pid>, or
 * rip-<pid>.N when that name is taken: nothing is ever overwritten), so
 * rheaper-convert and rheaper live read it like a local one. The wire protocol
 * (FORMAT.md "Streaming") is the rip file itself, cut to
 * what matters: a 16-byte hello, the 4096-byte file header, then each chunk's
 * 64-byte header followed by its `used` payload bytes. A chunk's payload is
 * written straight to its place in the file as it arrives (no buffer grows with
 * what a client claims) and its header last, so the file always ends at a whole
 * chunk: a stream cut off mid-chunk leaves a profile that converts as cut short,
 * a stream that carried its trailer a clean one. After the sender's half-close
 * the collector confirms with a 16-byte ack naming the bytes it received.
 * A version 2 stream also carries partial chunks (what an open chunk gained,
 * sent within a second of being recorded): the first one of a chunk reserves
 * the chunk's place in the file, each later one and finally the sealed chunk
 * itself are written there (rh_collect_place), so a program killed while its
 * chunks were open leaves their records in the file, unsealed, as a local
 * file would hold them.
 *
 * Bad input closes that connection with one line on stderr and disturbs no
 * other. There is no authentication: a listen address that is not loopback is
 * refused unless --any is given (then a warning says so); tunnel with ssh -L.
 * SIGINT and SIGTERM stop it cleanly: every connection's file is cut at its last
 * whole chunk.
 *
 * Senders are not trusted. A connection must complete its hello and header
 * within RH_COLLECT_HEAD_S seconds, and while the table is full a new
 * connection replaces the oldest one that has not (or else the one quiet
 * longest between chunks, once quiet for RH_COLLECT_QUIET_S); a chunk once begun must
 * go on arriving (no byte for --idle-timeout seconds closes it); between
 * chunks a stream may be quiet as long as its program is (TCP keepalive
 * finds a peer that is gone). A chunk is stored with the capacity its
 * payload needs, not the one its header declares (its checksum recomputed,
 * a bad one kept bad), so headers that declare room and carry nothing cannot
 * make a huge sparse file, and --max-bytes caps each sender's file. At the
 * open-file limit the listening socket leaves the poll set for a while
 * (backing off up to RH_COLLECT_BACKOFF_MAX_MS) and the condition is said
 * once, not once per attempt.
 *
 * With --clickhouse URL, each profile whose stream ended cleanly is pushed
 * (rh_push_path: converted into a temp database, sent, the rip kept) by a
 * child process, so receiving goes on while it converts and sends; the
 * collector reaps its children as they end and, when it stops, waits at most
 * RH_COLLECT_PUSH_WAIT_S seconds for those still pushing before ending them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rh_cli.h"
#include "rh_core.h"
#include "rh_push.h"
#include "rh_safefile.h"
#include "rip_format.h"

#define RH_COLLECT_HEAD_S 10               /* hello and header within this */
#define RH_COLLECT_IDLE_S 60               /* default --idle-timeout: a chunk stalls */
#define RH_COLLECT_QUIET_S 300             /* quiet between chunks: replaceable when full */
#define RH_COLLECT_MAX_BYTES (32ull << 30) /* default --max-bytes per sender */
#define RH_COLLECT_BACKOFF_MAX_MS 2000     /* longest pause of accept at EMFILE */
#define RH_COLLECT_PUSH_WAIT_S 10          /* at stop, for pushes still running */
#define RH_COLLECT_MAX_PUSHES 64           /* push children at once */

enum { CP_HELLO, CP_HEADER, CP_CHDR, CP_PAYLOAD };

/* A chunk the stream sent in part (version 2): where it was placed. */
struct rh_part {
    uint8_t type;
    uint32_t slot, seq, capacity;
    uint64_t off;  /* its file offset */
    uint32_t have; /* payload bytes written */
};
/* Open chunks one stream may have in part at once: each slot's and the
 * shared writer's (the runtime's RH_MAX_TRACKERS, and some). */
#define RH_COLLECT_MAX_PARTS 65600u
/* Open chunks all streams together may have in part: bounds the collector's
 * memory for them (32 bytes each) whatever the number of senders. */
#define RH_COLLECT_MAX_PARTS_ALL (4u * RH_COLLECT_MAX_PARTS)
static size_t rh_collect_parts_all; /* open parts of every connection */

/* One streaming program. */
struct rh_conn {
    int fd;    /* the socket, -1 when the entry is free */
    int file;  /* the rip file, -1 before the header arrived */
    int phase; /* CP_* */
    char peer[64];
    uint8_t peer6[16]; /* the peer as IPv6 (v4-mapped) for the header */
    char path[4096];
    uint8_t buf[RIP_HEADER_SIZE]; /* hello, header or chunk header being read */
    size_t have;                  /* bytes of buf filled */
    struct rip_chunk_header ch;   /* the chunk whose payload is arriving */
    uint32_t payload_left;
    uint64_t off;      /* file offset of the next chunk */
    uint64_t received; /* bytes read from the socket */
    uint64_t chunks;
    int trailer;
    uint32_t pid;
    uint32_t version;      /* the stream's wire version */
    uint64_t cur_off;      /* file offset of the chunk whose payload is arriving */
    int32_t cur_part;      /* its entry in parts, -1: a chunk placed at the end */
    int cur_is_part;       /* it is a partial chunk */
    struct rh_part *parts; /* chunks sent in part, not yet sealed */
    size_t nparts, capparts;
    uint64_t t0, last; /* ms: accepted, last byte received */
    uint32_t crc_in;   /* the arriving chunk's checksum as sent, so far */
    uint32_t crc_out;  /* the checksum of the chunk as stored, so far */
};

/* limits of every connection (rh_cmd_collect's options) */
static unsigned rh_collect_idle_s = RH_COLLECT_IDLE_S;
static uint64_t rh_collect_max_bytes = RH_COLLECT_MAX_BYTES;

static uint64_t rh_collect_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static volatile sig_atomic_t rh_collect_stop;

/* --clickhouse: where each complete profile is pushed (url NULL: nowhere) */
static struct rh_push_opts rh_collect_push;
static unsigned rh_collect_pushing; /* children still pushing */
static pid_t rh_collect_pids[RH_COLLECT_MAX_PUSHES];

/* Pushes the profile at path in a child process. */
static void rh_collect_push_start(const char *path)
{
    if (rh_collect_pushing >= RH_COLLECT_MAX_PUSHES) {
        fprintf(stderr,
                "rheaper collect: %s: not pushed: %d pushes are running already; push it "
                "with rheaper push\n",
                path, RH_COLLECT_MAX_PUSHES);
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rheaper collect: %s: not pushed: cannot fork (%s)\n", path,
                strerror(errno));
        return;
    }
    if (pid == 0) {
        /* the child needs none of the sockets and files of the collector */
        close_range(3, ~0u, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int rc = rh_push_path("rheaper collect", path, &rh_collect_push);
        fflush(NULL);
        _exit(rc);
    }
    for (unsigned i = 0; i < RH_COLLECT_MAX_PUSHES; i++)
        if (!rh_collect_pids[i]) {
            rh_collect_pids[i] = pid;
            break;
        }
    rh_collect_pushing++;
}

/* Forgets the push child pid (reaped). */
static void rh_collect_forget(pid_t pid)
{
    for (unsigned i = 0; i < RH_COLLECT_MAX_PUSHES; i++)
        if (rh_collect_pids[i] == pid) {
            rh_collect_pids[i] = 0;
            if (rh_collect_pushing)
                rh_collect_pushing--;
            return;
        }
}

/* Reaps the push children that ended. */
static void rh_collect_reap(void)
{
    int st;
    pid_t pid;
    while (rh_collect_pushing && (pid = waitpid(-1, &st, WNOHANG)) > 0)
        rh_collect_forget(pid);
}

/* At stop: waits up to RH_COLLECT_PUSH_WAIT_S for the pushes still running
 * (a push can be stuck: a ClickHouse that does not answer, a module file
 * that blocks), then ends them with SIGTERM, and SIGKILL 2 s later. Their
 * rips stay; `rheaper push` sends them again (idempotent). */
static void rh_collect_wait_pushes(void)
{
    uint64_t start = rh_collect_now_ms();
    int termed = 0;
    while (rh_collect_pushing) {
        rh_collect_reap();
        if (!rh_collect_pushing)
            break;
        uint64_t waited = rh_collect_now_ms() - start;
        if (!termed && waited >= RH_COLLECT_PUSH_WAIT_S * 1000u) {
            fprintf(stderr,
                    "rheaper collect: %u push%s still running after %d s: ending them; their "
                    "rips are kept, send them with rheaper push\n",
                    rh_collect_pushing, rh_collect_pushing == 1 ? "" : "es",
                    RH_COLLECT_PUSH_WAIT_S);
            for (unsigned i = 0; i < RH_COLLECT_MAX_PUSHES; i++)
                if (rh_collect_pids[i])
                    kill(rh_collect_pids[i], SIGTERM);
            termed = 1;
        } else if (termed == 1 && waited >= RH_COLLECT_PUSH_WAIT_S * 1000u + 2000u) {
            for (unsigned i = 0; i < RH_COLLECT_MAX_PUSHES; i++)
                if (rh_collect_pids[i])
                    kill(rh_collect_pids[i], SIGKILL);
            termed = 2;
        }
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
    }
}

static void rh_collect_on_child(int sig)
{
    (void)sig; /* only wakes ppoll; the loop reaps */
}

static void rh_collect_on_signal(int sig)
{
    (void)sig;
    rh_collect_stop = 1;
}

/* Parses ADDR:PORT ([v6]:PORT, localhost:PORT; port 0 picks one) into a
 * listening socket. Refuses non-loopback addresses without `any`. Returns the
 * fd, or -1 with one line on stderr. */
static int rh_collect_listen(const char *spec, int any)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host || !colon[1]) {
        fprintf(stderr, "rheaper collect: --listen %s: expected ADDR:PORT\n", spec);
        return -1;
    }
    size_t n = (size_t)(colon - spec);
    memcpy(host, spec, n);
    host[n] = 0;
    if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
        memmove(host, host + 1, n - 2);
        host[n - 2] = 0;
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc) {
        fprintf(stderr, "rheaper collect: --listen %s: %s\n", spec, gai_strerror(rc));
        return -1;
    }
    int loop = 0;
    if (ai->ai_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ai->ai_addr;
        loop = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    } else if (ai->ai_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ai->ai_addr;
        loop = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
               (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127);
    }
    if (!loop && !any) {
        fprintf(stderr,
                "rheaper collect: --listen %s is not a loopback address; the stream has no "
                "authentication, so bind 127.0.0.1 and tunnel (ssh -L), or pass --any\n",
                spec);
        freeaddrinfo(ai);
        return -1;
    }
    if (!loop)
        fprintf(stderr,
                "rheaper collect: warning: listening on %s, which is not loopback: the "
                "stream has no authentication or encryption; anyone who can reach this "
                "port can write profiles into the directory\n",
                spec);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        fprintf(stderr, "rheaper collect: cannot listen on %s: %s\n", spec, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* Describes a socket address as "ADDR:PORT" and as 16 IPv6 bytes. */
static void rh_collect_peer(const struct sockaddr_storage *ss, char *out, size_t size,
                            uint8_t v6[16])
{
    char a[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    memset(v6, 0, 16);
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &s->sin_addr, a, sizeof a);
        port = ntohs(s->sin_port);
        v6[10] = v6[11] = 0xff;
        memcpy(v6 + 12, &s->sin_addr, 4);
        snprintf(out, size, "%s:%u", a, port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof a);
        port = ntohs(s->sin6_port);
        memcpy(v6, &s->sin6_addr, 16);
        snprintf(out, size, "[%s]:%u", a, port);
    } else {
        snprintf(out, size, "?");
    }
}

/* pwrite all of buf. Returns 0 or an errno value. */
static int rh_collect_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;
    while (len) {
        ssize_t w = pwrite(fd, p, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        len -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* Creates DIR/rip-<pid>[.N] (O_EXCL: never an existing file, never through
 * a symlink, FIFO or another user's file: rh_safe_open). Returns the fd or
 * -1 with errno. */
static int rh_collect_create(struct rh_conn *c, const char *dir)
{
    for (unsigned k = 0; k < 100000; k++) {
        if (k)
            snprintf(c->path, sizeof c->path, "%s/rip-%u.%u", dir, c->pid, k);
        else
            snprintf(c->path, sizeof c->path, "%s/rip-%u", dir, c->pid);
        int fd = rh_safe_open(c->path, O_RDWR | O_CREAT | O_EXCL, 0600,
                              RH_SAFE_OWNER | RH_SAFE_ONE_LINK, geteuid(), NULL, 0);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Ends a connection: closes its socket and file (cut at the last whole chunk)
 * and prints one line. why: NULL for a clean end. */
static void rh_collect_close(struct rh_conn *c, const char *why)
{
    if (c->file >= 0) {
        if (ftruncate(c->file, (off_t)c->off) != 0 && !why)
            why = "cannot trim the profile";
        close(c->file);
        if (why)
            fprintf(stderr, "rheaper collect: %s: pid %u: %s; %s keeps %llu chunks (%s)\n", c->peer,
                    c->pid, why, c->path, (unsigned long long)c->chunks,
                    c->trailer ? "with its trailer" : "cut short, converts as damaged");
        else
            printf("rheaper collect: %s: pid %u -> %s (%llu chunks, %llu bytes received, %s)\n",
                   c->peer, c->pid, c->path, (unsigned long long)c->chunks,
                   (unsigned long long)c->received,
                   c->trailer ? "complete" : "no trailer: the program did not close it");
        if (!why && rh_collect_push.url) {
            fflush(stdout);
            close(c->fd); /* the peer sees the end now, not when the push ends */
            c->fd = -1;
            rh_collect_push_start(c->path);
        }
    } else {
        /* many such connections are an attack, not news: ten lines, then a
         * count at stop */
        static unsigned said;
        if (said < 10)
            fprintf(stderr,
                    "rheaper collect: %s: %s before a profile header arrived; nothing written%s\n",
                    c->peer, why ? why : "connection closed",
                    ++said == 10 ? " (further ones are counted, not shown)" : "");
    }
    fflush(stdout);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->file = -1;
    free(c->parts);
    c->parts = NULL;
    rh_collect_parts_all -= c->nparts;
    c->nparts = c->capparts = 0;
}

/* Where the chunk in c->ch goes (c->cur_off): an EVENTS or SHARED chunk that
 * came in part before goes to its place, checked to be the same chunk (slot,
 * seq, capacity) and, when partial, to continue where the last part ended;
 * the first part of a chunk reserves its place at the end of the file; any
 * other chunk goes to the end when it is complete (rh_collect_chunk_done).
 * Returns NULL, or why the stream is rejected. */
static const char *rh_collect_place(struct rh_conn *c, int part, uint32_t from)
{
    const struct rip_chunk_header *h = &c->ch;
    c->cur_part = -1;
    c->cur_is_part = part;
    c->cur_off = c->off;
    if (h->type != RIP_CHUNK_EVENTS && h->type != RIP_CHUNK_SHARED)
        return NULL;
    for (size_t i = 0; i < c->nparts; i++) {
        struct rh_part *p = &c->parts[i];
        if (p->type != h->type || p->slot != h->slot || p->seq != h->seq)
            continue;
        if (p->capacity != h->capacity)
            return "a chunk sent in part changed its capacity";
        if (part && from != p->have)
            return "partial chunk out of order (a gap or an overlap in its payload)";
        c->cur_part = (int32_t)i;
        c->cur_off = p->off;
        return NULL;
    }
    if (!part)
        return NULL;
    if (from != 0)
        return "partial chunk out of order (its first part does not start at 0)";
    if (c->nparts >= RH_COLLECT_MAX_PARTS || rh_collect_parts_all >= RH_COLLECT_MAX_PARTS_ALL)
        return "too many chunks open at once";
    if (c->nparts == c->capparts) {
        size_t n = c->capparts ? c->capparts * 2 : 64;
        struct rh_part *np = realloc(c->parts, n * sizeof *np);
        if (!np)
            return "out of memory";
        c->parts = np;
        c->capparts = n;
    }
    /* its place: a chunk's stride at the end, a hole until written */
    uint64_t stride = rh_rip_chunk_stride(h);
    if (c->off + stride > rh_collect_max_bytes)
        return "reached --max-bytes";
    if (ftruncate(c->file, (off_t)(c->off + stride)) != 0)
        return "cannot extend the profile";
    c->parts[c->nparts] = (struct rh_part){h->type, h->slot, h->seq, h->capacity, c->off, 0};
    c->cur_part = (int32_t)c->nparts++;
    rh_collect_parts_all++;
    c->cur_off = c->off;
    c->off += stride;
    c->chunks++;
    return NULL;
}

/* A complete hello, header or chunk header is in c->buf: act on it. Returns
 * NULL, or why the stream is rejected. */
static const char *rh_collect_step(struct rh_conn *c, const char *dir)
{
    static char why[4400];
    if (c->phase == CP_HELLO) {
        uint32_t v;
        memcpy(&v, c->buf + 8, 4);
        if (memcmp(c->buf, RIP_STREAM_MAGIC, 8) != 0)
            return "not a rheaper stream (bad hello magic)";
        if (v < RIP_STREAM_WIRE_VERSION_MIN || v > RIP_STREAM_WIRE_VERSION) {
            snprintf(why, sizeof why, "unsupported stream version %u (this collector: %u to %u)", v,
                     RIP_STREAM_WIRE_VERSION_MIN, RIP_STREAM_WIRE_VERSION);
            return why;
        }
        c->version = v;
        c->phase = CP_HEADER;
        return NULL;
    }
    if (c->phase == CP_HEADER) {
        struct rip_file_header h;
        int crc_ok = 0;
        const char *bad = rh_rip_header_check(c->buf, RIP_HEADER_SIZE, &h, &crc_ok);
        if (bad) {
            snprintf(why, sizeof why, "rip header: %s", bad);
            return why;
        }
        if (!crc_ok)
            return "rip header checksum mismatch";
        uint8_t copy[RIP_HEADER_SIZE];
        memcpy(copy, c->buf, RIP_HEADER_SIZE);
        c->pid = h.pid;
        /* the collector's own fields: streamed flag and the peer (FORMAT.md) */
        h.flags |= RIP_HDR_F_STREAMED;
        memcpy(copy, &h, sizeof h);
        memcpy(copy + RIP_HDR_PEER_OFF, c->peer6, 16);
        uint32_t crc = rh_rip_header_crc(copy);
        memcpy(copy + 72, &crc, 4);
        c->file = rh_collect_create(c, dir);
        if (c->file < 0) {
            snprintf(why, sizeof why, "cannot create %s: %s", c->path, strerror(errno));
            return why;
        }
        int err = rh_collect_pwrite(c->file, copy, RIP_HEADER_SIZE, 0);
        if (err) {
            snprintf(why, sizeof why, "cannot write %s: %s", c->path, strerror(err));
            return why;
        }
        c->off = RIP_HEADER_SIZE;
        printf("rheaper collect: %s: pid %u streaming into %s\n", c->peer, c->pid, c->path);
        fflush(stdout);
        c->phase = CP_CHDR;
        return NULL;
    }
    /* CP_CHDR: the rules a reader enforces (FORMAT.md "Limits") */
    memcpy(&c->ch, c->buf, sizeof c->ch);
    struct rip_chunk_header *h = &c->ch;
    int part = (h->flags & RIP_CHUNK_F_PART) != 0;
    uint32_t from = 0;
    if (part) {
        /* a partial chunk: what is written is an open chunk, as a file holds it */
        if (c->version < 2)
            return "partial chunk in a version 1 stream";
        if ((h->type != RIP_CHUNK_EVENTS && h->type != RIP_CHUNK_SHARED) ||
            (h->flags & RIP_CHUNK_F_SEALED))
            return "partial chunk that is not an open event chunk";
        from = h->reserved;
        h->flags &= (uint8_t)~RIP_CHUNK_F_PART;
        h->reserved = 0;
    }
    const char *bad = rh_rip_chunk_check(h);
    if (bad) {
        snprintf(why, sizeof why, "bad chunk header at stream byte %llu (%s)",
                 (unsigned long long)(c->received), bad);
        return why;
    }
    if (part && from > h->used)
        return "partial chunk that starts past its end";
    bad = rh_collect_place(c, part, from);
    if (bad)
        return bad;
    if (c->cur_part < 0 &&
        c->off + rh_rip_chunk_stride(&(struct rip_chunk_header){.capacity = h->used}) >
            rh_collect_max_bytes) {
        snprintf(why, sizeof why, "reached --max-bytes %llu",
                 (unsigned long long)rh_collect_max_bytes);
        return why;
    }
    /* a chunk placed at the end is stored with the capacity its payload
     * needs (see rh_collect_chunk_done); both checksums run over the payload
     * as it arrives. A chunk sent in parts keeps the place its first part
     * reserved, at its capacity, and its checksum as sent. */
    struct rip_chunk_header as_sent = *h, stored = *h;
    as_sent.crc = 0;
    stored.crc = 0;
    stored.capacity = h->used;
    c->crc_in = rip_crc32c(0, &as_sent, sizeof as_sent);
    c->crc_out = rip_crc32c(0, &stored, sizeof stored);
    c->payload_left = h->used - from;
    c->phase = CP_PAYLOAD;
    return NULL;
}

/* The payload of c->ch is complete: write its header with the capacity the
 * payload needs (a sender's declared capacity is room it did not send: kept,
 * it made files of any apparent size from headers alone), its checksum
 * recomputed for that header when the one sent was right and left wrong when
 * it was not (the reader skips the chunk as damaged, as before), extend the
 * file to the chunk's end and move on. A chunk sent in parts is written in
 * the place its first part reserved, at its capacity, header last. */
static const char *rh_collect_chunk_done(struct rh_conn *c)
{
    static char why[4400];
    if (c->cur_part >= 0) {
        /* in its place: the header (with the new `used`) last, as always */
        int err = rh_collect_pwrite(c->file, &c->ch, sizeof c->ch, c->cur_off);
        if (err) {
            snprintf(why, sizeof why, "cannot write %s at offset %llu: %s", c->path,
                     (unsigned long long)c->cur_off, strerror(err));
            return why;
        }
        if (c->cur_is_part) {
            c->parts[c->cur_part].have = c->ch.used;
        } else {
            c->parts[c->cur_part] = c->parts[--c->nparts]; /* sealed: done with it */
            rh_collect_parts_all--;
        }
        c->phase = CP_CHDR;
        return NULL;
    }
    if (c->ch.capacity != c->ch.used) {
        int sealed = (c->ch.flags & RIP_CHUNK_F_SEALED) != 0;
        int good = c->crc_in == c->ch.crc;
        c->ch.capacity = c->ch.used;
        if (sealed)
            c->ch.crc = good ? c->crc_out : ~c->crc_out;
    }
    uint64_t stride = rh_rip_chunk_stride(&c->ch);
    int err = rh_collect_pwrite(c->file, &c->ch, sizeof c->ch, c->off);
    if (!err && ftruncate(c->file, (off_t)(c->off + stride)) != 0)
        err = errno;
    if (err) {
        snprintf(why, sizeof why, "cannot write %s at offset %llu: %s", c->path,
                 (unsigned long long)c->off, strerror(err));
        return why;
    }
    c->off += stride;
    c->chunks++;
    if (c->ch.type == RIP_CHUNK_TRAILER)
        c->trailer = 1;
    c->phase = CP_CHDR;
    return NULL;
}

/* Consumes n bytes read from c. Returns NULL, or why the stream is rejected. */
static const char *rh_collect_feed(struct rh_conn *c, const uint8_t *p, size_t n, const char *dir)
{
    static char why[4400];
    while (n) {
        if (c->phase == CP_PAYLOAD) {
            size_t k = n < c->payload_left ? n : c->payload_left;
            uint64_t at = c->cur_off + RIP_CHUNK_HDR_SIZE + (c->ch.used - c->payload_left);
            int err = rh_collect_pwrite(c->file, p, k, at);
            c->crc_in = rip_crc32c(c->crc_in, p, k);
            c->crc_out = rip_crc32c(c->crc_out, p, k);
            if (err) {
                snprintf(why, sizeof why, "cannot write %s at offset %llu: %s", c->path,
                         (unsigned long long)at, strerror(err));
                return why;
            }
            c->payload_left -= (uint32_t)k;
            c->received += k;
            p += k;
            n -= k;
            if (!c->payload_left) {
                const char *e = rh_collect_chunk_done(c);
                if (e)
                    return e;
            }
            continue;
        }
        size_t need = c->phase == CP_HELLO    ? RIP_STREAM_HELLO_SIZE
                      : c->phase == CP_HEADER ? RIP_HEADER_SIZE
                                              : RIP_CHUNK_HDR_SIZE;
        size_t k = need - c->have < n ? need - c->have : n;
        memcpy(c->buf + c->have, p, k);
        c->have += k;
        c->received += k;
        p += k;
        n -= k;
        if (c->have < need)
            continue;
        c->have = 0;
        const char *e = rh_collect_step(c, dir);
        if (e)
            return e;
        if (c->phase == CP_PAYLOAD && !c->payload_left) {
            e = rh_collect_chunk_done(c);
            if (e)
                return e;
        }
    }
    return NULL;
}

/* The client half-closed: a clean end when it stopped between chunks (then
 * the ack), else a truncated stream. */
static void rh_collect_eof(struct rh_conn *c)
{
    if (c->phase == CP_CHDR && c->have == 0) {
        uint8_t ack[RIP_STREAM_ACK_SIZE];
        memcpy(ack, RIP_STREAM_ACK_MAGIC, 8);
        memcpy(ack + 8, &c->received, 8);
        if (fsync(c->file) != 0) {
            rh_collect_close(c, "cannot fsync the profile");
            return;
        }
        /* 16 bytes always fit an empty send buffer; a peer gone already only
         * loses its ack */
        if (send(c->fd, ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof ack)
            rh_collect_close(c, "cannot send the ack");
        else
            rh_collect_close(c, NULL);
        return;
    }
    rh_collect_close(c, "stream ended mid-chunk");
}

static int rh_collect_usage(void)
{
    fputs("usage: rheaper collect --listen ADDR:PORT --dir DIR [--any] [--max-clients N]\n"
          "                       [--idle-timeout S] [--max-bytes N]\n"
          "                       [--clickhouse URL [--database DB] [--label KEY=VALUE]...]\n"
          "  receives profiles streamed by programs run with RHEAPER_STREAM=HOST:PORT and\n"
          "  writes each as DIR/rip-<pid> (never overwriting). ADDR must be loopback\n"
          "  (127.0.0.1, ::1, localhost) unless --any; port 0 picks a free one.\n"
          "  --idle-timeout S closes a stream stalled mid-chunk for S s (60); hello and\n"
          "  header must arrive within 10 s. --max-bytes N caps each sender's file\n"
          "  (32 GiB; K, M, G suffixes; 0: no cap).\n"
          "  --clickhouse pushes each profile once received (as rheaper push does).\n",
          stderr);
    return 2;
}

int rh_cmd_collect(int argc, char **argv)
{
    const char *listen_spec = NULL, *dir = NULL;
    int any = 0, maxc_given = 0;
    unsigned maxc = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--listen") && i + 1 < argc)
            listen_spec = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--any"))
            any = 1;
        else if (!strcmp(argv[i], "--clickhouse") && i + 1 < argc)
            rh_collect_push.url = argv[++i];
        else if (!strcmp(argv[i], "--database") && i + 1 < argc)
            rh_collect_push.database = argv[++i];
        else if (!strcmp(argv[i], "--label") && i + 1 < argc) {
            if (rh_push_label_arg("rheaper collect", argv[++i], &rh_collect_push.labels))
                return 2;
        } else if (!strcmp(argv[i], "--idle-timeout") && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > 86400)
                return rh_collect_usage();
            rh_collect_idle_s = (unsigned)v;
        } else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            unsigned long long mul = 1;
            if (*end == 'K' || *end == 'k')
                mul = 1ull << 10, end++;
            else if (*end == 'M' || *end == 'm')
                mul = 1ull << 20, end++;
            else if (*end == 'G' || *end == 'g')
                mul = 1ull << 30, end++;
            if (errno || *end || end == argv[i] || argv[i][0] == '-' || v > UINT64_MAX / mul)
                return rh_collect_usage();
            rh_collect_max_bytes = v ? v * mul : UINT64_MAX;
        } else if (!strcmp(argv[i], "--max-clients") && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000)
                return rh_collect_usage();
            maxc = (unsigned)v;
            maxc_given = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            rh_collect_usage();
            return 0;
        } else {
            return rh_collect_usage();
        }
    }
    if (!listen_spec || !dir)
        return rh_collect_usage();
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "rheaper collect: --dir %s: not a writable directory\n", dir);
        return 1;
    }
    /* each stream holds a socket and a file: no more clients than the
     * descriptor limit leaves room for */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max; /* the soft limit up to the hard one */
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        rlim_t room = rl.rlim_cur > 24 ? (rl.rlim_cur - 16) / 2 : 1;
        if (maxc > room && (maxc_given || room < 64)) {
            fprintf(stderr,
                    "rheaper collect: --max-clients %u lowered to %u: the open-file limit is %llu"
                    " (each stream needs a socket and a file)\n",
                    maxc, (unsigned)room, (unsigned long long)rl.rlim_cur);
        }
        if (maxc > room)
            maxc = (unsigned)room;
    }
    int lfd = rh_collect_listen(listen_spec, any);
    if (lfd < 0)
        return 1;
    struct sockaddr_storage la;
    socklen_t ll = sizeof la;
    char lname[64];
    uint8_t unused[16];
    getsockname(lfd, (struct sockaddr *)&la, &ll);
    rh_collect_peer(&la, lname, sizeof lname, unused);

    /* SIGINT/SIGTERM: blocked except inside ppoll, so a stop is never missed */
    struct sigaction sa = {0};
    sa.sa_handler = rh_collect_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sc = {0};
    sc.sa_handler = rh_collect_on_child;
    sigemptyset(&sc.sa_mask);
    sigaction(SIGCHLD, &sc, NULL);
    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    sigdelset(&waitmask, SIGINT);
    sigdelset(&waitmask, SIGTERM);
    sigdelset(&waitmask, SIGCHLD);

    struct rh_conn *conns = calloc(maxc, sizeof *conns);
    struct pollfd *pfd = calloc(maxc + 1, sizeof *pfd);
    uint8_t *rbuf = malloc(1 << 16);
    unsigned *map = calloc(maxc + 1, sizeof *map);
    if (!conns || !pfd || !rbuf || !map) {
        fprintf(stderr, "rheaper collect: out of memory\n");
        return 1;
    }
    for (unsigned i = 0; i < maxc; i++)
        conns[i].fd = conns[i].file = -1;
    printf("rheaper collect: listening on %s, writing profiles to %s\n", lname, dir);
    fflush(stdout);

    unsigned nconn = 0;
    uint64_t total = 0, accept_fail = 0, cut_head = 0, cut_idle = 0, evicted = 0;
    uint64_t paused_until = 0; /* ms: accept paused at the open-file limit */
    unsigned backoff = 0;
    while (!rh_collect_stop) {
        uint64_t now = rh_collect_now_ms();
        /* the timeouts: hello and header, then a chunk that stalls */
        unsigned handshaking = 0;
        for (unsigned i = 0; i < maxc; i++) {
            struct rh_conn *c = &conns[i];
            if (c->fd < 0)
                continue;
            int head = c->phase == CP_HELLO || c->phase == CP_HEADER;
            int midchunk = c->phase == CP_PAYLOAD || (c->phase == CP_CHDR && c->have);
            if (head && now - c->t0 >= RH_COLLECT_HEAD_S * 1000u) {
                rh_collect_close(c, "no hello and header within 10 s");
                nconn--;
                cut_head++;
            } else if (midchunk && now - c->last >= rh_collect_idle_s * 1000ull) {
                char why[96];
                snprintf(why, sizeof why, "no data for %u s in the middle of a chunk",
                         rh_collect_idle_s);
                rh_collect_close(c, why);
                nconn--;
                cut_idle++;
            } else if (head) {
                handshaking++;
            }
        }
        nfds_t n = 0;
        for (unsigned i = 0; i < maxc; i++)
            if (conns[i].fd >= 0) {
                pfd[n] = (struct pollfd){conns[i].fd, POLLIN, 0};
                map[n++] = i;
            }
        /* full: accept only when a connection still in its handshake can
         * make room; at the open-file limit: not until the pause is over.
         * The listening socket comes last, so what arrived on the
         * connections in this round is read first: a sender whose hello and
         * header are already here has left its handshake before a new
         * connection looks for one to replace. */
        if ((nconn < maxc || handshaking) && now >= paused_until) {
            pfd[n] = (struct pollfd){lfd, POLLIN, 0};
            map[n++] = UINT32_MAX;
        }
        /* wake for the next deadline: a pause, a handshake, a stalled chunk */
        struct timespec tick = {0, 250000000L};
        int r = ppoll(pfd, n, nconn || paused_until > now ? &tick : NULL, &waitmask);
        rh_collect_reap();
        if (r < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "rheaper collect: poll: %s\n", strerror(errno));
            break;
        }
        for (nfds_t k = 0; k < n; k++) {
            if (!pfd[k].revents)
                continue;
            if (map[k] == UINT32_MAX) {
                struct sockaddr_storage ss;
                socklen_t sl = sizeof ss;
                int cfd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0) {
                    int e = errno;
                    if (e == EAGAIN || e == EINTR || e == ECONNABORTED)
                        continue;
                    /* out of descriptors or memory: the listening socket stays
                     * readable, so polling it again at once would spin. A
                     * connection still in its handshake gives its descriptor
                     * to the waiting one; else pause, longer each time. Said
                     * once. */
                    struct rh_conn *old = NULL;
                    for (unsigned i = 0; i < maxc; i++)
                        if (conns[i].fd >= 0 &&
                            (conns[i].phase == CP_HELLO || conns[i].phase == CP_HEADER) &&
                            (!old || conns[i].t0 < old->t0))
                            old = &conns[i];
                    if (!accept_fail++)
                        fprintf(stderr,
                                "rheaper collect: accept: %s; pausing new connections (up to %d"
                                " ms at a time) until descriptors are free; said once\n",
                                strerror(e), RH_COLLECT_BACKOFF_MAX_MS);
                    if (old && rh_collect_now_ms() - old->t0 >= 1000) {
                        rh_collect_close(old, "replaced by a new connection: no descriptor left");
                        nconn--;
                        evicted++;
                        continue;
                    }
                    backoff = backoff ? backoff * 2 : 50;
                    if (backoff > RH_COLLECT_BACKOFF_MAX_MS)
                        backoff = RH_COLLECT_BACKOFF_MAX_MS;
                    paused_until = rh_collect_now_ms() + backoff;
                    continue;
                }
                backoff = 0;
                if (nconn >= maxc) {
                    /* full: the oldest connection still in its handshake
                     * makes room (a real sender's header follows its connect) */
                    struct rh_conn *old = NULL;
                    for (unsigned i = 0; i < maxc; i++)
                        if (conns[i].fd >= 0 &&
                            (conns[i].phase == CP_HELLO || conns[i].phase == CP_HEADER) &&
                            (!old || conns[i].t0 < old->t0))
                            old = &conns[i];
                    if (!old) {
                        /* else the one quiet longest between chunks, once
                         * quiet for RH_COLLECT_QUIET_S: a sender that
                         * finished its handshake and then says nothing
                         * cannot hold its place for ever */
                        uint64_t tnow = rh_collect_now_ms();
                        for (unsigned i = 0; i < maxc; i++)
                            if (conns[i].fd >= 0 && conns[i].phase == CP_CHDR && !conns[i].have &&
                                tnow - conns[i].last >= RH_COLLECT_QUIET_S * 1000ull &&
                                (!old || conns[i].last < old->last))
                                old = &conns[i];
                    }
                    if (!old) {
                        close(cfd);
                        continue;
                    }
                    rh_collect_close(old, "replaced by a new connection: the collector is full");
                    nconn--;
                    evicted++;
                }
                int on = 1, idle = 60, intvl = 10, cnt = 6;
                setsockopt(cfd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
                setsockopt(cfd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
                setsockopt(cfd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
                setsockopt(cfd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
                for (unsigned i = 0; i < maxc; i++)
                    if (conns[i].fd < 0) {
                        struct rh_conn *c = &conns[i];
                        memset(c, 0, sizeof *c);
                        c->fd = cfd;
                        c->file = -1;
                        c->t0 = c->last = rh_collect_now_ms();
                        rh_collect_peer(&ss, c->peer, sizeof c->peer, c->peer6);
                        nconn++;
                        total++;
                        break;
                    }
                continue;
            }
            struct rh_conn *c = &conns[map[k]];
            if (c->fd < 0 || c->fd != pfd[k].fd)
                continue; /* closed above to make room (its slot may be new) */
            ssize_t got = recv(c->fd, rbuf, 1 << 16, 0);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got < 0) {
                char why[160];
                snprintf(why, sizeof why, "receive failed: %s", strerror(errno));
                rh_collect_close(c, why);
                nconn--;
            } else if (got == 0) {
                rh_collect_eof(c);
                nconn--;
            } else {
                c->last = rh_collect_now_ms();
                const char *why = rh_collect_feed(c, rbuf, (size_t)got, dir);
                if (why) {
                    rh_collect_close(c, why);
                    nconn--;
                }
            }
        }
    }
    for (unsigned i = 0; i < maxc; i++)
        if (conns[i].fd >= 0)
            rh_collect_close(&conns[i], "collector stopped");
    if (rh_collect_pushing) {
        printf("rheaper collect: waiting for %u pushes to end\n", rh_collect_pushing);
        fflush(stdout);
        rh_collect_wait_pushes();
    }
    if (accept_fail || cut_head || cut_idle || evicted)
        fprintf(stderr,
                "rheaper collect: %llu accepts failed at the open-file limit; closed %llu "
                "connections without a header in 10 s, %llu stalled mid-chunk, %llu to make room\n",
                (unsigned long long)accept_fail, (unsigned long long)cut_head,
                (unsigned long long)cut_idle, (unsigned long long)evicted);
    printf("rheaper collect: stopped after %llu connections\n", (unsigned long long)total);
    fflush(stdout);
    close(lfd);
    free(conns);
    free(pfd);
    free(rbuf);
    free(map);
    return 0;
}
