/* rh_cli_mmaps.c: `rheaper mmaps DB [--mallopts] [--json|--csv] [-n N]`
 *.
 *
 * Lists the mmap, munmap and mremap calls the runtime recorded (the mmaps
 * table, rh_mmaps.c in the converter), or with --mallopts the mallopt calls,
 * in the order they happened: time in seconds, thread, the call's fields
 * (addresses, prot and flags in hex), its result (0 or the call's errno;
 * mallopt's own return value), and the function that made the call (frame 0
 * of its stack) with its location. --json and --csv give the table's own
 * columns (time in ns, addresses as integers, stack_id) for scripts. A profile converted before
 * version 3, or a database without the tables, answers with an empty list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"

static int rh_mm_usage(void)
{
    fprintf(stderr, "usage: rheaper mmaps DB [--mallopts] [--json|--csv] [-n N]\n");
    return 2;
}

/* Frame 0 of stack `s` as "function" and "file:line" columns. */
#define RH_MM_FRAME                                                                                \
    " (SELECT coalesce(b.sym, '?' || '?') FROM backtraces b WHERE b.id = %s.stack_id AND"                \
    " b.frame_no = 0) AS function,"                                                                \
    " (SELECT coalesce(replace(b.file, rtrim(b.file, replace(b.file, '/', '')), ''),"              \
    " b.module, '?') || ':' || coalesce(b.line, printf('0x%%x', b.address)) FROM backtraces b"    \
    " WHERE b.id = %s.stack_id AND b.frame_no = 0) AS location"

int rh_cmd_mmaps(int argc, char **argv)
{
    const char *path = NULL;
    enum rh_fmt fmt = RH_FMT_TEXT;
    int mallopts = 0;
    long long n = -1;
    for (int i = 1; i < argc; i++) {
        if (rh_fmt_arg(&fmt, argv, &i)) {
            continue;
        } else if (!strcmp(argv[i], "--mallopts")) {
            mallopts = 1;
        } else if (!strcmp(argv[i], "-n")) {
            char *end;
            if (i + 1 >= argc || (n = strtoll(argv[++i], &end, 10)) < 0 || *end) {
                fprintf(stderr, "rheaper: mmaps: -n needs a count\n");
                return 2;
            }
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "rheaper: mmaps: unknown option %s\n", argv[i]);
            return rh_mm_usage();
        } else if (!path) {
            path = argv[i];
        } else {
            return rh_mm_usage();
        }
    }
    if (!path)
        return rh_mm_usage();
    sqlite3 *db = rh_query_open(path);
    if (!db)
        return 1;
    char sql[2048];
    const char *table = mallopts ? "mallopts" : "mmaps";
    if (!rh_table_exists(db, table)) {
        /* an older profile: no such calls were recorded */
        snprintf(sql, sizeof sql, "%s",
                 mallopts ? "SELECT NULL AS id, NULL AS time_s, NULL AS thread, NULL AS param,"
                            " NULL AS value, NULL AS result, NULL AS function, NULL AS location"
                            " WHERE 0"
                          : "SELECT NULL AS id, NULL AS time_s, NULL AS thread, NULL AS op,"
                            " NULL AS address, NULL AS length, NULL AS new_address,"
                            " NULL AS new_length, NULL AS prot, NULL AS flags, NULL AS fd,"
                            " NULL AS offset, NULL AS result, NULL AS function, NULL AS location"
                            " WHERE 0");
    } else if (mallopts) {
        snprintf(sql, sizeof sql,
                 "SELECT m.id, printf('%%.6f', m.time / 1e9) AS time_s, m.thread, m.param,"
                 " m.value, m.result," RH_MM_FRAME " FROM mallopts m ORDER BY m.id LIMIT ?1",
                 "m", "m");
    } else if (fmt != RH_FMT_TEXT) {
        /* for scripts: the table's own columns, addresses as integers */
        snprintf(sql, sizeof sql,
                 "SELECT m.id, m.time AS time_ns, m.thread, m.op, m.address, m.length,"
                 " m.new_address, m.new_length, m.prot, m.flags, m.fd, m.offset, m.result,"
                 " m.stack_id," RH_MM_FRAME " FROM mmaps m ORDER BY m.id LIMIT ?1",
                 "m", "m");
    } else {
        snprintf(sql, sizeof sql,
                 "SELECT m.id, printf('%%.6f', m.time / 1e9) AS time_s, m.thread, m.op,"
                 " printf('0x%%x', m.address) AS address, m.length,"
                 " CASE WHEN m.new_address IS NULL THEN NULL"
                 " ELSE printf('0x%%x', m.new_address) END AS new_address, m.new_length,"
                 " CASE WHEN m.prot IS NULL THEN NULL ELSE printf('0x%%x', m.prot) END AS prot,"
                 " CASE WHEN m.flags IS NULL THEN NULL ELSE printf('0x%%x', m.flags) END AS flags,"
                 " m.fd, m.offset, m.result," RH_MM_FRAME " FROM mmaps m ORDER BY m.id LIMIT ?1",
                 "m", "m");
    }
    sqlite3_stmt *st = NULL;
    int rc = 1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "mmaps");
    } else {
        if (sqlite3_bind_parameter_count(st) >= 1)
            sqlite3_bind_int64(st, 1, n);
        rc = rh_print_stmt(st, fmt, stdout) == 0 ? 0 : 1;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}
