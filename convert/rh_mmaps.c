/* rh_mmaps.c: the mmaps and mallopts tables.
 *
 * The runtime records every mmap, mmap64, munmap, mremap and mallopt call it
 * sees as one timed EXT record (FORMAT.md "mmap and mallopt"): a
 * stack id of kind mmap/munmap/mremap/mallopt, then the call's
 * arguments and result. The stream decoder (rh_stream_decode.c) hands them to the
 * merge as RH_EV_EXT events, in time order with the allocations, and the merge
 * passes each one here with its time in ns since start and its thread. Each
 * becomes one row, numbered in merged order:
 *
 *   mmaps(id, time, thread, op, address, length, new_address, new_length,
 *         prot, flags, fd, offset, result, stack_id)
 *   mallopts(id, time, thread, param, value, result, stack_id)
 *
 * mmap: address is the mapping (the requested address when the call failed),
 * new_* NULL. munmap: address, length; prot, flags, fd, offset NULL. mremap:
 * address/length the old range, new_address/new_length the new one (NULL
 * when it failed), flags its flags. result is 0 or the call's errno; for
 * mallopt, mallopt's own return value (1 success, 0 error). A damaged record
 * (a body that does not decode) is skipped and counted, never fatal.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "rh_core.h"
#include "rh_db.h"

static const char rh_mmaps_schema[] =
    "CREATE TABLE mmaps(id INTEGER PRIMARY KEY, time INTEGER, thread INTEGER, op TEXT,"
    " address INTEGER, length INTEGER, new_address INTEGER, new_length INTEGER, prot INTEGER,"
    " flags INTEGER, fd INTEGER, offset INTEGER, result INTEGER, stack_id INTEGER);"
    "CREATE TABLE mallopts(id INTEGER PRIMARY KEY, time INTEGER, thread INTEGER, param INTEGER,"
    " value INTEGER, result INTEGER, stack_id INTEGER);";

int rh_mmaps_open(struct rh_mmaps *m, sqlite3 *db, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (sqlite3_exec(db, rh_mmaps_schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO mmaps VALUES(NULL,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                           (sqlite3_stmt **)&m->mm, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO mallopts VALUES(NULL,?,?,?,?,?,?)", -1,
                           (sqlite3_stmt **)&m->mo, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "mmaps: SQLite error (%s)", sqlite3_errmsg(db));
        rh_mmaps_close(m);
        return -1;
    }
    return 0;
}

void rh_mmaps_close(struct rh_mmaps *m)
{
    sqlite3_finalize(m->mm);
    sqlite3_finalize(m->mo);
    m->mm = m->mo = NULL;
}

/* Binds v as an integer (values above INT64_MAX keep their bits). */
static void rh_bind_u(sqlite3_stmt *s, int i, uint64_t v)
{
    sqlite3_bind_int64(s, i, (sqlite3_int64)v);
}

int rh_mmaps_event(struct rh_mmaps *m, const struct rh_event *ev, int64_t t)
{
    const uint8_t *p = ev->ext, *end = ev->ext + ev->ext_len;
    uint64_t v[9];
    unsigned need = ev->ext_sub == RIP_EXT_MMAP     ? 9
                    : ev->ext_sub == RIP_EXT_MUNMAP ? 4
                    : ev->ext_sub == RIP_EXT_MREMAP ? 7
                    : ev->ext_sub == RIP_EXT_MALLOPT ? 4
                                                     : 0;
    for (unsigned i = 0; i < need; i++)
        if (!p || rip_get_varint(&p, end, &v[i])) {
            m->damaged++;
            return 0;
        }
    if (!need)
        return 0;
    sqlite3_stmt *s = ev->ext_sub == RIP_EXT_MALLOPT ? m->mo : m->mm;
    if (!s)
        return 0;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    sqlite3_bind_int64(s, 1, t);
    sqlite3_bind_int64(s, 2, ev->thread);
    switch (ev->ext_sub) {
    case RIP_EXT_MMAP: /* stack, hint, length, prot, flags, fd, offset, result, errno */
        sqlite3_bind_text(s, 3, "mmap", -1, SQLITE_STATIC);
        rh_bind_u(s, 4, v[8] ? v[1] : v[7]);
        rh_bind_u(s, 5, v[2]);
        sqlite3_bind_int64(s, 8, (int64_t)v[3]);
        sqlite3_bind_int64(s, 9, (int64_t)v[4]);
        sqlite3_bind_int64(s, 10, rip_unzigzag(v[5]));
        rh_bind_u(s, 11, v[6]);
        rh_bind_u(s, 12, v[8]);
        rh_bind_u(s, 13, v[0]);
        m->nmmaps++;
        break;
    case RIP_EXT_MUNMAP: /* stack, address, length, errno */
        sqlite3_bind_text(s, 3, "munmap", -1, SQLITE_STATIC);
        rh_bind_u(s, 4, v[1]);
        rh_bind_u(s, 5, v[2]);
        rh_bind_u(s, 12, v[3]);
        rh_bind_u(s, 13, v[0]);
        m->nmmaps++;
        break;
    case RIP_EXT_MREMAP: /* stack, old, old length, new length, flags, new, errno */
        sqlite3_bind_text(s, 3, "mremap", -1, SQLITE_STATIC);
        rh_bind_u(s, 4, v[1]);
        rh_bind_u(s, 5, v[2]);
        if (!v[6]) {
            rh_bind_u(s, 6, v[5]);
            rh_bind_u(s, 7, v[3]);
        }
        sqlite3_bind_int64(s, 9, (int64_t)v[4]);
        rh_bind_u(s, 12, v[6]);
        rh_bind_u(s, 13, v[0]);
        m->nmmaps++;
        break;
    case RIP_EXT_MALLOPT: /* stack, param, value, result (zigzag) */
        sqlite3_bind_int64(s, 3, rip_unzigzag(v[1]));
        sqlite3_bind_int64(s, 4, rip_unzigzag(v[2]));
        sqlite3_bind_int64(s, 5, rip_unzigzag(v[3]));
        rh_bind_u(s, 6, v[0]);
        m->nmallopts++;
        break;
    }
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : -1;
}
