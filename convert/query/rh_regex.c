/* rh_regex.c: bounded POSIX extended regular expressions on PCRE2.
 *
 * Every filter's pattern (CLI options, URL parameters, SQL's REGEXP, the
 * terminal views' `/`) is compiled here. glibc's regcomp multiplies nested
 * counted repetitions into its automaton (`((a{1,100}){1,100}){1,100}` took
 * more than a gigabyte), so a request could grow the server without bound.
 * PCRE2 is given limits instead: the pattern's length (RH_RE_MAX_LEN), the
 * nesting of its groups, the memory its compilation may allocate (a counting
 * allocator refuses past RH_RE_COMPILE_BYTES; PCRE2 itself refuses a compiled
 * pattern over 64 KiB), and per match a step count, a backtracking depth and
 * a heap size. JIT is not used: the interpreter enforces all three limits.
 *
 * The dialect stays the POSIX extended one the documentation promises: the
 * pattern is rewritten into PCRE2's syntax first. A backslash inside a
 * bracket expression is a literal backslash, as in POSIX; `\<` and `\>` (GNU
 * word boundaries) keep their meaning; an escaped letter other than the GNU
 * classes \w \W \s \S \b \B is that letter, as glibc reads it; `(?` and `(*`,
 * which POSIX does not have and which would open PCRE2's own syntax
 * (options, verbs, recursion), are refused; back-references are refused.
 * `.` also matches a newline, as without REG_NEWLINE.
 */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_regex.h"

#define RH_RE_COMPILE_BYTES (4u << 20) /* memory one compilation may take */
#define RH_RE_NEST 32                  /* group nesting */
#define RH_RE_MATCH_STEPS 1000000u     /* PCRE2 match limit */
#define RH_RE_MATCH_DEPTH 10000u       /* backtracking depth */
#define RH_RE_MATCH_HEAP_KIB 4096u     /* heap for one match's backtracking */

/* A counting allocator: what one pattern's compilation and code hold. */
struct rh_re_mem {
    size_t used, cap;
};

struct rh_re {
    struct rh_re_mem mem;
    pcre2_general_context *gctx;
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
};

/* each block carries its size in front, so free can count it back */
#define RH_RE_HDR 16u

static void *rh_re_alloc(size_t n, void *data)
{
    struct rh_re_mem *m = data;
    if (n > m->cap || m->used > m->cap - n)
        return NULL;
    unsigned char *p = malloc(n + RH_RE_HDR);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof n);
    m->used += n;
    return p + RH_RE_HDR;
}

static void rh_re_release(void *q, void *data)
{
    struct rh_re_mem *m = data;
    if (!q)
        return;
    unsigned char *p = (unsigned char *)q - RH_RE_HDR;
    size_t n;
    memcpy(&n, p, sizeof n);
    m->used -= n;
    free(p);
}

static int rh_re_say(char *err, size_t n, const char *fmt, ...)
{
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Rewrites the POSIX extended pattern pat into PCRE2 syntax in out (room for
 * 12 bytes per input byte). Returns 0, or -1 with the reason in err. */
static int rh_re_translate(const char *pat, char *out, char *err, size_t errlen)
{
    char *o = out;
    for (const char *p = pat; *p; p++) {
        if (*p == '\\') {
            char c = p[1];
            if (!c)
                return rh_re_say(err, errlen, "trailing backslash");
            p++;
            if (c >= '1' && c <= '9')
                return rh_re_say(err, errlen, "back-references are not allowed");
            if (c == '<')
                o = stpcpy(o, "\\b(?=\\w)");
            else if (c == '>')
                o = stpcpy(o, "\\b(?<=\\w)");
            else if (strchr("wWsSbB", c))
                *o++ = '\\', *o++ = c;
            else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                *o++ = c; /* glibc: an escaped ordinary character is itself */
            else
                *o++ = '\\', *o++ = c;
            continue;
        }
        if (*p == '(' && (p[1] == '?' || p[1] == '*'))
            return rh_re_say(err, errlen, "'(%c' is not POSIX extended syntax (at offset %d)", p[1],
                             (int)(p - pat));
        if (*p != '[') {
            *o++ = *p;
            continue;
        }
        /* a bracket expression: copied up to its closing ']', a backslash in
         * it made literal; [:class:] and the like copied whole */
        *o++ = *p++;
        if (*p == '^')
            *o++ = *p++;
        if (*p == ']')
            *o++ = *p++;
        while (*p && *p != ']') {
            if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
                char kind = p[1];
                const char *end = p + 2;
                while (*end && !(end[0] == kind && end[1] == ']'))
                    end++;
                if (!*end)
                    return rh_re_say(err, errlen, "unterminated [%c in a bracket expression", kind);
                size_t len = (size_t)(end + 2 - p);
                memcpy(o, p, len);
                o += len;
                p = end + 2;
                continue;
            }
            if (*p == '\\')
                *o++ = '\\';
            *o++ = *p++;
        }
        if (!*p)
            return rh_re_say(err, errlen, "unmatched [");
        *o++ = ']';
    }
    *o = 0;
    return 0;
}

struct rh_re *rh_re_compile(const char *pat, char *err, size_t errlen)
{
    size_t len = strlen(pat);
    if (len > RH_RE_MAX_LEN) {
        rh_re_say(err, errlen, "longer than %d characters", RH_RE_MAX_LEN);
        return NULL;
    }
    char pc[RH_RE_MAX_LEN * 12 + 1];
    if (rh_re_translate(pat, pc, err, errlen))
        return NULL;
    struct rh_re *re = calloc(1, sizeof *re);
    if (!re) {
        rh_re_say(err, errlen, "out of memory");
        return NULL;
    }
    re->mem.cap = RH_RE_COMPILE_BYTES;
    re->gctx = pcre2_general_context_create(rh_re_alloc, rh_re_release, &re->mem);
    pcre2_compile_context *cctx = re->gctx ? pcre2_compile_context_create(re->gctx) : NULL;
    if (!cctx) {
        rh_re_say(err, errlen, "out of memory");
        rh_re_free(re);
        return NULL;
    }
    pcre2_set_parens_nest_limit(cctx, RH_RE_NEST);
    pcre2_set_max_pattern_length(cctx, sizeof pc);
    int ec = 0;
    PCRE2_SIZE eo = 0;
    re->code = pcre2_compile((PCRE2_SPTR)pc, PCRE2_ZERO_TERMINATED,
                             PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_AUTO_CAPTURE |
                                 PCRE2_NEVER_UTF | PCRE2_NEVER_UCP,
                             &ec, &eo, cctx);
    pcre2_compile_context_free(cctx);
    if (!re->code) {
        if (ec == PCRE2_ERROR_HEAP_FAILED || ec == PCRE2_ERROR_PATTERN_TOO_LARGE ||
            ec == PCRE2_ERROR_PATTERN_TOO_COMPLICATED)
            rh_re_say(err, errlen, "too large when compiled (nested repetitions multiply)");
        else {
            PCRE2_UCHAR msg[160];
            if (pcre2_get_error_message(ec, msg, sizeof msg) < 0)
                snprintf((char *)msg, sizeof msg, "error %d", ec);
            /* offsets are those of the rewritten pattern: said only when the
             * rewriting changed nothing */
            if (!strcmp(pc, pat))
                rh_re_say(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)eo);
            else
                rh_re_say(err, errlen, "%s", (const char *)msg);
        }
        rh_re_free(re);
        return NULL;
    }
    /* the match data and the match's heap come from the ordinary allocator:
     * the heap limit below bounds them */
    re->md = pcre2_match_data_create(1, NULL);
    re->mctx = pcre2_match_context_create(NULL);
    if (!re->md || !re->mctx) {
        rh_re_say(err, errlen, "out of memory");
        rh_re_free(re);
        return NULL;
    }
    pcre2_set_match_limit(re->mctx, RH_RE_MATCH_STEPS);
    pcre2_set_depth_limit(re->mctx, RH_RE_MATCH_DEPTH);
    pcre2_set_heap_limit(re->mctx, RH_RE_MATCH_HEAP_KIB);
    return re;
}

int rh_re_match(struct rh_re *re, const char *text)
{
    int rc = pcre2_match(re->code, (PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, 0, 0, re->md, re->mctx);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    return -1;
}

void rh_re_free(struct rh_re *re)
{
    if (!re)
        return;
    pcre2_match_data_free(re->md);
    pcre2_match_context_free(re->mctx);
    pcre2_code_free(re->code);
    pcre2_general_context_free(re->gctx);
    free(re);
}
