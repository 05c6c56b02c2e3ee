/* rh_push_http.c: ClickHouse's HTTP interface, through libcurl.
 *
 * A statement is POSTed as the request body to URL/?database=DB; an insert
 * puts `INSERT INTO t (cols) FORMAT RowBinary` in the URL's query parameter
 * and streams the rows as a chunked body, produced on demand by the caller
 * (rh_ch_fill_fn), so a profile of any size costs one buffer. ClickHouse
 * answers an error with a status other than 200 and a body such as "Code: 60,
 * e.displayText() = DB::Exception: Table x doesn't exist, e.what() =
 * DB::Exception"; that message, trimmed to one line, is what the caller
 * prints.
 *
 * Credentials never come from the command line (where `ps` shows them): the
 * user from RHEAPER_CLICKHOUSE_USER, the password from
 * RHEAPER_CLICKHOUSE_PASSWORD or from the first line of the file named by
 * RHEAPER_CLICKHOUSE_PASSWORD_FILE, sent as HTTP basic authentication. A URL
 * with a user or password in it is refused. http:// to an address that is
 * not loopback gets a warning: the profile and the password travel in clear.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "rh_push.h"
#include "rh_safefile.h"

struct rh_ch {
    CURL *curl;
    char *url;  /* as given */
    char *base; /* scheme://host:port/path without query, ending in '/' */
    char *database;
    char *user, *password; /* NULL: none (ClickHouse's default user) */
};

int rh_buf_grow(struct rh_buf *b, size_t n)
{
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
        cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q)
        return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

void rh_buf_free(struct rh_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* The first line of the file at path, without its newline, malloc'ed; NULL
 * with err set when it cannot be read. */
static char *rh_ch_read_secret(const char *path, char *err, size_t errlen)
{
    char why[600];
    int fd = rh_safe_open(path, O_RDONLY, 0, RH_SAFE_REGULAR, 0, why, sizeof why);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        snprintf(err, errlen, "RHEAPER_CLICKHOUSE_PASSWORD_FILE: %s", why);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    if (n < 0) {
        free(line);
        return strdup("");
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    return line;
}

/* 1 when host names this machine's loopback (localhost, 127.0.0.0/8, ::1). */
static int rh_ch_loopback(const char *host)
{
    if (!strcasecmp(host, "localhost") || !strcmp(host, "::1") || !strcmp(host, "[::1]"))
        return 1;
    return !strncmp(host, "127.", 4);
}

struct rh_ch *rh_ch_open(const char *url, const char *database, char *err, size_t errlen)
{
    static int curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            snprintf(err, errlen, "libcurl could not start");
            return NULL;
        }
        curl_ready = 1;
    }
    struct rh_ch *c = calloc(1, sizeof *c);
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *user = NULL, *pass = NULL, *query = NULL, *path = NULL,
         *port = NULL;
    if (!c || !u) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        snprintf(err, errlen, "%s: not a URL (expected http://HOST:PORT/ or https://...)", url);
        goto fail;
    }
    if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
        snprintf(err, errlen, "%s: only http:// and https:// are supported", url);
        goto fail;
    }
    curl_url_get(u, CURLUPART_USER, &user, 0);
    curl_url_get(u, CURLUPART_PASSWORD, &pass, 0);
    if (user || pass) {
        snprintf(err, errlen,
                 "%s: credentials do not belong on the command line; set "
                 "RHEAPER_CLICKHOUSE_USER and RHEAPER_CLICKHOUSE_PASSWORD (or "
                 "RHEAPER_CLICKHOUSE_PASSWORD_FILE) instead",
                 url);
        goto fail;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK && query && *query) {
        snprintf(err, errlen, "%s: no query string, please (the database is --database)", url);
        goto fail;
    }
    curl_url_get(u, CURLUPART_PATH, &path, 0);
    curl_url_get(u, CURLUPART_PORT, &port, 0);
    if (!strcmp(scheme, "http") && !rh_ch_loopback(host))
        fprintf(stderr,
                "rheaper: warning: %s is plain http:// to %s, not this machine: the profile and "
                "the password travel unencrypted (use https://)\n",
                url, host);
    size_t bl =
        strlen(scheme) + strlen(host) + (port ? strlen(port) : 0) + (path ? strlen(path) : 0) + 16;
    c->base = malloc(bl);
    c->url = strdup(url);
    c->database = strdup(database);
    if (!c->base || !c->url || !c->database) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    snprintf(c->base, bl, "%s://%s%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "",
             path && *path ? path : "/", path && *path && path[strlen(path) - 1] != '/' ? "/" : "");
    const char *eu = getenv("RHEAPER_CLICKHOUSE_USER");
    const char *ep = getenv("RHEAPER_CLICKHOUSE_PASSWORD");
    const char *ef = getenv("RHEAPER_CLICKHOUSE_PASSWORD_FILE");
    if (eu && *eu)
        c->user = strdup(eu);
    if (ef && *ef) {
        c->password = rh_ch_read_secret(ef, err, errlen);
        if (!c->password)
            goto fail;
    } else if (ep) {
        c->password = strdup(ep);
    }
    if (c->password && !c->user)
        c->user = strdup("default");
    c->curl = curl_easy_init();
    if (!c->curl) {
        snprintf(err, errlen, "libcurl could not start");
        goto fail;
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(query);
    curl_free(path);
    curl_free(port);
    curl_url_cleanup(u);
    return c;
fail:
    curl_free(scheme);
    curl_free(host);
    curl_free(user);
    curl_free(pass);
    curl_free(query);
    curl_free(path);
    curl_free(port);
    if (u)
        curl_url_cleanup(u);
    rh_ch_close(c);
    return NULL;
}

void rh_ch_close(struct rh_ch *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->url);
    free(c->base);
    free(c->database);
    free(c->user);
    if (c->password) {
        memset(c->password, 0, strlen(c->password));
        free(c->password);
    }
    free(c);
}

const char *rh_ch_url(const struct rh_ch *c)
{
    return c->url;
}

const char *rh_ch_database(const struct rh_ch *c)
{
    return c->database;
}

/* The response body, kept up to 1 MiB (results here are small; an error
 * message is the first line anyway). */
static size_t rh_ch_on_body(char *p, size_t sz, size_t nm, void *arg)
{
    struct rh_buf *b = arg;
    size_t n = sz * nm;
    if (b->n < (1u << 20) && rh_buf_add(b, p, n) != 0)
        return 0;
    return n;
}

/* ClickHouse's error body as one line: "Code: N, e.displayText() =
 * DB::Exception: MSG, e.what() = DB::Exception" becomes "Code N: MSG";
 * newlines become spaces; anything else is kept as it is. */
static void rh_ch_error_line(const char *body, char *out, size_t outlen)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", body ? body : "");
    for (char *p = tmp; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    size_t n = strlen(tmp);
    while (n && tmp[n - 1] == ' ')
        tmp[--n] = 0;
    const char *what = strstr(tmp, ", e.what() = ");
    if (what)
        tmp[what - tmp] = 0;
    const char *dt = strstr(tmp, "e.displayText() = ");
    int code = 0;
    if (dt && sscanf(tmp, "Code: %d", &code) == 1) {
        dt += strlen("e.displayText() = ");
        if (!strncmp(dt, "DB::Exception: ", 15))
            dt += 15;
        snprintf(out, outlen, "Code %d: %s", code, dt);
    } else {
        snprintf(out, outlen, "%s", *tmp ? tmp : "(empty answer)");
    }
}

/* Performs the request set up on c->curl, then checks the transport and the
 * status. Returns 0 or -1 with err. */
static int rh_ch_perform(struct rh_ch *c, struct rh_buf *body, const char *what, char *err,
                         size_t errlen)
{
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, rh_ch_on_body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
    if (c->user) {
        curl_easy_setopt(c->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c->curl, CURLOPT_USERNAME, c->user);
        curl_easy_setopt(c->curl, CURLOPT_PASSWORD, c->password ? c->password : "");
    }
    CURLcode rc = curl_easy_perform(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(err, errlen, "aborted");
        return -1;
    }
    long status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && !(status && status != 200 && body->n)) {
        snprintf(err, errlen, "%s: %s: %s", c->url, what, *cerr ? cerr : curl_easy_strerror(rc));
        return -1;
    }
    if (status != 200) {
        char line[900];
        rh_ch_error_line(body->p, line, sizeof line);
        snprintf(err, errlen, "%s: %s: ClickHouse says %s (HTTP %ld)", c->url, what, line, status);
        return -1;
    }
    return 0;
}

/* The short name of a statement for messages: its first words, up to the
 * table's name. */
static void rh_ch_what(const char *sql, char *out, size_t outlen)
{
    size_t n = 0;
    int words = 0, space = 1, last = 3; /* "CREATE TABLE IF NOT EXISTS t": 6 */
    while (*sql && isspace((unsigned char)*sql))
        sql++;
    for (; *sql && n + 1 < outlen && n < 80; sql++) {
        int s = isspace((unsigned char)*sql) || *sql == '(';
        if (s && !space && ++words == 3 && n >= 3 && !strncmp(out + n - 3, " IF", 3))
            last = 6;
        if (s && !space && words == last)
            break;
        if (!(s && space))
            out[n++] = s ? ' ' : *sql;
        space = s;
    }
    while (n && out[n - 1] == ' ')
        n--;
    out[n] = 0;
}

/* Sets the URL: base?database=DB[&query=Q] (Q escaped). Returns 0 or -1. */
static int rh_ch_set_url(struct rh_ch *c, const char *query)
{
    char *db = curl_easy_escape(c->curl, c->database, 0);
    char *q = query ? curl_easy_escape(c->curl, query, 0) : NULL;
    if (!db || (query && !q)) {
        curl_free(db);
        curl_free(q);
        return -1;
    }
    size_t n = strlen(c->base) + strlen(db) + (q ? strlen(q) : 0) + 32;
    char *url = malloc(n);
    if (!url) {
        curl_free(db);
        curl_free(q);
        return -1;
    }
    snprintf(url, n, "%s?database=%s%s%s", c->base, db, q ? "&query=" : "", q ? q : "");
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_free(db);
    curl_free(q);
    free(url); /* libcurl copies the string */
    return 0;
}

int rh_ch_query(struct rh_ch *c, const char *sql, struct rh_buf *out, char *err, size_t errlen)
{
    struct rh_buf local = {0};
    struct rh_buf *body = out ? out : &local;
    body->n = 0;
    char what[96];
    rh_ch_what(sql, what, sizeof what);
    curl_easy_reset(c->curl);
    if (rh_ch_set_url(c, NULL) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, sql);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(sql));
    int rc = rh_ch_perform(c, body, what, err, errlen);
    if (rc == 0 && body->n == 0 && rh_buf_add(body, "", 0) != 0)
        rc = -1;
    rh_buf_free(&local);
    return rc;
}

int rh_ch_query_u64(struct rh_ch *c, const char *sql, uint64_t *v, char *err, size_t errlen)
{
    struct rh_buf b = {0};
    int rc = rh_ch_query(c, sql, &b, err, errlen);
    if (rc == 0) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(b.p ? b.p : "", &end, 10);
        if (!b.p || end == b.p || errno) {
            snprintf(err, errlen, "%s: unexpected answer to %.60s: %.80s", c->url, sql,
                     b.p ? b.p : "");
            rc = -1;
        } else {
            *v = x;
        }
    }
    rh_buf_free(&b);
    return rc;
}

struct rh_ch_reader {
    rh_ch_fill_fn fill;
    void *arg;
    int failed;
};

static size_t rh_ch_on_read(char *buf, size_t sz, size_t nm, void *arg)
{
    struct rh_ch_reader *r = arg;
    long n = r->fill(r->arg, buf, sz * nm);
    if (n < 0) {
        r->failed = 1;
        return CURL_READFUNC_ABORT;
    }
    return (size_t)n;
}

int rh_ch_insert(struct rh_ch *c, const char *query, rh_ch_fill_fn fill, void *arg, char *err,
                 size_t errlen)
{
    struct rh_buf body = {0};
    struct rh_ch_reader r = {fill, arg, 0};
    char what[96];
    rh_ch_what(query, what, sizeof what);
    curl_easy_reset(c->curl);
    if (rh_ch_set_url(c, query) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct curl_slist *h = curl_slist_append(NULL, "Transfer-Encoding: chunked");
    h = h ? curl_slist_append(h, "Expect:") : NULL; /* no 100-continue round trip */
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, rh_ch_on_read);
    curl_easy_setopt(c->curl, CURLOPT_READDATA, &r);
    curl_easy_setopt(c->curl, CURLOPT_UPLOAD_BUFFERSIZE, 2L << 20);
    int rc = rh_ch_perform(c, &body, what, err, errlen);
    if (rc && r.failed)
        snprintf(err, errlen, "aborted");
    curl_slist_free_all(h);
    rh_buf_free(&body);
    return rc;
}

int rh_ch_use_database(struct rh_ch *c, char *err, size_t errlen)
{
    for (const char *p = c->database; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') {
            snprintf(err, errlen, "--database %s: letters, digits and _ only", c->database);
            return -1;
        }
    if (!*c->database) {
        snprintf(err, errlen, "--database: empty name");
        return -1;
    }
    /* the statement runs in `default`, which every server has */
    char *keep = c->database, sql[256];
    c->database = "default";
    snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS %s", keep);
    int rc = rh_ch_query(c, sql, NULL, err, errlen);
    c->database = keep;
    return rc;
}
