/* rh_push.h: the internal header of `rheaper push`, which sends profiles to a
 * ClickHouse server, and of `rheaper collect --clickhouse`, which pushes each
 * profile it receives.
 *
 * Three files, one concern each: rh_push_http.c speaks ClickHouse's HTTP
 * interface through libcurl (queries, streamed inserts, credentials, errors);
 * rh_push_db.c reads a profile.db and turns it into ClickHouse tables (the
 * schema, stack ids that mean the same on every host, RowBinary rows, the
 * staging and partition moves that make a push all-or-nothing); rh_push_cmd.c
 * is the command (options, labels, rips converted first). The tables, the
 * ids and the guarantees are documented in docs/fleet.md.
 */
#ifndef RH_PUSH_H
#define RH_PUSH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- rh_push_http.c: ClickHouse over HTTP ---------------------------------- */

struct rh_ch;

/* A growable byte buffer (query results, RowBinary rows). */
struct rh_buf {
    char *p;
    size_t n, cap;
};

/* Makes room for n more bytes and a NUL. Returns 0 or -1 (out of memory). */
int rh_buf_grow(struct rh_buf *b, size_t n);

/* Appends n bytes, NUL-terminated; returns 0 or -1 (out of memory, the
 * buffer unchanged). Inline: RowBinary rows call it per value. */
static inline int rh_buf_add(struct rh_buf *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap && rh_buf_grow(b, n))
        return -1;
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}
void rh_buf_free(struct rh_buf *b);

/* Connects nothing yet: checks the URL (http:// or https://, no user or
 * password in it), reads the credentials (RHEAPER_CLICKHOUSE_USER,
 * RHEAPER_CLICKHOUSE_PASSWORD or the first line of the file named by
 * RHEAPER_CLICKHOUSE_PASSWORD_FILE) and warns once on stderr when http:// goes
 * to an address that is not loopback. database: the database every statement
 * runs in (created by rh_ch_use_database). Returns the handle, or NULL with
 * err set. */
struct rh_ch *rh_ch_open(const char *url, const char *database, char *err, size_t errlen);
void rh_ch_close(struct rh_ch *c);

/* The URL as given, for messages. */
const char *rh_ch_url(const struct rh_ch *c);

/* Runs one statement (sent as the request body). out (may be NULL) receives
 * the response body, NUL-terminated. On an HTTP error or a ClickHouse error
 * returns -1 with err holding one line: the URL and ClickHouse's message. */
int rh_ch_query(struct rh_ch *c, const char *sql, struct rh_buf *out, char *err, size_t errlen);

/* Like rh_ch_query, for a statement whose answer is one number (the first
 * field of the first line). Returns 0 with *v set, or -1 with err. */
int rh_ch_query_u64(struct rh_ch *c, const char *sql, uint64_t *v, char *err, size_t errlen);

/* The producer of an insert's body: writes up to cap bytes into buf and
 * returns how many; 0 ends the body; a negative value aborts the request
 * (with its own message in the producer's state). */
typedef long (*rh_ch_fill_fn)(void *arg, char *buf, size_t cap);

/* Sends `INSERT ... FORMAT RowBinary` (the query, in the URL) with the body
 * streamed from fill (chunked: nothing is held in memory but one buffer).
 * Returns 0, or -1 with err set (ClickHouse's message, or "aborted" when the
 * producer stopped; its own message is then the one to print). */
int rh_ch_insert(struct rh_ch *c, const char *query, rh_ch_fill_fn fill, void *arg, char *err,
                 size_t errlen);

/* Creates the handle's database when missing. Returns 0 or -1 with err. */
int rh_ch_use_database(struct rh_ch *c, char *err, size_t errlen);

/* The database name given to rh_ch_open. */
const char *rh_ch_database(const struct rh_ch *c);

/* ---- rh_push_db.c: one profile.db into ClickHouse -------------------------- */

#define RH_PUSH_MAX_LABELS 64

struct rh_push_labels {
    const char *key[RH_PUSH_MAX_LABELS];
    const char *value[RH_PUSH_MAX_LABELS];
    int n;
};

/* What one push did, for the command's line and the benchmark. */
struct rh_push_result {
    uint64_t profile;     /* the profile's id */
    int already;          /* 1: the server had it; nothing was sent */
    uint64_t allocations; /* rows sent to allocations */
    uint64_t rows;        /* rows sent to every table */
    double seconds;       /* wall time of the whole push */
    double alloc_seconds; /* wall time of the allocations insert */
};

/* Pushes the profile database at db_path through c: creates the schema when
 * missing, skips the profile when `profiles` has its id, else loads every
 * table into staging tables, moves their partition into place and writes the
 * `profiles` row last. On failure the partitions already moved are dropped
 * again, so no partial profile stays. Returns 0 or -1 with err set. */
int rh_push_db(struct rh_ch *c, const char *db_path, const struct rh_push_labels *labels,
               struct rh_push_result *res, char *err, size_t errlen);

/* The stable id of one stack, from what is the same on every host running
 * the same build: its frames' (module, offset) pairs and its kind. kind: the
 * allocation function's name or NULL; truncated: the walk was cut; mods[i]:
 * frame i's module build id in hex or, when it has none, its path (NULL: no
 * module); offs[i]: the frame's offset in its module. Never 0. */
uint64_t rh_push_stack_id(const char *kind, int truncated, uint32_t n, const char *const *mods,
                          const int64_t *offs);

/* ---- rh_push_cmd.c: the command ------------------------------------------------ */

struct rh_push_opts {
    const char *url;
    const char *database; /* default "rheaper" */
    struct rh_push_labels labels;
    int quiet;
};

/* rheaper push PROFILE... --clickhouse URL [--database DB] [--label K=V]... */
int rh_cmd_push(int argc, char **argv);

/* Pushes one profile, a profile.db or a rip (converted first into a temp
 * database next to nothing the user owns). prog: the prefix of messages.
 * Prints one line on success ("pushed ... as profile ...") unless quiet.
 * Returns 0 or 1 (one line on stderr). */
int rh_push_path(const char *prog, const char *path, const struct rh_push_opts *o);

/* Parses one --label KEY=VALUE into l. Returns 0 or -1 (message printed). */
int rh_push_label_arg(const char *prog, const char *arg, struct rh_push_labels *l);

#endif
