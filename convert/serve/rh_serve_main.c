/* rh_serve_main.c: `rheaper serve PROFILE...`: the HTTP server around the API.
 *
 *     rheaper serve PROFILE... [--listen ADDR:PORT] [--any] [--threads N]
 *                              [--budget-ms MS] [--row-cap N] [--allow-host NAME]...
 *
 * Each PROFILE is a database, or a rip file that is converted first into a
 * database beside it (PROFILE.db, else PROFILE.1.db, ...: nothing that exists
 * is overwritten). The server is GNU libmicrohttpd with a thread pool; the
 * requests share a small pool of read-only connections per profile, each
 * used by one request at a time, and a request goes to the connection that
 * holds the scope of its filters (the TEMP tables they built), so the views
 * of a page share one scope computation. Every request gets a time budget
 * in SQLite (the progress handler interrupts a statement past it) and lists
 * are capped at a row count; both are reported in the answer. It listens on
 * 127.0.0.1:8080 unless told otherwise, refuses an address that is not
 * loopback unless --any is given (and then warns that there is no
 * authentication), and stops cleanly on SIGINT or SIGTERM. Only GET and HEAD
 * are answered; paths outside the API are looked up among the UI files built
 * into the binary, never on disk. A request whose Host is not this server's
 * name is refused (rh_serve_guard.c: DNS rebinding), as is one whose head does
 * not arrive within RH_SERVE_HEAD_S seconds; libmicrohttpd bounds each
 * connection's memory (the request line and headers) and SQLite's heap is
 * capped, so no request grows the server without bound.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "rh_convert.h"
#include "rh_serve.h"

/* the head of a request (request line and headers) must arrive within this */
#define RH_SERVE_HEAD_S 10
/* connections at once; past RH_SERVE_CONNS - 16, half requests make room */
#define RH_SERVE_CONNS 512u
/* what libmicrohttpd may hold for one connection's request line and headers */
#define RH_SERVE_CONN_MEM (64u << 10)
/* SQLite's heap, all connections together: their page caches and TEMP
 * tables (a scope past it fails with a clear error instead of growing the
 * server) */
#define RH_SERVE_SQLITE_HEAP (384LL << 20)

/* ---- shared connections and the time budget ------------------------------ */

/* Each profile has a pool of read-only connections, each with the scope its
 * last request built (TEMP tables, rh_qfilter_apply) and that scope's
 * routing key (the request's filter parameters, rh_serve_route). A request
 * takes the idle connection that holds its scope; when the one that holds or
 * is building it is busy, it waits for it rather than computing the same
 * scope again beside it (a page asks several endpoints with one filter at
 * once); else it takes the least recently used idle connection, or opens one
 * up to RH_POOL_MAX. A request that already holds a connection (the second
 * profile of a diff, /list) never waits: it opens one more if none is idle.
 * The key routes only: the scope is reused when its exact key matches
 * (scopekey), else rebuilt. */
#define RH_POOL_MAX 3  /* connections of one profile that requests wait for */
#define RH_POOL_CAP 16 /* and at most this many */
/* each connection's page cache and memory map (rh_query_tune): the server's
 * resident memory stays bounded at any profile size */
#define RH_SERVE_CACHE_KIB 32768
#define RH_SERVE_MMAP (64LL << 20)

struct rh_pconn {
    sqlite3 *db;
    char *key;     /* the routing key of its last scope (NULL: none) */
    int busy;
    uint64_t used;   /* the tick of its last release */
    uint64_t failed; /* the tick of its last release past the time budget with
                      * its scope unbuilt */
};

struct rh_pool {
    struct rh_pconn c[RH_POOL_CAP];
    int n;
};

static struct rh_pool *rh_pools;
static int rh_npools;
static uint64_t rh_pool_tick;
static pthread_mutex_t rh_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rh_pool_cv = PTHREAD_COND_INITIALIZER;

struct rh_tls {
    struct rh_pconn **held; /* per profile: the connection this request holds */
    int n, nheld;
    char *route; /* this request's routing key (malloc'd), NULL: none */
    struct timespec deadline;
    int over;
};

static pthread_key_t rh_tls_key;
static pthread_once_t rh_tls_once = PTHREAD_ONCE_INIT;

/* Every open connection, so that stopping can interrupt the queries in
 * flight (sqlite3_interrupt may be called from any thread). */
#define RH_MAX_CONNS 4096
static sqlite3 *rh_conns[RH_MAX_CONNS];
static int rh_nconns;
static pthread_mutex_t rh_conns_lock = PTHREAD_MUTEX_INITIALIZER;

static void rh_conn_track(sqlite3 *db, int add)
{
    pthread_mutex_lock(&rh_conns_lock);
    for (int i = 0; i < rh_nconns; i++)
        if (rh_conns[i] == db) {
            if (!add)
                rh_conns[i] = rh_conns[--rh_nconns];
            pthread_mutex_unlock(&rh_conns_lock);
            return;
        }
    if (add && rh_nconns < RH_MAX_CONNS)
        rh_conns[rh_nconns++] = db;
    pthread_mutex_unlock(&rh_conns_lock);
}

/* Interrupts whatever every connection is running. */
static void rh_conns_interrupt(void)
{
    pthread_mutex_lock(&rh_conns_lock);
    for (int i = 0; i < rh_nconns; i++)
        sqlite3_interrupt(rh_conns[i]);
    pthread_mutex_unlock(&rh_conns_lock);
}

static void rh_tls_free(void *p)
{
    struct rh_tls *t = p;
    free(t->held);
    free(t->route);
    free(t);
}

static void rh_tls_init(void)
{
    pthread_key_create(&rh_tls_key, rh_tls_free);
}

static struct rh_tls *rh_tls_get(int n)
{
    pthread_once(&rh_tls_once, rh_tls_init);
    struct rh_tls *t = pthread_getspecific(rh_tls_key);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t)
            return NULL;
        t->held = calloc((size_t)n, sizeof *t->held);
        if (!t->held) {
            free(t);
            return NULL;
        }
        t->n = n;
        pthread_setspecific(rh_tls_key, t);
    }
    return t;
}

/* SQLite's progress handler: interrupts the statement past the deadline of
 * the request that holds the connection (p: its thread's rh_tls). */
static int rh_progress(void *p)
{
    struct rh_tls *t = p;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > t->deadline.tv_sec ||
        (now.tv_sec == t->deadline.tv_sec && now.tv_nsec > t->deadline.tv_nsec)) {
        t->over = 1;
        return 1;
    }
    return 0;
}

/* Closes every pooled connection (at exit, the daemon stopped). */
static void rh_pools_close(void)
{
    for (int i = 0; i < rh_npools; i++)
        for (int k = 0; k < rh_pools[i].n; k++) {
            rh_conn_track(rh_pools[i].c[k].db, 0);
            sqlite3_close(rh_pools[i].c[k].db);
            free(rh_pools[i].c[k].key);
        }
    free(rh_pools);
    rh_pools = NULL;
    rh_npools = 0;
}

static void rh_budget_start(const struct rh_server *s);

static int rh_key_eq(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

void rh_serve_route(const char *key)
{
    struct rh_tls *t = pthread_getspecific(rh_tls_key);
    if (!t)
        return;
    free(t->route);
    t->route = key ? strdup(key) : NULL;
}

sqlite3 *rh_serve_db(const struct rh_server *s, int i)
{
    struct rh_tls *t = rh_tls_get(s->np);
    if (!t || i < 0 || i >= t->n || i >= rh_npools)
        return NULL;
    if (t->held[i])
        return t->held[i]->db;
    int wait = t->nheld == 0; /* holding another: never wait (no deadlock) */
    struct rh_pool *pl = &rh_pools[i];
    struct rh_pconn *got = NULL;
    pthread_mutex_lock(&rh_pool_mu);
    const uint64_t since = rh_pool_tick;
    for (;;) {
        struct rh_pconn *same = NULL, *same_busy = NULL, *lru = NULL;
        for (int k = 0; k < pl->n; k++) {
            struct rh_pconn *c = &pl->c[k];
            if (rh_key_eq(c->key, t->route)) {
                if (!c->busy)
                    same = c;
                else
                    same_busy = c;
            }
            if (!c->busy && (!lru || c->used < lru->used))
                lru = c;
        }
        got = same;
        if (got && got->failed > since && t->route && *t->route) {
            /* the request it waited for ran out of its budget building this
             * very scope: the same work would too (503, not another try) */
            pthread_mutex_unlock(&rh_pool_mu);
            t->over = 1;
            return NULL;
        }
        /* only a filtered scope is worth waiting for: without filters it
         * copies the converter's tables */
        if (!got && same_busy && wait && t->route && *t->route) {
            pthread_cond_wait(&rh_pool_cv, &rh_pool_mu);
            continue;
        }
        if (!got)
            got = lru;
        if (!got && pl->n < (wait ? RH_POOL_MAX : RH_POOL_CAP)) {
            /* a new connection: opened outside the lock, marked busy */
            got = &pl->c[pl->n++];
            memset(got, 0, sizeof *got);
            got->busy = 1;
            pthread_mutex_unlock(&rh_pool_mu);
            sqlite3 *db = rh_query_open(s->p[i].path);
            if (db) {
                rh_query_tune(db, RH_SERVE_CACHE_KIB, RH_SERVE_MMAP);
                rh_conn_track(db, 1);
            }
            pthread_mutex_lock(&rh_pool_mu);
            got->db = db;
            if (!db) {
                got->busy = 0; /* tried again by the next request */
                got->used = 0;
                pthread_cond_broadcast(&rh_pool_cv);
                pthread_mutex_unlock(&rh_pool_mu);
                return NULL;
            }
            break;
        }
        if (got)
            break;
        if (!wait) { /* every slot taken: cannot happen with RH_POOL_CAP */
            pthread_mutex_unlock(&rh_pool_mu);
            return NULL;
        }
        pthread_cond_wait(&rh_pool_cv, &rh_pool_mu);
    }
    if (!got->db) { /* a slot whose open failed before: open again */
        got->busy = 1;
        pthread_mutex_unlock(&rh_pool_mu);
        got->db = rh_query_open(s->p[i].path);
        if (got->db) {
            rh_query_tune(got->db, RH_SERVE_CACHE_KIB, RH_SERVE_MMAP);
            rh_conn_track(got->db, 1);
        }
        pthread_mutex_lock(&rh_pool_mu);
        if (!got->db) {
            got->busy = 0;
            pthread_cond_broadcast(&rh_pool_cv);
            pthread_mutex_unlock(&rh_pool_mu);
            return NULL;
        }
    }
    got->busy = 1;
    free(got->key); /* it is about to hold this request's scope */
    got->key = t->route ? strdup(t->route) : NULL;
    pthread_mutex_unlock(&rh_pool_mu);
    sqlite3_progress_handler(got->db, 4000, rh_progress, t);
    if (!t->nheld) /* the budget counts from here: waiting for a scope is not spent */
        rh_budget_start(s);
    t->held[i] = got;
    t->nheld++;
    return got->db;
}

/* Gives back every connection this request took (rh_serve_db). */
static void rh_serve_release(void)
{
    struct rh_tls *t = pthread_getspecific(rh_tls_key);
    if (!t || !t->nheld)
        return;
    /* past the budget before its scope was built (no scopekey left): the
     * requests waiting for this scope would run out too */
    int unbuilt[t->n];
    for (int i = 0; i < t->n; i++) {
        sqlite3_stmt *st = NULL;
        unbuilt[i] = t->over && t->held[i] &&
                     sqlite3_prepare_v2(t->held[i]->db, "SELECT 1 FROM temp.scopekey", -1, &st,
                                        NULL) != SQLITE_OK;
        sqlite3_finalize(st);
    }
    pthread_mutex_lock(&rh_pool_mu);
    for (int i = 0; i < t->n; i++)
        if (t->held[i]) {
            t->held[i]->busy = 0;
            t->held[i]->used = ++rh_pool_tick;
            if (unbuilt[i])
                t->held[i]->failed = t->held[i]->used;
            t->held[i] = NULL;
        }
    t->nheld = 0;
    pthread_cond_broadcast(&rh_pool_cv);
    pthread_mutex_unlock(&rh_pool_mu);
}

/* Starts the budget of a request on this thread. */
static void rh_budget_start(const struct rh_server *s)
{
    struct rh_tls *t = rh_tls_get(s->np);
    if (!t)
        return;
    clock_gettime(CLOCK_MONOTONIC, &t->deadline);
    t->deadline.tv_sec += s->budget_ms / 1000;
    t->deadline.tv_nsec += (long)(s->budget_ms % 1000) * 1000000L;
    if (t->deadline.tv_nsec >= 1000000000L) {
        t->deadline.tv_sec++;
        t->deadline.tv_nsec -= 1000000000L;
    }
    t->over = 0;
}

int rh_serve_over_budget(void)
{
    struct rh_tls *t = pthread_getspecific(rh_tls_key);
    return t && t->over;
}

int rh_resp_error(struct rh_resp *r, int status, const char *param, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    free(r->body);
    r->body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&r->body, &len);
    if (!f) {
        r->status = 500;
        r->len = 0;
        return -1;
    }
    fputs("{\"error\":", f);
    rh_json_string(f, msg);
    fputs(",\"parameter\":", f);
    if (param)
        rh_json_string(f, param);
    else
        fputs("null", f);
    fputs("}\n", f);
    fclose(f);
    r->len = len;
    r->status = status;
    r->type = "application/json";
    return -1;
}

/* ---- requests ----------------------------------------------------------------- */

static enum MHD_Result rh_param_it(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    struct rh_params *p = cls;
    if (p->n == RH_MAX_PARAMS) {
        p->overflow = 1;
        return MHD_NO;
    }
    p->k[p->n] = key ? key : "";
    p->v[p->n++] = value;
    return MHD_YES;
}

static const struct rh_ui_file *rh_ui_find(const char *path)
{
    for (size_t i = 0; i < rh_ui_nfiles; i++)
        if (!strcmp(rh_ui_files[i].path, path))
            return &rh_ui_files[i];
    return NULL;
}

/* cache: the X-Rheaper-Cache header's value ("hit", "miss"), or NULL */
static enum MHD_Result rh_send(struct MHD_Connection *c, int status, const char *type,
                               const void *body, size_t len, enum MHD_ResponseMemoryMode mode,
                               const char *cache)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, mode);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (cache)
        MHD_add_response_header(resp, "X-Rheaper-Cache", cache);
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result rh_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    static int first_call_marker;
    const struct rh_server *s = cls;
    struct rh_resp r = {200, "application/json", NULL, 0};
    const char *cache = NULL;
    if (!*con_cls) {
        *con_cls = &first_call_marker; /* the head is here: the rest may follow */
        rh_guard_head(c, 1);
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        if (!rh_guard_host_ok(host)) {
            /* answered before any of the request is looked at */
            rh_resp_error(&r, 403, NULL,
                          "Host '%.200s' is not a name of this server (it answers localhost, "
                          "loopback addresses, its listening address and --allow-host names)",
                          host ? host : "");
            goto send;
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* a body is never wanted: discard it */
        return MHD_YES;
    }
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        rh_resp_error(&r, 405, NULL, "only GET and HEAD are answered");
        goto send;
    }
    if (strstr(url, "..") || url[0] != '/') {
        rh_resp_error(&r, 400, NULL, "bad path");
        goto send;
    }
    if (!strcmp(url, "/list") || !strncmp(url, "/data/", 6)) {
        struct rh_params p = {.n = 0};
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, rh_param_it, &p);
        if (p.overflow) {
            rh_resp_error(&r, 400, NULL, "more than %d parameters", RH_MAX_PARAMS);
            goto send;
        }
        /* the databases do not change: a question asked before is answered
         * from rh_serve_cache.c */
        char *key = s->cache ? rh_cache_key(url, &p) : NULL;
        if (key && rh_cache_get(key, &r)) {
            cache = "hit";
        } else {
            rh_budget_start(s);
            rh_api_handle(s, url, &p, &r);
            rh_serve_release();
            if (key) {
                rh_cache_put(key, &r);
                cache = "miss";
            }
        }
        free(key);
        goto send;
    }
    const struct rh_ui_file *f = rh_ui_find(!strcmp(url, "/") ? "/index.html" : url);
    if (!f) {
        rh_resp_error(&r, 404, NULL, "no such page: %s", url);
        goto send;
    }
    return rh_send(c, 200, f->type, f->data, f->len, MHD_RESPMEM_PERSISTENT, NULL);
send:
    if (!r.body) {
        r.body = strdup("");
        r.len = 0;
    }
    return rh_send(c, r.status, r.type, r.body, r.len, MHD_RESPMEM_MUST_FREE, cache);
}

/* MHD_OPTION_NOTIFY_COMPLETED: a request ended; on a kept-alive connection the
 * next one's head is timed from now. */
static void rh_request_done(void *cls, struct MHD_Connection *c, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)con_cls;
    (void)toe;
    rh_guard_head(c, 0);
}

/* ---- profiles ------------------------------------------------------------------ */

/* 1 when path starts with SQLite's file header, 0 when not, -1 unreadable or
 * not a regular file (a FIFO cannot block the open: O_NONBLOCK). */
static int rh_is_sqlite(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    char h[16] = {0};
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = pread(fd, h, sizeof h, 0);
    else
        errno = EINVAL;
    close(fd);
    if (n < 0)
        return -1;
    return n == 16 && !memcmp(h, "SQLite format 3", 16);
}

/* Resolves argument arg to a database path (malloc'd): itself, or a new
 * database converted from the rip file arg. NULL after one line on stderr. */
static char *rh_profile_db(const char *arg)
{
    struct stat st;
    if (stat(arg, &st) != 0) {
        fprintf(stderr, "rheaper: serve: %s: %s\n", arg, strerror(errno));
        return NULL;
    }
    int k = rh_is_sqlite(arg);
    if (k < 0) {
        fprintf(stderr, "rheaper: serve: %s: cannot read (%s)\n", arg, strerror(errno));
        return NULL;
    }
    if (k)
        return strdup(arg);
    size_t n = strlen(arg) + 32;
    char *db = malloc(n);
    if (!db)
        return NULL;
    for (int i = 0; i < 1000; i++) {
        if (i)
            snprintf(db, n, "%s.%d.db", arg, i);
        else
            snprintf(db, n, "%s.db", arg);
        if (lstat(db, &st) != 0 && errno == ENOENT) {
            fprintf(stderr, "rheaper: serve: converting %s into %s\n", arg, db);
            if (rh_convert_file("rheaper serve", arg, db, 0, 1, NULL) != 0) {
                free(db);
                return NULL;
            }
            return db;
        }
    }
    fprintf(stderr, "rheaper: serve: %s: no free name for its database\n", arg);
    free(db);
    return NULL;
}

/* Fills p from database path (validated by opening it). 0 or -1. */
static int rh_profile_load(struct rh_profile *p, int i, char *path)
{
    sqlite3 *db = rh_query_open(path);
    if (!db)
        return -1;
    snprintf(p->id, sizeof p->id, "%d", i);
    p->path = path;
    p->name = rh_meta_dup(db, "program", NULL);
    if (!p->name)
        p->name = strdup("?");
    sqlite3_close(db);
    return p->name ? 0 : -1;
}

/* ---- the command --------------------------------------------------------------- */

static const char rh_serve_usage[] =
    "usage: rheaper serve PROFILE... [--listen ADDR:PORT] [--any] [--threads N]\n"
    "                     [--budget-ms MS] [--row-cap N] [--no-cache]\n"
    "                     [--allow-host NAME]...\n";

static int rh_int_arg(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "rheaper: serve: %s '%s': expected %ld..%ld\n", opt, v ? v : "", lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int rh_cmd_serve(int argc, char **argv)
{
    const char *listen = "127.0.0.1:8080";
    int any = 0, nocache = 0;
    long threads = 8, budget = 10000, cap = 10000;
    const char **args = calloc((size_t)argc, sizeof *args);
    const char **allow = calloc((size_t)argc, sizeof *allow);
    int nargs = 0, nallow = 0;
    if (!args || !allow)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--listen") && v) {
            listen = argv[++i];
        } else if (!strcmp(a, "--allow-host")) {
            if (!v || !*v || strchr(v, ':') || strchr(v, '/') || strlen(v) > 253) {
                fprintf(stderr, "rheaper: serve: --allow-host '%s': expected a host name\n",
                        v ? v : "");
                return free(args), 2;
            }
            allow[nallow++] = v;
            i++;
        } else if (!strcmp(a, "--any")) {
            any = 1;
        } else if (!strcmp(a, "--no-cache")) {
            nocache = 1;
        } else if (!strcmp(a, "--threads")) {
            if (rh_int_arg(a, v, 1, 64, &threads))
                return free(args), 2;
            i++;
        } else if (!strcmp(a, "--budget-ms")) {
            if (rh_int_arg(a, v, 10, 3600000, &budget))
                return free(args), 2;
            i++;
        } else if (!strcmp(a, "--row-cap")) {
            if (rh_int_arg(a, v, 1, 100000000, &cap))
                return free(args), 2;
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "rheaper: serve: unknown option %s\n%s", a, rh_serve_usage);
            return free(args), 2;
        } else {
            args[nargs++] = a;
        }
    }
    if (!nargs) {
        fputs(rh_serve_usage, stderr);
        return free(args), 2;
    }

    /* the address: IPv4 ADDR:PORT ("localhost" is 127.0.0.1) */
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    const char *colon = strrchr(listen, ':');
    char host[64];
    long port;
    if (!colon || (size_t)(colon - listen) >= sizeof host ||
        rh_int_arg("--listen port", colon + 1, 0, 65535, &port))
        return fprintf(stderr, "rheaper: serve: --listen '%s': expected ADDR:PORT\n", listen),
               free(args), 2;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = 0;
    if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return fprintf(stderr, "rheaper: serve: --listen '%s': not an IPv4 address\n", listen),
               free(args), 2;
    sa.sin_port = htons((uint16_t)port);
    int loopback = (ntohl(sa.sin_addr.s_addr) >> 24) == 127;
    if (!loopback && !any)
        return fprintf(stderr,
                       "rheaper: serve: %s is not a loopback address; anyone who can reach it"
                       " could read the profiles. Add --any to allow it.\n",
                       host),
               free(args), 2;
    if (!loopback)
        fprintf(stderr,
                "rheaper: serve: WARNING: listening on %s with --any: there is no"
                " authentication, anyone who can reach this port reads the profiles\n",
                host);

    struct rh_server srv = {NULL, 0, (int)budget, cap, !nocache};
    srv.p = calloc((size_t)nargs, sizeof *srv.p);
    if (!srv.p)
        return free(args), 1;
    for (int i = 0; i < nargs; i++) {
        char *db = rh_profile_db(args[i]);
        if (!db || rh_profile_load(&srv.p[srv.np], srv.np, db)) {
            free(db);
            return free(args), 1;
        }
        srv.np++;
    }
    free(args);

    /* Notices (skipped wrappers, culled profile) would repeat per request. */
    setenv("RHEAPER_QUIET_NOTICES", "1", 1);
    /* The pool threads inherit this mask; the main thread waits for the
     * signals with sigwait, so no handler runs inside libmicrohttpd. */
    sigset_t set;
    signal(SIGINT, SIG_DFL); /* a shell may start it with SIGINT ignored */
    signal(SIGTERM, SIG_DFL);
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    rh_guard_hosts(sa.sin_addr, allow, nallow);
    sqlite3_hard_heap_limit64(RH_SERVE_SQLITE_HEAP);
    rh_pools = calloc((size_t)srv.np, sizeof *rh_pools);
    if (!rh_pools) {
        fprintf(stderr, "rheaper: serve: out of memory\n");
        return 1;
    }
    rh_npools = srv.np;
    if (rh_guard_start(RH_SERVE_CONNS, RH_SERVE_HEAD_S) != 0) {
        fprintf(stderr, "rheaper: serve: cannot start (%s)\n", strerror(errno));
        return 1;
    }
    /* The pool threads poll their connections, so a slow client holds no
     * thread; the head timeout and the room-making of rh_serve_guard.c keep
     * half requests from filling the table. The idle timeout below covers
     * the rest of a request (a query runs up to its budget, a client reads its
     * answer). With --any, one remote address may hold a quarter of the
     * table; on loopback every client is 127.0.0.1, so no per-address limit. */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        rh_request, &srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)threads, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(10 + 2 * budget / 1000),
        MHD_OPTION_CONNECTION_LIMIT, RH_SERVE_CONNS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)RH_SERVE_CONN_MEM, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        loopback ? 0u : RH_SERVE_CONNS / 4, MHD_OPTION_NOTIFY_CONNECTION, rh_guard_notify, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, rh_request_done, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "rheaper: serve: cannot listen on %s:%ld (%s)\n", host, port,
                strerror(errno));
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info ? info->port : (unsigned)port;
    printf("rheaper: serving %d profile%s on http://%s:%u/ (Ctrl-C stops)\n", srv.np,
           srv.np == 1 ? "" : "s", host, bound);
    fflush(stdout);

    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "rheaper: serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    /* the queries in flight end now (their clients get a 503, "the server
     * is stopping"), then the pool threads finish their connections */
    rh_conns_interrupt();
    MHD_stop_daemon(d);
    rh_guard_stop();
    free(allow);
    rh_cache_clear();
    rh_pools_close();
    for (int i = 0; i < srv.np; i++) {
        free(srv.p[i].path);
        free(srv.p[i].name);
    }
    free(srv.p);
    return 0;
}
