/* rh_serve.h: the internal header of `rheaper serve`, the HTTP server.
 *
 * `rheaper serve PROFILE...` answers bytehound's REST API (plus rheaper's own
 * endpoints) and serves the web UI built into the binary. It is made of:
 *   rh_serve_main.c   arguments, profiles (a rip is converted first), the
 *                     libmicrohttpd daemon with its thread pool, signals, the
 *                     pool of read-only connections per profile (a request
 *                     goes to the one holding its filters' scope), the
 *                     time budget, routing and the embedded UI files
 *   rh_serve_guard.c  the Host check (DNS rebinding) and the connection
 *                     table: a request's head must arrive within the head
 *                     timeout, and half requests make room for new clients
 *   rh_serve_cache.c  a bounded cache of answers (the databases are read-only)
 *   rh_serve_api.c    the endpoints: one function per path, each writing its
 *                     answer into a struct rh_resp
 *   rh_serve_ui.c     generated at build time from convert/serve/ui/ and the
 *                     chart library (embed_ui.py): the UI files as C arrays
 * The filters are parsed and the answers computed by the query library
 * (rh_query.h: URL parameters, scope, call sites, leak ranking, diff); the
 * files are written by the export writers (rh_export.h: flamegraph, folded
 * stacks, heaptrack export).
 */
#ifndef RH_SERVE_H
#define RH_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <netinet/in.h>
#include <sqlite3.h>
#include <microhttpd.h>

#include "rh_export.h"
#include "rh_query.h"

/* `rheaper serve` (rh_serve_main.c), called by the rheaper command. */
int rh_cmd_serve(int argc, char **argv);

/* One profile being served. */
struct rh_profile {
    char id[16]; /* its id in URLs: "0", "1", ... */
    char *path;  /* the database */
    char *name;  /* the program, from meta */
};

struct rh_server {
    struct rh_profile *p;
    int np;
    int budget_ms;   /* each request's time budget in SQLite */
    int64_t row_cap; /* the most rows one list answers */
    int cache;       /* 1: answers are kept in rh_serve_cache.c */
};

/* One request's parameters, as libmicrohttpd decoded them. */
#define RH_MAX_PARAMS 64
struct rh_params {
    const char *k[RH_MAX_PARAMS], *v[RH_MAX_PARAMS];
    int n, overflow;
};

/* The answer: HTTP status, content type and a malloc'd body. */
struct rh_resp {
    int status;
    const char *type;
    char *body;
    size_t len;
};

/* ---- rh_serve_main.c ---------------------------------------------------- */

/* A read-only connection to profile i for the current request, held until
 * the request ends (the same one when asked again): preferably the one that
 * holds the scope of the request's routing key (rh_serve_route), waiting for
 * it while another request uses it. NULL when it cannot be opened. */
sqlite3 *rh_serve_db(const struct rh_server *s, int i);

/* Sets the current request's routing key (copied; NULL: none): the filter
 * parameters that make its scope. Call before rh_serve_db. */
void rh_serve_route(const char *key);

/* Sets r to a JSON error {"error": MSG, "parameter": PARAM (or null)} with
 * the given status. Returns -1 for the caller's convenience. */
int rh_resp_error(struct rh_resp *r, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 1 when the current request ran out of its time budget (SQLite was
 * interrupted). */
int rh_serve_over_budget(void);

/* ---- rh_serve_api.c ----------------------------------------------------- */

/* Answers GET `path` (already split from its query) into r. Every endpoint
 * path starts with /list or /data/. Returns 0 (r filled, any status). */
int rh_api_handle(const struct rh_server *s, const char *path, const struct rh_params *pr,
                  struct rh_resp *r);

/* ---- rh_serve_guard.c -------------------------------------------------- */

/* The names a request's Host may carry besides localhost and the loopback
 * addresses: the listening address (0.0.0.0: every address of this machine)
 * and the --allow-host names (kept, not copied). */
void rh_guard_hosts(struct in_addr listen, const char **allow, int nallow);

/* 1 when the Host header's value (NULL: absent) names this server. */
int rh_guard_host_ok(const char *host);

/* Starts the watchdog of the connection table: at most `limit` connections,
 * each request's head within head_s seconds. 0 or -1. */
int rh_guard_start(unsigned limit, unsigned head_s);

/* Stops the watchdog (after MHD_stop_daemon) and prints one line when it cut
 * connections. */
void rh_guard_stop(void);

/* MHD_OPTION_NOTIFY_CONNECTION: lists connections from accept to close, and
 * makes room when the table is nearly full. */
void rh_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code);

/* The head of c's current request arrived (1), or its request ended and the
 * next one's time begins (0). */
void rh_guard_head(struct MHD_Connection *c, int arrived);

/* ---- rh_serve_cache.c -------------------------------------------------- */

/* The cache key of a request: path, then its parameters sorted (malloc'd;
 * NULL when out of memory). */
char *rh_cache_key(const char *path, const struct rh_params *p);

/* 1 and r filled with a malloc'd copy of the answer when key was answered
 * before, else 0 (r untouched). */
int rh_cache_get(const char *key, struct rh_resp *r);

/* Keeps a copy of r under key when it is a 200 and small enough, evicting the
 * least recently used answers beyond the cache's bounds. */
void rh_cache_put(const char *key, const struct rh_resp *r);

/* Frees every entry (at exit). */
void rh_cache_clear(void);

/* ---- rh_serve_ui.c (generated) ------------------------------------------ */

struct rh_ui_file {
    const char *path; /* "/index.html" */
    const char *type; /* MIME type */
    const unsigned char *data;
    size_t len;
};
extern const struct rh_ui_file rh_ui_files[];
extern const size_t rh_ui_nfiles;

#endif
