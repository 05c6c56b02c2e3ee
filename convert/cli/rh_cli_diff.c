/* rh_cli_diff.c: `rheaper diff A B`, the comparison of two profiles.
 *
 * rh_diff_compute() (convert/query/rh_query_diff.c) is the one computation;
 * this command prints it as text, CSV or JSON.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"

/* ---- the command ------------------------------------------------------------- */

static void rh_diff_print(const struct rh_diff_row *r, size_t n, size_t limit, int all,
                          enum rh_fmt fmt, FILE *out)
{
    static const char *const cols[] = {
        "status",          "function",        "location",       "a_count",
        "b_count",         "a_bytes",         "b_bytes",        "a_leaked_blocks",
        "b_leaked_blocks", "a_leaked_bytes",  "b_leaked_bytes", "delta_leaked_bytes",
        "a_peak_bytes",    "b_peak_bytes",    "delta_peak_bytes"};
    if (fmt == RH_FMT_CSV) {
        for (size_t c = 0; c < 15; c++)
            fprintf(out, "%s%s", c ? "," : "", cols[c]);
        fputc('\n', out);
    } else if (fmt == RH_FMT_JSON) {
        fputc('[', out);
    } else {
        fprintf(out, "%-9s %12s %12s %12s %12s %12s %12s %12s  %s\n", "status", "count",
                "d_count", "bytes", "d_bytes", "d_leaked_b", "peak_b", "d_peak_b", "call site");
    }
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < limit; i++) {
        if (!all && !strcmp(r[i].status, "same"))
            continue;
        const struct rh_diff_row *x = &r[i];
        int64_t v[12] = {x->a_count,
                         x->b_count,
                         x->a_bytes,
                         x->b_bytes,
                         x->a_leaked_blocks,
                         x->b_leaked_blocks,
                         x->a_leaked_bytes,
                         x->b_leaked_bytes,
                         x->b_leaked_bytes - x->a_leaked_bytes,
                         x->a_peak_bytes,
                         x->b_peak_bytes,
                         x->b_peak_bytes - x->a_peak_bytes};
        if (fmt == RH_FMT_CSV) {
            fprintf(out, "%s,", x->status);
            rh_csv_field(out, x->function);
            fputc(',', out);
            rh_csv_field(out, x->location);
            for (int c = 0; c < 12; c++)
                fprintf(out, ",%" PRId64, v[c]);
            fputc('\n', out);
        } else if (fmt == RH_FMT_JSON) {
            fprintf(out, "%s{\"status\":\"%s\",\"function\":", shown ? "," : "", x->status);
            rh_json_string(out, x->function);
            fputs(",\"location\":", out);
            rh_json_string(out, x->location);
            for (int c = 0; c < 12; c++)
                fprintf(out, ",\"%s\":%" PRId64, cols[c + 3], v[c]);
            fputc('}', out);
        } else {
            fprintf(out,
                    "%-9s %12" PRId64 " %+12" PRId64 " %12" PRId64 " %+12" PRId64 " %+12" PRId64
                    " %12" PRId64 " %+12" PRId64 "  %s %s\n",
                    x->status, x->b_count, x->b_count - x->a_count, x->b_bytes,
                    x->b_bytes - x->a_bytes, v[8], x->b_peak_bytes, v[11], x->function,
                    x->location);
        }
        shown++;
    }
    if (fmt == RH_FMT_JSON)
        fputs("]\n", out);
}

int rh_cmd_diff(int argc, char **argv)
{
    struct rh_qfilter q;
    rh_qfilter_init(&q);
    enum rh_fmt fmt = RH_FMT_TEXT;
    const char *path[2] = {NULL, NULL};
    int npos = 0, all = 0;
    long limit = 50;
    enum rh_diff_by by = RH_DIFF_LEAKED;
    double noise = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] == '-' && s[1]) {
            int r = rh_filter_arg(&q.f, argc, argv, &i);
            if (r < 0)
                return 2;
            if (r > 0 || rh_fmt_arg(&fmt, argv, &i))
                continue;
            if (!strcmp(s, "--all")) {
                all = 1;
            } else if (!strcmp(s, "--by") && i + 1 < argc) {
                const char *v = argv[++i];
                if (!strcmp(v, "leaked"))
                    by = RH_DIFF_LEAKED;
                else if (!strcmp(v, "peak"))
                    by = RH_DIFF_PEAK;
                else if (!strcmp(v, "bytes"))
                    by = RH_DIFF_BYTES;
                else if (!strcmp(v, "count"))
                    by = RH_DIFF_COUNT;
                else {
                    fprintf(stderr,
                            "rheaper: diff: --by '%s': expected leaked, peak, bytes or count\n", v);
                    return 2;
                }
            } else if (!strcmp(s, "--noise") && i + 1 < argc) {
                char *end;
                noise = strtod(argv[++i], &end);
                if (*end == '%')
                    end++;
                if (*end || end == argv[i] || !(noise >= 0 && noise <= 100)) {
                    fprintf(stderr, "rheaper: diff: --noise '%s': expected a percentage 0-100\n",
                            argv[i]);
                    return 2;
                }
            } else if ((!strcmp(s, "-n") || !strcmp(s, "--limit")) && i + 1 < argc) {
                char *end;
                limit = strtol(argv[++i], &end, 10);
                if (*end || end == argv[i] || limit < 0) {
                    fprintf(stderr, "rheaper: diff: -n '%s': expected a count\n", argv[i]);
                    return 2;
                }
            } else {
                fprintf(stderr, "rheaper: diff: unknown option %s\n", s);
                return 2;
            }
            continue;
        }
        if (npos == 2) {
            fprintf(stderr, "rheaper: diff: expected two profiles (A B), got a third: %s\n", s);
            return 2;
        }
        path[npos++] = s;
    }
    if (npos != 2) {
        fprintf(stderr, "usage: rheaper diff A.db B.db [-n N] [--all] [--by leaked|peak|bytes|count]"
                        " [--noise PCT] [--json|--csv] [filters]\n");
        return 2;
    }
    sqlite3 *a = rh_query_open(path[0]);
    if (!a)
        return 1;
    sqlite3 *b = rh_query_open(path[1]);
    if (!b) {
        sqlite3_close(a);
        return 1;
    }
    struct rh_diff_row *rows = NULL;
    size_t n = 0;
    int rc = rh_diff_compute(a, b, &q, by, noise, &rows, &n);
    if (!rc) {
        struct rh_scope pa, pb;
        if (fmt == RH_FMT_TEXT && !rh_scope_get(a, &pa) && !rh_scope_get(b, &pb)) {
            char ha[32], hb[32];
            printf("call sites of %s (A) against %s (B); delta = B - A; peak %s (A), %s (B);"
                   " changes within %g%% shown as same\n",
                   path[0], path[1], rh_human_bytes(pa.peak_bytes, ha, sizeof ha),
                   rh_human_bytes(pb.peak_bytes, hb, sizeof hb), noise);
        }
        rh_diff_print(rows, n, (size_t)limit, all, fmt, stdout);
    }
    rh_diff_free(rows, n);
    sqlite3_close(a);
    sqlite3_close(b);
    return rc ? 1 : (fflush(stdout) ? 1 : 0);
}
