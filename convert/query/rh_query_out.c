/* rh_query_out.c: how every reader prints rows and strings.
 *
 * Every listing goes through rh_print_stmt(), so --csv and --json mean the same
 * for all commands: text is aligned columns under a header (numbers right
 * aligned, NULL as empty), CSV is RFC 4180 quoting with a header line and LF
 * line ends, JSON is one array of objects keyed by column name (integers and
 * reals as numbers, NULL as null, text as strings, blobs as hex strings).
 * Reals in CSV and JSON are the shortest decimal that reads back as the same
 * double (rh_fmt_real): a ratio the query rounded prints as it was rounded.
 * rh_json_string() is the one JSON string escaper of the readers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rh_names.h"
#include "rh_query.h"

void rh_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p == '\r')
            fputs("\\r", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

const char *rh_fmt_real(double d, int json, char *buf, size_t n)
{
    if (!isfinite(d)) {
        snprintf(buf, n, "%s", json ? "null" : isnan(d) ? "nan" : d < 0 ? "-inf" : "inf");
        return buf;
    }
    /* 17 significant digits always read back as the same double; fewer do
     * for most values a query rounded, and then read as the person wrote them. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, d);
        if (prec == 17 || strtod(buf, NULL) == d)
            break;
    }
    return buf;
}

void rh_csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* The text of column i of the current row as a new string (caller frees);
 * NULL becomes "". Reals print with up to 6 significant decimals. */
static char *rh_cell(sqlite3_stmt *st, int i)
{
    char buf[64];
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL:
        return strdup("");
    case SQLITE_INTEGER:
        snprintf(buf, sizeof buf, "%lld", (long long)sqlite3_column_int64(st, i));
        return strdup(buf);
    case SQLITE_FLOAT:
        snprintf(buf, sizeof buf, "%.6g", sqlite3_column_double(st, i));
        return strdup(buf);
    case SQLITE_BLOB: {
        int n = sqlite3_column_bytes(st, i);
        const unsigned char *p = sqlite3_column_blob(st, i);
        char *s = malloc((size_t)n * 2 + 1);
        if (!s)
            return NULL;
        for (int k = 0; k < n; k++)
            snprintf(s + 2 * k, 3, "%02x", p[k]);
        s[2 * n] = 0;
        return s;
    }
    default: {
        const char *t = (const char *)sqlite3_column_text(st, i);
        return strdup(t ? t : "");
    }
    }
}

/* The display form of a function name (text output only; the database and
 * CSV/JSON keep the full name): a C++ name longer than RH_SYM_FOLD characters
 * gets its template arguments folded, as heaptrack does:
 * "std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(...)"
 * shows as "std::vector<…>::_M_realloc_insert<…>(...)". "operator<" and
 * "operator<<", and lambdas ("<lambda()>"), are kept. Returns a new string
 * (caller frees), or NULL on out of memory. */
#define RH_SYM_FOLD 48
char *rh_sym_display(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(n + 1);
    if (!o || n <= RH_SYM_FOLD || !strchr(s, '<')) {
        if (o)
            memcpy(o, s, n + 1);
        return o;
    }
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        int op = (i >= 8 && !strncmp(s + i - 8, "operator", 8)) ||
                 (i >= 9 && !strncmp(s + i - 9, "operator<", 9));
        if (s[i] != '<' || op || !strncmp(s + i + 1, "lambda", 6)) {
            o[k++] = s[i++];
            continue;
        }
        int depth = 0;
        size_t j = i;
        for (; j < n; j++) {
            if (s[j] == '<')
                depth++;
            else if (s[j] == '>' && --depth == 0)
                break;
        }
        if (j >= n) { /* unbalanced: keep the rest as it is */
            memcpy(o + k, s + i, n - i);
            k += n - i;
            break;
        }
        if (j - i + 1 <= 5) { /* "<int>" is no longer than "<…>": kept, and o never grows */
            memcpy(o + k, s + i, j - i + 1);
            k += j - i + 1;
            i = j + 1;
            continue;
        }
        memcpy(o + k, "<\xe2\x80\xa6>", 5); /* "<…>" */
        k += 5;
        i = j + 1;
    }
    o[k] = 0;
    return o;
}

/* Display width of a UTF-8 string (code points; good enough for names). */
static size_t rh_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            w++;
    return w;
}

/* Writes cell i (of nc) of a text row: padded to width w, right-aligned when
 * num, the last column unpadded; two spaces before every cell but the first. */
static void rh_text_cell(FILE *out, const char *c, int i, int nc, size_t w, int num)
{
    int pad = (int)(w - rh_width(c));
    if (i)
        fputs("  ", out);
    if (num)
        fprintf(out, "%*s%s", pad, "", c);
    else if (i < nc - 1)
        fprintf(out, "%s%*s", c, pad, "");
    else
        fputs(c, out);
}

static int rh_step_error(sqlite3_stmt *st)
{
    fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(sqlite3_db_handle(st)));
    return -1;
}

/* Text output: keeps all cells to measure the columns first. */
static int rh_print_text(sqlite3_stmt *st, FILE *out)
{
    int nc = sqlite3_column_count(st);
    if (nc == 0) {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ;
        return rc == SQLITE_DONE ? 0 : rh_step_error(st);
    }
    size_t *w = calloc((size_t)nc, sizeof *w);
    int *num = calloc((size_t)nc, sizeof *num); /* 1: right-align (numbers seen) */
    char **cells = NULL;
    size_t ncells = 0, cap = 0;
    int rc, ret = 0;
    if (!w || !num)
        goto oom;
    for (int i = 0; i < nc; i++)
        w[i] = rh_width(sqlite3_column_name(st, i));
    int fold = -1; /* the function column: long C++ names folded for display */
    for (int i = 0; i < nc && fold < 0; i++)
        if (!strcmp(sqlite3_column_name(st, i), "function"))
            fold = i;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (ncells + (size_t)nc > cap) {
            size_t nc2 = cap ? cap * 2 : (size_t)nc * 64;
            char **c2 = realloc(cells, nc2 * sizeof *c2);
            if (!c2)
                goto oom;
            cells = c2;
            cap = nc2;
        }
        for (int i = 0; i < nc; i++) {
            int t = sqlite3_column_type(st, i);
            if (t == SQLITE_INTEGER || t == SQLITE_FLOAT)
                num[i] = 1;
            char *c = rh_cell(st, i);
            if (c && i == fold) {
                char *d = rh_sym_display(c);
                free(c);
                c = d;
            }
            if (!c)
                goto oom;
            cells[ncells++] = c;
            size_t cw = rh_width(c);
            if (cw > w[i])
                w[i] = cw;
        }
    }
    if (rc != SQLITE_DONE)
        ret = rh_step_error(st);
    if (ret == 0) {
        for (int i = 0; i < nc; i++)
            rh_text_cell(out, sqlite3_column_name(st, i), i, nc, w[i], num[i]);
        fputc('\n', out);
        for (size_t r = 0; r < ncells; r += (size_t)nc) {
            for (int i = 0; i < nc; i++)
                rh_text_cell(out, cells[r + (size_t)i], i, nc, w[i], num[i]);
            fputc('\n', out);
        }
    }
    goto done;
oom:
    fprintf(stderr, "rheaper: out of memory\n");
    ret = -1;
done:
    for (size_t k = 0; k < ncells; k++)
        free(cells[k]);
    free(cells);
    free(w);
    free(num);
    return ret;
}

int rh_print_stmt(sqlite3_stmt *st, enum rh_fmt fmt, FILE *out)
{
    if (fmt == RH_FMT_TEXT)
        return rh_print_text(st, out);
    int nc = sqlite3_column_count(st);
    int rc, rows = 0;
    if (fmt == RH_FMT_CSV && nc > 0) {
        for (int i = 0; i < nc; i++) {
            if (i)
                fputc(',', out);
            rh_csv_field(out, sqlite3_column_name(st, i));
        }
        fputc('\n', out);
    }
    if (fmt == RH_FMT_JSON)
        fputc('[', out);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (fmt == RH_FMT_JSON)
            fputs(rows ? ",\n{" : "\n{", out);
        for (int i = 0; i < nc; i++) {
            int t = sqlite3_column_type(st, i);
            if (fmt == RH_FMT_JSON) {
                if (i)
                    fputc(',', out);
                rh_json_string(out, sqlite3_column_name(st, i));
                fputc(':', out);
                if (t == SQLITE_NULL) {
                    fputs("null", out);
                } else if (t == SQLITE_INTEGER) {
                    fprintf(out, "%lld", (long long)sqlite3_column_int64(st, i));
                } else if (t == SQLITE_FLOAT) {
                    char num[40];
                    fputs(rh_fmt_real(sqlite3_column_double(st, i), 1, num, sizeof num), out);
                } else {
                    char *c = rh_cell(st, i);
                    rh_json_string(out, c ? c : "");
                    /* a function's short name beside it (rh_names.h) */
                    if (!strcmp(sqlite3_column_name(st, i), "function"))
                        rh_json_short_name(out, c ? c : "");
                    free(c);
                }
            } else {
                if (i)
                    fputc(',', out);
                if (t == SQLITE_FLOAT) {
                    char num[40];
                    fputs(rh_fmt_real(sqlite3_column_double(st, i), 0, num, sizeof num), out);
                } else {
                    char *c = rh_cell(st, i);
                    rh_csv_field(out, c ? c : "");
                    free(c);
                }
            }
        }
        if (fmt == RH_FMT_JSON)
            fputc('}', out);
        else
            fputc('\n', out);
        rows++;
    }
    if (fmt == RH_FMT_JSON)
        fputs(rows ? "\n]\n" : "]\n", out);
    if (rc != SQLITE_DONE)
        return rh_step_error(st);
    return 0;
}

/* ---- text for people and markup ---------------------------------------- */

const char *rh_human_bytes(int64_t b, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while ((v >= 1024.0 || v <= -1024.0) && i < 4) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, n, "%lld B", (long long)b);
    else
        snprintf(buf, n, "%.2f %s", v, unit[i]);
    return buf;
}

void rh_markup_put(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        if (c == '&')
            fputs("&amp;", out);
        else if (c == '<')
            fputs("&lt;", out);
        else if (c == '>')
            fputs("&gt;", out);
        else if (c == '"')
            fputs("&quot;", out);
        else if (c == '\'')
            fputs("&#39;", out);
        else if (c < 0x20 || c == 0x7f)
            fputc('?', out);
        else if (c < 0x80)
            fputc((int)c, out);
        else {
            /* pass a valid UTF-8 sequence through, replace anything else */
            int len = c >= 0xf0 && c < 0xf5 ? 3 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
            int ok = len > 0;
            for (int k = 1; ok && k <= len; k++)
                ok = (p[k] & 0xc0) == 0x80;
            if (!ok) {
                fputc('?', out);
            } else {
                fwrite(p, 1, (size_t)len + 1, out);
                p += len;
            }
        }
        p++;
    }
}

/* Contract in rh_names.h: the JSON side of the short names. */
void rh_json_short_name(FILE *out, const char *full)
{
    char buf[4096];
    rh_name_short(full, buf, sizeof buf);
    fputs(",\"short\":", out);
    rh_json_string(out, buf);
}

/* ---- rows the library returns as C data --------------------------------- */

double rh_round(double x, int digits)
{
    /* SQLite's round(): its printf's "%!.*f", read back */
    if (!isfinite(x))
        return x;
    char *s = sqlite3_mprintf("%!.*f", digits < 0 ? 0 : digits > 30 ? 30 : digits, x);
    if (!s)
        return x;
    double r = strtod(s, NULL);
    sqlite3_free(s);
    return r;
}

/* The text of a cell as rh_cell() gives a column's: NULL as "", integers
 * with %lld, reals with up to 6 significant decimals. */
static const char *rh_cell_text(const struct rh_cell *c, char *buf, size_t n)
{
    switch (c->type) {
    case RH_CELL_INT:
        snprintf(buf, n, "%lld", (long long)c->i);
        return buf;
    case RH_CELL_REAL:
        snprintf(buf, n, "%.6g", c->d);
        return buf;
    case RH_CELL_TEXT:
        return c->s ? c->s : "";
    case RH_CELL_NULL:
    default:
        return "";
    }
}

int rh_print_cells(const char *const *names, int nc, const struct rh_cell *cells, size_t nrows,
                   enum rh_fmt fmt, FILE *out)
{
    char buf[64];
    if (fmt == RH_FMT_TEXT) {
        size_t *w = calloc((size_t)nc + 1, sizeof *w);
        int *num = calloc((size_t)nc + 1, sizeof *num);
        char **disp = calloc(nrows * (size_t)nc + 1, sizeof *disp);
        int fold = -1, ret = 0;
        if (!w || !num || !disp) {
            fprintf(stderr, "rheaper: out of memory\n");
            ret = -1;
            goto text_done;
        }
        for (int i = 0; i < nc; i++) {
            w[i] = rh_width(names[i]);
            if (fold < 0 && !strcmp(names[i], "function"))
                fold = i;
        }
        for (size_t r = 0; r < nrows; r++)
            for (int i = 0; i < nc; i++) {
                const struct rh_cell *c = &cells[r * (size_t)nc + (size_t)i];
                if (c->type == RH_CELL_INT || c->type == RH_CELL_REAL)
                    num[i] = 1;
                const char *t = rh_cell_text(c, buf, sizeof buf);
                char *d = i == fold ? rh_sym_display(t) : strdup(t);
                if (!d) {
                    fprintf(stderr, "rheaper: out of memory\n");
                    ret = -1;
                    goto text_done;
                }
                disp[r * (size_t)nc + (size_t)i] = d;
                size_t cw = rh_width(d);
                if (cw > w[i])
                    w[i] = cw;
            }
        for (int i = 0; i < nc; i++)
            rh_text_cell(out, names[i], i, nc, w[i], num[i]);
        fputc('\n', out);
        for (size_t r = 0; r < nrows; r++) {
            for (int i = 0; i < nc; i++)
                rh_text_cell(out, disp[r * (size_t)nc + (size_t)i], i, nc, w[i], num[i]);
            fputc('\n', out);
        }
    text_done:
        if (disp)
            for (size_t k = 0; k < nrows * (size_t)nc; k++)
                free(disp[k]);
        free(disp);
        free(w);
        free(num);
        return ret;
    }
    if (fmt == RH_FMT_CSV && nc > 0) {
        for (int i = 0; i < nc; i++) {
            if (i)
                fputc(',', out);
            rh_csv_field(out, names[i]);
        }
        fputc('\n', out);
    }
    if (fmt == RH_FMT_JSON)
        fputc('[', out);
    for (size_t r = 0; r < nrows; r++) {
        if (fmt == RH_FMT_JSON)
            fputs(r ? ",\n{" : "\n{", out);
        for (int i = 0; i < nc; i++) {
            const struct rh_cell *c = &cells[r * (size_t)nc + (size_t)i];
            char num[40];
            if (i)
                fputc(',', out);
            if (fmt == RH_FMT_JSON) {
                rh_json_string(out, names[i]);
                fputc(':', out);
                if (c->type == RH_CELL_NULL)
                    fputs("null", out);
                else if (c->type == RH_CELL_INT)
                    fprintf(out, "%lld", (long long)c->i);
                else if (c->type == RH_CELL_REAL)
                    fputs(rh_fmt_real(c->d, 1, num, sizeof num), out);
                else
                    rh_json_string(out, c->s ? c->s : "");
                /* a function's short name beside it (rh_names.h), as rh_print_stmt */
                if (!strcmp(names[i], "function"))
                    rh_json_short_name(out, c->type == RH_CELL_TEXT && c->s ? c->s : "");
            } else if (c->type == RH_CELL_REAL) {
                fputs(rh_fmt_real(c->d, 0, num, sizeof num), out);
            } else {
                rh_csv_field(out, rh_cell_text(c, buf, sizeof buf));
            }
        }
        fputs(fmt == RH_FMT_JSON ? "}" : "\n", out);
    }
    if (fmt == RH_FMT_JSON)
        fputs(nrows ? "\n]\n" : "]\n", out);
    return 0;
}
